// SPDX-License-Identifier: Apache-2.0
#include "exporter/http.hpp"

#include <arpa/inet.h>
#include <civetweb.h>

#include <array>
#include <charconv>
#include <cstring>

#include "inject/log.hpp"

namespace exporter {
namespace {

using inject::Errc;

bool get_or_head(::mg_connection* conn) {
    const char* m = mg_get_request_info(conn)->request_method;
    return std::strcmp(m, "GET") == 0 || std::strcmp(m, "HEAD") == 0;
}

int reply(::mg_connection* conn, int status, const char* reason, const char* type,
          std::string_view body) {
    mg_printf(
        conn,
        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
        status, reason, type, body.size());
    if (std::strcmp(mg_get_request_info(conn)->request_method, "HEAD") != 0)
        mg_write(conn, body.data(), body.size());
    return status;
}

int not_allowed(::mg_connection* conn) {
    return reply(conn, 405, "Method Not Allowed", "text/plain; charset=utf-8",
                 "only GET and HEAD\n");
}

// civetweb's own log lines go to ours, at debug: a scraper hanging up is no news.
int civetweb_log(const ::mg_connection*, const char* message) {
    inject::log::debug("http: {}", message);
    return 1;
}

}  // namespace

inject::Result<std::string> listening_ports(std::string_view address) {
    auto bad = [&](const std::string& why) {
        return inject::fail(Errc::InvalidInput, "--web.listen-address '" + std::string(address) +
                                                    "': " + why + " (want [ip]:port, e.g. :9400)");
    };
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos) return bad("no port");
    const std::string_view host = address.substr(0, colon), port = address.substr(colon + 1);
    unsigned n = 0;
    const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (port.empty() || ec != std::errc{} || p != port.data() + port.size() || n == 0 || n > 65535)
        return bad("bad port '" + std::string(port) + "'");
    if (host.empty()) return std::string(port);
    std::array<unsigned char, 16> buf{};
    const std::string h(host);
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') {
        if (inet_pton(AF_INET6, h.substr(1, h.size() - 2).c_str(), buf.data()) != 1)
            return bad("bad IPv6 address");
    } else if (inet_pton(AF_INET, h.c_str(), buf.data()) != 1) {
        return bad("'" + h + "' is not an IP address");
    }
    return std::string(address);
}

inject::Result<std::unique_ptr<HttpServer>> HttpServer::start(std::string_view address,
                                                              const Collector& collector) {
    INJECT_TRY(const auto ports, listening_ports(address));
    mg_init_library(0);
    std::unique_ptr<HttpServer> s(new HttpServer(collector));
    // Two workers: Prometheus scrapes one at a time; a second lets a health probe through.
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
        return inject::fail(Errc::Io,
                            "--web.listen-address '" + std::string(address) + "': " + text.data());
    mg_set_request_handler(s->ctx_, "/metrics", &HttpServer::metrics, s.get());
    mg_set_request_handler(s->ctx_, "/healthz", &HttpServer::healthz, s.get());
    return s;
}

HttpServer::~HttpServer() {
    if (ctx_) mg_stop(ctx_);
}

int HttpServer::metrics(::mg_connection* conn, void* self) {
    if (!get_or_head(conn)) return not_allowed(conn);
    const auto text = static_cast<HttpServer*>(self)->collector_.text();
    if (!text)
        return reply(conn, 503, "Service Unavailable", "text/plain; charset=utf-8",
                     "no collection yet\n");
    return reply(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", *text);
}

int HttpServer::healthz(::mg_connection* conn, void* self) {
    if (!get_or_head(conn)) return not_allowed(conn);
    const auto& c = static_cast<HttpServer*>(self)->collector_;
    const auto since = c.since_last();
    if (!since)
        return reply(conn, 503, "Service Unavailable", "text/plain; charset=utf-8",
                     "no collection yet\n");
    if (*since > 3 * c.interval())
        return reply(
            conn, 503, "Service Unavailable", "text/plain; charset=utf-8",
            "collector stalled: last pass " + std::to_string(since->count()) + " ms ago\n");
    return reply(conn, 200, "OK", "text/plain; charset=utf-8", "ok\n");
}

}  // namespace exporter
