// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// enflame-epp's /metrics: one prometheus::Registry (the wire's series and the scheduler's) in
/// the text exposition format, over civetweb. docs/epp.md, "Metrics".

#include <memory>
#include <string>

#include "inject/result.hpp"

struct mg_context;
struct mg_connection;
namespace prometheus {
class Registry;
}

namespace epp {

class MetricsHttp {
public:
    /// Listens on host:port (port 0: the kernel picks) and serves GET /metrics from
    /// `registry`, which must outlive the server. Io names --metrics-port when it cannot bind.
    [[nodiscard]] static inject::Result<std::unique_ptr<MetricsHttp>> start(
        const std::string& host, int port, const prometheus::Registry& registry);
    ~MetricsHttp();
    MetricsHttp(const MetricsHttp&) = delete;
    MetricsHttp& operator=(const MetricsHttp&) = delete;

    [[nodiscard]] int port() const { return port_; }

private:
    explicit MetricsHttp(const prometheus::Registry& r) : registry_(r) {}
    static int metrics(::mg_connection* conn, void* self);

    const prometheus::Registry& registry_;
    ::mg_context* ctx_ = nullptr;
    int port_ = 0;
};

}  // namespace epp
