// SPDX-License-Identifier: Apache-2.0
// enflame-feature-discovery's pure part: label values, the labels of a host, the features.d
// file text (expiry line, 64 KiB bound) and the --sleep-interval syntax.
#include "feature-discovery/labels.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace {

using namespace std::chrono_literals;
using inject::device::Device;
using inject::device::DrsProfile;
using inject::device::Host;

constexpr std::uint64_t kMiB = 1024 * 1024;

Device card(std::uint32_t index, std::string product, std::uint64_t mib, std::int32_t numa) {
    Device d;
    d.index = index;
    d.minor = index;
    d.product = std::move(product);
    d.memory_bytes = mib * kMiB;
    d.numa_node = numa;
    return d;
}

Host s60_host(int cards) {
    Host h;
    h.driver_version = "1.4.3.4";
    for (int i = 0; i < cards; ++i)
        h.devices.push_back(
            card(static_cast<std::uint32_t>(i), "S60", 42976, i < cards / 2 ? 0 : 1));
    return h;
}

std::string value_of(const feature_discovery::Labels& labels, const std::string& name) {
    for (const auto& [k, v] : labels)
        if (k == "enflame.com/gpu." + name) return v;
    return "<absent>";
}

TEST(Sanitise, Table) {
    struct {
        const char* name;
        std::string in, want;
    } cases[] = {
        {"Plain", "S60", "S60"},
        {"AllowedPunctuation", "1g.11gb_x-y", "1g.11gb_x-y"},
        {"SpacesAndSlashes", "Enflame S60/PCIe 48GB", "Enflame-S60-PCIe-48GB"},
        {"LeadingTrailingDropped", " (S60) ", "S60"},
        {"OnlyPunctuation", "-._", ""},
        {"Empty", "", ""},
        {"NonAscii", "S60\xc2\xb5", "S60"},
        {"Exactly63", std::string(63, 'a'), std::string(63, 'a')},
        {"CutAt63", std::string(70, 'b'), std::string(63, 'b')},
        {"CutThenTrimmed", std::string(62, 'c') + "-d", std::string(62, 'c')},
    };
    for (const auto& c : cases) EXPECT_EQ(feature_discovery::sanitise(c.in), c.want) << c.name;
}

TEST(DriverVersion, Split) {
    struct {
        const char* in;
        const char *major, *minor, *revision;
    } cases[] = {
        {"1.4.3.4", "1", "4", "3.4"}, {"2.1.0", "2", "1", "0"}, {"1.4", "1", "4", ""},
        {"7", "7", "", ""},           {"", "", "", ""},
    };
    for (const auto& c : cases) {
        const auto d = feature_discovery::split_driver_version(c.in);
        EXPECT_EQ(d.full, c.in);
        EXPECT_EQ(d.major, c.major) << c.in;
        EXPECT_EQ(d.minor, c.minor) << c.in;
        EXPECT_EQ(d.revision, c.revision) << c.in;
    }
}

TEST(MakeLabels, FourS60WithDrsAndSharing) {
    Host h = s60_host(4);
    h.drs_profiles = {{"1g.11gb", 0, 4, 10744 * kMiB},
                      {"2g.22gb", 1, 2, 21488 * kMiB},
                      {"4g.44gb", 2, 1, 42976 * kMiB}};
    h.devices[0].drs_instances = {{0, 0, "1g.11gb"}, {0, 1, "1g.11gb"}, {0, 2, "2g.22gb"}};
    h.devices[1].drs_instances = {{1, 0, "1g.11gb"}};
    const auto labels = feature_discovery::make_labels(h, {"time-slicing", 4}, "mixed");
    const feature_discovery::Labels want{
        {"enflame.com/gpu.present", "true"},
        {"enflame.com/gpu.count", "4"},
        {"enflame.com/gpu.model", "S60"},
        {"enflame.com/gpu.memory", "42976"},
        {"enflame.com/gpu.family", "scorpio"},
        {"enflame.com/gpu.arch", "GCU300"},
        {"enflame.com/gpu.driver-version.full", "1.4.3.4"},
        {"enflame.com/gpu.driver-version.major", "1"},
        {"enflame.com/gpu.driver-version.minor", "4"},
        {"enflame.com/gpu.driver-version.revision", "3.4"},
        {"enflame.com/gpu.drs.capable", "true"},
        {"enflame.com/gpu.drs.profiles", "1g.11gb-2g.22gb-4g.44gb"},
        {"enflame.com/gpu.drs.config", "mixed"},
        {"enflame.com/gpu.drs.1g.11gb.count", "3"},
        {"enflame.com/gpu.drs.2g.22gb.count", "1"},
        {"enflame.com/gpu.drs.4g.44gb.count", "0"},
        {"enflame.com/gpu.sharing-strategy", "time-slicing"},
        {"enflame.com/gpu.replicas", "4"},
        {"enflame.com/gpu.numa-nodes", "2"},
    };
    EXPECT_EQ(labels, want);
}

// No device plugin config (the DRA overlay): the sharing labels are left out, nothing else.
TEST(MakeLabels, UnknownSharingLeavesTheSharingLabelsOut) {
    const Host h = s60_host(2);
    auto known = feature_discovery::make_labels(h, {"none", 1});
    const auto unknown = feature_discovery::make_labels(h, {"", 1});
    const auto removed = std::erase_if(known, [](const auto& l) {
        return l.first == "enflame.com/gpu.sharing-strategy" ||
               l.first == "enflame.com/gpu.replicas";
    });
    EXPECT_EQ(removed, 2u);
    EXPECT_EQ(unknown, known);
}

TEST(MakeLabels, NoCardsIsPresentFalseAndCountZero) {
    Host h;
    h.driver_version = "1.4.3.4";
    const feature_discovery::Labels want{{"enflame.com/gpu.present", "false"},
                                         {"enflame.com/gpu.count", "0"}};
    EXPECT_EQ(feature_discovery::make_labels(h, {}), want);
}

TEST(MakeLabels, Values) {
    Host mixed;  // several models: the first card speaks for the node, count counts them all
    mixed.devices = {card(0, "T10", 16384, 0), card(1, "S60", 42976, 1), card(2, "S60", 42976, 1)};
    Host unknown;  // an unknown product, no memory, no driver version, no NUMA
    unknown.devices = {card(0, "X99 prototype", 0, -1)};
    Host card_driver;  // the driver version only on the card
    card_driver.devices = {card(0, "S60", 42976, 0)};
    card_driver.devices[0].driver_version = "1.2.5";
    const std::string absent = "<absent>";
    struct {
        const char* name;
        const Host& host;
        std::vector<std::pair<std::string, std::string>> want;
    } cases[] = {
        {"MixedModels",
         mixed,
         {{"count", "3"},
          {"model", "T10"},
          {"memory", "16384"},
          {"family", "LEO"},
          {"arch", "GCU200"},
          {"numa-nodes", "2"}}},
        {"UnknownFieldsLeftOut",
         unknown,
         {{"model", "X99-prototype"},
          {"memory", absent},
          {"family", absent},
          {"arch", absent},
          {"driver-version.full", absent},
          {"drs.capable", "false"},
          {"drs.profiles", absent},
          {"sharing-strategy", "none"},
          {"replicas", "1"},
          {"numa-nodes", "0"}}},
        {"DriverVersionFromTheCard",
         card_driver,
         {{"driver-version.full", "1.2.5"}, {"driver-version.revision", "5"}}},
    };
    for (const auto& c : cases) {
        const auto labels = feature_discovery::make_labels(c.host, {});
        for (const auto& [name, value] : c.want)
            EXPECT_EQ(value_of(labels, name), value) << c.name << ": " << name;
    }
    EXPECT_EQ(feature_discovery::models(mixed), (std::vector<std::string>{"T10", "S60"}));
}

TEST(MakeLabels, ProfilesKeepWholeNamesWithin63Chars) {
    Host h = s60_host(1);
    for (int i = 0; i < 10; ++i) h.drs_profiles.push_back({std::to_string(i) + "g.99gb", 0, 1, 0});
    const auto v = value_of(feature_discovery::make_labels(h, {}), "drs.profiles");
    EXPECT_EQ(v, "0g.99gb-1g.99gb-2g.99gb-3g.99gb-4g.99gb-5g.99gb-6g.99gb-7g.99gb");
    EXPECT_LE(v.size(), feature_discovery::kMaxValueChars);
}

TEST(Render, ExpiryLineFirstThenOneLinePerLabel) {
    const feature_discovery::Labels labels{{"enflame.com/gpu.present", "true"},
                                           {"enflame.com/gpu.count", "1"}};
    const auto t = std::chrono::sys_days{std::chrono::year{2026} / 12 / 1} + 12h + 43min + 2s;
    auto text = feature_discovery::render(labels, t);
    ASSERT_TRUE(text) << text.error().what();
    EXPECT_EQ(*text,
              "# "
              "+expiry-time=2026-12-01T12:43:02Z\nenflame.com/gpu.present=true\nenflame.com/"
              "gpu.count=1\n");
    text = feature_discovery::render(labels, std::nullopt);
    ASSERT_TRUE(text);
    EXPECT_EQ(*text, "enflame.com/gpu.present=true\nenflame.com/gpu.count=1\n");
}

TEST(Render, RefusesMoreThan64KiB) {
    feature_discovery::Labels labels;
    // 1000 labels of 25 + 1 + 63 + 1 = 90 bytes: 90000 bytes.
    for (int i = 0; i < 1000; ++i)
        labels.emplace_back("enflame.com/gpu.card-" + std::to_string(1000 + i),
                            std::string(63, 'v'));
    auto r = feature_discovery::render(labels, std::nullopt);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput);
    EXPECT_EQ(r.error().what(),
              "the labels file would be 90000 bytes, over NFD's limit of 65536 bytes (64 KiB)");
    // Exactly at the bound is fine; one byte more is not.
    feature_discovery::Labels exact{{"k", std::string(feature_discovery::kMaxFileBytes - 3, 'x')}};
    EXPECT_TRUE(feature_discovery::render(exact, std::nullopt));
    exact[0].second += 'x';
    EXPECT_FALSE(feature_discovery::render(exact, std::nullopt));
}

TEST(Render, WorstCaseHostFitsTheBound) {
    // Every value at its 63-character limit and thousands of cards: the label set is fixed, so
    // the file stays far under NFD's limit whatever the host reports.
    Host h;
    for (std::uint32_t i = 0; i < 4096; ++i) {
        auto d = card(i, std::string(200, 'P'), ~std::uint64_t{0}, static_cast<std::int32_t>(i));
        d.family = d.architecture = std::string(200, 'F');
        h.devices.push_back(std::move(d));
    }
    h.driver_version =
        std::string(100, '9') + "." + std::string(100, '8') + "." + std::string(100, '7');
    for (int i = 0; i < 64; ++i) h.drs_profiles.push_back({std::string(70, 'g'), 0, 1, 0});
    const auto labels = feature_discovery::make_labels(h, {"time-slicing", 64});
    for (const auto& [k, v] : labels) EXPECT_LE(v.size(), feature_discovery::kMaxValueChars) << k;
    auto text = feature_discovery::render(labels, std::chrono::system_clock::now());
    ASSERT_TRUE(text);
    EXPECT_LT(text->size(), 2048u);
}

}  // namespace
