// SPDX-License-Identifier: Apache-2.0
#pragma once

// What the drs-manager tests check layouts and plans against: S60 cards as the simulated efsmi
// reports them (docs/efsmi-model.md: 1g.11gb x4, 2g.22gb x2; "full" is no profile row), and the
// layouts of the shipped ConfigMap.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "drs-manager/layout.hpp"
#include "inject/device.hpp"

namespace drs_test {

constexpr std::uint64_t kMiB = 1024 * 1024;

inline inject::device::Host s60_node(std::uint32_t cards = 4) {
    inject::device::Host h;
    h.drs_profiles = {{"1g.11gb", 0, 4, 10744 * kMiB, 6}, {"2g.22gb", 1, 2, 21488 * kMiB, 12}};
    for (std::uint32_t i = 0; i < cards; ++i) {
        inject::device::Device d;
        d.index = i;
        d.minor = i;
        d.product = "S60";
        d.memory_bytes = 42976 * kMiB;
        d.pci_bus_id =
            "0000:1" + std::string(1, static_cast<char>('a' + i)) + ":00.0";  // 0000:1a:00.0
        h.devices.push_back(d);
    }
    return h;
}

/// An instance on `card`; `placement` "<first>:<slices>" as newer efsmi prints it, or "".
inline inject::device::DrsInstance instance(std::uint32_t card, const std::string& profile,
                                            std::uint32_t id, const std::string& placement = "") {
    inject::device::DrsInstance in;
    in.parent_index = card;
    in.instance_id = id;
    in.profile = profile;
    in.placement = placement;
    return in;
}

/// The layouts of deployments/drs-manager/layouts.yaml.
inline std::vector<drs_manager::Layout> shipped_layouts() {
    std::ifstream in(std::string(K8S_TESTS_DIR) + "/../../deployments/drs-manager/layouts.yaml");
    std::stringstream ss;
    ss << in.rdbuf();
    const auto cm = YAML::Load(ss.str());
    EXPECT_EQ(cm["metadata"]["name"].as<std::string>(), "enflame-drs-layouts");
    EXPECT_EQ(cm["metadata"]["namespace"].as<std::string>(), "enflame-system");
    auto r = drs_manager::parse_layouts(
        cm["data"][std::string(drs_manager::kLayoutsKey)].as<std::string>(), "shipped");
    EXPECT_TRUE(r) << r.error().what();
    return r ? *r : std::vector<drs_manager::Layout>{};
}

}  // namespace drs_test
