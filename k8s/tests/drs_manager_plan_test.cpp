// SPDX-License-Identifier: Apache-2.0
// enflame-drs-manager's planner: the fewest destroys and creates per card, held instances never
// destroyed without saying who holds them, a rebuild only when efsmi's aligned placement leaves
// no room, and nothing at all for a card already as its layout says.
#include <gtest/gtest.h>

#include <algorithm>

#include "drs-manager/plan.hpp"
#include "drs_manager_fixture.hpp"
#include "inject/drs_slices.hpp"

namespace {

using drs_manager::CardTarget;
using drs_test::instance;
using inject::device::DrsInstance;

const drs_manager::ProfileCounts kFull{}, k1g{{"1g.11gb", 4}}, k2g{{"2g.22gb", 2}};

struct Row {
    const char* name;
    std::vector<CardTarget> targets;
    std::vector<DrsInstance> now;  // the node's instances (cards 0 and 1)
    drs_manager::Holders holders;
    std::vector<std::string> plan;  // describe() of each card that changes
    std::size_t operations;
};

class Planner : public testing::TestWithParam<Row> {};

TEST_P(Planner, OnATwoCardS60Node) {
    auto host = drs_test::s60_node(2);
    for (const auto& in : GetParam().now) host.devices[in.parent_index].drs_instances.push_back(in);
    const auto plan = drs_manager::plan_layout(GetParam().targets, host, GetParam().holders);
    std::vector<std::string> lines;
    bool blocked = false;
    for (const auto& c : plan.cards) {
        lines.push_back(drs_manager::describe(c));
        blocked = blocked || c.blocked();
    }
    EXPECT_EQ(lines, GetParam().plan);
    EXPECT_EQ(plan.operations(), GetParam().operations);
    EXPECT_EQ(plan.blocked(), blocked);
    EXPECT_EQ(plan.empty(), GetParam().plan.empty());
}

const std::vector<DrsInstance> kFour1g = {
    instance(0, "1g.11gb", 0, "0:1"), instance(0, "1g.11gb", 1, "1:1"),
    instance(0, "1g.11gb", 2, "2:1"), instance(0, "1g.11gb", 3, "3:1")};
const std::vector<DrsInstance> kTwo2g = {instance(0, "2g.22gb", 0, "0:2"),
                                         instance(0, "2g.22gb", 1, "2:2")};

INSTANTIATE_TEST_SUITE_P(
    DrsManager, Planner,
    testing::Values(
        Row{"UnchangedIsEmpty", {{0, k1g}, {1, kFull}}, kFour1g, {}, {}, 0},
        Row{"UnchangedHeldIsEmpty", {{0, k1g}}, kFour1g, {{"0:1g.11gb:2", {"ml/train"}}}, {}, 0},
        Row{"FullToSlices",
            {{0, k1g}, {1, k2g}},
            {},
            {},
            {"card 0: create 1g.11gb x4", "card 1: create 2g.22gb x2"},
            6},
        Row{"SlicesToFull",
            {{0, kFull}},
            kTwo2g,
            {},
            {"card 0: destroy 0:2g.22gb:0 0:2g.22gb:1"},
            2},
        Row{"ReshapeTheCard",
            {{0, k2g}},
            kFour1g,
            {},
            {"card 0: destroy 0:1g.11gb:0 0:1g.11gb:1 0:1g.11gb:2 0:1g.11gb:3; create 2g.22gb x2"},
            6},
        Row{"KeepsWhatMatches",
            {{0, {{"1g.11gb", 2}, {"2g.22gb", 1}}}},
            {instance(0, "1g.11gb", 0, "0:1"), instance(0, "1g.11gb", 1, "1:1")},
            {},
            {"card 0: create 2g.22gb x1"},
            1},
        Row{"LargestCreatedFirst",
            {{0, {{"1g.11gb", 2}, {"2g.22gb", 1}}}},
            {},
            {},
            {"card 0: create 2g.22gb x1 1g.11gb x2"},
            3},
        Row{"SurplusUnheldHighestFirst",
            {{0, {{"1g.11gb", 2}}}},
            kFour1g,
            {{"0:1g.11gb:3", {"ml/train"}}},
            {"card 0: destroy 0:1g.11gb:1 0:1g.11gb:2"},
            2},
        Row{"HeldBlocks",
            {{0, k1g}},
            kTwo2g,
            {{"0:2g.22gb:1", {"ml/train", "ml/eval"}}},
            {"card 0: destroy 0:2g.22gb:0 0:2g.22gb:1; create 1g.11gb x4; waiting for 0:2g.22gb:1 "
             "(held by ml/train "
             "ml/eval)"},
            6},
        Row{"OnlyTheChangingCardBlocks",
            {{0, k1g}, {1, kFull}},
            {instance(0, "2g.22gb", 0, "0:2"), instance(1, "1g.11gb", 0, "0:1")},
            {{"0:2g.22gb:0", {"ml/a"}}},
            {"card 0: destroy 0:2g.22gb:0; create 1g.11gb x4; waiting for 0:2g.22gb:0 (held by "
             "ml/a)",
             "card 1: destroy 1:1g.11gb:0"},
            6},
        Row{"UnofferedProfileDestroyed",
            {{0, kFull}},
            {instance(0, "3g.40gb", 5)},
            {},
            {"card 0: destroy 0:3g.40gb:5"},
            1},
        Row{"UntargetedCardLeftAlone", {{0, kFull}}, {instance(1, "1g.11gb", 0, "0:1")}, {}, {}, 0},
        // Kept 1g.11gb at slices 1 and 2: no aligned pair is free for the 2g.22gb.
        Row{"FragmentedRebuilt",
            {{0, {{"1g.11gb", 2}, {"2g.22gb", 1}}}},
            {instance(0, "1g.11gb", 0, "1:1"), instance(0, "1g.11gb", 1, "2:1")},
            {},
            {"card 0: destroy 0:1g.11gb:0 0:1g.11gb:1; create 2g.22gb x1 1g.11gb x2"},
            5},
        Row{"FragmentedKeepsTheHeld",
            {{0, {{"1g.11gb", 2}, {"2g.22gb", 1}}}},
            {instance(0, "1g.11gb", 0, "1:1"), instance(0, "1g.11gb", 1, "2:1")},
            {{"0:1g.11gb:0", {"ml/a"}}},
            {"card 0: destroy 0:1g.11gb:1; create 2g.22gb x1 1g.11gb x1"},
            3},
        Row{"FragmentedBothHeldBlocks",
            {{0, {{"1g.11gb", 2}, {"2g.22gb", 1}}}},
            {instance(0, "1g.11gb", 0, "1:1"), instance(0, "1g.11gb", 1, "2:1")},
            {{"0:1g.11gb:0", {"ml/a"}}, {"0:1g.11gb:1", {"ml/b"}}},
            {"card 0: destroy 0:1g.11gb:0 0:1g.11gb:1; create 2g.22gb x1 1g.11gb x2; waiting for "
             "0:1g.11gb:0 (held "
             "by ml/a), 0:1g.11gb:1 (held by ml/b)"},
            5},
        // Older efsmi prints no placement: nothing to check, the fewest calls.
        Row{"NoPlacementTrusted",
            {{0, {{"1g.11gb", 2}, {"2g.22gb", 1}}}},
            {instance(0, "1g.11gb", 0), instance(0, "1g.11gb", 1)},
            {},
            {"card 0: create 2g.22gb x1"},
            1}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(DrsManagerPlan, CreatesCarryTheProfileEfsmiNeeds) {
    auto host = drs_test::s60_node(1);
    const auto plan = drs_manager::plan_layout({{0, {{"2g.22gb", 1}}}}, host, {});
    ASSERT_EQ(plan.cards.size(), 1U);
    ASSERT_EQ(plan.cards[0].create.size(), 1U);
    EXPECT_EQ(plan.cards[0].create[0], host.drs_profiles[1]);  // id 1: efsmi --create-instance 1
}

TEST(DrsManagerPlan, HoldsNameTheInstanceAndItsHolders) {
    auto host = drs_test::s60_node(1);
    host.devices[0].drs_instances = kTwo2g;
    const auto plan = drs_manager::plan_layout({{0, kFull}}, host, {{"0:2g.22gb:0", {"ml/train"}}});
    ASSERT_EQ(plan.cards.size(), 1U);
    EXPECT_EQ(plan.cards[0].holds, (std::vector<drs_manager::Hold>{{"0:2g.22gb:0", {"ml/train"}}}));
    EXPECT_TRUE(plan.blocked());
}

/// What efsmi leaves after `plan` (sim/drs.cpp): destroys, then each create at the lowest
/// free instance id and the first aligned free run.
void apply(const drs_manager::Plan& plan, inject::device::Host& host) {
    for (const auto& c : plan.cards) {
        auto& list = host.devices[c.card].drs_instances;
        for (const auto& d : c.destroy)
            std::erase_if(list,
                          [&](const DrsInstance& in) { return in.instance_id == d.instance_id; });
        for (const auto& p : c.create) {
            std::vector<inject::drs::SliceRun> taken;
            for (const auto& in : list)
                taken.push_back(*inject::drs::parse_placement(in.placement));
            const auto n = *inject::drs::profile_slices(p.name);
            const auto start = inject::drs::first_fit(4, taken, n);
            ASSERT_TRUE(start) << p.name;
            std::uint32_t id = 0;
            while (std::any_of(list.begin(), list.end(),
                               [&](const auto& in) { return in.instance_id == id; }))
                ++id;
            list.push_back(
                instance(c.card, p.name, id, std::to_string(*start) + ":" + std::to_string(n)));
        }
    }
}

/// The plan of the shipped layout `label` on `host`, one describe() line per card.
std::vector<std::string> plan_lines(const char* label, const inject::device::Host& host,
                                    const drs_manager::Holders& holders, drs_manager::Plan& plan) {
    const auto layouts = drs_test::shipped_layouts();
    auto layout = drs_manager::find_layout(layouts, label);
    EXPECT_TRUE(layout) << layout.error().what();
    auto targets = drs_manager::resolve_layout(**layout, host);
    EXPECT_TRUE(targets) << targets.error().what();
    plan = drs_manager::plan_layout(*targets, host, holders);
    std::vector<std::string> out;
    for (const auto& c : plan.cards) out.push_back(drs_manager::describe(c));
    return out;
}

// docs/drs-manager.md, "Worked examples", one after the other.
TEST(DrsManagerPlan, TheWorkedExamplesOfTheDocs) {
    auto host = drs_test::s60_node(4);
    drs_manager::Plan plan;
    EXPECT_EQ(plan_lines("mixed", host, {}, plan),
              (std::vector<std::string>{"card 0: create 1g.11gb x4", "card 1: create 1g.11gb x4"}));
    EXPECT_EQ(plan.operations(), 8U);
    apply(plan, host);
    EXPECT_TRUE(plan_lines("mixed", host, {}, plan).empty());

    const drs_manager::Holders train{{"0:1g.11gb:1", {"ml/train"}}};
    EXPECT_EQ(plan_lines("all-balanced", host, train, plan),
              (std::vector<std::string>{
                  "card 0: destroy 0:1g.11gb:2 0:1g.11gb:3; create 2g.22gb x1",
                  "card 1: destroy 1:1g.11gb:2 1:1g.11gb:3; create 2g.22gb x1",
                  "card 2: create 2g.22gb x1 1g.11gb x2", "card 3: create 2g.22gb x1 1g.11gb x2"}));
    EXPECT_EQ(plan.operations(), 12U);
    EXPECT_FALSE(plan.blocked());
    apply(plan, host);

    const auto lines = plan_lines("all-2g.22gb", host, train, plan);
    ASSERT_EQ(lines.size(), 4U);
    EXPECT_EQ(lines[0],
              "card 0: destroy 0:1g.11gb:0 0:1g.11gb:1; create 2g.22gb x1; waiting for 0:1g.11gb:1 "
              "(held by ml/train)");
    EXPECT_EQ(lines[1], "card 1: destroy 1:1g.11gb:0 1:1g.11gb:1; create 2g.22gb x1");
    EXPECT_TRUE(plan.blocked());
    EXPECT_FALSE(plan.cards[1].blocked());
}

}  // namespace
