// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The daemons' small HTTP side (civetweb): a few GET/HEAD routes such as /metrics and
/// /healthz, each answered whole with Content-Length and the connection closed; any other
/// method is 405. The exporter and enflame-epp serve their metrics through it.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "inject/result.hpp"

struct mg_context;
struct mg_connection;

namespace k8s {

/// The Prometheus text exposition format's content type.
inline constexpr const char* kPrometheusTextType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr const char* kPlainTextType = "text/plain; charset=utf-8";

/// mg_stop() at once: civetweb's listener looks at its stop flag only between polls of up to
/// 2 s, so connections to `port` on loopback end the poll while it stops (a listener on another
/// address just waits as before).
void stop_civetweb(::mg_context* ctx, int port);

class HttpServer {
public:
    struct Reply {
        int status = 200;
        std::string content_type = kPlainTextType;
        std::string body;
    };
    using Handler = std::function<Reply()>;

    /// Listens on `ports` (civetweb's listening_ports: "9400", "127.0.0.1:9400", "[::1]:0")
    /// with two workers and serves `routes` (path, handler), which are called from civetweb's
    /// threads. Errors are Io naming `what` (the flag the address came from) and civetweb's
    /// reason.
    [[nodiscard]] static inject::Result<std::unique_ptr<HttpServer>> start(
        const std::string& ports, const std::string& what,
        std::vector<std::pair<std::string, Handler>> routes);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    /// The first port bound (the kernel's choice for port 0).
    [[nodiscard]] int port() const { return port_; }

private:
    HttpServer() = default;
    static int serve(::mg_connection* conn, void* handler);

    std::vector<std::unique_ptr<Handler>> handlers_;
    ::mg_context* ctx_ = nullptr;
    int port_ = 0;
};

}  // namespace k8s
