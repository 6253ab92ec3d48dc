// SPDX-License-Identifier: Apache-2.0
#include "k8s/http_server.hpp"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "inject/log.hpp"

namespace k8s {
namespace {

// civetweb's own log lines go to ours, at debug: a scraper hanging up is no news.
int civetweb_log(const ::mg_connection*, const char* message) {
    inject::log::debug("http: {}", message);
    return 1;
}

int reply(::mg_connection* conn, const HttpServer::Reply& r) {
    mg_printf(
        conn,
        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
        r.status, mg_get_response_code_text(conn, r.status), r.content_type.c_str(), r.body.size());
    if (std::strcmp(mg_get_request_info(conn)->request_method, "HEAD") != 0)
        mg_write(conn, r.body.data(), r.body.size());
    return r.status;
}

}  // namespace

inject::Result<std::unique_ptr<HttpServer>> HttpServer::start(
    const std::string& ports, const std::string& what,
    std::vector<std::pair<std::string, Handler>> routes) {
    mg_init_library(0);
    std::unique_ptr<HttpServer> s(new HttpServer());
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
    if (!s->ctx_) return inject::fail(inject::Errc::Io, what + ": " + text.data());
    std::array<mg_server_port, 1> bound{};
    if (mg_get_server_ports(s->ctx_, static_cast<int>(bound.size()), bound.data()) > 0)
        s->port_ = bound[0].port;
    for (auto& [path, handler] : routes) {
        s->handlers_.push_back(std::make_unique<Handler>(std::move(handler)));
        mg_set_request_handler(s->ctx_, path.c_str(), &HttpServer::serve,
                               s->handlers_.back().get());
    }
    return s;
}

void stop_civetweb(::mg_context* ctx, int port) {
    if (!ctx) return;
    std::atomic<bool> stopped{false};
    std::thread stopper([&] {
        mg_stop(ctx);
        stopped = true;
    });
    sockaddr_in loopback{};
    loopback.sin_family = AF_INET;
    loopback.sin_port = htons(static_cast<std::uint16_t>(port));
    loopback.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while (!stopped && port > 0) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            (void)::connect(fd, reinterpret_cast<const sockaddr*>(&loopback), sizeof loopback);
            ::close(fd);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stopper.join();
}

HttpServer::~HttpServer() {
    stop_civetweb(ctx_, port_);
}

int HttpServer::serve(::mg_connection* conn, void* handler) {
    const char* m = mg_get_request_info(conn)->request_method;
    if (std::strcmp(m, "GET") != 0 && std::strcmp(m, "HEAD") != 0)
        return reply(conn, {405, kPlainTextType, "only GET and HEAD\n"});
    return reply(conn, (*static_cast<Handler*>(handler))());
}

}  // namespace k8s
