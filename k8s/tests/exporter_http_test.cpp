// SPDX-License-Identifier: Apache-2.0
// enflame-gcu-exporter's HTTP side: the listen addresses it takes, /metrics serving the last
// collection, /healthz following the collector, an address in use.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "exporter/collector.hpp"
#include "exporter/http.hpp"
#include "exporter_fixture.hpp"

// In exporter_test: its helpers (exporter_fixture.hpp) and exporter's types by their names.
namespace exporter_test {
namespace {

// --- HTTP ---

TEST(ListenAddress, FormsCivetwebTakesAndOneLineErrors) {
    EXPECT_EQ(*exporter::listening_ports(":9400"), "9400");
    EXPECT_EQ(*exporter::listening_ports("127.0.0.1:9400"), "127.0.0.1:9400");
    EXPECT_EQ(*exporter::listening_ports("[::1]:9400"), "[::1]:9400");
    struct Case {
        const char* address;
        const char* error;
    };
    const std::vector<Case> cases{
        {"9400", "--web.listen-address '9400': no port (want [ip]:port, e.g. :9400)"},
        {":0", "--web.listen-address ':0': bad port '0' (want [ip]:port, e.g. :9400)"},
        {":70000", "--web.listen-address ':70000': bad port '70000' (want [ip]:port, e.g. :9400)"},
        {"localhost:9400",
         "--web.listen-address 'localhost:9400': 'localhost' is not an IP address (want [ip]:port, "
         "e.g. :9400)"},
        {"[::g]:9400",
         "--web.listen-address '[::g]:9400': bad IPv6 address (want [ip]:port, e.g. :9400)"},
    };
    for (const auto& c : cases) {
        const auto r = exporter::listening_ports(c.address);
        ASSERT_FALSE(r) << c.address;
        EXPECT_EQ(r.error().what(), std::string(c.error));
    }
}

struct Response {
    int status = 0;
    std::string body;
};

Response get(int port, const std::string& path, const std::string& method = "GET") {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    Response r;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
        const std::string req = method + " " + path + " HTTP/1.0\r\n\r\n";
        (void)!::write(fd, req.data(), req.size());
        std::string all;
        char buf[4096];
        for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
            all.append(buf, static_cast<std::size_t>(n));
        if (all.starts_with("HTTP/1.")) r.status = std::stoi(all.substr(9, 3));
        if (const auto end = all.find("\r\n\r\n"); end != std::string::npos)
            r.body = all.substr(end + 4);
    }
    ::close(fd);
    return r;
}

// An HTTP server on a free port (civetweb cannot bind port 0: random ports, retried).
std::pair<std::unique_ptr<exporter::HttpServer>, int> serve(const Collector& c) {
    std::mt19937 rng(std::random_device{}());
    for (int i = 0; i < 50; ++i) {
        const int port = std::uniform_int_distribution<int>(20000, 60000)(rng);
        auto s = exporter::HttpServer::start("127.0.0.1:" + std::to_string(port), c);
        if (s) return {std::move(*s), port};
    }
    return {nullptr, 0};
}

TEST(Http, MetricsServesTheLastCollectionAndHealthzFollowsTheCollector) {
    auto d = two_cards();
    CollectorOptions o;
    o.host = "node-a";
    o.interval = std::chrono::milliseconds(100);
    Collector c(std::make_unique<FakeSource>(d), o);
    auto [server, port] = serve(c);
    ASSERT_TRUE(server);
    // Before the first pass: nothing to serve yet, and not healthy.
    EXPECT_EQ(get(port, "/metrics").status, 503);
    EXPECT_EQ(get(port, "/healthz").status, 503);
    c.collect();
    const auto m = get(port, "/metrics");
    EXPECT_EQ(m.status, 200);
    EXPECT_EQ(m.body, *c.text());
    EXPECT_EQ(series(m.body, "enflame_gcu_usage").size(), 2U);
    const auto h = get(port, "/healthz");
    EXPECT_EQ(h.status, 200);
    EXPECT_EQ(h.body, "ok\n");
    EXPECT_EQ(get(port, "/nothing-here").status, 404);
    EXPECT_EQ(get(port, "/metrics", "POST").status, 405);
    // Three intervals without a pass: the collector is stuck.
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    const auto stale = get(port, "/healthz");
    EXPECT_EQ(stale.status, 503);
    EXPECT_TRUE(stale.body.starts_with("collector stalled: last pass ")) << stale.body;
    // The collector's own thread keeps it fresh.
    c.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    EXPECT_EQ(get(port, "/healthz").status, 200);
    c.stop();
}

TEST(Http, AnAddressInUseIsAnErrorNamingIt) {
    auto d = two_cards();
    Collector c(std::make_unique<FakeSource>(d), CollectorOptions{});
    auto [server, port] = serve(c);
    ASSERT_TRUE(server);
    const std::string address = "127.0.0.1:" + std::to_string(port);
    const auto again = exporter::HttpServer::start(address, c);
    ASSERT_FALSE(again);
    EXPECT_TRUE(
        std::string(again.error().what()).starts_with("--web.listen-address '" + address + "': "))
        << again.error().what();
}

}  // namespace
}  // namespace exporter_test
