// SPDX-License-Identifier: Apache-2.0
// The device plugin's decisions (k8s/device-plugin/plugin.cpp), table-driven.
#include "device-plugin/plugin.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "k8s/sharing.hpp"

namespace {

using device_plugin::Inventory;

// Eight cards: 0-3 on NUMA node 0 (buses 0x10-0x13), 4-7 on node 1 (buses 0x90-0x93).
inject::device::Host host8() {
    inject::device::Host h;
    for (std::uint32_t i = 0; i < 8; ++i) {
        inject::device::Device d;
        d.index = i;
        d.minor = i;
        d.uuid = "UUID" + std::to_string(i);
        char bus[32];
        std::snprintf(bus, sizeof bus, "0000:%02x:00.0", (i < 4 ? 0x10 : 0x90) + i % 4);
        d.pci_bus_id = bus;
        d.numa_node = i < 4 ? 0 : 1;
        d.node.path = "/dev/gcu" + std::to_string(i);
        d.node.host_path = "/sim/dev/gcu" + std::to_string(i);
        d.node.major = 238;
        d.node.minor = i;
        h.devices.push_back(d);
    }
    inject::device::DeviceNode ctl;
    ctl.path = "/dev/gcuctl";
    ctl.host_path = "/sim/dev/gcuctl";
    h.control = ctl;
    return h;
}

Inventory inv8(device_plugin::IdStrategy s = device_plugin::IdStrategy::Index) {
    auto inv = device_plugin::make_inventory(host8(), s);
    EXPECT_TRUE(inv) << inv.error().what();
    return *inv;
}

std::vector<std::string> ids(std::initializer_list<int> l) {
    std::vector<std::string> out;
    for (int i : l) out.push_back(std::to_string(i));
    return out;
}

struct PrefCase {
    const char* name;
    std::vector<std::string> available, must;
    std::size_t size;
    std::vector<std::string> want;
};

TEST(Preferred, Table) {
    const PrefCase cases[] = {
        {"AllFreeOneCard", ids({0, 1, 2, 3, 4, 5, 6, 7}), {}, 1, ids({0})},
        {"PackOnOneNode", ids({0, 1, 2, 3, 4, 5, 6, 7}), {}, 4, ids({0, 1, 2, 3})},
        // Node 1 has exactly the three free cards asked for: the tighter fit wins, node 0 stays
        // whole.
        {"TightestNodeFits", ids({0, 1, 2, 3, 5, 6, 7}), {}, 3, ids({5, 6, 7})},
        {"MustIncludeFirst", ids({0, 1, 2, 3, 4, 5, 6, 7}), ids({6}), 2, ids({6, 5})},
        {"MustIncludeThenItsNode", ids({0, 1, 2, 3, 4, 5, 6, 7}), ids({5}), 4, ids({5, 4, 6, 7})},
        {"NearestBusWithinNode", ids({0, 2, 3, 4}), ids({3}), 2, ids({3, 2})},
        {"SpillsToOtherNode", ids({0, 1, 4, 5, 6}), {}, 4, ids({4, 5, 6, 1})},
        {"UnknownIdsIgnored", {"x", "0", "y"}, {}, 2, ids({0})},
        {"SizeZero", ids({0, 1}), {}, 0, {}},
        {"MustIncludeExceedsSize", ids({0, 1, 2}), ids({1, 2}), 1, ids({1})},
        {"DuplicatesOnce", ids({1, 1, 2}), ids({1}), 3, ids({1, 2})},
    };
    const auto inv = inv8();
    for (const auto& c : cases) {
        EXPECT_EQ(device_plugin::preferred(inv, c.available, c.must, c.size), c.want) << c.name;
    }
}

// The default answers with the CDI names (a runtime with CDI on gives the cards with plain runc:
// the shipped example pod) and the env (our shim, the legacy hook).
// The default answer holds nothing a pod could forge: CDI names and annotations, no env.
TEST(Allocate, CdiCriAndAnnotationsByDefault) {
    const auto inv = inv8(device_plugin::IdStrategy::Uuid);
    auto r = device_plugin::allocate(inv, device_plugin::Settings{}, {"UUID1", "UUID0"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->envs_size(), 0);
    ASSERT_EQ(r->cdi_devices_size(), 2);
    EXPECT_EQ(r->cdi_devices(0).name(), "enflame.com/gpu=UUID1");
    EXPECT_EQ(r->cdi_devices(1).name(), "enflame.com/gpu=UUID0");
    ASSERT_EQ(r->annotations_size(), 2);
    EXPECT_EQ(r->annotations().at("cdi.k8s.io/enflame-device-plugin_UUID1"),
              "enflame.com/gpu=UUID1");
    EXPECT_EQ(r->annotations().at("cdi.k8s.io/enflame-device-plugin_UUID0"),
              "enflame.com/gpu=UUID0");
    EXPECT_EQ(r->devices_size(), 0);
}

TEST(Allocate, EveryStrategyCombined) {
    const auto inv = inv8(device_plugin::IdStrategy::Index);
    device_plugin::Settings s;
    s.lists = {true, true, true};
    s.pass_device_specs = true;
    auto r = device_plugin::allocate(inv, s, {"4", "5"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->envs().at("ENFLAME_VISIBLE_DEVICES"), "4,5");
    ASSERT_EQ(r->cdi_devices_size(), 2);
    // CDI names are the UUID names `cdi generate` writes, whatever the ID strategy.
    EXPECT_EQ(r->cdi_devices(0).name(), "enflame.com/gpu=UUID4");
    EXPECT_EQ(r->cdi_devices(1).name(), "enflame.com/gpu=UUID5");
    EXPECT_EQ(r->annotations().at("cdi.k8s.io/enflame-device-plugin_4"), "enflame.com/gpu=UUID4");
    EXPECT_EQ(r->annotations().at("cdi.k8s.io/enflame-device-plugin_5"), "enflame.com/gpu=UUID5");
    ASSERT_EQ(r->devices_size(), 3);
    EXPECT_EQ(r->devices(0).container_path(), "/dev/gcu4");
    EXPECT_EQ(r->devices(0).host_path(), "/sim/dev/gcu4");
    EXPECT_EQ(r->devices(0).permissions(), "rw");
    EXPECT_EQ(r->devices(2).container_path(), "/dev/gcuctl");
    EXPECT_EQ(r->devices(2).host_path(), "/sim/dev/gcuctl");
}

// A plugin in a pod finds the nodes under its dev-root; kubelet hands the DeviceSpecs to the
// runtime on the host, so with host-dev-root set they name the host's nodes.
TEST(Allocate, DeviceSpecsNameTheHostsNodes) {
    device_plugin::Settings s;
    s.pass_device_specs = true;
    s.host_dev_root = "/";
    auto r = device_plugin::allocate(inv8(), s, {"4"});
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->devices_size(), 2);
    EXPECT_EQ(r->devices(0).container_path(), "/dev/gcu4");
    EXPECT_EQ(r->devices(0).host_path(), "/dev/gcu4");  // not /sim/dev/gcu4
    EXPECT_EQ(r->devices(1).host_path(), "/dev/gcuctl");
}

TEST(Allocate, CdiOnlyHasNoEnv) {
    device_plugin::Settings s;
    s.lists = {false, true, false};
    auto r = device_plugin::allocate(inv8(), s, {"0"});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->envs_size(), 0);
    EXPECT_EQ(r->cdi_devices_size(), 1);
}

TEST(Allocate, Refusals) {
    auto inv = inv8();
    inv.devices[2].healthy = false;
    struct {
        const char* name;
        std::vector<std::string> ids;
        std::string want;
    } cases[] = {
        {"Unknown", {"0", "nope"}, "unknown device ID 'nope' for enflame.com/gcu"},
        {"Unhealthy", {"2"}, "device '2' is unhealthy"},
        {"Empty", {}, "no device IDs in the request"},
    };
    for (const auto& c : cases) {
        auto r = device_plugin::allocate(inv, device_plugin::Settings{}, c.ids);
        ASSERT_FALSE(r) << c.name;
        EXPECT_EQ(r.error().what(), c.want) << c.name;
    }
}

TEST(Inventory, IdsAndList) {
    auto h = host8();
    h.devices[3].healthy = false;
    h.devices[7].numa_node = -1;
    auto inv = device_plugin::make_inventory(h, device_plugin::IdStrategy::Uuid);
    ASSERT_TRUE(inv);
    const auto l = device_plugin::list_response(*inv);
    ASSERT_EQ(l.devices_size(), 8);
    EXPECT_EQ(l.devices(0).id(), "UUID0");
    EXPECT_EQ(l.devices(0).health(), "Healthy");
    EXPECT_EQ(l.devices(3).health(), "Unhealthy");
    EXPECT_EQ(l.devices(4).topology().nodes(0).id(), 1);
    EXPECT_FALSE(l.devices(7).has_topology());  // unknown NUMA node: no topology
}

TEST(Inventory, Refusals) {
    auto h = host8();
    h.devices[1].uuid.clear();
    auto r = device_plugin::make_inventory(h, device_plugin::IdStrategy::Uuid);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "card 1 has no UUID: use --device-id-strategy index");
    h = host8();
    h.devices[1].uuid = std::string(64, 'u');
    r = device_plugin::make_inventory(h, device_plugin::IdStrategy::Uuid);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "device ID '" + std::string(64, 'u') + "' is longer than kubelet allows (63)");
}

TEST(Flags, ResourceNames) {
    for (const char* good :
         {"enflame.com/gcu", "enflame.com/gcu.shared", "example.org/drs-1g.11gb", "a/b"}) {
        EXPECT_TRUE(k8s::check_resource_name(good)) << good;
    }
    const std::pair<const char*, const char*> bad[] = {
        {"gcu", "resource name 'gcu': want <domain>/<name>, e.g. enflame.com/gcu"},
        {"a/b/c", "resource name 'a/b/c': want <domain>/<name>, e.g. enflame.com/gcu"},
        {"kubernetes.io/gcu",
         "resource name 'kubernetes.io/gcu': the kubernetes.io and k8s.io domains are reserved"},
        {"Enflame.com/gcu",
         "resource name 'Enflame.com/gcu': 'Enflame.com' is not a DNS subdomain"},
        {"enflame.com/-gcu",
         "resource name 'enflame.com/-gcu': '-gcu' is not a valid name (alphanumerics, '-', '_', "
         "'.'; at most 63)"},
        {"enflame.com/",
         "resource name 'enflame.com/': '' is not a valid name (alphanumerics, '-', '_', '.'; at "
         "most 63)"},
        {"requests.x.io/gcu",
         "resource name 'requests.x.io/gcu': a domain starting with 'requests.' is reserved"},
    };
    for (const auto& [name, want] : bad) {
        auto r = k8s::check_resource_name(name);
        ASSERT_FALSE(r) << name;
        EXPECT_EQ(r.error().what(), want);
    }
}

TEST(Flags, Strategies) {
    auto l = device_plugin::parse_list_strategies({"envvar,cdi-cri", "cdi-annotations"});
    ASSERT_TRUE(l);
    EXPECT_TRUE(l->envvar && l->cdi_cri && l->cdi_annotations);
    auto bad = device_plugin::parse_list_strategies({"envvar,volume-mounts"});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(),
              "device list strategy 'volume-mounts': want envvar, cdi-cri or cdi-annotations");
    EXPECT_FALSE(device_plugin::parse_list_strategies({}));
    EXPECT_EQ(*device_plugin::parse_id_strategy("index"), device_plugin::IdStrategy::Index);
    auto badid = device_plugin::parse_id_strategy("serial");
    ASSERT_FALSE(badid);
    EXPECT_EQ(badid.error().what(), "device ID strategy 'serial': want uuid or index");
}

}  // namespace

namespace {

inject::device::Host host8_drs() {
    auto h = host8();
    h.devices[1].drs_instances = {{1, 0, "1g.11gb", "u-a"}, {1, 1, "1g.11gb", "u-b"}};
    h.devices[6].drs_instances = {{6, 0, "2g.22gb", "u-c"}};
    return h;
}

TEST(Resources, DrsPerProfile) {
    auto r = device_plugin::make_resources(host8_drs(), device_plugin::IdStrategy::Uuid, 1,
                                           "enflame.com/gcu", "enflame-gcu.sock", true);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0].name, "enflame.com/gcu");
    EXPECT_EQ((*r)[0].inventory.devices.size(), 6u);  // cards 1 and 6 are split
    EXPECT_EQ((*r)[0].inventory.find("UUID1"), nullptr);
    EXPECT_EQ((*r)[1].name, "enflame.com/drs-1g.11gb");
    EXPECT_EQ((*r)[1].socket, "enflame-drs-1g.11gb.sock");
    ASSERT_EQ((*r)[1].inventory.devices.size(), 2u);
    const auto& a = (*r)[1].inventory.devices[0];
    EXPECT_EQ(a.id, "DRS-u-a");
    EXPECT_EQ(a.numa_node, 0);
    EXPECT_EQ(a.node.path, "/dev/gcu1");
    EXPECT_EQ((*r)[2].name, "enflame.com/drs-2g.22gb");
    EXPECT_EQ((*r)[2].inventory.devices[0].numa_node, 1);

    device_plugin::Settings s;
    s.lists = {true, true, true};
    s.pass_device_specs = true;
    s.resource_name = "enflame.com/drs-1g.11gb";
    auto al = device_plugin::allocate((*r)[1].inventory, s, {"DRS-u-a", "DRS-u-b"});
    ASSERT_TRUE(al) << al.error().what();
    EXPECT_EQ(al->envs().at("ENFLAME_VISIBLE_DEVICES"), "DRS-u-a,DRS-u-b");
    EXPECT_EQ(al->envs().at("TOPS_VISIBLE_DEVICES"), "DRS-u-a,DRS-u-b");
    EXPECT_EQ(al->cdi_devices(1).name(), "enflame.com/gpu=DRS-u-b");
    EXPECT_EQ(al->annotations().at("cdi.k8s.io/enflame-device-plugin_DRS-u-a"),
              "enflame.com/gpu=DRS-u-a");
    ASSERT_EQ(al->devices_size(), 2);  // both instances live on gcu1: one node, plus gcuctl
    EXPECT_EQ(al->devices(0).container_path(), "/dev/gcu1");
    EXPECT_EQ(al->devices(1).container_path(), "/dev/gcuctl");
}

// Newer efsmi lists instances without UUIDs: they are advertised as <card>:<profile>:<id>.
TEST(Resources, DrsWithoutUuid) {
    auto h = host8();
    h.devices[2].drs_instances = {{2, 1, "1g.11gb", "", 0, "1:1"}};
    auto r = device_plugin::make_resources(h, device_plugin::IdStrategy::Uuid, 1, "enflame.com/gcu",
                                           "enflame-gcu.sock", true);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 2u);
    ASSERT_EQ((*r)[1].inventory.devices.size(), 1u);
    EXPECT_EQ((*r)[1].inventory.devices[0].id, "2:1g.11gb:1");
    device_plugin::Settings s;
    s.lists = {true, true, true};
    s.resource_name = "enflame.com/drs-1g.11gb";
    auto al = device_plugin::allocate((*r)[1].inventory, s, {"2:1g.11gb:1"});
    ASSERT_TRUE(al) << al.error().what();
    EXPECT_EQ(al->envs().at("ENFLAME_VISIBLE_DEVICES"), "2:1g.11gb:1");
    EXPECT_EQ(al->envs().at("TOPS_VISIBLE_DEVICES"), "2:1g.11gb:1");
    EXPECT_EQ(al->cdi_devices(0).name(), "enflame.com/gpu=2:1g.11gb:1");
    EXPECT_EQ(al->annotations().at("cdi.k8s.io/enflame-device-plugin_2_1g.11gb_1"),
              "enflame.com/gpu=2:1g.11gb:1");
}

TEST(Resources, NoDrsAdvertisesEveryCard) {
    auto r = device_plugin::make_resources(host8_drs(), device_plugin::IdStrategy::Index, 1,
                                           "enflame.com/gcu", "enflame-gcu.sock", false);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].inventory.devices.size(), 8u);
}

}  // namespace
