// SPDX-License-Identifier: Apache-2.0
#pragma once

// This node's cards as ResourceSlices (docs/kubelet-wire.md, DRA): one pool named after the node,
// driver gcu.enflame.com, a device per card (`gcu-<index>`) with the attributes and the
// `memory` capacity a ResourceClaim's CEL selects on, in the shape of resource.k8s.io/v1 (device
// fields flat) or v1beta1 (under `basic`). DRS either as partitionable devices (one counter set
// per card, KEP-4815) or as the DRS instances that already exist, as plain devices.
// Pure: a Host in, JSON out; the Publisher (publisher.hpp) writes them.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "inject/device.hpp"

namespace dra {

using Json = nlohmann::json;

// Validation limits of resource.k8s.io (Kubernetes 1.34 types.go).
inline constexpr std::size_t kMaxDevicesPerSlice = 128;
inline constexpr std::size_t kMaxDevicesPerSliceWithCounters =
    64;  ///< devices that consume counters
inline constexpr std::size_t kMaxCounterSetsPerSlice = 8;
inline constexpr std::size_t kMaxAttributesAndCapacities = 32;  ///< per device

/// How DRS partitions are published.
enum class DrsMode {
    Instances,  ///< the DRS instances that exist now, as plain devices (no feature gate needed)
    Counters,   ///< partitionable devices; counter sets in the slice of their devices (1.33, 1.34)
    CountersOwnSlice,  ///< partitionable devices; counter sets in slices of their own (1.35+)
    /// The Publisher decides: by the server's version (before 1.33 Instances, 1.33/1.34
    /// Counters, later CountersOwnSlice), then Instances if the server drops the counter fields
    /// (feature gate DRAPartitionableDevices off). build_slices treats it as Instances.
    Auto,
};

/// The DrsMode Auto starts with on Kubernetes 1.<minor>.
[[nodiscard]] DrsMode drs_mode_for_minor(int minor);

struct SliceOptions {
    std::string node_name;                   ///< pool name and spec.nodeName
    std::string driver = "gcu.enflame.com";  ///< spec.driver
    std::string api_version = "v1";          ///< "v1" or "v1beta1"
    DrsMode drs = DrsMode::Instances;
    std::int64_t generation = 1;                    ///< pool.generation of every slice
    std::size_t max_devices = kMaxDevicesPerSlice;  ///< per slice (tests lower it to split)
    std::string node_uid;  ///< when set: ownerReference to the Node (GC on node delete)
    /// Publisher only: fill node_uid from `GET /api/v1/nodes/<node>` on the first publish (a
    /// failure is logged, and the slices go out without an owner).
    bool owned_by_node = true;
};

/// The semver of a driver version ("1.4.3.4" -> "1.4.3+4": the fourth part is build metadata,
/// which semver comparisons ignore, so CEL `>= semver("1.4.3")` holds and nothing is lost);
/// missing parts are 0 ("1.4" -> "1.4.0"). Empty when it has no leading number.
[[nodiscard]] std::string semver_of(const std::string& driver_version);

/// `v` as the API server writes a quantity back (canonical decimal SI: 1000 -> "1k",
/// 33554432000 -> "33554432k", 45063602176 stays): sending that form keeps what we compare with
/// the server's copy equal.
[[nodiscard]] std::string canonical_quantity(std::uint64_t v);

/// The device name of a DRS profile placement: "1g.11gb" on card 0, placement 1 ->
/// "gcu-0-1g-11gb-1" (a DNS label: lowercase, '.' and '_' become '-').
[[nodiscard]] std::string placement_name(std::uint32_t index, const std::string& profile,
                                         std::uint32_t k);

/// The ResourceSlice objects for `host` (a JSON array, at least one slice even with no card, so
/// the pool exists), named "<node>-<driver>-<k>". Cards whose health is known bad are left out
/// (the scheduler must not pick them), with their partitions. In DrsMode::Instances a card that
/// has DRS instances is published as those instances only: a partitioned card cannot also be
/// handed out whole. In the counter modes every profile of the host whose name says its share
/// (`<n>g.`) and is smaller than the card becomes `max_instances` placements per card
/// (`gcu-<n>-<profile>-<k>`); the card's counter set holds its memory and its slices (the
/// largest `n * max_instances` of its profiles), the whole card consumes all of it.
[[nodiscard]] Json build_slices(const inject::device::Host& host, const SliceOptions& opts);

}  // namespace dra
