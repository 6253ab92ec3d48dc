// SPDX-License-Identifier: Apache-2.0
// enflame-drs-manager's layouts: the ConfigMap text read (every bad input one error naming the
// line and key), the shipped examples, and a layout checked against an S60 node.
#include <gtest/gtest.h>

#include "drs_manager_fixture.hpp"

namespace {

using drs_manager::CardTarget;
using drs_manager::ProfileCounts;

const std::string kSource = "layouts.yaml";

std::string with_layout(const std::string& entries) {
    return "version: v1\nlayouts:\n  x:\n" + entries;
}

struct BadText {
    const char* name;
    std::string text;
    std::string error;  // the whole message
};

class LayoutParseError : public testing::TestWithParam<BadText> {};

TEST_P(LayoutParseError, OneLineNamingTheInput) {
    auto r = drs_manager::parse_layouts(GetParam().text, kSource);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), GetParam().error);
    EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput);
}

INSTANTIATE_TEST_SUITE_P(
    DrsManager, LayoutParseError,
    testing::Values(
        BadText{"NotYaml", "version: [v1",
                "layouts.yaml: line 1: not YAML: end of sequence flow not found"},
        BadText{"Empty", "", "layouts.yaml: empty (want version and layouts)"},
        BadText{"NoVersion", "layouts: {}", "layouts.yaml: line 1: version: missing (want v1)"},
        BadText{"WrongVersion", "version: v2\nlayouts: {}",
                "layouts.yaml: line 1: version: want v1, got 'v2'"},
        BadText{"UnknownTopKey", "version: v1\nmig-configs: {}",
                "layouts.yaml: line 2: mig-configs: unknown key"},
        BadText{"NoLayouts", "version: v1\nlayouts: {}",
                "layouts.yaml: line 2: layouts: want a mapping of layout names to entries"},
        BadText{"NameNotALabelValue",
                "version: v1\nlayouts:\n  -bad-: [{cards: all, profiles: full}]",
                "layouts.yaml: line 3: layouts.-bad-: not a label value (at most 63 of A-Z a-z 0-9 "
                ". _ -, "
                "alphanumeric at both ends)"},
        BadText{"NoEntries", with_layout("    []"),
                "layouts.yaml: line 4: layouts.x: want a non-empty list of entries"},
        BadText{"UnknownEntryKey",
                with_layout("  - {cards: all, profiles: full, migEnabled: true}"),
                "layouts.yaml: line 4: layouts.x[0].migEnabled: unknown key"},
        BadText{"NoCards", with_layout("  - {profiles: full}"),
                "layouts.yaml: line 4: layouts.x[0].cards: missing"},
        BadText{"NoProfiles", with_layout("  - {cards: all}"),
                "layouts.yaml: line 4: layouts.x[0].profiles: missing"},
        BadText{"CardsWord", with_layout("  - {cards: some, profiles: full}"),
                "layouts.yaml: line 4: layouts.x[0].cards: want all or one of index, model, "
                "pciBusId; got 'some'"},
        BadText{
            "TwoSelectors", with_layout("  - {cards: {index: [0], model: S60}, profiles: full}"),
            "layouts.yaml: line 4: layouts.x[0].cards: want exactly one of index, model, pciBusId"},
        BadText{"IndexNotNumber", with_layout("  - {cards: {index: [0, one]}, profiles: full}"),
                "layouts.yaml: line 4: layouts.x[0].cards.index[1]: want a whole number from 0 to "
                "1023, got 'one'"},
        BadText{"IndexTwice", with_layout("  - {cards: {index: [1, 1]}, profiles: full}"),
                "layouts.yaml: line 4: layouts.x[0].cards.index[1]: '1' is listed twice"},
        BadText{"IndexNotAList", with_layout("  - {cards: {index: 0}, profiles: full}"),
                "layouts.yaml: line 4: layouts.x[0].cards.index: want a non-empty list"},
        BadText{"PciBusIdEmpty", with_layout("  - {cards: {pciBusId: []}, profiles: full}"),
                "layouts.yaml: line 4: layouts.x[0].cards.pciBusId: want a non-empty list"},
        BadText{"ProfilesWord", with_layout("  - {cards: all, profiles: half}"),
                "layouts.yaml: line 4: layouts.x[0].profiles: want full or a mapping of profile to "
                "count, got 'half'"},
        BadText{"CountZero", with_layout("  - {cards: all, profiles: {1g.11gb: 0}}"),
                "layouts.yaml: line 4: layouts.x[0].profiles.1g.11gb: want a whole number from 1 "
                "to 64, got '0'"},
        BadText{"CountNegative", with_layout("  - {cards: all, profiles: {1g.11gb: -1}}"),
                "layouts.yaml: line 4: layouts.x[0].profiles.1g.11gb: want a whole number from 1 "
                "to 64, got '-1'"},
        BadText{"CountAList", with_layout("  - {cards: all, profiles: {1g.11gb: [4]}}"),
                "layouts.yaml: line 4: layouts.x[0].profiles.1g.11gb: want a whole number from 1 "
                "to 64"}),
    [](const auto& info) { return std::string(info.param.name); });

struct Resolved {
    const char* layout;
    std::vector<CardTarget> targets;
};

class ShippedLayout : public testing::TestWithParam<Resolved> {};

TEST_P(ShippedLayout, FitsAFourCardS60Node) {
    const auto layouts = drs_test::shipped_layouts();
    auto l = drs_manager::find_layout(layouts, GetParam().layout);
    ASSERT_TRUE(l) << l.error().what();
    auto r = drs_manager::resolve_layout(**l, drs_test::s60_node());
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(*r, GetParam().targets);
}

const ProfileCounts kFull{}, k1g{{"1g.11gb", 4}}, k2g{{"2g.22gb", 2}};

INSTANTIATE_TEST_SUITE_P(
    DrsManager, ShippedLayout,
    testing::Values(Resolved{"all-full", {{0, kFull}, {1, kFull}, {2, kFull}, {3, kFull}}},
                    Resolved{"all-1g.11gb", {{0, k1g}, {1, k1g}, {2, k1g}, {3, k1g}}},
                    Resolved{"all-2g.22gb", {{0, k2g}, {1, k2g}, {2, k2g}, {3, k2g}}},
                    Resolved{"all-balanced",
                             {{0, {{"1g.11gb", 2}, {"2g.22gb", 1}}},
                              {1, {{"1g.11gb", 2}, {"2g.22gb", 1}}},
                              {2, {{"1g.11gb", 2}, {"2g.22gb", 1}}},
                              {3, {{"1g.11gb", 2}, {"2g.22gb", 1}}}}},
                    Resolved{"mixed", {{0, k1g}, {1, k1g}, {2, kFull}, {3, kFull}}}),
    [](const auto& info) {
        std::string n = info.param.layout;
        for (auto& c : n)
            if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
        return n;
    });

TEST(DrsManagerLayout, FindNamesTheLabelAndTheLayouts) {
    auto r = drs_manager::find_layout(drs_test::shipped_layouts(), "all-3g");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::NotFound);
    EXPECT_EQ(r.error().what(),
              "label enflame.com/drs.config=all-3g: no such layout (layouts: all-full, "
              "all-1g.11gb, all-2g.22gb, all-balanced, mixed)");
}

struct Check {
    const char* name;
    std::string entries;  // layout x's entries
    std::string error;    // empty: resolves to `targets`
    std::vector<CardTarget> targets = {};
    bool drs = true;  // false: the node's efsmi lists no DRS profile
};

class LayoutCheck : public testing::TestWithParam<Check> {};

TEST_P(LayoutCheck, AgainstATwoCardS60Node) {
    auto parsed = drs_manager::parse_layouts(with_layout(GetParam().entries), kSource);
    ASSERT_TRUE(parsed) << parsed.error().what();
    auto host = drs_test::s60_node(2);
    if (!GetParam().drs) host.drs_profiles.clear();
    auto r = drs_manager::resolve_layout(parsed->front(), host);
    if (GetParam().error.empty()) {
        ASSERT_TRUE(r) << r.error().what();
        EXPECT_EQ(*r, GetParam().targets);
    } else {
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().what(), GetParam().error);
    }
}

INSTANTIATE_TEST_SUITE_P(
    DrsManager, LayoutCheck,
    testing::Values(
        Check{"ByModel",
              "  - {cards: {model: S60}, profiles: {2g.22gb: 1}}",
              "",
              {{0, {{"2g.22gb", 1}}}, {1, {{"2g.22gb", 1}}}}},
        Check{"ByPciBusIdAnyCase",
              "  - {cards: {pciBusId: [0000:1B:00.0]}, profiles: {}}",
              "",
              {{1, {}}}},
        Check{"UnselectedCardsLeftOut",
              "  - {cards: {index: [1]}, profiles: {1g.11gb: 1}}",
              "",
              {{1, {{"1g.11gb", 1}}}}},
        Check{"FillsTheCard",
              "  - {cards: all, profiles: {1g.11gb: 2, 2g.22gb: 1}}",
              "",
              {{0, {{"1g.11gb", 2}, {"2g.22gb", 1}}}, {1, {{"1g.11gb", 2}, {"2g.22gb", 1}}}}},
        Check{"UnknownProfile", "  - {cards: all, profiles: {3g.40gb: 1}}",
              "layout 'x': card 0: profile '3g.40gb' is not offered by this node (offered: "
              "1g.11gb, 2g.22gb)"},
        Check{"FullIsNoProfile", "  - {cards: all, profiles: {full: 1}}",
              "layout 'x': card 0: profile 'full' is not offered by this node (offered: 1g.11gb, "
              "2g.22gb)"},
        Check{"NodeWithoutDrs",
              "  - {cards: all, profiles: {1g.11gb: 1}}",
              "layout 'x': card 0: profile '1g.11gb' is not offered by this node (it offers no DRS "
              "profile)",
              {},
              false},
        Check{"MoreThanTheProfileAllows", "  - {cards: all, profiles: {2g.22gb: 3}}",
              "layout 'x': card 0: 3 instances of '2g.22gb' asked, the profile allows 2"},
        Check{"MoreThanTheCardHolds", "  - {cards: all, profiles: {1g.11gb: 1, 2g.22gb: 2}}",
              "layout 'x': card 0: {1g.11gb: 1, 2g.22gb: 2} does not fit the card's 4 slice(s)"},
        Check{
            "CardInTwoEntries",
            "  - {cards: all, profiles: full}\n  - {cards: {index: [1]}, profiles: full}",
            "layout 'x': card 1: selected by entry 0 (cards: all) and entry 1 (cards: index [1])"},
        Check{"SelectsNoCard",
              "  - {cards: {index: [0, 7]}, profiles: full}\n  - {cards: {index: [7]}, profiles: "
              "full}",
              "layout 'x': entry 1 (cards: index [7]) selects no card of this node (cards: 0, 1)"},
        Check{"NoSuchModel", "  - {cards: {model: T10}, profiles: full}",
              "layout 'x': entry 0 (cards: model T10) selects no card of this node (cards: 0, 1)"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
