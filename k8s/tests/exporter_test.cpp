// SPDX-License-Identifier: Apache-2.0
// enflame-gcu-exporter's decisions without a driver: the exposition of fed samples, health
// values, cards and drivers going away, rediscovery, and pod attribution (device-plugin IDs,
// DRA device names) from answers of a real pod-resources gRPC server on a temp socket.
#include "attribution.hpp"
#include "collector.hpp"
#include "http.hpp"
#include "metrics.hpp"
#include "temp_dir.hpp"

#include "k8s/proto/podresources_v1.grpc.pb.h"
#include "k8s/socket.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <thread>

namespace {

using exporter::CardIdentity;
using exporter::Collector;
using exporter::CollectorOptions;
using exporter::Holder;
using inject::efml::Sample;

// A driver whose answers the test sets.
struct FakeDriver {
    std::optional<std::uint32_t> count;       ///< nullopt = the driver is gone
    std::map<std::uint32_t, Sample> samples;  ///< a card missing here fails its sample
    inject::device::Host host;
    bool discovery_fails = false;
    int discoveries = 0;
    std::map<std::string, std::string> slots;  ///< /sys/bus/pci/slots: address -> name
};

class FakeSource final : public exporter::Source {
public:
    explicit FakeSource(FakeDriver& d) : d_(d) {}
    inject::Result<std::uint32_t> count() override {
        if (!d_.count)
            return inject::fail(inject::Errc::Io, "EfmlGetDevCount: driver not loaded (6)");
        return *d_.count;
    }
    inject::Result<Sample> sample(std::uint32_t i) override {
        auto it = d_.samples.find(i);
        if (it == d_.samples.end())
            return inject::fail(inject::Errc::Io, "card " + std::to_string(i) + ": error (1)");
        return it->second;
    }
    inject::Result<inject::device::Host> discover() override {
        ++d_.discoveries;
        if (d_.discovery_fails) return inject::fail(inject::Errc::NotFound, "no efsmi");
        return d_.host;
    }
    std::map<std::string, std::string> pci_slots() override { return d_.slots; }

private:
    FakeDriver& d_;
};

Sample full_sample(std::uint32_t i) {
    Sample s;
    s.index = i;
    s.name = "Enflame S60";
    s.uuid = "EFML-U" + std::to_string(i);
    s.pci_bus_id = "0000:9" + std::to_string(i) + ":00.0";
    s.memory_total_bytes = 48ULL << 30;
    s.memory_used_bytes = 12ULL << 30;
    s.usage_percent = 42;
    s.temperature_c = 51.5;
    s.memory_temperature_c = 47;
    s.board_temperature_c = 39;
    s.power_w = 75;
    s.power_capability_w = 300;
    s.dtu_clock_mhz = 1400;
    s.hbm_clock_mhz = 1600;
    s.ecc_single_bit = 3;
    s.ecc_double_bit = 1;
    s.pcie_link_width = 8;
    s.pcie_max_link_width = 16;
    s.pcie_link_speed = 4;
    s.pcie_max_link_speed = 5;
    s.healthy = true;
    s.processes = {{4242, 1ULL << 30}};
    return s;
}

inject::device::Device card(std::uint32_t i, std::uint32_t minor) {
    inject::device::Device d;
    d.index = i;
    d.minor = minor;
    d.uuid = "TR6Y4601000" + std::to_string(i);
    d.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
    d.product = "S60";
    return d;
}

// Two cards: discovery names them (minors 4 and 7), libefml reads them.
FakeDriver two_cards() {
    FakeDriver d;
    d.count = 2;
    d.host.driver_version = "1.4.3.4";
    d.host.devices = {card(0, 4), card(1, 7)};
    d.samples = {{0, full_sample(0)}, {1, full_sample(1)}};
    d.slots = {{"0000:10:00", "PCIE3_GPU"}, {"0000:99:00", "PCIE9"}};  // card 1's slot unnamed
    return d;
}

std::unique_ptr<Collector> collector(FakeDriver& d, std::string socket = "") {
    CollectorOptions o;
    o.host = "node-a";
    o.pod_resources_socket = std::move(socket);
    o.pod_resources_timeout = std::chrono::milliseconds(1000);
    return std::make_unique<Collector>(std::make_unique<FakeSource>(d), o);
}

const char* kCard0 =
    R"(host="node-a",minor_number="4",uuid="TR6Y46010000",busid="0000:10:00.0",slot="PCIE3_GPU",name="S60")";
const char* kCard1 =
    R"(host="node-a",minor_number="7",uuid="TR6Y46010001",busid="0000:11:00.0",slot="N/A",name="S60")";
const char* kNobody = R"(pod_name="",pod_namespace="",container_name="")";

// The sample lines of metric `name` in an exposition.
std::vector<std::string> series(const std::string& text, const std::string& name) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with(name + "{") || line.starts_with(name + " ")) out.push_back(line);
    }
    return out;
}

std::string line(const std::string& name, const std::string& labels, const std::string& value) {
    return name + "{" + labels + "} " + value;
}

TEST(Exposition, EveryReadingOfFedSamplesWithGcuExporterNamesAndLabels) {
    auto d = two_cards();
    auto c = collector(d);
    c->collect();
    const std::string text = *c->text();
    const std::string l0 = std::string(kCard0) + "," + kNobody;
    struct Want {
        const char* name;
        std::string extra;
        const char* value;
    };
    const std::vector<Want> wants{
        {"enflame_gcu_usage", "", "42"},
        {"enflame_gcu_memory_usage", "", "0.25"},
        {"enflame_gcu_memory_used_bytes", "", "12884901888"},
        {"enflame_gcu_memory_total_bytes", "", "51539607552"},
        {"enflame_gcu_temperatures", "", "51.5"},
        {"enflame_gcu_memory_temperature", "", "47"},
        {"enflame_gcu_board_temperature", "", "39"},
        {"enflame_gcu_power_usage", "", "25"},
        {"enflame_gcu_power_consumption", "", "75"},
        {"enflame_gcu_power_capability", "", "300"},
        {"enflame_gcu_clock", R"(,power_mode="not supported")", "1400"},
        {"enflame_gcu_hbm_clock", "", "1600"},
        {"enflame_gcu_health", R"(,healthmsg="Healthy")", "2"},
        {"enflame_gcu_ecc_single_bit_error_total_count", "", "3"},
        {"enflame_gcu_ecc_double_bit_error_total_count", "", "1"},
        {"enflame_gcu_pcie_link_width", "", "8"},
        {"enflame_gcu_pcie_max_link_width", "", "16"},
        {"enflame_gcu_pcie_link_speed", "", "4"},
        {"enflame_gcu_pcie_max_link_speed", "", "5"},
        {"enflame_gcu_info", R"(,driver_version="1.4.3.4")", "1"},
    };
    for (const auto& w : wants) {
        const auto got = series(text, w.name);
        EXPECT_NE(std::find(got.begin(), got.end(), line(w.name, l0 + w.extra, w.value)), got.end())
            << w.name << w.extra << " not " << w.value << " in:\n"
            << text;
        EXPECT_NE(text.find(std::string("# TYPE ") + w.name + " gauge\n"), std::string::npos)
            << w.name;
        EXPECT_NE(text.find(std::string("# HELP ") + w.name + " "), std::string::npos) << w.name;
    }
    EXPECT_EQ(series(text, "enflame_gcu_count"),
              std::vector<std::string>{R"(enflame_gcu_count{host="node-a"} 2)"});
    EXPECT_EQ(series(text, "enflame_gcu_exporter_up"),
              std::vector<std::string>{R"(enflame_gcu_exporter_up{host="node-a"} 1)"});
    EXPECT_EQ(
        series(text, "enflame_gcu_process_memory_used_bytes"),
        (std::vector<std::string>{line("enflame_gcu_process_memory_used_bytes",
                                       std::string(kCard0) + R"(,pid="4242")", "1073741824"),
                                  line("enflame_gcu_process_memory_used_bytes",
                                       std::string(kCard1) + R"(,pid="4242")", "1073741824")}));
    EXPECT_EQ(series(text, "enflame_gcu_usage").size(), 2U);
    // Each family's HELP and TYPE once, even where several readings share the name.
    std::size_t pos = 0;
    int types = 0;
    while ((pos = text.find("# TYPE enflame_gcu_temperatures ", pos)) != std::string::npos)
        ++types, ++pos;
    EXPECT_EQ(types, 1);
}

TEST(Exposition, OneSeriesPerDrsInstanceNamedAsTheDevicePluginAdvertisesIt) {
    auto d = two_cards();
    d.host.devices[0].drs_instances = {{0, 1, "1g.11gb"}, {0, 2, "2g.22gb", "a1b2"}};
    auto c = collector(d);
    c->collect();
    EXPECT_EQ(
        series(*c->text(), "enflame_gcu_drs_instance_info"),
        (std::vector<std::string>{
            line("enflame_gcu_drs_instance_info",
                 std::string(kCard0) + R"(,drs_id="0:1g.11gb:1",profile="1g.11gb",instance_id="1")",
                 "1"),
            line("enflame_gcu_drs_instance_info",
                 std::string(kCard0) + R"(,drs_id="DRS-a1b2",profile="2g.22gb",instance_id="2")",
                 "1")}));
}

TEST(Exposition, AReadingTheLibraryCannotGiveHasNoSeries) {
    auto d = two_cards();
    d.samples[0].temperature_c.reset();
    d.samples[0].power_capability_w.reset();  // power_usage needs it too
    d.samples[0].ecc_single_bit.reset();
    d.samples[0].processes.clear();
    auto c = collector(d);
    c->collect();
    const std::string text = *c->text();
    for (const char* name : {"enflame_gcu_power_capability", "enflame_gcu_power_usage",
                             "enflame_gcu_ecc_single_bit_error_total_count",
                             "enflame_gcu_process_memory_used_bytes"}) {
        const auto got = series(text, name);
        EXPECT_TRUE(std::none_of(
            got.begin(), got.end(),
            [](const std::string& l) { return l.find("minor_number=\"4\"") != std::string::npos; }))
            << name << " has card 0 in:\n"
            << text;
        EXPECT_EQ(got.size(), 1U) << name;
    }
    // card 0 has no ASIC temperature: no enflame_gcu_temperatures, its other sensors stay
    EXPECT_EQ(series(text, "enflame_gcu_temperatures").size(), 1U);
    EXPECT_EQ(series(text, "enflame_gcu_memory_temperature").size(), 2U);
}

TEST(Health, TwoHealthyOneUnhealthyZeroUnknown) {
    EXPECT_EQ(exporter::health_value(true), 2);
    EXPECT_EQ(exporter::health_value(false), 1);
    EXPECT_EQ(exporter::health_value(std::nullopt), 0);
    auto d = two_cards();
    d.samples[0].healthy = false;
    d.samples[1].healthy.reset();
    auto c = collector(d);
    c->collect();
    EXPECT_EQ(series(*c->text(), "enflame_gcu_health"),
              (std::vector<std::string>{
                  line("enflame_gcu_health",
                       std::string(kCard0) + "," + kNobody + R"(,healthmsg="Unhealthy")", "1"),
                  line("enflame_gcu_health",
                       std::string(kCard1) + "," + kNobody + R"(,healthmsg="Unknown")", "0")}));
}

TEST(Collector, DriverGoneTakesEveryCardSeriesAwayAndBackAgain) {
    auto d = two_cards();
    auto c = collector(d);
    c->collect();
    d.count.reset();
    auto s = c->collect();
    EXPECT_TRUE(s.cards.empty());
    const std::string gone = *c->text();
    EXPECT_TRUE(series(gone, "enflame_gcu_usage").empty()) << gone;
    EXPECT_TRUE(series(gone, "enflame_gcu_health").empty()) << gone;
    EXPECT_EQ(series(gone, "enflame_gcu_count"),
              std::vector<std::string>{R"(enflame_gcu_count{host="node-a"} 0)"});
    EXPECT_EQ(series(gone, "enflame_gcu_exporter_up"),
              std::vector<std::string>{R"(enflame_gcu_exporter_up{host="node-a"} 1)"});
    d.count = 2;
    c->collect();
    EXPECT_EQ(series(*c->text(), "enflame_gcu_usage").size(), 2U);
    EXPECT_EQ(series(*c->text(), "enflame_gcu_count"),
              std::vector<std::string>{R"(enflame_gcu_count{host="node-a"} 2)"});
}

TEST(Collector, ACardThatCannotBeReadLosesOnlyItsOwnSeries) {
    auto d = two_cards();
    d.samples.erase(0);
    auto c = collector(d);
    const auto s = c->collect();
    ASSERT_EQ(s.cards.size(), 1U);
    EXPECT_EQ(s.cards[0].id.index, 1U);
    EXPECT_EQ(series(*c->text(), "enflame_gcu_usage"),
              std::vector<std::string>{
                  line("enflame_gcu_usage", std::string(kCard1) + "," + kNobody, "42")});
    EXPECT_EQ(series(*c->text(), "enflame_gcu_count"),
              std::vector<std::string>{R"(enflame_gcu_count{host="node-a"} 1)"});
}

TEST(Collector, RediscoversOnlyWhenTheCardCountChanges) {
    auto d = two_cards();
    auto c = collector(d);
    c->collect();
    c->collect();
    EXPECT_EQ(d.discoveries, 1);
    d.count = 3;
    d.host.devices.push_back(card(2, 9));
    d.samples[2] = full_sample(2);
    const auto s = c->collect();
    EXPECT_EQ(d.discoveries, 2);
    ASSERT_EQ(s.cards.size(), 3U);
    EXPECT_EQ(s.cards[2].id.minor, 9U);
    EXPECT_EQ(s.cards[2].id.uuid, "TR6Y46010002");
    c->collect();
    EXPECT_EQ(d.discoveries, 2);
}

TEST(Collector, WithoutDiscoveryCardsAreLabelledFromLibefmlWithoutAMinor) {
    auto d = two_cards();
    d.discovery_fails = true;
    auto c = collector(d);
    c->collect();
    EXPECT_EQ(
        series(*c->text(), "enflame_gcu_usage")[0],
        line(
            "enflame_gcu_usage",
            std::string(
                R"(host="node-a",minor_number="",uuid="EFML-U0",busid="0000:90:00.0",slot="N/A",name="Enflame S60",)") +
                kNobody,
            "42"));
}

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
