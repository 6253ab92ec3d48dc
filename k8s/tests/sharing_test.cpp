// SPDX-License-Identifier: Apache-2.0
// The plugin config (sharing.timeSlicing) and what time-slicing does to IDs, preferred
// allocation and Allocate.
#include "k8s/sharing.hpp"

#include <gtest/gtest.h>

#include "device-plugin/plugin.hpp"

namespace {

constexpr const char* kRes = "enflame.com/gcu";

TEST(PluginConfig, Good) {
    struct {
        const char* name;
        const char* yaml;
        std::uint32_t replicas;
        const char* resource;
    } cases[] = {
        {"Empty", "", 1, kRes},
        {"VersionOnly", "version: v1\n", 1, kRes},
        {"Replicas",
         "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: enflame.com/gcu\n     "
         " replicas: 4\n",
         4, kRes},
        {"RenameByDefault",
         "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - "
         "name: enflame.com/gcu\n      replicas: 2\n",
         2, "enflame.com/gcu.shared"},
        {"RenameWins",
         "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - "
         "name: enflame.com/gcu\n      replicas: 2\n      rename: enflame.com/gcu-2\n",
         2, "enflame.com/gcu-2"},
        {"OneReplicaKeepsName",
         "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - "
         "name: enflame.com/gcu\n      replicas: 1\n",
         1, kRes},
    };
    for (const auto& c : cases) {
        auto r = k8s::parse_plugin_config(c.yaml, "p.yaml", kRes);
        ASSERT_TRUE(r) << c.name << ": " << r.error().what();
        EXPECT_EQ(r->replicas, c.replicas) << c.name;
        EXPECT_EQ(r->resource_name, c.resource) << c.name;
    }
}

TEST(PluginConfig, Bad) {
    const std::pair<const char*, const char*> cases[] = {
        {"version: v2\n", "p.yaml: line 1: version: want v1, got 'v2'"},
        {"sharing: {}\n", "p.yaml: version: missing (want v1)"},
        {"version: v1\nshare: 1\n", "p.yaml: line 2: share: unknown key"},
        {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: enflame.com/gcu\n     "
         " replicas: 0\n",
         "p.yaml: line 6: sharing.timeSlicing.resources[0].replicas: want a whole number from 1 to "
         "64, got '0'"},
        {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: enflame.com/gcu\n     "
         " replicas: many\n",
         "p.yaml: line 6: sharing.timeSlicing.resources[0].replicas: want a whole number from 1 to "
         "64, got 'many'"},
        {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      "
         "replicas: 2\n",
         "p.yaml: line 5: sharing.timeSlicing.resources[0].name: 'nvidia.com/gpu' is not the "
         "resource this plugin serves (enflame.com/gcu)"},
        {"version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: yes please\n",
         "p.yaml: line 4: sharing.timeSlicing.renameByDefault: want true or false, got 'yes "
         "please'"},
        {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: enflame.com/gcu\n     "
         " replicas: 2\n      rename: kubernetes.io/x\n",
         "p.yaml: line 7: sharing.timeSlicing.resources[0].rename: resource name "
         "'kubernetes.io/x': the kubernetes.io and k8s.io domains are reserved"},
        {"version: [v1\n", "p.yaml: line 2: end of sequence flow not found"},
        {"version: v1\nflags:\n  scheduler: volcano\n",
         "p.yaml: line 3: flags.scheduler: want hami or \"\", got 'volcano'"},
        {"version: v1\nflags:\n  schedular: hami\n",
         "p.yaml: line 3: flags.schedular: unknown key"},
        {"version: v1\nflags: hami\n", "p.yaml: line 2: flags: want a mapping"},
        {"version: v1\nflags:\n  hamiLegacyVgcu: yes\n",
         "p.yaml: line 3: flags.hamiLegacyVgcu: want true or false, got 'yes'"},
        {"version: v1\nflags:\n  requireNri: 1\n",
         "p.yaml: line 3: flags.requireNri: want true or false, got '1'"},
        {"version: v1\nflags:\n  hamiSharedSlices: 0\n",
         "p.yaml: line 3: flags.hamiSharedSlices: want 1 to 64, got '0'"},
        {"version: v1\nflags:\n  hamiSharedSlices: 6x\n",
         "p.yaml: line 3: flags.hamiSharedSlices: want 1 to 64, got '6x'"},
    };
    for (const auto& [yaml, want] : cases) {
        auto r = k8s::parse_plugin_config(yaml, "p.yaml", kRes);
        ASSERT_FALSE(r) << yaml;
        EXPECT_EQ(r.error().what(), want);
    }
}

// flags.scheduler: unset when the file has no such key, so --scheduler / SCHEDULER decide.
TEST(PluginConfig, Scheduler) {
    const std::pair<const char*, std::optional<std::string>> cases[] = {
        {"", std::nullopt},
        {"version: v1\n", std::nullopt},
        {"version: v1\nflags: {}\n", std::nullopt},
        {"version: v1\nflags:\n  scheduler: hami\n", "hami"},
        {"version: v1\nflags:\n  scheduler: \"\"\n", ""},
        {"version: v1\nflags:\n  scheduler:\n", ""},
    };
    for (const auto& [yaml, want] : cases) {
        auto r = k8s::parse_plugin_config(yaml, "p.yaml", kRes);
        ASSERT_TRUE(r) << yaml << ": " << r.error().what();
        EXPECT_EQ(r->scheduler, want) << yaml;
    }
}

// flags.hamiLegacyVgcu / hamiSharedSlices: unset when absent, so the flags and envs decide.
TEST(PluginConfig, HamiLegacy) {
    auto none = k8s::parse_plugin_config("version: v1\nflags: {scheduler: hami}\n", "p.yaml", kRes);
    ASSERT_TRUE(none) << none.error().what();
    EXPECT_EQ(none->hami_legacy, std::nullopt);
    EXPECT_EQ(none->hami_slices, std::nullopt);
    auto on = k8s::parse_plugin_config(
        "version: v1\nflags:\n  hamiLegacyVgcu: true\n  hamiSharedSlices: 8\n", "p.yaml", kRes);
    ASSERT_TRUE(on) << on.error().what();
    EXPECT_EQ(on->hami_legacy, true);
    EXPECT_EQ(on->hami_slices, 8u);
}

// flags.requireNri: unset when absent, so --require-nri / REQUIRE_NRI decide.
TEST(PluginConfig, RequireNri) {
    const std::pair<const char*, std::optional<bool>> cases[] = {
        {"version: v1\n", std::nullopt},
        {"version: v1\nflags:\n  requireNri: true\n", true},
        {"version: v1\nflags:\n  requireNri: false\n", false},
    };
    for (const auto& [yaml, want] : cases) {
        auto r = k8s::parse_plugin_config(yaml, "p.yaml", kRes);
        ASSERT_TRUE(r) << yaml << ": " << r.error().what();
        EXPECT_EQ(r->require_nri, want) << yaml;
    }
}

inject::device::Host host4() {
    inject::device::Host h;
    for (std::uint32_t i = 0; i < 4; ++i) {
        inject::device::Device d;
        d.index = i;
        d.uuid = "U" + std::to_string(i);
        d.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
        d.numa_node = 0;
        d.node.path = "/dev/gcu" + std::to_string(i);
        h.devices.push_back(d);
    }
    return h;
}

TEST(TimeSlicing, IdsPreferredAllocate) {
    auto inv = device_plugin::make_inventory(host4(), device_plugin::IdStrategy::Uuid, 2);
    ASSERT_TRUE(inv);
    ASSERT_EQ(inv->devices.size(), 8u);
    EXPECT_EQ(inv->devices[0].id, "U0::0");
    EXPECT_EQ(inv->devices[1].id, "U0::1");
    EXPECT_EQ(inv->devices[7].id, "U3::1");
    // Spread over cards before two replicas share one.
    std::vector<std::string> all;
    for (const auto& d : inv->devices) all.push_back(d.id);
    EXPECT_EQ(device_plugin::preferred(*inv, all, {}, 3),
              (std::vector<std::string>{"U0::0", "U1::0", "U2::0"}));
    EXPECT_EQ(device_plugin::preferred(*inv, all, {"U0::1"}, 2),
              (std::vector<std::string>{"U0::1", "U1::0"}));

    device_plugin::Settings s;
    s.lists = {true, true, true};
    auto r = device_plugin::allocate(*inv, s, {"U1::0", "U1::1", "U3::0"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->envs().at("ENFLAME_VISIBLE_DEVICES"), "U1,U3");
    ASSERT_EQ(r->cdi_devices_size(), 2);
    EXPECT_EQ(r->cdi_devices(0).name(), "enflame.com/gpu=U1");
    EXPECT_EQ(r->annotations().at("cdi.k8s.io/enflame-device-plugin_U1"), "enflame.com/gpu=U1");
    auto bad = device_plugin::allocate(*inv, s, {"U1::2"});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(), "unknown device ID 'U1::2' for enflame.com/gcu");
}

}  // namespace
