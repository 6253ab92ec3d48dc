// SPDX-License-Identifier: Apache-2.0
// enflame-gcu-exporter's pod attribution (device-plugin IDs, DRA device names) from answers of
// a real pod-resources gRPC server on a temp socket, and a collector following kubelet's
// restarts and absence.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "exporter/attribution.hpp"
#include "exporter/collector.hpp"
#include "exporter_fixture.hpp"
#include "k8s/proto/podresources_v1.grpc.pb.h"
#include "k8s/socket.hpp"
#include "temp_dir.hpp"

// In exporter_test: its helpers (exporter_fixture.hpp) and exporter's types by their names.
namespace exporter_test {
namespace {

// --- attribution ---

std::vector<CardIdentity> ids() {
    std::vector<CardIdentity> out;
    for (std::uint32_t i = 0; i < 4; ++i) {
        CardIdentity c;
        c.index = i;
        c.minor = i;
        c.uuid = "TR6Y4601000" + std::to_string(i);
        out.push_back(c);
    }
    out[3].drs = {{3, 0, "1g.11gb", "a1b2-0"}, {3, 1, "1g.11gb", "a1b2-1"}};
    out[2].drs = {{2, 0, "1g.11gb"}, {2, 1, "1g.11gb"}};  // efsmi gave these no UUID
    return out;
}

TEST(Attribution, DevicePluginIds) {
    const auto cards = ids();
    struct Case {
        const char* name;
        const char* id;
        std::optional<std::uint32_t> want;
    };
    const std::vector<Case> cases{
        {"uuid", "TR6Y46010002", 2U},
        {"index", "1", 1U},
        {"uuid-replica", "TR6Y46010002::3", 2U},
        {"index-replica", "0::15", 0U},
        {"drs-instance", "DRS-a1b2-1", 3U},
        {"unknown-drs", "DRS-zzzz", std::nullopt},
        {"drs-without-uuid", "2:1g.11gb:1", 2U},
        {"drs-without-uuid-unknown-instance", "2:1g.11gb:7", std::nullopt},
        {"drs-without-uuid-another-card", "3:1g.11gb:1", std::nullopt},
        {"unknown-uuid", "TR6Y46019999", std::nullopt},
        {"index-out-of-range", "7", std::nullopt},
        {"replica-suffix-not-a-number", "TR6Y46010002::x", std::nullopt},
        {"empty", "", std::nullopt},
    };
    for (const auto& c : cases)
        EXPECT_EQ(exporter::card_of_device_id(c.id, cards), c.want) << c.name;
}

TEST(Attribution, DraDeviceNames) {
    EXPECT_EQ(exporter::card_of_dra_device("gcu-0"), 0U);
    EXPECT_EQ(exporter::card_of_dra_device("gcu-12"), 12U);
    EXPECT_EQ(exporter::card_of_dra_device("gcu-3-1g.11gb-0"), 3U);
    EXPECT_EQ(exporter::card_of_dra_device("gpu-0"), std::nullopt);
    EXPECT_EQ(exporter::card_of_dra_device("gcu-"), std::nullopt);
    EXPECT_EQ(exporter::card_of_dra_device("gcu-x"), std::nullopt);
}

v1::ContainerResources* container(v1::ListPodResourcesResponse& r, const std::string& pod,
                                  const std::string& ns, const std::string& name) {
    auto* p = r.add_pod_resources();
    p->set_name(pod);
    p->set_namespace_(ns);
    auto* c = p->add_containers();
    c->set_name(name);
    return c;
}

void devices(v1::ContainerResources* c, const std::string& resource,
             std::vector<std::string> device_ids) {
    auto* d = c->add_devices();
    d->set_resource_name(resource);
    for (auto& id : device_ids) d->add_device_ids(std::move(id));
}

void claim(v1::ContainerResources* c, const std::string& driver, const std::string& device) {
    auto* cr = c->add_dynamic_resources()->add_claim_resources();
    cr->set_driver_name(driver);
    cr->set_pool_name("node-a");
    cr->set_device_name(device);
}

v1::ListPodResourcesResponse mixed_answer() {
    v1::ListPodResourcesResponse r;
    // Two replicas of card 0 in one container: it holds the card once.
    devices(container(r, "train", "ml", "worker"), "enflame.com/gcu",
            {"TR6Y46010000::0", "TR6Y46010000::1"});
    devices(container(r, "infer", "ml", "server"), "enflame.com/gcu", {"1"});
    devices(container(r, "slice", "ml", "main"), "enflame.com/drs-1g.11gb", {"DRS-a1b2-0"});
    claim(container(r, "dra", "batch", "job"), "gcu.enflame.com", "gcu-2");
    claim(container(r, "dra-slice", "batch", "job"), "gcu.enflame.com", "gcu-3-1g.11gb-1");
    // Not ours: another vendor's resource with an ID that looks like ours, another DRA driver,
    // a resource merely starting with our domain's letters, a card we do not see.
    devices(container(r, "cuda", "ml", "c"), "nvidia.com/gpu", {"0", "TR6Y46010001"});
    claim(container(r, "other", "ml", "c"), "gpu.nvidia.com", "gcu-1");
    devices(container(r, "fake", "ml", "c"), "enflame.company/gcu", {"1"});
    devices(container(r, "ghost", "ml", "c"), "enflame.com/gcu", {"TR6Y46017777"});
    claim(container(r, "ghost-dra", "ml", "c"), "gcu.enflame.com", "gcu-9");
    return r;
}

TEST(Attribution, ListAnswerMapsToCards) {
    const auto got = exporter::attribute(mixed_answer(), ids());
    const std::map<std::uint32_t, std::vector<Holder>> want{
        {0, {{"train", "ml", "worker"}}},
        {1, {{"infer", "ml", "server"}}},
        {2, {{"dra", "batch", "job"}}},
        {3, {{"dra-slice", "batch", "job"}, {"slice", "ml", "main"}}},
    };
    EXPECT_EQ(got, want);
}

// A real pod-resources server on a temp socket (the shape kubelet serves).
class Lister final : public v1::PodResourcesLister::Service {
public:
    explicit Lister(v1::ListPodResourcesResponse r) : r_(std::move(r)) {}
    grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                      v1::ListPodResourcesResponse* out) override {
        *out = r_;
        return grpc::Status::OK;
    }

private:
    v1::ListPodResourcesResponse r_;
};

TEST(Collector, HoldersFromThePodResourcesSocketBecomePodLabels) {
    k8s_test::TempDir dir;
    v1::ListPodResourcesResponse r;
    devices(container(r, "train", "ml", "worker"), "enflame.com/gcu", {"TR6Y46010001"});
    devices(container(r, "train", "ml", "sidecar"), "enflame.com/gcu", {"TR6Y46010001"});
    Lister lister(r);
    auto server = k8s::serve_unix(dir.path() + "/kubelet.sock", {&lister});
    ASSERT_TRUE(server) << server.error().what();
    auto d = two_cards();
    auto c = collector(d, dir.path() + "/kubelet.sock");
    c->collect();
    EXPECT_EQ(series(*c->text(), "enflame_gcu_usage"),
              (std::vector<std::string>{
                  line("enflame_gcu_usage", std::string(kCard0) + "," + kNobody, "42"),
                  line("enflame_gcu_usage",
                       std::string(kCard1) +
                           R"(,pod_name="train",pod_namespace="ml",container_name="sidecar")",
                       "42"),
                  line("enflame_gcu_usage",
                       std::string(kCard1) +
                           R"(,pod_name="train",pod_namespace="ml",container_name="worker")",
                       "42")}));
    k8s::stop_unix(*server, std::chrono::milliseconds(100));
}

TEST(Collector, AKubeletRestartBetweenPassesIsFollowedInTheSamePass) {
    k8s_test::TempDir dir;
    const std::string sock = dir.path() + "/kubelet.sock";
    v1::ListPodResourcesResponse first, second;
    devices(container(first, "old", "ml", "c"), "enflame.com/gcu", {"TR6Y46010000"});
    devices(container(second, "new", "ml", "c"), "enflame.com/gcu", {"TR6Y46010000"});
    Lister a(first), b(second);
    auto server = k8s::serve_unix(sock, {&a});
    ASSERT_TRUE(server) << server.error().what();
    auto d = two_cards();
    auto c = collector(d, sock);
    EXPECT_EQ(c->collect().cards[0].holders, (std::vector<Holder>{{"old", "ml", "c"}}));
    // kubelet restarts: its socket goes and a new one (a new server) takes the path.
    k8s::stop_unix(*server, std::chrono::milliseconds(100));
    server = k8s::serve_unix(sock, {&b});
    ASSERT_TRUE(server) << server.error().what();
    EXPECT_EQ(c->collect().cards[0].holders, (std::vector<Holder>{{"new", "ml", "c"}}));
    k8s::stop_unix(*server, std::chrono::milliseconds(100));
}

TEST(Collector, NoKubeletMeansNoAttributionAndOneLogLine) {
    k8s_test::TempDir dir;
    std::ostringstream log;
    auto logger = std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_st>(log));
    auto old = spdlog::default_logger();
    spdlog::set_default_logger(logger);
    auto d = two_cards();
    auto c = collector(d, dir.path() + "/kubelet.sock");
    for (int i = 0; i < 3; ++i) c->collect();
    spdlog::set_default_logger(old);
    const std::string text = log.str();
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2)
        << text;  // "discovered" + one for pod-resources
    EXPECT_NE(
        text.find("pod attribution off: pod-resources socket '" + dir.path() + "/kubelet.sock'"),
        std::string::npos)
        << text;
    EXPECT_EQ(series(*c->text(), "enflame_gcu_usage").size(), 2U);
}

}  // namespace
}  // namespace exporter_test
