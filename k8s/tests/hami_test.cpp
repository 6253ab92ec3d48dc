// SPDX-License-Identifier: Apache-2.0
// HAMi mode's pure half (k8s/device-plugin/hami.cpp): HAMi's pod annotations read, garbage
// refused with the annotation and the value named, the pod Allocate serves, the node
// annotations HAMi parses.
#include "hami.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using edp::hami::Json;

// A pod as HAMi v2.10's Enflame backend leaves it after Bind (DRS, one container).
Json drs_pod(const std::string& name, const std::string& time, const std::string& containers,
             const std::string& index = "1") {
    return Json{
        {"metadata",
         {{"namespace", "default"},
          {"name", name},
          {"uid", "uid-" + name},
          {"annotations",
           {{"enflame.com/gcu-assigned", "false"},
            {"enflame.com/gcu-assigned-time", time},
            {"enflame.com/gcu-assigned-index", index},
            {"enflame.com/gcu-assigned-id", index},
            {"enflame.com/gcu-assigned-minor", index},
            {"enflame.com/gcu-request-size", "1"},
            {"hami.io/enflame-vgpu-devices-allocated", "n-enflame-drs-1,Enflame,11264,25:;"},
            {"assigned-containers", containers}}}}},
        {"status", {{"phase", "Pending"}}}};
}

const std::string kOne =
    R"({"main":{"allocated":false,"request":1,"profileID":"0","profileName":"1g.11gb"}})";

TEST(HamiDrs, ReadsWhatHamiWrites) {
    auto d = edp::hami::parse_drs_decision(drs_pod("p", "1764633600000000000", kOne));
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
        auto d = edp::hami::parse_drs_decision(c.pod);
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

    auto p = edp::hami::pick_drs(pods, 1);
    ASSERT_TRUE(p.decision);
    EXPECT_EQ(p.decision->name, "older");
    ASSERT_EQ(p.broken.size(), 1u);
    EXPECT_EQ(p.broken[0].name, "broken");
    auto two = edp::hami::pick_drs(pods, 2);
    ASSERT_TRUE(two.decision);
    EXPECT_EQ(two.decision->name, "two-slices");
    EXPECT_FALSE(edp::hami::pick_drs(pods, 3).decision);
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
    auto d = edp::hami::parse_card_decision(card_pod("p", "10", raw), "n");
    ASSERT_TRUE(d) << d.error().what();
    ASSERT_EQ(d->containers.size(), 2u);
    EXPECT_TRUE(d->containers[0].empty());
    EXPECT_EQ(d->containers[1], (std::vector<std::uint32_t>{2, 3}));
    EXPECT_EQ(edp::hami::encode_cards(*d, "n"), raw);
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
        auto d = edp::hami::parse_card_decision(card_pod("p", "10", raw), "n");
        ASSERT_FALSE(d) << raw;
        EXPECT_NE(std::string(d.error().what())
                      .find("annotation hami.io/enflame-gcu-devices-to-allocate " + want),
                  std::string::npos)
            << d.error().what();
    }
    auto t = edp::hami::parse_card_decision(card_pod("p", "soon", "n-GCU-1,GCU,100,100:;"), "n");
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
    auto p = edp::hami::pick_cards(pods, "n", 1);
    ASSERT_TRUE(p.decision);
    EXPECT_EQ(p.decision->name, "older");
    EXPECT_EQ(p.container, 0u);
    EXPECT_FALSE(edp::hami::pick_cards(pods, "n", 2).decision);
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
    EXPECT_EQ(edp::hami::card_slices(h.drs_profiles), 4u);
    const auto a = edp::hami::node_annotations(h, {{0, 1}});
    EXPECT_EQ(
        a.drs_capacity,
        R"({"devices":[{"capacity":3,"index":"0","minor":"10"},{"capacity":4,"index":"1","minor":"11"}],)"
        R"("profiles":{"1g.11gb":"0","2g.22gb":"1"}})");
    EXPECT_EQ(a.shared_capacity, R"({"10":3,"11":4})");
    EXPECT_EQ(a.cards, 3u);
}

TEST(HamiResources, WholeCardsAndOneSliceIdPerSlice) {
    inject::device::Host h;
    for (std::uint32_t i = 0; i < 2; ++i) {
        inject::device::Device d;
        d.index = i;
        d.minor = i;
        d.uuid = "U" + std::to_string(i);
        h.devices.push_back(d);
    }
    h.drs_profiles = {{"1g.11gb", 0, 4, 0, 0}};
    auto r = edp::hami::make_resources(h, edp::IdStrategy::Uuid, "enflame.com/gcu",
                                       "enflame-gcu.sock", "enflame.com/drs-gcu");
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].inventory.devices.size(), 2u);
    EXPECT_EQ((*r)[1].name, "enflame.com/drs-gcu");
    ASSERT_EQ((*r)[1].inventory.devices.size(), 8u);
    EXPECT_EQ((*r)[1].inventory.devices[5].id, "1-1");
}

}  // namespace

namespace {

// The instances' checkpoint: what it writes reads back; garbage is one error naming the file
// and the entry (the plugin then keeps going on the pods' annotations).
TEST(HamiCheckpoint, RoundTripAndGarbage) {
    const std::vector<edp::hami::Recorded> rs{{"uid-a", "default", "a", 1, 0, "DRS-1111"},
                                              {"uid-b", "ns2", "b", 3, 2, ""}};
    const auto text = edp::hami::checkpoint_text(rs);
    auto back = edp::hami::parse_checkpoint(text, "cp.json");
    ASSERT_TRUE(back) << back.error().what();
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[0].uid, "uid-a");
    EXPECT_EQ((*back)[0].uuid, "DRS-1111");
    EXPECT_EQ((*back)[1].ns, "ns2");
    EXPECT_EQ((*back)[1].card, 3u);
    EXPECT_EQ((*back)[1].instance_id, 2u);
    EXPECT_EQ(edp::hami::checkpoint_text(*back), text);
    EXPECT_TRUE(edp::hami::parse_checkpoint(R"({"version":1,"instances":[]})", "cp.json"));
    const std::pair<const char*, const char*> bad[] = {
        {"", "cp.json: want {\"version\":1,\"instances\":[...]} (JSON)"},
        {R"({"version":2,"instances":[]})",
         "cp.json: want {\"version\":1,\"instances\":[...]} (JSON)"},
        {R"({"version":1,"instances":[{"podUID":"u","card":-1,"instance":0}]})",
         "cp.json: instances[0]: want podUID, card and instance"},
        {R"({"version":1,"instances":[{"podUID":"u","card":0,"instance":0},{"card":0,"instance":1}]})",
         "cp.json: instances[1]: want podUID, card and instance"},
    };
    for (const auto& [text, want] : bad) {
        auto r = edp::hami::parse_checkpoint(text, "cp.json");
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
        edp::hami::Recorded r;
        bool want;
    } cases[] = {
        {"SameIdAndUuid", {"u", "", "", 1, 0, "DRS-1111"}, true},
        {"NoUuidRecorded", {"u", "", "", 1, 1, ""}, true},
        {"IdReusedByAnother", {"u", "", "", 1, 1, "DRS-1111"}, false},
        {"IdGone", {"u", "", "", 1, 5, ""}, false},
        {"CardGone", {"u", "", "", 2, 0, ""}, false},
    };
    for (const auto& c : cases) EXPECT_EQ(edp::hami::still_there(h, c.r), c.want) << c.name;
}

}  // namespace
