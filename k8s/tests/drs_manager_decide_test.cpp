// SPDX-License-Identifier: Apache-2.0
// enflame-drs-manager's decision: who holds what (the DRA plugin's and HAMi mode's checkpoints,
// matched to the instances efsmi lists), and what the daemon does about a layout: fail naming
// the card and profile, wait naming the holders, apply, or nothing when the node has it.
#include <gtest/gtest.h>

#include "drs-manager/decide.hpp"
#include "drs-manager/evict.hpp"
#include "drs-manager/holders.hpp"
#include "drs_manager_fixture.hpp"

namespace {

using drs_manager::Decision;
using drs_test::instance;

const std::string kLayouts = R"(version: v1
layouts:
  all-1g:
  - cards: all
    profiles: {1g.11gb: 4}
  all-full:
  - cards: all
    profiles: full
  too-many:
  - cards: {index: [1]}
    profiles: {2g.22gb: 3}
)";

// Card 0 split in four 1g.11gb (UUIDs u0..u3), card 1 whole.
inject::device::Host split_node() {
    auto h = drs_test::s60_node(2);
    for (std::uint32_t i = 0; i < 4; ++i) {
        auto in = instance(0, "1g.11gb", i);
        in.uuid = "u" + std::to_string(i);
        h.devices[0].drs_instances.push_back(in);
    }
    return h;
}

TEST(DrsHolders, DraCheckpointNamesClaimsOfCreatedInstancesWholeCardsAndPendingMadeIds) {
    const auto held = drs_manager::parse_dra_holders(R"({"version": 1, "claims": {
      "uid-a": {"namespace": "ml", "name": "train", "devices": [
        {"requests": ["gpu"], "pool": "n", "device": "gcu-0-1g-11gb-1", "cdiDeviceIDs": [],
         "createdInstance": {"card": 0, "id": 1, "profile": "1g.11gb", "uuid": "u1"}}]},
      "uid-b": {"namespace": "ml", "name": "big", "devices": [
        {"requests": ["gpu"], "pool": "n", "device": "gcu-1", "cdiDeviceIDs": []},
        {"requests": ["gpu"], "pool": "n", "device": "gcu-0-drs-2", "cdiDeviceIDs": []}]}},
      "pending": [{"claim": "uid-c", "card": 0, "profile": "1g.11gb", "before": [],
                   "attempt": 1, "made": {"id": 3, "uuid": "u3"}}]})",
                                                     "dra");
    ASSERT_TRUE(held) << held.error().what();
    const std::vector<drs_manager::Held> want{{0, 1, "1g.11gb", "u1", "claim ml/train"},
                                              {1, std::nullopt, "", "", "claim ml/big"},
                                              {0, 2, "", "", "claim ml/big"},
                                              {0, 3, "1g.11gb", "u3", "claim uid-c (being made)"}};
    EXPECT_EQ(*held, want);
}

TEST(DrsHolders, HamiCheckpointNamesPods) {
    const auto held = drs_manager::parse_hami_holders(
        R"({"version": 1, "instances": [{"podUID": "p1", "namespace": "ml", "pod": "infer",
            "card": 0, "instance": 2, "uuid": "u2", "profile": "1g.11gb"}]})",
        "hami");
    ASSERT_TRUE(held) << held.error().what();
    EXPECT_EQ(*held, (std::vector<drs_manager::Held>{{0, 2, "1g.11gb", "u2", "pod ml/infer"}}));
}

TEST(DrsHolders, PodResourcesNameThePodsOfTheDevicePluginsInstancesAndCards) {
    auto host = split_node();
    host.devices[0].uuid = "TR0";
    host.devices[1].uuid = "TR1";
    v1::ListPodResourcesResponse r;
    auto pod = [&](const std::string& ns, const std::string& name, const std::string& resource,
                   std::vector<std::string> ids) {
        auto* p = r.add_pod_resources();
        p->set_namespace_(ns);
        p->set_name(name);
        auto* d = p->add_containers()->add_devices();
        d->set_resource_name(resource);
        for (const auto& id : ids) d->add_device_ids(id);
    };
    pod("ml", "infer", "enflame.com/drs-1g.11gb", {"DRS-u2"});
    pod("ml", "whole", "enflame.com/gcu", {"TR1::3"});
    pod("ml", "empty", "enflame.com/gcu", {"::1"});
    pod("ml", "other", "example.com/gpu", {"DRS-u1", "0"});    // another vendor's IDs
    pod("ml", "gone", "enflame.com/drs-1g.11gb", {"DRS-u9"});  // no such instance now
    const auto held = drs_manager::pod_resource_holders(r, host);
    const std::vector<drs_manager::Held> want{{0, 2, "1g.11gb", "u2", "pod ml/infer"},
                                              {1, std::nullopt, "", "", "pod ml/whole"}};
    EXPECT_EQ(held, want);
    const auto on = drs_manager::held_on(host, held);
    EXPECT_EQ(on.instances.at("0:1g.11gb:2"), std::vector<std::string>{"pod ml/infer"});
    EXPECT_EQ(on.whole_cards.at(1), std::vector<std::string>{"pod ml/whole"});
}

TEST(DrsHolders, ABadCheckpointIsOneErrorNamingIt) {
    auto r = drs_manager::parse_hami_holders(R"({"version": 1, "instances": [{"card": "x"}]})",
                                             "hami.json");
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().what().starts_with("hami.json: instances: ")) << r.error().what();
    r = drs_manager::parse_dra_holders("not json", "cp.json");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "cp.json: want a JSON object with \"version\": 1");
}

TEST(DrsHolders, MatchedToTheInstancesEfsmiListsByIdProfileAndUuid) {
    const auto host = split_node();
    const auto on =
        drs_manager::held_on(host, {{0, 1, "1g.11gb", "u1", "claim ml/a"},
                                    {0, 2, "1g.11gb", "other-uuid", "claim ml/b"},  // id reused
                                    {0, 7, "", "", "pod ml/gone"},
                                    {1, std::nullopt, "", "", "claim ml/whole"}});
    EXPECT_EQ(on.instances, (drs_manager::Holders{{"0:1g.11gb:1", {"claim ml/a"}}}));
    EXPECT_EQ(on.whole_cards,
              (std::map<std::uint32_t, std::vector<std::string>>{{1, {"claim ml/whole"}}}));
}

TEST(DrsDecide, TheLayoutInForceIsDoneAndCostsNothing) {
    const auto d =
        drs_manager::decide("all-1g", kLayouts, "cm",
                            [] {
                                auto h = split_node();
                                for (std::uint32_t i = 0; i < 4; ++i)
                                    h.devices[1].drs_instances.push_back(instance(1, "1g.11gb", i));
                                return h;
                            }(),
                            {});
    EXPECT_EQ(d.outcome, Decision::Outcome::Done);
    EXPECT_TRUE(d.plan.empty());
}

TEST(DrsDecide, ANewLayoutIsAPlan) {
    const auto d = drs_manager::decide("all-1g", kLayouts, "cm", split_node(), {});
    ASSERT_EQ(d.outcome, Decision::Outcome::Apply);
    ASSERT_EQ(d.plan.cards.size(), 1U);
    EXPECT_EQ(drs_manager::describe(d.plan.cards[0]), "card 1: create 1g.11gb x4");
}

TEST(DrsDecide, AHeldInstanceMakesTheWholeLayoutWaitNamingItsHolder) {
    const auto host = split_node();
    const auto d = drs_manager::decide(
        "all-full", kLayouts, "cm", host,
        drs_manager::held_on(host, {{0, 2, "1g.11gb", "u2", "claim ml/train"}}));
    EXPECT_EQ(d.outcome, Decision::Outcome::Blocked);
    EXPECT_EQ(d.reason, "layout 'all-full': waiting for 0:1g.11gb:2 (held by claim ml/train)");
}

TEST(DrsDecide, ACardHeldWholeIsNotRepartitioned) {
    const auto host = split_node();
    const auto d = drs_manager::decide(
        "all-1g", kLayouts, "cm", host,
        drs_manager::held_on(host, {{1, std::nullopt, "", "", "claim ml/big"}}));
    EXPECT_EQ(d.outcome, Decision::Outcome::Blocked);
    EXPECT_EQ(d.reason, "layout 'all-1g': waiting for card 1 (held by claim ml/big)");
}

TEST(DrsDecide, WhatCannotBeHadFailsInOneLine) {
    const auto host = split_node();
    auto d = drs_manager::decide("too-many", kLayouts, "cm", host, {});
    EXPECT_EQ(d.outcome, Decision::Outcome::Failed);
    EXPECT_EQ(d.reason,
              "layout 'too-many': card 1: 3 instances of '2g.22gb' asked, the profile allows 2");
    d = drs_manager::decide("nope", kLayouts, "cm", host, {});
    EXPECT_EQ(
        d.reason,
        "label enflame.com/drs.config=nope: no such layout (layouts: all-1g, all-full, too-many)");
    d = drs_manager::decide("all-1g", std::nullopt, "configmap ns/x layouts.yaml", host, {});
    EXPECT_EQ(d.reason, "configmap ns/x layouts.yaml: missing (no layouts to pick 'all-1g' from)");
    EXPECT_EQ(d.outcome, Decision::Outcome::Failed);
}

TEST(DrsEvict, ThePodsAmongTheHoldersOfBlockedCardsEachOnceNotClaims) {
    const auto host = split_node();
    const auto d = drs_manager::decide("all-full", kLayouts, "cm", host,
                                       drs_manager::held_on(host, {
                                                                      {0, 1, "", "", "pod ml/a"},
                                                                      {0, 2, "", "", "pod ml/a"},
                                                                      {0, 3, "", "", "claim ml/c"},
                                                                      {0, 0, "", "", "pod web/b"},
                                                                  }));
    ASSERT_EQ(d.outcome, Decision::Outcome::Blocked);
    const auto pods = drs_manager::blocking_pods(d.plan);
    ASSERT_EQ(pods.size(), 2U);
    EXPECT_EQ(pods[0], (drs_manager::BlockingPod{"web", "b", {"0:1g.11gb:0"}}));
    EXPECT_EQ(pods[1], (drs_manager::BlockingPod{"ml", "a", {"0:1g.11gb:1", "0:1g.11gb:2"}}));
}

TEST(DrsEvict, ThePolicyIsWaitOrEvict) {
    EXPECT_EQ(*drs_manager::parse_eviction_policy("--eviction-policy", "wait"),
              drs_manager::EvictionPolicy::Wait);
    EXPECT_EQ(*drs_manager::parse_eviction_policy("--eviction-policy", "evict"),
              drs_manager::EvictionPolicy::Evict);
    const auto bad = drs_manager::parse_eviction_policy("--eviction-policy", "drain");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(), "--eviction-policy 'drain': want wait or evict");
}

TEST(DrsDecide, TheLabelElseTheDefault) {
    EXPECT_EQ(drs_manager::wanted_layout("all-1g", "all-full"), "all-1g");
    EXPECT_EQ(drs_manager::wanted_layout("", "all-full"), "all-full");
    EXPECT_EQ(drs_manager::wanted_layout("", ""), "");
}

}  // namespace
