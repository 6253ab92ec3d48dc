// SPDX-License-Identifier: Apache-2.0
// One health pass (k8s/device-plugin/health.cpp): the driver's verdict and the device node,
// with /dev/null standing in for a card's node (a character device every machine has).
#include "device-plugin/health.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace {

device_plugin::Inventory one_card(const std::string& node, std::uint32_t major,
                                  std::uint32_t minor) {
    device_plugin::Inventory inv;
    device_plugin::PluginDevice d;
    d.id = d.card_id = d.uuid = "U0";
    d.node.path = "/dev/gcu0";
    d.node.host_path = node;
    d.node.major = major;
    d.node.minor = minor;
    inv.devices.push_back(d);
    return inv;
}

device_plugin::DriverHealth says(std::optional<bool> healthy) {
    return std::map<std::string, std::optional<bool>>{{"U0", healthy}};
}

TEST(Health, DriverAndNode) {
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    const auto ma = ::major(st.st_rdev), mi = ::minor(st.st_rdev);
    auto inv = one_card("/dev/null", ma, mi);

    EXPECT_FALSE(device_plugin::apply_health(says(true), inv));  // healthy stays healthy: no change
    EXPECT_FALSE(
        device_plugin::apply_health(says(std::nullopt), inv));  // unknown counts as healthy

    EXPECT_TRUE(device_plugin::apply_health(says(false), inv));
    EXPECT_FALSE(inv.devices[0].healthy);
    EXPECT_EQ(inv.devices[0].why_unhealthy, "the driver reports it unhealthy");
    // Discovery failing as a whole keeps the driver's last verdict.
    EXPECT_FALSE(device_plugin::apply_health(device_plugin::DriverHealth{}, inv));
    EXPECT_FALSE(inv.devices[0].healthy);
    // A card that recovers is Healthy again (NVIDIA's plugin never does this).
    EXPECT_TRUE(device_plugin::apply_health(says(true), inv));
    EXPECT_TRUE(inv.devices[0].healthy);
    EXPECT_FALSE(device_plugin::apply_health(device_plugin::DriverHealth{}, inv));
    EXPECT_TRUE(inv.devices[0].healthy);

    EXPECT_TRUE(device_plugin::apply_health(std::map<std::string, std::optional<bool>>{}, inv));
    EXPECT_EQ(inv.devices[0].why_unhealthy, "the driver no longer lists it");
}

TEST(Health, NodeProblems) {
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    const auto ma = ::major(st.st_rdev), mi = ::minor(st.st_rdev);
    const struct {
        const char* name;
        std::string path;
        std::uint32_t major, minor;
        std::string want;
    } cases[] = {
        {"Gone", "/nonexistent/gcu0", ma, mi, "device node '/nonexistent/gcu0' is gone"},
        {"NotCharDevice", "/", ma, mi, "'/' is no longer a character device"},
        {"OtherNumbers", "/dev/null", ma + 1, mi,
         "'/dev/null' is now " + std::to_string(ma) + ":" + std::to_string(mi) + ", was " +
             std::to_string(ma + 1) + ":" + std::to_string(mi)},
    };
    for (const auto& c : cases) {
        auto inv = one_card(c.path, c.major, c.minor);
        EXPECT_TRUE(device_plugin::apply_health(says(true), inv)) << c.name;
        EXPECT_FALSE(inv.devices[0].healthy) << c.name;
        EXPECT_EQ(inv.devices[0].why_unhealthy, c.want) << c.name;
    }
}

TEST(Health, EventsHoldUntilResetFinish) {
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    auto inv = one_card("/dev/null", ::major(st.st_rdev), ::minor(st.st_rdev));
    inv.devices[0].index = 2;
    device_plugin::EventHolds holds;

    // Suspend is only logged; an unknown type is ignored; neither holds the card.
    EXPECT_EQ(device_plugin::note_event({2, 3, ""}, holds), device_plugin::EventAction::Log);
    EXPECT_EQ(device_plugin::note_event({2, 42, ""}, holds), device_plugin::EventAction::Ignore);
    EXPECT_TRUE(holds.empty());

    // Reset start: Unhealthy even though the driver says healthy.
    EXPECT_EQ(device_plugin::note_event({2, 10, "flr"}, holds), device_plugin::EventAction::Hold);
    EXPECT_TRUE(device_plugin::apply_health(says(true), inv, holds));
    EXPECT_FALSE(inv.devices[0].healthy);
    EXPECT_EQ(inv.devices[0].why_unhealthy, "driver event reset start: flr");
    EXPECT_FALSE(
        device_plugin::apply_health(says(true), inv, holds));  // the periodic pass keeps it

    // Reset finish: the hold goes and the driver's verdict decides.
    EXPECT_EQ(device_plugin::note_event({2, 11, ""}, holds), device_plugin::EventAction::Recheck);
    EXPECT_TRUE(holds.empty());
    EXPECT_TRUE(device_plugin::apply_health(says(true), inv, holds));
    EXPECT_TRUE(inv.devices[0].healthy);

    // EID holds too; a reset finish while the driver says unhealthy leaves it Unhealthy.
    EXPECT_EQ(device_plugin::note_event({2, 20, ""}, holds), device_plugin::EventAction::Hold);
    EXPECT_TRUE(device_plugin::apply_health(device_plugin::DriverHealth{}, inv, holds));
    EXPECT_EQ(inv.devices[0].why_unhealthy, "driver event EID");
    EXPECT_EQ(device_plugin::note_event({2, 11, ""}, holds), device_plugin::EventAction::Recheck);
    EXPECT_FALSE(device_plugin::apply_health(says(false), inv, holds));
    EXPECT_EQ(inv.devices[0].why_unhealthy, "the driver reports it unhealthy");

    // Another card's events leave this one alone.
    EXPECT_TRUE(device_plugin::apply_health(says(true), inv, holds));
    EXPECT_EQ(device_plugin::note_event({1, 10, ""}, holds), device_plugin::EventAction::Hold);
    EXPECT_FALSE(device_plugin::apply_health(says(true), inv, holds));
    EXPECT_TRUE(inv.devices[0].healthy);
}

TEST(Health, EventNames) {
    EXPECT_EQ(device_plugin::event_name(3), "suspend");
    EXPECT_EQ(device_plugin::event_name(10), "reset start");
    EXPECT_EQ(device_plugin::event_name(11), "reset finish");
    EXPECT_EQ(device_plugin::event_name(20), "EID");
    EXPECT_EQ(device_plugin::event_name(7), "type 7");
}

}  // namespace
