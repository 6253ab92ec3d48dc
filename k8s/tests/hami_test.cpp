// SPDX-License-Identifier: Apache-2.0
// HAMi mode's pure half (k8s/device-plugin/hami.cpp): HAMi's pod annotations read, garbage
// refused with the annotation and the value named, the pod Allocate serves, the node
// annotations HAMi parses; whose decisions are honoured and whether they fit their pod
// (hami_trust.cpp, issue 36).
#include "device-plugin/hami.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "device-plugin/hami_trust.hpp"
#include "inject/drs_slices.hpp"

namespace {

using device_plugin::hami::Json;

// A pending pod default/NAME that HAMi's Enflame backend has bound at TIME (gcu-assigned
// false, until our Allocate serves it), with the backend's own ANNOTATIONS besides.
Json bound_pod(const std::string& name, const std::string& time, Json annotations) {
    annotations["enflame.com/gcu-assigned"] = "false";
    annotations["enflame.com/gcu-assigned-time"] = time;
    return Json{{"metadata",
                 {{"namespace", "default"},
                  {"name", name},
                  {"uid", "uid-" + name},
                  {"annotations", std::move(annotations)}}},
                {"status", {{"phase", "Pending"}}}};
}

// A pod as HAMi v2.10's Enflame backend leaves it after Bind (DRS, one container).
Json drs_pod(const std::string& name, const std::string& time, const std::string& containers,
             const std::string& index = "1") {
    return bound_pod(
        name, time,
        {{"enflame.com/gcu-assigned-index", index},
         {"enflame.com/gcu-assigned-id", index},
         {"enflame.com/gcu-assigned-minor", index},
         {"enflame.com/gcu-request-size", "1"},
         {"hami.io/enflame-vgpu-devices-allocated", "n-enflame-drs-1,Enflame,11264,25:;"},
         {"assigned-containers", containers}});
}

const std::string kOne =
    R"({"main":{"allocated":false,"request":1,"profileID":"0","profileName":"1g.11gb"}})";

TEST(HamiDrs, ReadsWhatHamiWrites) {
    auto d = device_plugin::hami::parse_drs_decision(drs_pod("p", "1764633600000000000", kOne));
    ASSERT_TRUE(d) << d.error().what();
    EXPECT_EQ(d->index, 1u);
    EXPECT_EQ(d->minor, 1u);
    EXPECT_EQ(d->assigned_time, 1764633600000000000);
    ASSERT_EQ(d->containers.size(), 1u);
    EXPECT_EQ(d->containers[0].name, "main");
    EXPECT_EQ(d->containers[0].request, 1u);
    EXPECT_EQ(d->containers[0].profile_name, "1g.11gb");
    EXPECT_FALSE(d->containers[0].allocated);
}

// Garbage in any annotation: an error naming the annotation and the value.
TEST(HamiDrs, GarbageIsAClearError) {
    struct Case {
        const char* name;
        Json pod;
        std::string want;
    };
    Json no_time = drs_pod("p", "1", kOne);
    no_time["metadata"]["annotations"].erase("enflame.com/gcu-assigned-time");
    const Case cases[] = {
        {"TimeNotANumber", drs_pod("p", "yesterday", kOne),
         "annotation enflame.com/gcu-assigned-time 'yesterday': want Unix nanoseconds"},
        {"TimeMissing", no_time, "annotation enflame.com/gcu-assigned-time: missing"},
        {"IndexNegative", drs_pod("p", "1", kOne, "-1"),
         "annotation enflame.com/gcu-assigned-index '-1': want a card index"},
        {"ContainersNotJson", drs_pod("p", "1", "{main"),
         "annotation assigned-containers '{main': want a JSON object of containers"},
        {"ContainersEmpty", drs_pod("p", "1", "{}"),
         "annotation assigned-containers '{}': want a JSON object of containers"},
        {"RequestZero", drs_pod("p", "1", R"({"main":{"request":0,"profileName":"1g.11gb"}})"),
         "container 'main': want a request of 1 or more slices"},
        {"RequestString", drs_pod("p", "1", R"({"main":{"request":"1","profileName":"1g.11gb"}})"),
         "container 'main': want a request of 1 or more slices"},
        {"NoProfile", drs_pod("p", "1", R"({"main":{"request":1}})"),
         "container 'main': no profileID or profileName"},
    };
    for (const auto& c : cases) {
        auto d = device_plugin::hami::parse_drs_decision(c.pod);
        ASSERT_FALSE(d) << c.name;
        EXPECT_EQ(d.error().code(), inject::Errc::InvalidInput) << c.name;
        EXPECT_NE(std::string(d.error().what()).find(c.want), std::string::npos)
            << c.name << ": " << d.error().what();
    }
}

TEST(HamiDrs, PicksTheOldestWaitingPodWhoseContainerAsksThatMany) {
    Json pods{{"items", Json::array()}};
    pods["items"].push_back(drs_pod("newer", "300", kOne));
    pods["items"].push_back(drs_pod("older", "200", kOne));
    pods["items"].push_back(
        drs_pod("two-slices", "100", R"({"main":{"request":2,"profileName":"2g.22gb"}})"));
    auto done = drs_pod("done", "50", kOne);
    done["metadata"]["annotations"]["enflame.com/gcu-assigned"] = "true";
    pods["items"].push_back(done);
    auto ended = drs_pod("ended", "60", kOne);
    ended["status"]["phase"] = "Failed";
    pods["items"].push_back(ended);
    pods["items"].push_back(drs_pod("broken", "70", "not json"));
    pods["items"].push_back(Json{{"metadata", {{"name", "not-hamis"}, {"namespace", "default"}}}});

    auto p = device_plugin::hami::pick_drs(pods, 1);
    ASSERT_TRUE(p.decision);
    EXPECT_EQ(p.decision->name, "older");
    ASSERT_EQ(p.broken.size(), 1u);
    EXPECT_EQ(p.broken[0].name, "broken");
    auto two = device_plugin::hami::pick_drs(pods, 2);
    ASSERT_TRUE(two.decision);
    EXPECT_EQ(two.decision->name, "two-slices");
    EXPECT_FALSE(device_plugin::hami::pick_drs(pods, 3).decision);
}

Json card_pod(const std::string& name, const std::string& bind_time, const std::string& devices) {
    return Json{{"metadata",
                 {{"namespace", "default"},
                  {"name", name},
                  {"uid", "uid-" + name},
                  {"annotations",
                   {{"hami.io/bind-phase", "allocating"},
                    {"hami.io/bind-time", bind_time},
                    {"hami.io/vgpu-node", "n"},
                    {"hami.io/enflame-gcu-devices-to-allocate", devices},
                    {"hami.io/enflame-gcu-devices-allocated", devices}}}}}};
}

TEST(HamiCards, ReadsWhatHamiWritesAndWritesItBack) {
    const std::string raw =
        ";n-GCU-2,GCU,100,100:n-GCU-3,GCU,100,100:;";  // an init container without cards
    auto d = device_plugin::hami::parse_card_decision(card_pod("p", "10", raw), "n");
    ASSERT_TRUE(d) << d.error().what();
    ASSERT_EQ(d->containers.size(), 2u);
    EXPECT_TRUE(d->containers[0].empty());
    EXPECT_EQ(d->containers[1], (std::vector<std::uint32_t>{2, 3}));
    EXPECT_EQ(device_plugin::hami::encode_cards(*d, "n"), raw);
}

TEST(HamiCards, GarbageIsAClearError) {
    const std::pair<std::string, std::string> cases[] = {
        {"other-GCU-1,GCU,100,100:;",
         "'other-GCU-1,GCU,100,100': want n-GCU-<i>,GCU,<mem>,<cores>"},
        {"n-GCU-x,GCU,100,100:;", "'n-GCU-x,GCU,100,100'"},
        {"n-GCU-1,NVIDIA,100,100:;", "'n-GCU-1,NVIDIA,100,100'"},
        {"n-GCU-1:;", "'n-GCU-1'"},
    };
    for (const auto& [raw, want] : cases) {
        auto d = device_plugin::hami::parse_card_decision(card_pod("p", "10", raw), "n");
        ASSERT_FALSE(d) << raw;
        EXPECT_NE(std::string(d.error().what())
                      .find("annotation hami.io/enflame-gcu-devices-to-allocate " + want),
                  std::string::npos)
            << d.error().what();
    }
    auto t = device_plugin::hami::parse_card_decision(
        card_pod("p", "soon", "n-GCU-1,GCU,100,100:;"), "n");
    ASSERT_FALSE(t);
    EXPECT_NE(std::string(t.error().what())
                  .find("annotation hami.io/bind-time 'soon': want Unix seconds"),
              std::string::npos);
}

TEST(HamiCards, PicksTheOldestPodWhoseNextContainerAsksThatMany) {
    Json pods{{"items", Json::array()}};
    pods["items"].push_back(card_pod("newer", "30", "n-GCU-0,GCU,100,100:;"));
    pods["items"].push_back(card_pod("older", "20", "n-GCU-1,GCU,100,100:;"));
    pods["items"].push_back(card_pod("served", "10", ";"));
    auto success = card_pod("success", "5", "n-GCU-2,GCU,100,100:;");
    success["metadata"]["annotations"]["hami.io/bind-phase"] = "success";
    pods["items"].push_back(success);
    auto p = device_plugin::hami::pick_cards(pods, "n", 1);
    ASSERT_TRUE(p.decision);
    EXPECT_EQ(p.decision->name, "older");
    EXPECT_EQ(p.container, 0u);
    EXPECT_FALSE(device_plugin::hami::pick_cards(pods, "n", 2).decision);
}

TEST(HamiNode, AnnotationsAsHamiParsesThem) {
    inject::device::Host h;
    for (std::uint32_t i = 0; i < 3; ++i) {
        inject::device::Device d;
        d.index = i;
        d.minor = i + 10;
        h.devices.push_back(d);
    }
    h.drs_profiles = {{"1g.11gb", 0, 4, 0, 0}, {"2g.22gb", 1, 2, 0, 0}, {"full", 2, 1, 0, 0}};
    // card 0: two 1g instances, one ours; card 2: full with someone else's 2g instances
    h.devices[0].drs_instances = {{0, 0, "1g.11gb"}, {0, 1, "1g.11gb"}};
    h.devices[2].drs_instances = {{2, 0, "2g.22gb"}, {2, 1, "2g.22gb"}};
    EXPECT_EQ(inject::drs::card_slices(h.drs_profiles), 4u);
    const auto a = device_plugin::hami::node_annotations(h, {{0, 1}});
    EXPECT_EQ(
        a.drs_capacity,
        R"({"devices":[{"capacity":3,"index":"0","minor":"10"},{"capacity":4,"index":"1","minor":"11"}],)"
        R"("profiles":{"1g.11gb":"0","2g.22gb":"1"}})");
    EXPECT_EQ(a.shared_capacity, R"({"10":3,"11":4})");
    EXPECT_EQ(a.cards, 3u);
}

inject::device::Host two_cards() {
    inject::device::Host h;
    for (std::uint32_t i = 0; i < 2; ++i) {
        inject::device::Device d;
        d.index = i;
        d.minor = i;
        d.uuid = "U" + std::to_string(i);
        d.memory_bytes = 48ull << 30;
        h.devices.push_back(d);
    }
    h.drs_profiles = {{"1g.11gb", 0, 4, 0, 0}};
    return h;
}

// v2.10: whole cards, a slice ID per DRS slice, one gcu-memory ID per GiB, 100 gcu-core IDs
// per card (HAMi's percent); each on its own socket.
TEST(HamiResources, WholeCardsSlicesMemoryAndCores) {
    auto r = device_plugin::hami::make_resources(two_cards(), device_plugin::IdStrategy::Uuid,
                                                 device_plugin::hami::Names{});
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 4u);
    EXPECT_EQ((*r)[0].name, "enflame.com/gcu");
    EXPECT_EQ((*r)[0].socket, "enflame-gcu.sock");
    EXPECT_EQ((*r)[0].inventory.devices.size(), 2u);
    EXPECT_EQ((*r)[1].name, "enflame.com/drs-gcu");
    EXPECT_EQ((*r)[1].socket, "enflame-drs-gcu.sock");
    ASSERT_EQ((*r)[1].inventory.devices.size(), 8u);
    EXPECT_EQ((*r)[1].inventory.devices[5].id, "1-1");
    EXPECT_EQ((*r)[2].name, "enflame.com/gcu-memory");
    EXPECT_EQ((*r)[2].socket, "enflame-gcu-memory.sock");
    ASSERT_EQ((*r)[2].inventory.devices.size(), 96u);
    EXPECT_EQ((*r)[2].inventory.devices[95].id, "1-47");
    EXPECT_EQ((*r)[2].inventory.devices[95].index, 1u);
    EXPECT_EQ((*r)[3].name, "enflame.com/gcu-core");
    EXPECT_EQ((*r)[3].socket, "enflame-gcu-core.sock");
    EXPECT_EQ((*r)[3].inventory.devices.size(), 200u);
}

// HAMi <= 2.9: shared-gcu, cards x slices IDs <minor>-<slice>, instead of the v2.10 three.
TEST(HamiResources, LegacySharedSlices) {
    device_plugin::hami::Names names;
    names.legacy_slices = 6;
    auto r =
        device_plugin::hami::make_resources(two_cards(), device_plugin::IdStrategy::Uuid, names);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[1].name, "enflame.com/shared-gcu");
    EXPECT_EQ((*r)[1].socket, "enflame-shared-gcu.sock");
    ASSERT_EQ((*r)[1].inventory.devices.size(), 12u);
    EXPECT_EQ((*r)[1].inventory.devices[11].id, "1-5");
    auto h = two_cards();
    h.devices[1].minor = 7;
    const auto a = device_plugin::hami::node_annotations(h, {}, 6);
    EXPECT_EQ(a.shared_capacity, R"({"0":6,"7":6})");
}

// A pod as HAMi <= 2.9 leaves it: gcu-assigned-id and the webhook's shared-gcu limits.
Json shared_pod(const std::string& name, const std::string& time, const std::string& ids,
                const std::vector<std::pair<std::string, int>>& ctrs) {
    Json containers = Json::array();
    for (const auto& [n, slices] : ctrs) {
        Json c{{"name", n}, {"image", "busybox"}};
        if (slices > 0)
            c["resources"] = {{"limits", {{"enflame.com/shared-gcu", std::to_string(slices)}}}};
        containers.push_back(c);
    }
    Json pod = bound_pod(name, time, {{"enflame.com/gcu-assigned-id", ids}});
    pod["spec"] = {{"containers", containers}};
    return pod;
}

TEST(HamiShared, ReadsWhatHami29Writes) {
    auto d = device_plugin::hami::parse_shared_decision(
        shared_pod("p", "100", "2", {{"side", 0}, {"a", 3}, {"b", 2}}), "enflame.com/shared-gcu");
    ASSERT_TRUE(d) << d.error().what();
    EXPECT_EQ(d->cards, (std::vector<std::uint32_t>{2}));
    EXPECT_EQ(d->assigned_time, 100);
    ASSERT_EQ(d->containers.size(), 2u);  // the one without shared-gcu is not HAMi's
    EXPECT_EQ(d->containers[0].name, "a");
    EXPECT_EQ(d->containers[0].request, 3u);
    EXPECT_EQ(d->containers[1].request, 2u);
    d->containers[0].served = true;
    EXPECT_EQ(device_plugin::hami::served_json(*d), R"(["a"])");
    const std::pair<Json, std::string> bad[] = {
        {shared_pod("p", "100", "one", {{"a", 1}}),
         "annotation enflame.com/gcu-assigned-id 'one': want card indexes (0,1)"},
        {shared_pod("p", "1h", "1", {{"a", 1}}),
         "annotation enflame.com/gcu-assigned-time '1h': want Unix nanoseconds"},
    };
    for (const auto& [pod, want] : bad) {
        auto e = device_plugin::hami::parse_shared_decision(pod, "enflame.com/shared-gcu");
        ASSERT_FALSE(e) << want;
        EXPECT_EQ(e.error().what(), want);
    }
}

// gcushare's choice: the oldest waiting pod whose first unserved container asks as many
// slices as kubelet passed IDs; a served container is skipped; DRS pods (assigned-containers)
// and pods done are not this protocol's.
TEST(HamiShared, PicksTheOldestPodAndItsNextContainer) {
    const std::string res = "enflame.com/shared-gcu";
    Json pods{{"items", Json::array()}};
    pods["items"].push_back(shared_pod("newer", "300", "0", {{"a", 2}}));
    auto half = shared_pod("half", "200", "1", {{"a", 3}, {"b", 2}});
    half["metadata"]["annotations"]["enflame.com/gcu-shared-served"] = R"(["a"])";
    pods["items"].push_back(half);
    auto done = shared_pod("done", "50", "1", {{"a", 2}});
    done["metadata"]["annotations"]["enflame.com/gcu-assigned"] = "true";
    pods["items"].push_back(done);
    auto drs = shared_pod("drs", "60", "1", {{"a", 2}});
    drs["metadata"]["annotations"]["assigned-containers"] = kOne;
    pods["items"].push_back(drs);
    pods["items"].push_back(shared_pod("broken", "70", "x", {{"a", 2}}));
    auto p = device_plugin::hami::pick_shared(pods, res, 2);
    ASSERT_TRUE(p.decision);
    EXPECT_EQ(p.decision->name, "half");
    EXPECT_EQ(p.decision->containers[p.container].name, "b");
    ASSERT_EQ(p.broken.size(), 1u);
    EXPECT_EQ(p.broken[0].name, "broken");
    // "half"'s next container asks 2, not 3: only a pod whose next one asks 3 would do
    EXPECT_FALSE(device_plugin::hami::pick_shared(pods, res, 3).decision);
    // the DRS pick does not take a v2.9 pod for a broken DRS one ("drs" lacks its index)
    const auto d = device_plugin::hami::pick_drs(pods, 2);
    ASSERT_EQ(d.broken.size(), 1u);
    EXPECT_EQ(d.broken[0].name, "drs");
}

// v2.10 gcu-memory + gcu-core: the container is found by its limit of the resource kubelet
// allocates, the profile from assigned-containers.
TEST(HamiDrs, PicksByMemoryOrCoreLimit) {
    auto pod = drs_pod("mc", "10", kOne);
    pod["spec"] = {
        {"containers",
         {{{"name", "main"},
           {"resources",
            {{"limits", {{"enflame.com/gcu-memory", "11"}, {"enflame.com/gcu-core", "25"}}}}}}}}};
    Json pods{{"items", Json::array({pod})}};
    EXPECT_EQ(device_plugin::hami::container_request(pod, "main", "enflame.com/gcu-memory"), 11u);
    EXPECT_EQ(device_plugin::hami::container_request(pod, "main", "enflame.com/gcu-core"), 25u);
    EXPECT_EQ(device_plugin::hami::container_request(pod, "other", "enflame.com/gcu-core"), 0u);
    auto m = device_plugin::hami::pick_drs(pods, 11, "enflame.com/gcu-memory");
    ASSERT_TRUE(m.decision);
    EXPECT_EQ(m.decision->containers[m.container].profile_name, "1g.11gb");
    EXPECT_TRUE(device_plugin::hami::pick_drs(pods, 25, "enflame.com/gcu-core").decision);
    EXPECT_FALSE(device_plugin::hami::pick_drs(pods, 12, "enflame.com/gcu-memory").decision);
    EXPECT_FALSE(device_plugin::hami::pick_drs(pods, 11).decision);  // 1 slice, not 11
}

}  // namespace

namespace {

// The instances' checkpoint: what it writes reads back; garbage is one error naming the file
// and the entry (the plugin then keeps going on the pods' annotations).
TEST(HamiCheckpoint, RoundTripAndGarbage) {
    const device_plugin::hami::Ledger l{
        {{"uid-a", "default", "a", 1, 0, "DRS-1111", "1g.11gb"}, {"uid-b", "ns2", "b", 3, 2, ""}},
        {{"uid-c", 2, "2g.22gb", {0, 1}, 4, 7u, "DRS-7777"}, {"uid-d", 0, "1g.11gb", {}, 5}}};
    const auto text = device_plugin::hami::checkpoint_text(l);
    auto back = device_plugin::hami::parse_checkpoint(text, "cp.json");
    ASSERT_TRUE(back) << back.error().what();
    ASSERT_EQ(back->instances.size(), 2u);
    EXPECT_EQ(back->instances[0].uid, "uid-a");
    EXPECT_EQ(back->instances[0].uuid, "DRS-1111");
    EXPECT_EQ(back->instances[0].profile, "1g.11gb");
    EXPECT_EQ(back->instances[1].ns, "ns2");
    EXPECT_EQ(back->instances[1].card, 3u);
    EXPECT_EQ(back->instances[1].instance_id, 2u);
    EXPECT_EQ(back->pending, l.pending);
    EXPECT_EQ(device_plugin::hami::checkpoint_text(*back), text);
    // a checkpoint from before profiles and pending entries were recorded reads as it was
    auto old = device_plugin::hami::parse_checkpoint(
        R"({"version":1,"instances":[{"podUID":"u","card":0,"instance":1,"uuid":""}]})", "cp.json");
    ASSERT_TRUE(old);
    EXPECT_EQ(old->instances[0].profile, "");
    EXPECT_TRUE(old->pending.empty());
    const std::pair<const char*, const char*> bad[] = {
        {"", "cp.json: want {\"version\":1,\"instances\":[...]} (JSON)"},
        {R"({"version":2,"instances":[]})",
         "cp.json: want {\"version\":1,\"instances\":[...]} (JSON)"},
        {R"({"version":1,"instances":[{"podUID":"u","card":-1,"instance":0}]})",
         "cp.json: instances[0]: want podUID, card and instance"},
        {R"({"version":1,"instances":[{"podUID":"u","card":0,"instance":0},{"card":0,"instance":1}]})",
         "cp.json: instances[1]: want podUID, card and instance"},
        {R"({"version":1,"instances":[],"pending":[{"card":0,"profile":"1g.11gb","before":[]}]})",
         "cp.json: pending: [json.exception.out_of_range.403] key 'podUID' not found"},
    };
    for (const auto& [text, want] : bad) {
        auto r = device_plugin::hami::parse_checkpoint(text, "cp.json");
        ASSERT_FALSE(r) << text;
        EXPECT_EQ(r.error().what(), std::string(want)) << text;
    }
}

// Only an instance efsmi still lists as recorded is destroyed: the same id on the same card
// with another UUID is someone else's now.
TEST(HamiCheckpoint, StillThereOnlyAsRecorded) {
    inject::device::Host h;
    inject::device::Device d;
    d.index = 1;
    d.drs_instances = {{1, 0, "1g.11gb", "1111"}, {1, 1, "1g.11gb", "2222"}};
    h.devices.push_back(d);
    const struct {
        const char* name;
        device_plugin::hami::Recorded r;
        bool want;
    } cases[] = {
        {"SameIdAndUuid", {"u", "", "", 1, 0, "DRS-1111"}, true},
        {"NoUuidRecorded", {"u", "", "", 1, 1, ""}, true},
        {"SameProfile", {"u", "", "", 1, 1, "2222", "1g.11gb"}, true},
        {"IdReusedByAnotherProfile", {"u", "", "", 1, 1, "", "2g.22gb"}, false},
        {"IdReusedByAnother", {"u", "", "", 1, 1, "DRS-1111"}, false},
        {"IdGone", {"u", "", "", 1, 5, ""}, false},
        {"CardGone", {"u", "", "", 2, 0, ""}, false},
    };
    for (const auto& c : cases)
        EXPECT_EQ(device_plugin::hami::still_there(h, c.r), c.want) << c.name;
}

}  // namespace

namespace {

constexpr std::int64_t kNow = 1700000600;  // 10 minutes after the pods' creation

// A pod as tests/cluster/hami-scheduler.sh leaves it: created by `kubectl apply` naming HAMi's
// scheduler (its managedFields entry owns no nodeName), annotated, then bound through
// pods/binding (spec.nodeName and PodScheduled, no managedFields entry), kubelet not yet there.
Json genuine(Json pod, const std::string& limit_resource, int limit) {
    pod["metadata"]["creationTimestamp"] = "2023-11-14T22:13:20Z";  // 1700000000
    pod["metadata"]["managedFields"] = Json::array(
        {{{"manager", "kubectl-client-side-apply"},
          {"operation", "Update"},
          {"fieldsV1",
           {{"f:spec", {{"f:containers", Json::object()}, {"f:schedulerName", Json::object()}}}}}},
         {{"manager", "kubectl-annotate"},
          {"operation", "Update"},
          {"fieldsV1", {{"f:metadata", {{"f:annotations", Json::object()}}}}}}});
    pod["spec"]["schedulerName"] = "hami-scheduler";
    pod["spec"]["nodeName"] = "n";
    if (!pod["spec"].contains("containers"))
        pod["spec"]["containers"] =
            Json::array({{{"name", "main"},
                          {"resources", {{"limits", {{limit_resource, std::to_string(limit)}}}}}}});
    pod["status"] = {{"phase", "Pending"},
                     {"conditions", Json::array({{{"type", "PodScheduled"}, {"status", "True"}}})}};
    return pod;
}

Json whole_card_pod(const std::string& name, const std::string& bind_time, const std::string& devs,
                    int limit = 1) {
    return genuine(Json{{"metadata",
                         {{"namespace", "default"},
                          {"name", name},
                          {"uid", "uid-" + name},
                          {"annotations",
                           {{"hami.io/bind-phase", "allocating"},
                            {"hami.io/bind-time", bind_time},
                            {"hami.io/enflame-gcu-devices-to-allocate", devs}}}}}},
                   "enflame.com/gcu", limit);
}

Json list(const std::vector<Json>& pods) {
    Json items = Json::array();
    for (const auto& p : pods) items.push_back(p);
    return Json{{"items", items}};
}

}  // namespace

// Only pods HAMi's scheduler placed are served: a pod naming another scheduler, or whose
// nodeName its creator wrote (managedFields, no PodScheduled), is skipped with why, even when
// it is "oldest"; one the kubelet admitted already waits for nothing.
TEST(HamiTrust, ForgedPodsAreSkippedTheGenuineOneServed) {
    const auto real = whole_card_pod("real", "1700000100", "n-GCU-2,GCU,100,100:;");
    auto other = whole_card_pod("other", "1700000001", "n-GCU-0,GCU,100,100:;");
    other["spec"]["schedulerName"] = "default-scheduler";
    auto created = whole_card_pod("created", "1700000001", "n-GCU-1,GCU,100,100:;");
    created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:nodeName"] = Json::object();
    auto unbound = whole_card_pod("unbound", "1700000001", "n-GCU-3,GCU,100,100:;");
    unbound["metadata"].erase("managedFields");
    unbound["status"].erase("conditions");
    auto running = whole_card_pod("running", "1700000001", "n-GCU-0,GCU,100,100:;");
    running["status"]["startTime"] = "2023-11-14T22:13:30Z";
    const auto pods = list({other, created, unbound, running, real});

    const auto sc = device_plugin::hami::screen(pods, "hami-scheduler", kNow);
    ASSERT_EQ(sc.skipped.size(), 3u);
    EXPECT_EQ(sc.skipped[0].name, "other");
    EXPECT_EQ(sc.skipped[0].why,
              "spec.schedulerName 'default-scheduler' is not HAMi's scheduler 'hami-scheduler'");
    EXPECT_EQ(sc.skipped[1].name, "created");
    EXPECT_EQ(sc.skipped[1].why,
              "spec.nodeName was written by 'kubectl-client-side-apply' "
              "(managedFields), not by a binding");
    EXPECT_EQ(sc.skipped[2].name, "unbound");
    EXPECT_EQ(sc.skipped[2].why,
              "no PodScheduled condition: spec.nodeName was not set by a binding");
    const auto p = device_plugin::hami::pick_cards(sc.pods, "n", 1, "enflame.com/gcu");
    ASSERT_TRUE(p.decision);
    EXPECT_EQ(p.decision->name, "real");
    EXPECT_EQ(device_plugin::hami::check_cards(real, *p.decision, p.container, "enflame.com/gcu"),
              "");
    // another scheduler name given to the plugin: the genuine pod is not HAMi's then
    EXPECT_EQ(device_plugin::hami::screen(list({real}), "my-hami", kNow).skipped.size(), 1u);
}

// A bind or assigned time before the pod was created, or in the future, does not make a pod
// "oldest": it comes after the pods whose time is plausible.
TEST(HamiTrust, ImplausibleTimesComeLast) {
    const auto early = whole_card_pod("early", "1", "n-GCU-0,GCU,100,100:;");
    const auto future = whole_card_pod("future", "1800000000", "n-GCU-1,GCU,100,100:;");
    const auto real = whole_card_pod("real", "1700000300", "n-GCU-2,GCU,100,100:;");
    auto sc = device_plugin::hami::screen(list({early, future, real}), "hami-scheduler", kNow);
    auto p = device_plugin::hami::pick_cards(sc.pods, "n", 1, "enflame.com/gcu");
    ASSERT_TRUE(p.decision);
    EXPECT_EQ(p.decision->name, "real");
    auto drs_early = genuine(drs_pod("d-early", "5", kOne), "enflame.com/drs-gcu", 1);
    auto drs_real =
        genuine(drs_pod("d-real", "1700000200000000000", kOne), "enflame.com/drs-gcu", 1);
    sc = device_plugin::hami::screen(list({drs_early, drs_real}), "hami-scheduler", kNow);
    const auto d = device_plugin::hami::pick_drs(sc.pods, 1, "enflame.com/drs-gcu");
    ASSERT_TRUE(d.decision);
    EXPECT_EQ(d.decision->name, "d-real");
}

// The decision may not give a container more cards than its limits ask: the pod is picked by
// kubelet's count (its limit) and refused with the container and the reason named.
TEST(HamiTrust, MoreCardsThanTheLimitAsksIsRefused) {
    const auto four = whole_card_pod("four", "1700000100",
                                     "n-GCU-0,GCU,100,100:n-GCU-1,GCU,100,100:n-GCU-2,GCU,100,"
                                     "100:n-GCU-3,GCU,100,100:;");
    const auto sc = device_plugin::hami::screen(list({four}), "hami-scheduler", kNow);
    const auto p = device_plugin::hami::pick_cards(sc.pods, "n", 1, "enflame.com/gcu");
    ASSERT_TRUE(p.decision);
    EXPECT_EQ(device_plugin::hami::check_cards(four, *p.decision, p.container, "enflame.com/gcu"),
              "container 'main': HAMi's decision gives 4 cards, its limits ask 1 enflame.com/gcu");
    // HAMi <= 2.9: four cards for one slice
    auto shared =
        genuine(shared_pod("shared", "1700000100000000000", "0,1,2,3", {{"main", 1}}), "", 0);
    const auto s = device_plugin::hami::pick_shared(
        device_plugin::hami::screen(list({shared}), "hami-scheduler", kNow).pods,
        "enflame.com/shared-gcu", 1);
    ASSERT_TRUE(s.decision);
    EXPECT_EQ(
        device_plugin::hami::check_shared(*s.decision, s.container, 6),
        "container 'main': HAMi's decision gives 4 cards, its 1 slice (6 a card) need 1 card");
    auto one = genuine(shared_pod("one", "1700000100000000000", "2", {{"main", 4}}), "", 0);
    const auto o = device_plugin::hami::parse_shared_decision(one, "enflame.com/shared-gcu");
    ASSERT_TRUE(o);
    EXPECT_EQ(device_plugin::hami::check_shared(*o, 0, 6), "");
}

// DRS: the profile's slices must be what the container asks (drs-gcu), or the smallest profile
// fitting its gcu-memory and gcu-core.
TEST(HamiTrust, DrsProfileMustMatchTheRequest) {
    const std::vector<inject::device::DrsProfile> profiles{
        {"1g.11gb", 0, 4, 0, 0}, {"2g.22gb", 1, 2, 0, 0}, {"4g.44gb", 2, 1, 0, 0}};
    const device_plugin::hami::Names names;
    const std::string big =
        R"({"main":{"allocated":false,"request":4,"profileID":"2","profileName":"4g.44gb"}})";
    auto pod = genuine(drs_pod("big", "1700000100000000000", big), "enflame.com/drs-gcu", 1);
    auto p = device_plugin::hami::pick_drs(
        device_plugin::hami::screen(list({pod}), "hami-scheduler", kNow).pods, 1, names.drs);
    ASSERT_TRUE(p.decision);  // by kubelet's count, not assigned-containers' request
    const auto& c = p.decision->containers[p.container];
    EXPECT_EQ(device_plugin::hami::check_drs(pod, c, "4g.44gb", profiles, names),
              "container 'main': its limits ask 1 enflame.com/drs-gcu, HAMi's DRS profile "
              "'4g.44gb' has 4 slices");
    auto lie = c;
    lie.request = 1;
    EXPECT_EQ(device_plugin::hami::check_drs(pod, lie, "4g.44gb", profiles, names),
              "container 'main': assigned-containers asks 1 slice, DRS profile '4g.44gb' has 4");
    const auto one = genuine(drs_pod("one", "1700000100000000000", kOne), "enflame.com/drs-gcu", 1);
    const auto d = device_plugin::hami::parse_drs_decision(one);
    ASSERT_TRUE(d);
    EXPECT_EQ(device_plugin::hami::check_drs(one, d->containers[0], "1g.11gb", profiles, names),
              "");
    // gcu-memory 11 + gcu-core 25: 1g.11gb is the smallest that fits, not 2g.22gb
    auto mc = genuine(drs_pod("mc", "1700000100000000000", kOne), "enflame.com/gcu-memory", 11);
    mc["spec"]["containers"][0]["resources"]["limits"]["enflame.com/gcu-core"] = "25";
    auto two = d->containers[0];
    EXPECT_EQ(device_plugin::hami::check_drs(mc, two, "1g.11gb", profiles, names), "");
    two.request = 2;
    EXPECT_EQ(device_plugin::hami::check_drs(mc, two, "2g.22gb", profiles, names),
              "container 'main': its limits ask 11 GB and 25% of a card: the smallest profile "
              "that fits has 1 slice, HAMi's DRS profile '2g.22gb' has 2");
}
