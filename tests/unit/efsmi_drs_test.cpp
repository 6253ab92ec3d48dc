// SPDX-License-Identifier: Apache-2.0
// The DRS parsers: `efsmi [-i <card>] --drs --list-profile` and `--drs --list-instance` in
// both instance layouts, read as gcushare 3.6.5 reads them (rows are the lines holding a
// `\d+g\.\d+gb` profile name, `|` borders blanked, split on blanks). The column order is
// gcushare's; the borders, headers and spacing of these tables are variants we made up, since
// no real capture is public: the parser must not depend on them.
#include <gtest/gtest.h>

#include <string>

#include "inject/discover.hpp"

namespace {

using namespace inject::discover;

constexpr std::uint64_t kMiB = 1ULL << 20;

// name, id, max instances, memory, SIPs
const std::vector<inject::device::DrsProfile> kS60Profiles = {{"1g.11gb", 0, 4, 10744 * kMiB, 6},
                                                              {"2g.22gb", 1, 2, 21488 * kMiB, 12}};

// Our simulator's layout (sim/drs.cpp): a titled, bordered table, two S60 cards.
constexpr const char* kProfilesBordered =
    "+---------------------------------------------------------+\n"
    "| DRS Profiles                                            |\n"
    "+-----+---------+------------+-----------+----------+-----+\n"
    "| GCU | Name    | Profile ID | Instances | Memory   | SIP |\n"
    "+=====+=========+============+===========+==========+=====+\n"
    "| 0   | 1g.11gb | 0          | 4         | 10744MiB | 6   |\n"
    "| 0   | 2g.22gb | 1          | 2         | 21488MiB | 12  |\n"
    "| 0   | full    | 2          | 1         | 42976MiB | 24  |\n"
    "| 1   | 1g.11gb | 0          | 4         | 10744MiB | 6   |\n"
    "| 1   | 2g.22gb | 1          | 2         | 21488MiB | 12  |\n"
    "| 1   | full    | 2          | 1         | 42976MiB | 24  |\n"
    "+-----+---------+------------+-----------+----------+-----+\n";

TEST(EfsmiDrsProfiles, BorderedTableOncePerProductFullIsNotARow) {
    auto r = parse_efsmi_drs_profiles(kProfilesBordered);
    ASSERT_TRUE(r) << r.error().what();
    // "full" does not match the profile-name pattern: gcushare does not see it either.
    EXPECT_EQ(*r, kS60Profiles);
}

struct Variant {
    const char* name;
    std::string text;
};

// The same two profiles of card 3 however the table is drawn.
const Variant kProfileVariants[] = {
    {"Plain", "3 1g.11gb 0 4 10744MiB 6\n3 2g.22gb 1 2 21488MiB 12\n"},
    {"TabsAndCrLf",
     "GCU\tName\tID\n3\t1g.11gb\t0\t4\t10744MiB\t6\r\n3\t2g.22gb\t1\t2\t21488MiB\t12\r\n"},
    {"SpacedUnit",
     "  3   1g.11gb   0   4   10744 MiB   6\n  3   2g.22gb   1   2   21488 MiB   12\n"},
    {"BareMiB", "|3|1g.11gb|0|4|10744|6|\n|3|2g.22gb|1|2|21488|12|\n"},
    {"GiB", "| 3 1g.11gb 0 4 10.4921875GiB 6 |\n| 3 2g.22gb 1 2 20.984375GiB 12 |\n"},
    {"HeaderNotesBorders",
     "efsmi DRS (card 3)\n+--+--+\n| Card | Profile | ... |\nNote: DRS profiles of GCU 3 (S60).\n"
     "| 3 | 1g.11gb | 0 | 4 | 10744MiB | 6 |\n+--+--+\n| 3 | 2g.22gb | 1 | 2 | 21488MiB | 12 "
     "|\n+--+--+\n"},
};

class EfsmiDrsProfileVariants : public testing::TestWithParam<Variant> {};

TEST_P(EfsmiDrsProfileVariants, SameProfiles) {
    auto r = parse_efsmi_drs_profiles(GetParam().text, 3);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(*r, kS60Profiles);
}

INSTANTIATE_TEST_SUITE_P(Layouts, EfsmiDrsProfileVariants, testing::ValuesIn(kProfileVariants),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EfsmiDrsProfiles, NoRowsIsNoProfiles) {
    // Not profile names, so not rows: "1g.11gbx", "g.11gb", "1g11gb", "1G.11GB".
    for (const char* text :
         {"", "| GCU 0: DRS not supported |\n", "+---+\n| DRS Profiles |\n+---+\n",
          "0 1g.11gbx 0 4 10744MiB 6\n0 g.11gb 0 4 1MiB 6\n0 1g11gb 0 4 1MiB 6\n0 1G.11GB 0 4 1MiB "
          "6\n"}) {
        auto r = parse_efsmi_drs_profiles(text, 0);
        ASSERT_TRUE(r) << text << ": " << r.error().what();
        EXPECT_TRUE(r->empty()) << text;
    }
}

TEST(EfsmiDrsInstances, PlacementLayout) {
    auto r = parse_efsmi_drs_instances(
        "+-----------------------------------------------------+\n"
        "| DRS Instances                                       |\n"
        "+-----+---------+------------+-------------+-----------+\n"
        "| GCU | Name    | Profile ID | Instance ID | Placement |\n"
        "+=====+=========+============+=============+===========+\n"
        "| 0   | 1g.11gb | 0          | 0           | 0:1       |\n"
        "| 0   | 1g.11gb | 0          | 1           | 1:1       |\n"
        "| 0   | 2g.22gb | 1          | 2           | 2:2       |\n"
        "+-----+---------+------------+-------------+-----------+\n",
        0);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 3u);
    const auto& c = (*r)[2];
    EXPECT_EQ(c.parent_index, 0u);
    EXPECT_EQ(c.profile, "2g.22gb");
    ASSERT_TRUE(c.profile_id.has_value());
    EXPECT_EQ(*c.profile_id, 1u);
    EXPECT_EQ(c.instance_id, 2u);
    EXPECT_EQ(c.placement, "2:2");
    EXPECT_EQ(c.uuid, "");
    EXPECT_EQ(inject::device::drs_name(c), "0:2g.22gb:2");
    EXPECT_EQ(inject::device::drs_address(c), "0:2g.22gb:2");
    EXPECT_EQ((*r)[1].instance_id, 1u);
    EXPECT_EQ((*r)[1].placement, "1:1");
}

TEST(EfsmiDrsInstances, PlacementWithBlanksIsKeptWhole) {
    auto r = parse_efsmi_drs_instances("1  2g.22gb  1  0  {2, 3}\n", 1);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].placement, "{2, 3}");
}

TEST(EfsmiDrsInstances, UuidLayout) {
    auto r = parse_efsmi_drs_instances(
        "GCU  Name     Instance ID  UUID\n"
        "1    1g.11gb  0            4c1e9a52-0000-4000-8000-000000000000\n"
        "1    1g.11gb  3            4c1e9a52-0000-4000-8000-000000000003\n");
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 2u);
    const auto& b = (*r)[1];
    EXPECT_EQ(b.parent_index, 1u);
    EXPECT_EQ(b.instance_id, 3u);
    EXPECT_EQ(b.profile, "1g.11gb");
    EXPECT_EQ(b.uuid, "4c1e9a52-0000-4000-8000-000000000003");
    EXPECT_FALSE(b.profile_id.has_value());
    EXPECT_EQ(b.placement, "");
    EXPECT_EQ(inject::device::drs_name(b), "1:1g.11gb:3");
    EXPECT_EQ(inject::device::drs_address(b), "DRS-4c1e9a52-0000-4000-8000-000000000003");
}

TEST(EfsmiDrsInstances, NoRowsIsNoInstances) {
    for (const char* text : {"", "| No DRS instance found |\n", "| GCU 0: DRS is off |\n+--+\n"}) {
        auto r = parse_efsmi_drs_instances(text, 0);
        ASSERT_TRUE(r) << text << ": " << r.error().what();
        EXPECT_TRUE(r->empty()) << text;
    }
}

struct DrsBad {
    const char* name;
    bool instances;  // --list-instance, else --list-profile
    std::string text;
    std::string error;
};

const DrsBad kDrsBad[] = {
    {"ProfileTooFewColumns", false, "hdr\n| 0 | 1g.11gb | 0 | 4 |\n",
     "efsmi --drs --list-profile: line 2: want 6 columns, not 4 in '0 1g.11gb 0 4'"},
    {"ProfileBadCard", false, "x 1g.11gb 0 4 10744MiB 6\n",
     "efsmi --drs --list-profile: line 1: bad card index 'x' in 'x 1g.11gb 0 4 10744MiB 6'"},
    {"ProfileOtherCard", false, "1 1g.11gb 0 4 10744MiB 6\n",
     "efsmi --drs --list-profile: line 1: a row of card 1 in the answer for card 0 in '1 1g.11gb 0 "
     "4 10744MiB 6'"},
    {"ProfileNameNotSecond", false, "0 0 1g.11gb 4 10744MiB 6\n",
     "efsmi --drs --list-profile: line 1: bad profile name '0' in '0 0 1g.11gb 4 10744MiB 6'"},
    {"ProfileBadId", false, "0 1g.11gb a 4 10744MiB 6\n",
     "efsmi --drs --list-profile: line 1: bad profile id 'a' in '0 1g.11gb a 4 10744MiB 6'"},
    {"ProfileZeroInstances", false, "0 1g.11gb 0 0 10744MiB 6\n",
     "efsmi --drs --list-profile: line 1: bad instance count '0' in '0 1g.11gb 0 0 10744MiB 6'"},
    {"ProfileBadMemory", false, "0 1g.11gb 0 4 lots 6\n",
     "efsmi --drs --list-profile: line 1: bad memory 'lots' in '0 1g.11gb 0 4 lots 6'"},
    {"ProfileBadUnit", false, "0 1g.11gb 0 4 10744 parsecs 6\n",
     "efsmi --drs --list-profile: line 1: bad memory '10744 parsecs' in '0 1g.11gb 0 4 10744 "
     "parsecs 6'"},
    {"ProfileBadSips", false, "0 1g.11gb 0 4 10744MiB -\n",
     "efsmi --drs --list-profile: line 1: bad SIP count '-' in '0 1g.11gb 0 4 10744MiB -'"},
    {"ProfileTruncated", false, "0 1g.11gb 0 4 107",
     "efsmi --drs --list-profile: line 1: want 6 columns, not 5 in '0 1g.11gb 0 4 107'"},
    {"InstanceTooFewColumns", true, "0 1g.11gb 0\n",
     "efsmi --drs --list-instance: line 1: want 4 or 5 columns, not 3 in '0 1g.11gb 0'"},
    {"InstanceBadId", true, "0 1g.11gb 0 x 0:1\n",
     "efsmi --drs --list-instance: line 1: bad instance id 'x' in '0 1g.11gb 0 x 0:1'"},
    {"InstanceBadProfileId", true, "0 1g.11gb p 1 0:1\n",
     "efsmi --drs --list-instance: line 1: bad profile id 'p' in '0 1g.11gb p 1 0:1'"},
    {"InstanceBadUuid", true, "0 1g.11gb 1 {uuid}\n",
     "efsmi --drs --list-instance: line 1: bad uuid '{uuid}' in '0 1g.11gb 1 {uuid}'"},
    {"InstanceUuidLayoutBadId", true, "0 1g.11gb x 4c1e9a52\n",
     "efsmi --drs --list-instance: line 1: bad instance id 'x' in '0 1g.11gb x 4c1e9a52'"},
    {"InstanceTwice", true, "0 1g.11gb 0 1 0:1\n0 1g.11gb 0 1 1:1\n",
     "efsmi --drs --list-instance: line 2: instance 1 listed twice in '0 1g.11gb 0 1 1:1'"},
    {"InstanceOtherCard", true, "2 1g.11gb 0 1 0:1\n",
     "efsmi --drs --list-instance: line 1: a row of card 2 in the answer for card 0 in '2 1g.11gb "
     "0 1 0:1'"},
    {"InstanceGarbageQuoted", true, "0 1g.11gb 0 \x01\xff 0:1\n",
     "efsmi --drs --list-instance: line 1: bad instance id '?\?' in '0 1g.11gb 0 ?\? 0:1'"},
};

class EfsmiDrsBad : public testing::TestWithParam<DrsBad> {};

TEST_P(EfsmiDrsBad, ExactError) {
    const DrsBad& c = GetParam();
    std::string got;
    if (c.instances) {
        auto r = parse_efsmi_drs_instances(c.text, 0);
        ASSERT_FALSE(r);
        got = r.error().what();
    } else {
        auto r = parse_efsmi_drs_profiles(c.text, 0);
        ASSERT_FALSE(r);
        got = r.error().what();
    }
    EXPECT_EQ(got, c.error);
}

INSTANTIATE_TEST_SUITE_P(Malformed, EfsmiDrsBad, testing::ValuesIn(kDrsBad),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
