// SPDX-License-Identifier: Apache-2.0
#include "epp/wire/metrics_http.hpp"

#include <civetweb.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <cstring>

#include "inject/log.hpp"

namespace epp {
namespace {

int reply(::mg_connection* conn, int status, const char* reason, const char* type,
          const std::string& body) {
    mg_printf(
        conn,
        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
        status, reason, type, body.size());
    if (std::strcmp(mg_get_request_info(conn)->request_method, "HEAD") != 0)
        mg_write(conn, body.data(), body.size());
    return status;
}

int civetweb_log(const ::mg_connection*, const char* message) {
    inject::log::debug("metrics http: {}", message);
    return 1;
}

}  // namespace

inject::Result<std::unique_ptr<MetricsHttp>> MetricsHttp::start(
    const std::string& host, int port, const prometheus::Registry& registry) {
    const bool v6 = host.find(':') != std::string::npos;
    const std::string ports = host.empty()
                                  ? std::to_string(port)
                                  : (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
    mg_init_library(0);
    std::unique_ptr<MetricsHttp> s(new MetricsHttp(registry));
    const char* options[] = {
        "listening_ports", ports.c_str(),       "num_threads", "2",    "request_timeout_ms",
        "10000",           "enable_keep_alive", "no",          nullptr};
    mg_callbacks callbacks{};
    callbacks.log_message = civetweb_log;
    mg_init_data init{&callbacks, s.get(), options};
    std::array<char, 256> text{};
    unsigned code = 0;
    mg_error_data error{&code, text.data(), text.size()};
    s->ctx_ = mg_start2(&init, &error);
    if (!s->ctx_)
        return inject::fail(inject::Errc::Io,
                            "--metrics-port " + std::to_string(port) + ": " + text.data());
    std::array<mg_server_port, 1> bound{};
    if (mg_get_server_ports(s->ctx_, static_cast<int>(bound.size()), bound.data()) > 0)
        s->port_ = bound[0].port;
    mg_set_request_handler(s->ctx_, "/metrics", &MetricsHttp::metrics, s.get());
    return s;
}

MetricsHttp::~MetricsHttp() {
    if (ctx_) mg_stop(ctx_);
}

int MetricsHttp::metrics(::mg_connection* conn, void* self) {
    const char* m = mg_get_request_info(conn)->request_method;
    if (std::strcmp(m, "GET") != 0 && std::strcmp(m, "HEAD") != 0)
        return reply(conn, 405, "Method Not Allowed", "text/plain; charset=utf-8",
                     "only GET and HEAD\n");
    const auto& r = static_cast<MetricsHttp*>(self)->registry_;
    return reply(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                 prometheus::TextSerializer().Serialize(r.Collect()));
}

}  // namespace epp
