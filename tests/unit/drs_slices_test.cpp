// SPDX-License-Identifier: Apache-2.0
// The DRS slice rule (inject/drs_slices.hpp), which the simulated efsmi (sim/drs.cpp) applies
// to --create-instance: profile and card slices, placements, aligned first fit.
#include "inject/drs_slices.hpp"

#include <gtest/gtest.h>

namespace {

using inject::drs::SliceRun;

TEST(DrsSlices, ProfileSlicesFromTheName) {
    EXPECT_EQ(inject::drs::profile_slices("1g.11gb"), 1U);
    EXPECT_EQ(inject::drs::profile_slices("6g.40gb"), 6U);
    EXPECT_EQ(inject::drs::profile_slices("full"), std::nullopt);
    EXPECT_EQ(inject::drs::profile_slices("0g.1gb"), std::nullopt);
    EXPECT_EQ(inject::drs::profile_slices("xg.11gb"), std::nullopt);
    EXPECT_EQ(inject::drs::profile_slices("1g.11"), std::nullopt);
}

TEST(DrsSlices, CardSlicesIsTheLargestGTimesMax) {
    const std::vector<inject::device::DrsProfile> s60 = {{"1g.11gb", 0, 4, 0, 0},
                                                         {"2g.22gb", 1, 2, 0, 0}};
    EXPECT_EQ(inject::drs::card_slices(s60), 4U);
    EXPECT_EQ(inject::drs::card_slices({{"3g.20gb", 0, 2, 0, 0}, {"1g.6gb", 1, 4, 0, 0}}), 6U);
    EXPECT_EQ(inject::drs::card_slices({{"full", 0, 1, 0, 0}}), 0U);
    EXPECT_EQ(inject::drs::card_slices({}), 0U);
}

TEST(DrsSlices, Placement) {
    EXPECT_EQ(inject::drs::parse_placement("2:2"), (SliceRun{2, 2}));
    EXPECT_EQ(inject::drs::parse_placement(""), std::nullopt);
    EXPECT_EQ(inject::drs::parse_placement("2:0"), std::nullopt);
    EXPECT_EQ(inject::drs::parse_placement("a:1"), std::nullopt);
    EXPECT_EQ(inject::drs::parse_placement("1:"), std::nullopt);
}

struct FitRow {
    const char* name;
    std::vector<SliceRun> taken;
    std::uint32_t count;
    std::optional<std::uint32_t> start;
};

class FirstFit : public testing::TestWithParam<FitRow> {};

TEST_P(FirstFit, OnAFourSliceCard) {
    EXPECT_EQ(inject::drs::first_fit(4, GetParam().taken, GetParam().count), GetParam().start);
}

INSTANTIATE_TEST_SUITE_P(DrsSlices, FirstFit,
                         testing::Values(FitRow{"Empty", {}, 2, 0U},
                                         FitRow{"AfterOne", {{0, 1}}, 1, 1U},
                                         FitRow{"AlignedPastOne", {{0, 1}}, 2, 2U},
                                         FitRow{"Fragmented", {{1, 1}, {2, 1}}, 2, std::nullopt},
                                         FitRow{"Full", {{0, 4}}, 1, std::nullopt},
                                         FitRow{"TooBig", {}, 5, std::nullopt},
                                         FitRow{"ZeroSlices", {}, 0, std::nullopt}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
