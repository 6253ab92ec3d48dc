// SPDX-License-Identifier: Apache-2.0
#pragma once

// The exporter's HTTP side (civetweb): /metrics serves the collector's last text as it is,
// /healthz says whether the collector still runs. Nothing here reaches the driver.

#include <memory>
#include <string>
#include <string_view>

#include "exporter/collector.hpp"
#include "inject/result.hpp"
#include "k8s/http_server.hpp"

namespace exporter {

/// `--web.listen-address` ("[host]:port": ":9400", "127.0.0.1:9400", "[::1]:9400") as
/// civetweb's listening_ports value. InvalidInput names the value and what is wanted.
[[nodiscard]] inject::Result<std::string> listening_ports(std::string_view address);

class HttpServer {
public:
    /// Listens on `address` (a listen-address as above) and serves `collector`'s text, which
    /// must outlive the server. Errors name the address and civetweb's reason.
    [[nodiscard]] static inject::Result<std::unique_ptr<HttpServer>> start(
        std::string_view address, const Collector& collector);

private:
    explicit HttpServer(std::unique_ptr<k8s::HttpServer> s) : server_(std::move(s)) {}

    std::unique_ptr<k8s::HttpServer> server_;
};

}  // namespace exporter
