// SPDX-License-Identifier: Apache-2.0
// enflame-gcu-exporter's decisions without a driver: the exposition of fed samples, health
// values, cards and drivers going away, rediscovery. Pod attribution:
// exporter_attribution_test.cpp; the HTTP server: exporter_http_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "exporter/collector.hpp"
#include "exporter_fixture.hpp"

// In exporter_test: its helpers (exporter_fixture.hpp) and exporter's types by their names.
namespace exporter_test {
namespace {

TEST(Exposition, EveryReadingOfFedSamplesWithGcuExporterNamesAndLabels) {
    auto d = two_cards();
    auto c = collector(d);
    c->collect();
    const std::string text = *c->text();
    const std::string l0 = std::string(kCard0) + "," + kNobody;
    struct Want {
        const char* name;
        std::string extra;
        const char* value;
    };
    const std::vector<Want> wants{
        {"enflame_gcu_usage", "", "42"},
        {"enflame_gcu_memory_usage", "", "0.25"},
        {"enflame_gcu_memory_used_bytes", "", "12884901888"},
        {"enflame_gcu_memory_total_bytes", "", "51539607552"},
        {"enflame_gcu_temperatures", "", "51.5"},
        {"enflame_gcu_memory_temperature", "", "47"},
        {"enflame_gcu_board_temperature", "", "39"},
        {"enflame_gcu_power_usage", "", "25"},
        {"enflame_gcu_power_consumption", "", "75"},
        {"enflame_gcu_power_capability", "", "300"},
        {"enflame_gcu_clock", R"(,power_mode="not supported")", "1400"},
        {"enflame_gcu_hbm_clock", "", "1600"},
        {"enflame_gcu_health", R"(,healthmsg="Healthy")", "2"},
        {"enflame_gcu_ecc_single_bit_error_total_count", "", "3"},
        {"enflame_gcu_ecc_double_bit_error_total_count", "", "1"},
        {"enflame_gcu_pcie_link_width", "", "8"},
        {"enflame_gcu_pcie_max_link_width", "", "16"},
        {"enflame_gcu_pcie_link_speed", "", "4"},
        {"enflame_gcu_pcie_max_link_speed", "", "5"},
        {"enflame_gcu_info", R"(,driver_version="1.4.3.4")", "1"},
    };
    for (const auto& w : wants) {
        const auto got = series(text, w.name);
        EXPECT_NE(std::find(got.begin(), got.end(), line(w.name, l0 + w.extra, w.value)), got.end())
            << w.name << w.extra << " not " << w.value << " in:\n"
            << text;
        EXPECT_NE(text.find(std::string("# TYPE ") + w.name + " gauge\n"), std::string::npos)
            << w.name;
        EXPECT_NE(text.find(std::string("# HELP ") + w.name + " "), std::string::npos) << w.name;
    }
    EXPECT_EQ(series(text, "enflame_gcu_count"),
              std::vector<std::string>{R"(enflame_gcu_count{host="node-a"} 2)"});
    EXPECT_EQ(series(text, "enflame_gcu_exporter_up"),
              std::vector<std::string>{R"(enflame_gcu_exporter_up{host="node-a"} 1)"});
    EXPECT_EQ(
        series(text, "enflame_gcu_process_memory_used_bytes"),
        (std::vector<std::string>{line("enflame_gcu_process_memory_used_bytes",
                                       std::string(kCard0) + R"(,pid="4242")", "1073741824"),
                                  line("enflame_gcu_process_memory_used_bytes",
                                       std::string(kCard1) + R"(,pid="4242")", "1073741824")}));
    EXPECT_EQ(series(text, "enflame_gcu_usage").size(), 2U);
    // Each family's HELP and TYPE once, even where several readings share the name.
    std::size_t pos = 0;
    int types = 0;
    while ((pos = text.find("# TYPE enflame_gcu_temperatures ", pos)) != std::string::npos)
        ++types, ++pos;
    EXPECT_EQ(types, 1);
}

TEST(Exposition, OneSeriesPerDrsInstanceNamedAsTheDevicePluginAdvertisesIt) {
    auto d = two_cards();
    d.host.devices[0].drs_instances = {{0, 1, "1g.11gb"}, {0, 2, "2g.22gb", "a1b2"}};
    auto c = collector(d);
    c->collect();
    EXPECT_EQ(
        series(*c->text(), "enflame_gcu_drs_instance_info"),
        (std::vector<std::string>{
            line("enflame_gcu_drs_instance_info",
                 std::string(kCard0) + R"(,drs_id="0:1g.11gb:1",profile="1g.11gb",instance_id="1")",
                 "1"),
            line("enflame_gcu_drs_instance_info",
                 std::string(kCard0) + R"(,drs_id="DRS-a1b2",profile="2g.22gb",instance_id="2")",
                 "1")}));
}

TEST(Exposition, AReadingTheLibraryCannotGiveHasNoSeries) {
    auto d = two_cards();
    d.samples[0].temperature_c.reset();
    d.samples[0].power_capability_w.reset();  // power_usage needs it too
    d.samples[0].ecc_single_bit.reset();
    d.samples[0].processes.clear();
    auto c = collector(d);
    c->collect();
    const std::string text = *c->text();
    for (const char* name : {"enflame_gcu_power_capability", "enflame_gcu_power_usage",
                             "enflame_gcu_ecc_single_bit_error_total_count",
                             "enflame_gcu_process_memory_used_bytes"}) {
        const auto got = series(text, name);
        EXPECT_TRUE(std::none_of(
            got.begin(), got.end(),
            [](const std::string& l) { return l.find("minor_number=\"4\"") != std::string::npos; }))
            << name << " has card 0 in:\n"
            << text;
        EXPECT_EQ(got.size(), 1U) << name;
    }
    // card 0 has no ASIC temperature: no enflame_gcu_temperatures, its other sensors stay
    EXPECT_EQ(series(text, "enflame_gcu_temperatures").size(), 1U);
    EXPECT_EQ(series(text, "enflame_gcu_memory_temperature").size(), 2U);
}

TEST(Health, TwoHealthyOneUnhealthyZeroUnknown) {
    EXPECT_EQ(exporter::health_value(true), 2);
    EXPECT_EQ(exporter::health_value(false), 1);
    EXPECT_EQ(exporter::health_value(std::nullopt), 0);
    auto d = two_cards();
    d.samples[0].healthy = false;
    d.samples[1].healthy.reset();
    auto c = collector(d);
    c->collect();
    EXPECT_EQ(series(*c->text(), "enflame_gcu_health"),
              (std::vector<std::string>{
                  line("enflame_gcu_health",
                       std::string(kCard0) + "," + kNobody + R"(,healthmsg="Unhealthy")", "1"),
                  line("enflame_gcu_health",
                       std::string(kCard1) + "," + kNobody + R"(,healthmsg="Unknown")", "0")}));
}

TEST(Collector, DriverGoneTakesEveryCardSeriesAwayAndBackAgain) {
    auto d = two_cards();
    auto c = collector(d);
    c->collect();
    d.count.reset();
    auto s = c->collect();
    EXPECT_TRUE(s.cards.empty());
    const std::string gone = *c->text();
    EXPECT_TRUE(series(gone, "enflame_gcu_usage").empty()) << gone;
    EXPECT_TRUE(series(gone, "enflame_gcu_health").empty()) << gone;
    EXPECT_EQ(series(gone, "enflame_gcu_count"),
              std::vector<std::string>{R"(enflame_gcu_count{host="node-a"} 0)"});
    EXPECT_EQ(series(gone, "enflame_gcu_exporter_up"),
              std::vector<std::string>{R"(enflame_gcu_exporter_up{host="node-a"} 1)"});
    d.count = 2;
    c->collect();
    EXPECT_EQ(series(*c->text(), "enflame_gcu_usage").size(), 2U);
    EXPECT_EQ(series(*c->text(), "enflame_gcu_count"),
              std::vector<std::string>{R"(enflame_gcu_count{host="node-a"} 2)"});
}

TEST(Collector, ACardThatCannotBeReadLosesOnlyItsOwnSeries) {
    auto d = two_cards();
    d.samples.erase(0);
    auto c = collector(d);
    const auto s = c->collect();
    ASSERT_EQ(s.cards.size(), 1U);
    EXPECT_EQ(s.cards[0].id.index, 1U);
    EXPECT_EQ(series(*c->text(), "enflame_gcu_usage"),
              std::vector<std::string>{
                  line("enflame_gcu_usage", std::string(kCard1) + "," + kNobody, "42")});
    EXPECT_EQ(series(*c->text(), "enflame_gcu_count"),
              std::vector<std::string>{R"(enflame_gcu_count{host="node-a"} 1)"});
}

TEST(Collector, RediscoversOnlyWhenTheCardCountChanges) {
    auto d = two_cards();
    auto c = collector(d);
    c->collect();
    c->collect();
    EXPECT_EQ(d.discoveries, 1);
    d.count = 3;
    d.host.devices.push_back(card(2, 9));
    d.samples[2] = full_sample(2);
    const auto s = c->collect();
    EXPECT_EQ(d.discoveries, 2);
    ASSERT_EQ(s.cards.size(), 3U);
    EXPECT_EQ(s.cards[2].id.minor, 9U);
    EXPECT_EQ(s.cards[2].id.uuid, "TR6Y46010002");
    c->collect();
    EXPECT_EQ(d.discoveries, 2);
}

TEST(Collector, WithoutDiscoveryCardsAreLabelledFromLibefmlWithoutAMinor) {
    auto d = two_cards();
    d.discovery_fails = true;
    auto c = collector(d);
    c->collect();
    EXPECT_EQ(
        series(*c->text(), "enflame_gcu_usage")[0],
        line(
            "enflame_gcu_usage",
            std::string(
                R"(host="node-a",minor_number="",uuid="EFML-U0",busid="0000:90:00.0",slot="N/A",name="Enflame S60",)") +
                kNobody,
            "42"));
}

}  // namespace
}  // namespace exporter_test
