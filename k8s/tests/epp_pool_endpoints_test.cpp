// SPDX-License-Identifier: Apache-2.0
// The standalone endpoint list (--endpoints host:port[@namespace/pod],...) and the flag rules
// of epp::EndpointSource::create: each bad entry refused with one line naming it and why.
#include <gtest/gtest.h>

#include "epp/pool/endpoint_source.hpp"

namespace {

TEST(Endpoints, ParsesAddressesPodsAndTheExporter) {
    auto ts = epp::parse_endpoints("127.0.0.1:8001, model-b:8002@serving/llama-0,[::1]:8003",
                                   "http://127.0.0.1:9400/metrics");
    ASSERT_TRUE(ts) << ts.error().what();
    ASSERT_EQ(ts->size(), 3u);
    EXPECT_EQ((*ts)[0].address, "127.0.0.1:8001");
    EXPECT_EQ((*ts)[0].metrics_url, "http://127.0.0.1:8001/metrics");
    EXPECT_EQ((*ts)[0].pod, "");
    EXPECT_EQ((*ts)[1].address, "model-b:8002");
    EXPECT_EQ((*ts)[1].ns, "serving");
    EXPECT_EQ((*ts)[1].pod, "llama-0");
    EXPECT_EQ((*ts)[2].address, "[::1]:8003");
    EXPECT_EQ((*ts)[2].metrics_url, "http://[::1]:8003/metrics");
    for (const auto& t : *ts) EXPECT_EQ(t.gcu_metrics_url, "http://127.0.0.1:9400/metrics");
}

TEST(Endpoints, RefusesEachBadEntryNamingIt) {
    struct Case {
        std::string name, list, exporter, error;
    };
    const std::vector<Case> cases{
        {"NoPort", "10.0.0.1", "", "--endpoints entry '10.0.0.1': want host:port[@namespace/pod]"},
        {"PortZero", "10.0.0.1:0", "",
         "--endpoints entry '10.0.0.1:0': port '0' is not a number from 1 to 65535"},
        {"PortTooBig", "10.0.0.1:65536", "",
         "--endpoints entry '10.0.0.1:65536': port '65536' is not a number from 1 to 65535"},
        {"PortNotNumber", "10.0.0.1:80x", "",
         "--endpoints entry '10.0.0.1:80x': port '80x' is not a number from 1 to 65535"},
        {"NoHost", ":8000", "", "--endpoints entry ':8000': no host"},
        {"Ipv6Bare", "::1:8000", "",
         "--endpoints entry '::1:8000': an IPv6 address wants brackets"},
        {"Ipv6Unclosed", "[::1:8000", "", "--endpoints entry '[::1:8000': want [ipv6]:port"},
        {"EmptyEntry", "10.0.0.1:80,,10.0.0.2:80", "",
         "--endpoints '10.0.0.1:80,,10.0.0.2:80': an empty entry"},
        {"PodNoNamespace", "10.0.0.1:80@llama-0", "",
         "--endpoints entry '10.0.0.1:80@llama-0': want @namespace/pod after the address, each "
         "a DNS-1123 name"},
        {"PodUpperCase", "10.0.0.1:80@ns/Llama", "",
         "--endpoints entry '10.0.0.1:80@ns/Llama': want @namespace/pod after the address, "
         "each a DNS-1123 name"},
        {"Twice", "10.0.0.1:80,10.0.0.1:80", "",
         "--endpoints entry '10.0.0.1:80': the address is listed twice"},
        {"ExporterNotUrl", "10.0.0.1:80", "10.0.0.9:9400",
         "--gcu-exporter '10.0.0.9:9400': want an http:// or https:// URL"},
    };
    for (const auto& c : cases) {
        auto ts = epp::parse_endpoints(c.list, c.exporter);
        ASSERT_FALSE(ts) << c.name;
        EXPECT_EQ(ts.error().code(), inject::Errc::InvalidInput) << c.name;
        EXPECT_EQ(ts.error().what(), c.error) << c.name;
    }
}

TEST(EndpointSource, WantsExactlyOneOfEndpointsAndPoolName) {
    epp::PoolOptions neither;
    auto s = epp::EndpointSource::create(neither);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().what(), std::string("want exactly one of --endpoints and --pool-name"));
    epp::PoolOptions both;
    both.endpoints = "10.0.0.1:80";
    both.pool_name = "llama";
    s = epp::EndpointSource::create(both);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().what(), std::string("want exactly one of --endpoints and --pool-name"));
}

TEST(EndpointSource, RefusesBadPoolNamesBeforeTouchingTheApiServer) {
    struct Case {
        std::string name, pool, ns, error;
    };
    const std::vector<Case> cases{
        {"UpperPool", "Llama", "default", "--pool-name 'Llama': not a DNS-1123 subdomain"},
        {"SlashPool", "a/b", "default", "--pool-name 'a/b': not a DNS-1123 subdomain"},
        {"DotNamespace", "llama", "my.ns", "--pool-namespace 'my.ns': not a DNS-1123 label"},
        {"EmptyNamespace", "llama", "", "--pool-namespace '': not a DNS-1123 label"},
    };
    for (const auto& c : cases) {
        epp::PoolOptions o;
        o.pool_name = c.pool;
        o.pool_namespace = c.ns;
        o.kubeconfig = "/nonexistent/kubeconfig";
        auto s = epp::EndpointSource::create(o);
        ASSERT_FALSE(s) << c.name;
        EXPECT_EQ(s.error().what(), c.error) << c.name;
    }
}

TEST(EndpointSource, StandaloneIsSyncedAndHandsTheListOnAtStart) {
    epp::PoolOptions o;
    o.endpoints = "127.0.0.1:8001,127.0.0.1:8002@default/b";
    auto s = epp::EndpointSource::create(o);
    ASSERT_TRUE(s) << s.error().what();
    std::vector<epp::Target> got;
    int calls = 0;
    (*s)->start([&](std::vector<epp::Target> t) { got = std::move(t), ++calls; }, {}, {});
    EXPECT_TRUE((*s)->synced());
    EXPECT_EQ(calls, 1);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].pod, "b");
    (*s)->stop();
}

}  // namespace
