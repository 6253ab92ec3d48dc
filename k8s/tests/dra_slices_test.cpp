// SPDX-License-Identifier: Apache-2.0
// build_slices: golden ResourceSlices for 1 and 2 S60 cards in resource.k8s.io/v1 and v1beta1,
// plain, with DRS instances and with DRS counters; and the rules the API server enforces
// (device names are DNS labels, <= 128 devices, <= 32 attributes + capacities, counter sets
// resolved where the Kubernetes version looks for them).
// UPDATE_GOLDEN=1 rewrites the golden files (then read the diff before committing it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>

#include "dra/slices.hpp"
#include "dra_hosts.hpp"

namespace {

using dra::DrsMode;
using dra::Json;
using dra::SliceOptions;

/// build_slices for `cards` simulated S60s (with their DRS profiles and instances when `drs`).
Json slices_for(std::uint32_t cards, bool drs, DrsMode mode, const std::string& version = "v1",
                const std::string& node = "n") {
    SliceOptions o;
    o.node_name = node;
    o.api_version = version;
    o.drs = mode;
    return dra::build_slices(k8s_test::s60_host(cards, drs), o);
}

struct GoldenCase {
    const char* name;  ///< also the golden file: golden/dra/<name>.json
    std::uint32_t cards;
    const char* version;
    bool drs;
    DrsMode mode;
};

class DraGolden : public testing::TestWithParam<GoldenCase> {};

TEST_P(DraGolden, MatchesTheFile) {
    const auto& c = GetParam();
    const Json got = slices_for(c.cards, c.drs, c.mode, c.version, "node-a");
    const std::string path = std::string(K8S_TESTS_DIR) + "/golden/dra/" + c.name + ".json";
    if (std::getenv("UPDATE_GOLDEN")) std::ofstream(path) << got.dump(2) << "\n";
    std::ifstream in(path);
    ASSERT_TRUE(in) << "missing golden file " << path << " (UPDATE_GOLDEN=1 writes it)";
    const Json want = Json::parse(in);
    EXPECT_EQ(got, want) << "got:\n" << got.dump(2);
}

INSTANTIATE_TEST_SUITE_P(
    Slices, DraGolden,
    testing::Values(
        GoldenCase{"v1-1card", 1, "v1", false, DrsMode::Instances},
        GoldenCase{"v1-2cards", 2, "v1", false, DrsMode::Instances},
        GoldenCase{"v1beta1-1card", 1, "v1beta1", false, DrsMode::Instances},
        GoldenCase{"v1beta1-2cards", 2, "v1beta1", false, DrsMode::Instances},
        GoldenCase{"v1-1card-drs-instances", 1, "v1", true, DrsMode::Instances},
        GoldenCase{"v1-2cards-drs-instances", 2, "v1", true, DrsMode::Instances},
        GoldenCase{"v1beta1-1card-drs-instances", 1, "v1beta1", true, DrsMode::Instances},
        GoldenCase{"v1beta1-2cards-drs-instances", 2, "v1beta1", true, DrsMode::Instances},
        GoldenCase{"v1-1card-counters", 1, "v1", true, DrsMode::Counters},
        GoldenCase{"v1-2cards-counters", 2, "v1", true, DrsMode::Counters},
        GoldenCase{"v1beta1-1card-counters", 1, "v1beta1", true, DrsMode::Counters},
        GoldenCase{"v1beta1-2cards-counters", 2, "v1beta1", true, DrsMode::Counters},
        GoldenCase{"v1-2cards-counters-own-slice", 2, "v1", true, DrsMode::CountersOwnSlice}),
    [](const auto& i) {
        std::string n = i.param.name;
        for (auto& ch : n)
            if (ch == '-') ch = '_';
        return n;
    });

struct SemverCase {
    const char* in;
    const char* want;
};

TEST(DraSemver, DriverVersionsMapToSemver) {
    for (const auto& c :
         {SemverCase{"1.4.3.4", "1.4.3+4"}, SemverCase{"1.4.3", "1.4.3"},
          SemverCase{"1.4", "1.4.0"}, SemverCase{"v2", "2.0.0"}, SemverCase{"01.04.003", "1.4.3"},
          SemverCase{"1.4.3-rc1", "1.4.3"}, SemverCase{"unknown", ""}, SemverCase{"", ""}}) {
        EXPECT_EQ(dra::semver_of(c.in), c.want) << c.in;
    }
}

TEST(DraSemver, QuantitiesAreWhatTheServerWritesBack) {
    EXPECT_EQ(dra::canonical_quantity(0), "0");
    EXPECT_EQ(dra::canonical_quantity(4), "4");
    EXPECT_EQ(dra::canonical_quantity(1000), "1k");
    EXPECT_EQ(dra::canonical_quantity(45063602176ULL), "45063602176");  // 42976 MiB
    EXPECT_EQ(dra::canonical_quantity(33554432000ULL), "33554432k");    // 32000 MiB
    EXPECT_EQ(dra::canonical_quantity(2000000000000ULL), "2T");
}

TEST(DraProfiles, SharesAndPlacementNames) {
    EXPECT_EQ(dra::placement_name(0, "1g.11gb", 0), "gcu-0-1g-11gb-0");
    EXPECT_EQ(dra::placement_name(12, "2G_22GB", 1), "gcu-12-2g-22gb-1");
}

/// Every device of every slice, in the v1 shape (v1beta1's `basic` folded back).
std::vector<Json> devices_of(const Json& slices) {
    std::vector<Json> out;
    for (const auto& s : slices)
        for (const auto& d : s["spec"].value("devices", Json::array())) {
            Json flat = d.contains("basic") ? d["basic"] : d;
            flat["name"] = d["name"];
            out.push_back(flat);
        }
    return out;
}

TEST(DraSlices, UnhealthyCardIsLeftOut) {
    auto host = k8s_test::s60_host(3, false);
    host.devices[1].healthy = false;
    host.devices[2].healthy.reset();  // unknown health: still offered
    SliceOptions o;
    o.node_name = "n";
    std::vector<std::string> names;
    for (const auto& d : devices_of(dra::build_slices(host, o))) names.push_back(d["name"]);
    EXPECT_EQ(names, (std::vector<std::string>{"gcu-0", "gcu-2"}));
}

TEST(DraSlices, NoCardStillPublishesTheEmptyPool) {
    SliceOptions o;
    o.node_name = "n";
    const Json s = dra::build_slices(inject::device::Host{}, o);
    ASSERT_EQ(s.size(), 1U);
    EXPECT_EQ(s[0]["spec"]["pool"]["resourceSliceCount"], 1);
    EXPECT_FALSE(s[0]["spec"].contains("devices")) << "the server leaves empty lists out; so do we";
}

TEST(DraSlices, NodeUidBecomesTheOwner) {
    SliceOptions o;
    o.node_name = "n";
    o.node_uid = "uid-1";
    const Json s = dra::build_slices(k8s_test::s60_host(1, false), o);
    EXPECT_EQ(
        s[0]["metadata"]["ownerReferences"],
        Json::parse(
            R"([{"apiVersion":"v1","kind":"Node","name":"n","uid":"uid-1","controller":true}])"));
}

struct LimitCase {
    const char* name;
    std::uint32_t cards;
    DrsMode mode;
    std::size_t want_slices;
};

class DraLimits : public testing::TestWithParam<LimitCase> {};

// What the API server would refuse, and the counter references the scheduler must resolve.
TEST_P(DraLimits, SlicesStayWithinWhatTheServerAccepts) {
    const auto& c = GetParam();
    const Json slices = slices_for(c.cards, true, c.mode);
    ASSERT_EQ(slices.size(), c.want_slices);
    const std::regex dns_label("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
    std::set<std::string> names, slice_names, all_sets;
    std::size_t devices = 0;
    for (const auto& s : slices) {
        EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], c.want_slices);
        EXPECT_TRUE(slice_names.insert(s["metadata"]["name"]).second);
        const auto& spec = s["spec"];
        const bool counters = spec.contains("sharedCounters");
        std::set<std::string> sets;
        if (counters)
            for (const auto& cs : spec["sharedCounters"])
                sets.insert(cs["name"].get<std::string>());
        all_sets.insert(sets.begin(), sets.end());
        EXPECT_LE(sets.size(), dra::kMaxCounterSetsPerSlice);
        EXPECT_LE(spec.value("devices", Json::array()).size(),
                  c.mode == DrsMode::Instances ? dra::kMaxDevicesPerSlice
                                               : dra::kMaxDevicesPerSliceWithCounters);
        if (c.mode == DrsMode::CountersOwnSlice) EXPECT_FALSE(counters && spec.contains("devices"));
        for (const auto& d : devices_of(Json::array({s}))) {
            ++devices;
            const std::string name = d["name"];
            EXPECT_TRUE(std::regex_match(name, dns_label)) << name;
            EXPECT_TRUE(names.insert(name).second) << "duplicate " << name;
            EXPECT_LE(d["attributes"].size() + d.value("capacity", Json::object()).size(),
                      dra::kMaxAttributesAndCapacities);
            if (c.mode == DrsMode::Counters)
                for (const auto& use : d.value("consumesCounters", Json::array()))
                    EXPECT_TRUE(sets.count(use["counterSet"]))
                        << name << " uses a counter set of another slice";
        }
    }
    // Every device that consumes counters finds its set in the pool.
    for (const auto& d : devices_of(slices))
        for (const auto& use : d.value("consumesCounters", Json::array()))
            EXPECT_TRUE(all_sets.count(use["counterSet"]));
    // Instances: card 0 has 2, card 1 has 1, the rest are whole. Counters: 1 + 4 + 2 per card.
    EXPECT_EQ(devices, c.mode == DrsMode::Instances ? c.cards + 1 : 7U * c.cards);
}

INSTANTIATE_TEST_SUITE_P(Cards, DraLimits,
                         testing::Values(LimitCase{"Instances64", 64, DrsMode::Instances, 1},
                                         LimitCase{"Instances200", 200, DrsMode::Instances, 2},
                                         LimitCase{"Counters8", 8, DrsMode::Counters, 1},
                                         LimitCase{"Counters9", 9, DrsMode::Counters, 1 + 1},
                                         LimitCase{"Counters64", 64, DrsMode::Counters, 8},
                                         LimitCase{"OwnSlice64", 64, DrsMode::CountersOwnSlice,
                                                   8 + 7}),
                         [](const auto& i) { return std::string(i.param.name); });

TEST(DraSlices, MaxDevicesSplitsThePool) {
    SliceOptions o;
    o.node_name = "n";
    o.max_devices = 2;
    const Json s = dra::build_slices(k8s_test::s60_host(5, false), o);
    ASSERT_EQ(s.size(), 3U);
    EXPECT_EQ(s[2]["metadata"]["name"], "n-gcu.enflame.com-2");
    EXPECT_EQ(s[2]["spec"]["devices"].size(), 1U);
    EXPECT_EQ(s[2]["spec"]["devices"][0]["name"], "gcu-4");
}

}  // namespace
