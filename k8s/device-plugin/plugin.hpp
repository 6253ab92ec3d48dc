// SPDX-License-Identifier: Apache-2.0
#pragma once

// The device plugin's decisions as pure functions over the cards discovery found: which IDs
// kubelet sees, which cards a container should prefer, and what an Allocate answers. No gRPC
// server, no clock, no files here, so the unit tests drive every case in a table.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/device.hpp"
#include "inject/result.hpp"
#include "k8s/proto/deviceplugin_v1beta1.pb.h"

namespace device_plugin {

/// What kubelet calls a card: its UUID (default, stable across reboots) or its index.
enum class IdStrategy { Uuid, Index };

/// How Allocate tells the runtime which cards a container gets (any combination).
struct ListStrategies {
    bool envvar = false;           ///< ENFLAME_VISIBLE_DEVICES=<ids> (our shim, gcushare, HAMi)
    bool cdi_cri = false;          ///< cdi_devices (kubelet 1.28+, runtime with CDI on)
    bool cdi_annotations = false;  ///< cdi.k8s.io/enflame-device-plugin_<id> annotations
};

/// Everything Allocate and ListAndWatch depend on besides the cards.
struct Settings {
    std::string resource_name = "enflame.com/gcu";
    IdStrategy id_strategy = IdStrategy::Uuid;
    /// Default cdi-cri + cdi-annotations: containerd 1.7+ (enable_cdi) and CRI-O resolve the CDI
    /// names with any runtime, plain runc too; the annotations serve our shim, the legacy hook
    /// and the NRI plugin (kubelet sets them; a pod cannot).
    ListStrategies lists{false, true, true};
    bool pass_device_specs = false;
    std::string cdi_kind = "enflame.com/gpu";  ///< from the config's cdi-kind
    /// The config's host-dev-root: the DeviceSpecs' host paths are the host's (kubelet hands
    /// them to the runtime on the host); empty = the nodes' paths as discovery found them.
    std::string host_dev_root;
    /// --require-nri: enflame-nri-plugin's liveness lock (k8s/nri_lock.hpp), which must be held
    /// for Allocate to answer; empty = not required.
    std::string require_nri_lock;
};

/// "uuid" or "index".
[[nodiscard]] inject::Result<IdStrategy> parse_id_strategy(std::string_view s);
/// Names from --device-list-strategy (each may also be a comma list): envvar, cdi-cri,
/// cdi-annotations. At least one.
[[nodiscard]] inject::Result<ListStrategies> parse_list_strategies(
    const std::vector<std::string>& names);

/// One advertised card.
struct PluginDevice {
    std::string id;  ///< what kubelet sees (<= 63 characters): card_id, or card_id::<n> when shared
    std::string
        card_id;  ///< the card's ID under the ID strategy (what ENFLAME_VISIBLE_DEVICES gets)
    std::string cdi_name;  ///< the CDI device name `cdi generate` writes: the UUID, or a DRS
                           ///< instance's address
    bool drs = false;      ///< a DRS instance (card_id = cdi_name = DRS-<uuid>, or
                           ///< <card>:<profile>:<id> without a UUID)
    std::string uuid;      ///< the card's UUID (a DRS instance: its parent card's)
    std::uint32_t index = 0;
    std::uint32_t minor = 0;  ///< N of /dev/gcuN (gcushare's ENFLAME_VISIBLE_DEVICES)
    std::string pci_bus_id;
    std::int32_t numa_node = -1;
    bool healthy = true;
    std::string why_unhealthy;  ///< for the log
    inject::device::DeviceNode node;
};

/// The cards as the plugin advertises them, plus the control node every container needs.
struct Inventory {
    std::vector<PluginDevice> devices;
    std::optional<inject::device::DeviceNode> control;

    [[nodiscard]] const PluginDevice* find(std::string_view id) const;
};

/// The inventory of `host` under `strategy`, each card `replicas` times when time-sliced
/// (IDs `<id>::<n>`). A card's health starts as discovery reported it (unknown = healthy).
[[nodiscard]] inject::Result<Inventory> make_inventory(const inject::device::Host& host,
                                                       IdStrategy strategy,
                                                       std::uint32_t replicas = 1);

/// One resource the plugin advertises: its name, its socket's name and its devices.
struct Resource {
    std::string name;    ///< "enflame.com/gcu", "enflame.com/drs-1g.11gb"
    std::string socket;  ///< "enflame-gcu.sock", "enflame-drs-1g.11gb.sock"
    Inventory inventory;
};

/// Everything `host` offers: the whole cards as `resource` on `socket` (each `replicas` times),
/// and with `drs`, each DRS profile that has instances as `<domain>/drs-<profile>` on
/// `enflame-drs-<profile>.sock` with its instances as `DRS-<uuid>` devices (`<card>:<profile>:<id>`
/// where efsmi lists no UUID: inject::device::drs_address). A card split
/// into DRS instances is not advertised whole (it would be given twice).
[[nodiscard]] inject::Result<std::vector<Resource>> make_resources(
    const inject::device::Host& host, IdStrategy strategy, std::uint32_t replicas,
    const std::string& resource, const std::string& socket, bool drs);

/// The whole list as one ListAndWatch message: capacity is every card, allocatable the
/// healthy ones; topology from the card's NUMA node when known.
[[nodiscard]] v1beta1::ListAndWatchResponse list_response(const Inventory& inv);

/// kubelet's GetPreferredAllocation for one container: `must_include` first, then cards on
/// the same NUMA node, then (time-slicing) the cards with fewest replicas taken so far, then
/// the nearest PCI bus. Unknown IDs in `available` are ignored.
[[nodiscard]] std::vector<std::string> preferred(const Inventory& inv,
                                                 const std::vector<std::string>& available,
                                                 const std::vector<std::string>& must_include,
                                                 std::size_t size);

/// kubelet's Allocate for one container. An unknown or unhealthy ID is an error naming it.
/// Replicas of one card (time-slicing) give that card once.
[[nodiscard]] inject::Result<v1beta1::ContainerAllocateResponse> allocate(
    const Inventory& inv, const Settings& s, const std::vector<std::string>& ids);

}  // namespace device_plugin
