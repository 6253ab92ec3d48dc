// SPDX-License-Identifier: Apache-2.0
// The ResourceSlice publisher against fake_apiserver.py: from empty, after kubelet deleted the
// slices, on a card set or health change, with a conflict in the way, remove_all, and the
// background loop. The fake's write log is what the API server saw, in order.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "dra/publisher.hpp"
#include "dra_hosts.hpp"
#include "fake_apiserver.hpp"

namespace {

using dra::Json;
using dra::Publisher;
using dra::PublishStats;
using dra::SliceOptions;
using k8s_test::FakeApiServer;
using k8s_test::s60_host;

struct Env {
    explicit Env(const std::string& versions = "v1,v1beta1", int max_devices = 128,
                 const std::vector<std::string>& fake_flags = {})
        : fake(versions, fake_flags) {
        if (!fake.up()) return;
        auto c = k8s::api::Client::create(fake.config());
        if (!c) return;
        client = std::move(*c);
        auto v = client->resource_api_version();
        opts.node_name = "node-a";
        opts.api_version = v ? *v : "none";
        opts.max_devices = static_cast<std::size_t>(max_devices);
    }
    [[nodiscard]] Publisher publisher() const { return Publisher(client, opts); }
    [[nodiscard]] std::string collection() const {
        return "/apis/resource.k8s.io/" + opts.api_version + "/resourceslices";
    }
    /// Our slices as the server has them, by name.
    [[nodiscard]] Json ours() const {
        auto r = client->list(collection(), "", "spec.nodeName=node-a,spec.driver=gcu.enflame.com");
        return r ? (*r)["items"] : Json();
    }
    /// The device names the server offers for node-a at the pool's highest generation: what the
    /// scheduler would see.
    [[nodiscard]] std::vector<std::string> offered() const {
        std::int64_t top = 0;
        const Json items = ours();
        for (const auto& s : items)
            top = std::max<std::int64_t>(top, s["spec"]["pool"]["generation"]);
        std::vector<std::string> names;
        for (const auto& s : items)
            if (s["spec"]["pool"]["generation"] == top)
                for (const auto& d : s["spec"].value("devices", Json::array()))
                    names.push_back(d["name"]);
        std::sort(names.begin(), names.end());
        return names;
    }
    /// "VERB name" of each write since `from`.
    [[nodiscard]] std::vector<std::string> writes(std::size_t from = 0) const {
        std::vector<std::string> out;
        const auto w = fake.writes();
        for (std::size_t i = from; i < w.size(); ++i) {
            const std::string path = w[i]["path"];
            const std::string verb = w[i]["verb"];
            out.push_back(verb + " " +
                          (verb == "POST" ? std::string(w[i]["body"]["metadata"]["name"])
                                          : path.substr(path.rfind('/') + 1)));
        }
        return out;
    }

    FakeApiServer fake;
    std::shared_ptr<k8s::api::Client> client;
    SliceOptions opts;
};

void expect_stats(const inject::Result<PublishStats>& r, int created, int updated, int deleted,
                  int unchanged, std::int64_t generation) {
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->created, created);
    EXPECT_EQ(r->updated, updated);
    EXPECT_EQ(r->deleted, deleted);
    EXPECT_EQ(r->unchanged, unchanged);
    EXPECT_EQ(r->generation, generation);
}

TEST(DraPublisher, FromEmptyPostsTheBuiltSlicesOnce) {
    Env env;
    ASSERT_TRUE(env.client);
    auto p = env.publisher();
    expect_stats(p.publish(s60_host(2, false)), 1, 0, 0, 0, 1);
    const auto w = env.fake.writes();
    ASSERT_EQ(w.size(), 1U);
    EXPECT_EQ(w[0]["path"], "/apis/resource.k8s.io/v1/resourceslices");
    SliceOptions o = env.opts;
    o.generation = 1;
    o.node_uid = "node-uid-node-a";  // the fake's Node
    EXPECT_EQ(w[0]["body"], dra::build_slices(s60_host(2, false), o)[0])
        << "what the server got is the golden shape";
    EXPECT_EQ(
        w[0]["body"]["metadata"].value("ownerReferences", Json::array({Json::object()}))[0].value(
            "uid", ""),
        "node-uid-node-a");
    expect_stats(p.publish(s60_host(2, false)), 0, 0, 0, 1, 1);
    EXPECT_EQ(env.fake.writes().size(), 1U) << "nothing changed: nothing written";
}

// The server stores canonical quantities and leaves empty lists out: a publish that compared
// with what it sent instead would rewrite the pool on every resync.
TEST(DraPublisher, QuietAgainstTheServersNormalForm) {
    Env env;
    ASSERT_TRUE(env.client);
    auto p = env.publisher();
    auto host = s60_host(1, false);
    host.devices[0].memory_bytes = 32000ULL * 1024 * 1024;  // "33554432k" once stored
    expect_stats(p.publish(host), 1, 0, 0, 0, 1);
    EXPECT_EQ(env.ours()[0]["spec"]["devices"][0]["capacity"]["memory"]["value"], "33554432k");
    expect_stats(p.publish(host), 0, 0, 0, 1, 1);
    expect_stats(p.publish(inject::device::Host{}), 0, 1, 0, 0, 2);  // no card: the empty pool
    expect_stats(p.publish(inject::device::Host{}), 0, 0, 0, 1, 2);
}

TEST(DraPublisher, V1beta1ServerGetsTheBetaShape) {
    Env env("v1beta1");
    ASSERT_TRUE(env.client);
    ASSERT_EQ(env.opts.api_version, "v1beta1");
    auto p = env.publisher();
    expect_stats(p.publish(s60_host(1, false)), 1, 0, 0, 0, 1);
    const auto w = env.fake.writes();
    ASSERT_EQ(w.size(), 1U);
    EXPECT_EQ(w[0]["path"], "/apis/resource.k8s.io/v1beta1/resourceslices");
    EXPECT_EQ(w[0]["body"]["spec"]["devices"][0]["basic"]["attributes"]["uuid"]["string"],
              "TR6Y46010000");
}

TEST(DraPublisher, RepublishesAfterKubeletDeletedTheSlices) {
    Env env;
    ASSERT_TRUE(env.client);
    auto p = env.publisher();
    expect_stats(p.publish(s60_host(2, false)), 1, 0, 0, 0, 1);
    ASSERT_TRUE(
        env.client->remove(env.collection() + "/node-a-gcu.enflame.com-0"));  // kubelet did it
    EXPECT_TRUE(env.offered().empty());
    expect_stats(p.publish(s60_host(2, false)), 1, 0, 0, 0, 2);
    EXPECT_EQ(env.offered(), (std::vector<std::string>{"gcu-0", "gcu-1"}));
}

TEST(DraPublisher, CardSetChangeBumpsTheGenerationAndDeletesLast) {
    Env env("v1", 2);
    ASSERT_TRUE(env.client);
    auto p = env.publisher();
    expect_stats(p.publish(s60_host(2, false)), 1, 0, 0, 0, 1);
    expect_stats(p.publish(s60_host(3, false)), 1, 1, 0, 0, 2);  // gcu-2 needs a second slice
    EXPECT_EQ(env.offered(), (std::vector<std::string>{"gcu-0", "gcu-1", "gcu-2"}));
    for (const auto& s : env.ours()) EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], 2);
    const auto before = env.fake.writes().size();
    expect_stats(p.publish(s60_host(1, false)), 0, 1, 1, 0, 3);
    EXPECT_EQ(env.writes(before), (std::vector<std::string>{"PUT node-a-gcu.enflame.com-0",
                                                            "DELETE node-a-gcu.enflame.com-1"}))
        << "the new generation is complete before the old slice goes";
    EXPECT_EQ(env.offered(), (std::vector<std::string>{"gcu-0"}));
    EXPECT_EQ(env.ours().size(), 1U) << "never two pools' worth left behind";
}

TEST(DraPublisher, UnhealthyCardIsWithdrawnAndComesBack) {
    Env env;
    ASSERT_TRUE(env.client);
    auto p = env.publisher();
    auto host = s60_host(2, false);
    expect_stats(p.publish(host), 1, 0, 0, 0, 1);
    host.devices[1].healthy = false;
    expect_stats(p.publish(host), 0, 1, 0, 0, 2);
    EXPECT_EQ(env.offered(), (std::vector<std::string>{"gcu-0"}));
    host.devices[1].healthy = true;
    expect_stats(p.publish(host), 0, 1, 0, 0, 3);
    EXPECT_EQ(env.offered(), (std::vector<std::string>{"gcu-0", "gcu-1"}));
}

TEST(DraPublisher, LeavesOtherNodesAndDriversAlone) {
    Env env;
    ASSERT_TRUE(env.client);
    auto other_node = env.opts;
    other_node.node_name = "node-b";
    auto other_driver = env.opts;
    other_driver.driver = "gpu.example.com";
    ASSERT_TRUE(Publisher(env.client, other_node).publish(s60_host(1, false)));
    ASSERT_TRUE(Publisher(env.client, other_driver).publish(s60_host(1, false)));
    auto p = env.publisher();
    expect_stats(p.publish(s60_host(1, false)), 1, 0, 0, 0, 1);
    auto gone = p.remove_all();
    ASSERT_TRUE(gone) << gone.error().what();
    EXPECT_EQ(*gone, 1);
    auto all = env.client->list(env.collection());
    ASSERT_TRUE(all);
    std::vector<std::string> left;
    for (const auto& s : (*all)["items"]) left.push_back(s["metadata"]["name"]);
    EXPECT_EQ(left,
              (std::vector<std::string>{"node-a-gpu.example.com-0", "node-b-gcu.enflame.com-0"}));
}

TEST(DraPublisher, ConflictOnUpdateIsRereadAndRetried) {
    Env env;
    ASSERT_TRUE(env.client);
    auto p = env.publisher();
    expect_stats(p.publish(s60_host(1, false)), 1, 0, 0, 0, 1);
    env.fake.control(R"({"conflict_409": 1})");
    expect_stats(p.publish(s60_host(2, false)), 0, 1, 0, 0, 2);
    EXPECT_EQ(env.offered(), (std::vector<std::string>{"gcu-0", "gcu-1"}));
}

TEST(DraPublisher, ServerErrorNamesTheSlice) {
    Env env;
    ASSERT_TRUE(env.client);
    auto cfg = env.fake.config();
    cfg.retries = 0;
    std::shared_ptr<k8s::api::Client> c = std::move(*k8s::api::Client::create(cfg));
    env.opts.owned_by_node = false;  // the 500 is for the LIST
    Publisher p(c, env.opts);
    env.fake.control(R"({"fail_500": 1})");
    auto r = p.publish(s60_host(1, false));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "listing this node's ResourceSlices: GET /apis/resource.k8s.io/v1/resourceslices?"
              "fieldSelector=spec.nodeName%3Dnode-a%2Cspec.driver%3Dgcu.enflame.com: 500 Internal "
              "Server Error: fake-apiserver: injected failure");
    expect_stats(p.publish(s60_host(1, false)), 1, 0, 0, 0, 1);
}

TEST(DraPublisher, NoNodeMeansNoOwnerNotNoSlices) {
    Env env;
    ASSERT_TRUE(env.client);
    env.fake.control(R"({"fail_500": 4})");  // the Node GET and its 3 retries
    expect_stats(env.publisher().publish(s60_host(1, false)), 1, 0, 0, 0, 1);
    EXPECT_FALSE(env.ours()[0]["metadata"].contains("ownerReferences"));
}

TEST(DraPublisher, CountersArePublishedTheWayTheServerAccepts) {
    // Counters beside their devices for 1.34, in their own slices for 1.35; ten cards are more
    // than one slice's worth of counter sets (8) and of devices that consume counters (64).
    for (const auto& [minor, mode] : {std::pair{"34", dra::DrsMode::Counters},
                                      std::pair{"35", dra::DrsMode::CountersOwnSlice}}) {
        Env env("v1", 128, {"--kube-minor", minor});
        ASSERT_TRUE(env.client);
        env.opts.drs = mode;
        auto r = env.publisher().publish(s60_host(10, true));
        ASSERT_TRUE(r) << r.error().what();
        EXPECT_EQ(env.offered().size(), 70U);
    }
}

struct AutoCase {
    const char* name;
    std::vector<std::string> fake_flags;
    dra::DrsMode want;
    std::vector<std::string> offered;  ///< card 0's devices
};

class DraPublisherAuto : public testing::TestWithParam<AutoCase> {};

const std::vector<std::string> kInstances{"gcu-0-drs-0", "gcu-0-drs-1"};
const std::vector<std::string> kPlacements{"gcu-0",           "gcu-0-1g-11gb-0", "gcu-0-1g-11gb-1",
                                           "gcu-0-1g-11gb-2", "gcu-0-1g-11gb-3", "gcu-0-2g-22gb-0",
                                           "gcu-0-2g-22gb-1"};

// DrsMode::Auto: what the server's version allows, and instances when it drops the counters.
TEST_P(DraPublisherAuto, ChoosesWhatTheServerAccepts) {
    Env env("v1", 128, GetParam().fake_flags);
    ASSERT_TRUE(env.client);
    env.opts.drs = dra::DrsMode::Auto;
    auto p = env.publisher();
    auto r = p.publish(s60_host(1, true));
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(p.drs_mode(), GetParam().want);
    EXPECT_EQ(env.offered(), GetParam().offered);
    expect_stats(p.publish(s60_host(1, true)), 0, 0, 0, static_cast<int>(env.ours().size()),
                 r->generation);
    // Never, not for one generation, a partition the server keeps without its counters: the
    // scheduler would take it and the whole card as independent devices.
    const auto stored = env.fake.stored();
    ASSERT_FALSE(stored.empty());
    for (const auto& obj : stored)
        for (const auto& d : obj["spec"].value("devices", nlohmann::json::array())) {
            const auto name = d["name"].get<std::string>();
            const bool partition = name.find("g-") != std::string::npos;  // gcu-0-1g-11gb-0
            EXPECT_TRUE(!partition || d.contains("consumesCounters"))
                << name << " stored without counters at generation "
                << obj["spec"]["pool"]["generation"];
        }
    // Before 1.33 nothing is asked; else one dry run, before the first write.
    EXPECT_EQ(
        env.fake.dry_runs().size(),
        GetParam().want == dra::DrsMode::Instances && GetParam().fake_flags[1] == "32" ? 0u : 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Kubernetes, DraPublisherAuto,
    testing::Values(
        AutoCase{"V1_32", {"--kube-minor", "32"}, dra::DrsMode::Instances, kInstances},
        AutoCase{"V1_34", {"--kube-minor", "34"}, dra::DrsMode::Counters, kPlacements},
        AutoCase{"V1_35", {"--kube-minor", "35"}, dra::DrsMode::CountersOwnSlice, kPlacements},
        AutoCase{"V1_34GateOff",
                 {"--kube-minor", "34", "--no-partitionable"},
                 dra::DrsMode::Instances,
                 kInstances}),
    [](const auto& i) { return std::string(i.param.name); });

TEST(DraPublisher, CountersBesideDevicesAreRefusedBy135) {
    Env env("v1", 128, {"--kube-minor", "35"});
    ASSERT_TRUE(env.client);
    env.opts.drs = dra::DrsMode::Counters;
    auto r = env.publisher().publish(s60_host(1, true));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what().find(
                  "422 Unprocessable Entity: ResourceSlice.resource.k8s.io "
                  "\"node-a-gcu.enflame.com-0\" is invalid: spec: Invalid value: only one of "
                  "devices and sharedCounters may be set"),
              std::string::npos)
        << r.error().what();
}

bool eventually(const std::function<bool()>& f) {
    for (int i = 0; i < 1000; ++i) {
        if (f()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

TEST(DraPublisherLoop, PublishesRepublishesOnTriggerAndRemovesOnStop) {
    Env env;
    ASSERT_TRUE(env.client);
    auto p = env.publisher();
    std::atomic<int> runs{0};
    std::atomic<std::uint32_t> cards{2};
    dra::PublisherLoop loop(
        p, [&]() -> inject::Result<inject::device::Host> { return s60_host(cards, false); },
        std::chrono::hours(1), std::chrono::milliseconds(10),
        [&](const inject::Result<PublishStats>&) { ++runs; });
    loop.start();
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2; }));
    ASSERT_TRUE(env.client->remove(env.collection() + "/node-a-gcu.enflame.com-0"));
    cards = 3;
    loop.trigger();
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 3; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(runs.load(), 2) << "no run without a reason (resync is an hour)";
    loop.stop();
    EXPECT_TRUE(env.ours().empty());
}

TEST(DraPublisherLoop, RetriesAfterAFailureUntilItWorks) {
    Env env;
    ASSERT_TRUE(env.client);
    auto p = env.publisher();
    std::atomic<int> failures{0};
    dra::PublisherLoop loop(
        p,
        [&]() -> inject::Result<inject::device::Host> {
            if (failures < 2) return inject::Error(inject::Errc::Io, "efsmi: exit 1");
            return s60_host(1, false);
        },
        std::chrono::hours(1), std::chrono::milliseconds(5),
        [&](const inject::Result<PublishStats>& r) {
            if (!r) ++failures;
        });
    loop.start();
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 1; }));
    EXPECT_EQ(failures.load(), 2);
    loop.stop(false);
    EXPECT_EQ(env.ours().size(), 1U) << "stop(false) leaves them (the plugin restarts in place)";
}

// The watch on this node's slices, with the publisher loop it triggers (resync is an hour, so
// only the watch can bring a slice back).
struct Watched {
    explicit Watched(Env& env, std::uint32_t cards = 2)
        : env(env),
          p(env.publisher()),
          loop(
              p,
              [cards]() -> inject::Result<inject::device::Host> { return s60_host(cards, false); },
              std::chrono::hours(1), std::chrono::milliseconds(10),
              [this](const inject::Result<PublishStats>&) { ++runs; }),
          watch(
              env.client, p, [this] { loop.trigger(); },
              dra::SliceWatch::Options{std::chrono::milliseconds(20), 300}) {
        loop.start();
        watch.start();
    }
    ~Watched() {
        watch.stop();
        loop.stop(false);
    }
    /// The query of each watch request so far.
    [[nodiscard]] std::vector<Json> watches() const {
        std::vector<Json> out;
        std::istringstream in(env.fake.read("watches.jsonl"));
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) out.push_back(Json::parse(line));
        return out;
    }
    /// A slice of another node: the store's resourceVersion moves, our watch sees nothing.
    void other_node_write(const std::string& name) const {
        const Json s = {
            {"metadata", {{"name", name}}},
            {"spec",
             {{"driver", "gcu.enflame.com"},
              {"nodeName", "node-b"},
              {"pool", {{"name", "node-b"}, {"generation", 1}, {"resourceSliceCount", 1}}}}}};
        ASSERT_TRUE(env.client->create(env.collection(), s));
    }
    [[nodiscard]] std::string store_rv() const {
        auto l = env.client->list(env.collection());
        return l ? (*l)["metadata"].value("resourceVersion", "") : "";
    }

    Env& env;
    Publisher p;
    std::atomic<int> runs{0};
    dra::PublisherLoop loop;
    dra::SliceWatch watch;
};

constexpr const char* kSlice0 = "/node-a-gcu.enflame.com-0";

TEST(DraSliceWatch, ExternalDeleteIsPublishedAgainAndOwnWritesAreQuiet) {
    Env env;
    ASSERT_TRUE(env.client);
    Watched w(env);
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2 && !w.watches().empty(); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(w.runs.load(), 1) << "the echoes of our own writes publish nothing";
    const auto before = env.fake.writes().size();
    ASSERT_TRUE(env.client->remove(env.collection() + kSlice0));
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2; })) << "back without a resync";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(w.runs.load(), 2) << "one publish for the delete, none for its own echoes";
    EXPECT_EQ(env.writes(before), (std::vector<std::string>{"DELETE node-a-gcu.enflame.com-0",
                                                            "POST node-a-gcu.enflame.com-0"}));
}

TEST(DraSliceWatch, ExternalEditIsPutBack) {
    Env env;
    ASSERT_TRUE(env.client);
    Watched w(env);
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2 && !w.watches().empty(); }));
    ASSERT_TRUE(env.client->patch_json(
        env.collection() + kSlice0, Json::parse(R"([{"op":"remove","path":"/spec/devices/1"}])")));
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2 && w.runs.load() == 2; }));
}

TEST(DraSliceWatch, GoneListsAgainFromTheNewResourceVersion) {
    Env env;
    ASSERT_TRUE(env.client);
    Watched w(env);
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2 && w.watches().size() == 1; }));
    w.other_node_write("other-1");
    const std::string now = w.store_rv();
    env.fake.control(R"({"watch_gone": 1, "drop_watch": 1})");
    ASSERT_TRUE(eventually([&] { return w.watches().size() >= 3; }));
    const auto q = w.watches();
    EXPECT_NE(q[1].value("resourceVersion", ""), now)
        << "the reconnect resumes where the stream was";
    EXPECT_EQ(q[2].value("resourceVersion", ""), now)
        << "after 410 it lists again and watches from there";
    ASSERT_TRUE(eventually([&] { return w.runs.load() == 2; }))
        << "and reconciles what it may have missed";
    ASSERT_TRUE(env.client->remove(env.collection() + kSlice0));
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2 && w.runs.load() == 3; }));
}

TEST(DraSliceWatch, BookmarkAdvancesTheResourceVersion) {
    Env env;
    ASSERT_TRUE(env.client);
    Watched w(env);
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2 && w.watches().size() == 1; }));
    EXPECT_EQ(w.watches()[0].value("allowWatchBookmarks", ""), "true");
    EXPECT_EQ(w.watches()[0].value("timeoutSeconds", ""), "300");
    EXPECT_EQ(w.watches()[0].value("fieldSelector", ""),
              "spec.nodeName=node-a,spec.driver=gcu.enflame.com");
    w.other_node_write("other-1");
    w.other_node_write("other-2");
    const std::string now = w.store_rv();
    env.fake.control(R"({"bookmark_ms": 50})");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    env.fake.control(R"({"drop_watch": 1})");
    ASSERT_TRUE(eventually([&] { return w.watches().size() >= 2; }));
    EXPECT_EQ(w.watches()[1].value("resourceVersion", ""), now) << "resumed at the bookmark";
    EXPECT_EQ(w.runs.load(), 1) << "a bookmark is no change";
}

TEST(DraSliceWatch, DroppedStreamReconnectsAndStillSeesDeletes) {
    Env env;
    ASSERT_TRUE(env.client);
    Watched w(env);
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2 && w.watches().size() == 1; }));
    env.fake.control(R"({"drop_watch": 1})");
    ASSERT_TRUE(eventually([&] { return w.watches().size() == 2; }));
    ASSERT_TRUE(env.client->remove(env.collection() + kSlice0));
    ASSERT_TRUE(eventually([&] { return env.offered().size() == 2 && w.runs.load() == 2; }));
    env.fake.control(R"({"down": true, "drop_watch": 1})");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const auto while_down = w.watches().size();
    env.fake.control(R"({})");
    ASSERT_TRUE(eventually([&] { return w.watches().size() > while_down; }))
        << "back after the server is";
}

}  // namespace
