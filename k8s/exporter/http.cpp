// SPDX-License-Identifier: Apache-2.0
#include "exporter/http.hpp"

#include <arpa/inet.h>

#include <array>
#include <charconv>

namespace exporter {
namespace {

using inject::Errc;

k8s::HttpServer::Reply metrics_reply(const Collector& c) {
    const auto text = c.text();
    if (!text) return {503, k8s::kPlainTextType, "no collection yet\n"};
    return {200, k8s::kPrometheusTextType, *text};
}

k8s::HttpServer::Reply healthz_reply(const Collector& c) {
    const auto since = c.since_last();
    if (!since) return {503, k8s::kPlainTextType, "no collection yet\n"};
    if (*since > 3 * c.interval())
        return {503, k8s::kPlainTextType,
                "collector stalled: last pass " + std::to_string(since->count()) + " ms ago\n"};
    return {200, k8s::kPlainTextType, "ok\n"};
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
    const Collector* c = &collector;
    INJECT_TRY(auto server,
               k8s::HttpServer::start(ports, "--web.listen-address '" + std::string(address) + "'",
                                      {{"/metrics", [c] { return metrics_reply(*c); }},
                                       {"/healthz", [c] { return healthz_reply(*c); }}}));
    return std::unique_ptr<HttpServer>(new HttpServer(std::move(server)));
}

}  // namespace exporter
