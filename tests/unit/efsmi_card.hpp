// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the efsmi parsers' tests (efsmi_text_test.cpp, efsmi_json_test.cpp) expect of a card
// they read: every field of RawCard.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "inject/discover.hpp"

namespace testutil {

/// A card as efsmi -q describes it; the fields efsmi never gives (minor, NUMA node) are
/// expected unset, and the card healthy.
struct EfsmiCard {
    std::uint32_t index;
    std::string uuid;
    std::string serial;
    std::string product;
    std::string pci_bus_id;
    std::string pci_device_id;
    std::string driver_version;
    std::uint64_t memory_mib;
};

inline void expect_card(const inject::discover::RawCard& c, const EfsmiCard& want) {
    EXPECT_EQ(c.index, want.index);
    EXPECT_FALSE(c.minor.has_value());
    EXPECT_EQ(c.uuid, want.uuid);
    EXPECT_EQ(c.serial, want.serial);
    EXPECT_EQ(c.product, want.product);
    EXPECT_EQ(c.pci_bus_id, want.pci_bus_id);
    EXPECT_EQ(c.pci_device_id, want.pci_device_id);
    EXPECT_EQ(c.driver_version, want.driver_version);
    EXPECT_EQ(c.memory_bytes, want.memory_mib << 20);
    EXPECT_EQ(c.numa_node, -1);
    EXPECT_EQ(c.healthy, std::optional<bool>(true));
}

/// Card 0 of the S60 fixtures (tests/fixtures/efsmi/efsmi-q-s60-*.txt) and of our JSON model.
inline void expect_card0(const inject::discover::RawCard& c) {
    expect_card(
        c, {0, "TR6Y46010302", "A0A1650510676", "S60", "0000:17:00.0", "c035", "1.4.3.4", 42976});
}

}  // namespace testutil
