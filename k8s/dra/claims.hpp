// SPDX-License-Identifier: Apache-2.0
#pragma once

// What a ResourceClaim asks of this driver (docs/kubelet-wire.md, DRA), as pure functions over
// the claim's JSON: the allocation results addressed to us, our device names, and the opaque
// configs addressed to us. No server, no files: unit tests feed claim JSON directly.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/result.hpp"

namespace dra {

using Json = nlohmann::json;

/// Our driver name: spec.driver of our ResourceSlices, results[].driver of claims we prepare.
inline constexpr std::string_view kDriverName = "gcu.enflame.com";
/// The API group and version of our opaque configuration objects.
inline constexpr std::string_view kConfigApiVersion = "gcu.enflame.com/v1alpha1";

/// A claim as kubelet names it in NodePrepareResources / NodeUnprepareResources.
struct ClaimRef {
    std::string ns;
    std::string name;
    std::string uid;
    /// "ns/name", how errors name the claim.
    [[nodiscard]] std::string text() const { return ns + "/" + name; }
};

/// One entry of status.allocation.devices.results[] whose driver is ours.
struct Allocated {
    std::string request;  ///< the claim's request name (v1: maybe "<request>/<subrequest>")
    std::string pool;
    std::string device;  ///< "gcu-0", "gcu-1-drs-2"
    bool operator==(const Allocated&) const = default;
};

/// A DRS profile placement of a partitionable card (slices.hpp, placement_name): the profile
/// as the name spells it ("1g-11gb" for 1g.11gb) and the placement's number on the card. No
/// instance exists for it until a prepare makes one.
struct Placement {
    std::string profile;
    std::uint32_t k = 0;
    bool operator==(const Placement&) const = default;
};

/// Our device names: a whole card `gcu-<index>`, an existing DRS instance
/// `gcu-<index>-drs-<instance-id>`, a DRS placement `gcu-<index>-<n>g-<m>gb-<k>`.
struct DeviceName {
    std::uint32_t index = 0;
    std::optional<std::uint32_t> drs_instance;
    std::optional<Placement> placement;
    /// A DRS instance or a placement: a partition, not the whole card.
    [[nodiscard]] bool is_drs() const { return drs_instance || placement; }
    [[nodiscard]] std::string str() const;
    bool operator==(const DeviceName&) const = default;
};

/// Parses "gcu-3" / "gcu-3-drs-1" / "gcu-3-1g-11gb-0"; InvalidInput quoting the name otherwise.
[[nodiscard]] inject::Result<DeviceName> parse_device_name(std::string_view name);

/// The results of `claim` (a resource.k8s.io v1 or v1beta1 ResourceClaim object) addressed to
/// `driver`, after checking what kubelet promised us: metadata.uid is `ref.uid`, the claim is
/// allocated, each of our results names a device we know (parse_device_name), and every opaque
/// config addressed to `driver` is one we understand (validate_opaque). Errors name the claim
/// and the field: "claim 'ns/c': status.allocation: missing (the claim is not allocated)".
/// An allocation with no result for `driver` is an error too (kubelet asked the wrong driver).
[[nodiscard]] inject::Result<std::vector<Allocated>> allocated_devices(
    const Json& claim, const ClaimRef& ref, std::string_view driver = kDriverName);

/// Refuses a claim any of whose `results` (ours, from allocated_devices) is from a pool other
/// than `node`, this node's (our ResourceSlices' pool): the scheduler allocated it on another
/// node. Conflict naming the claim, the device, its pool and this node; an empty `node` refuses
/// every claim (fail closed).
[[nodiscard]] inject::Result<void> check_pool(const std::vector<Allocated>& results,
                                              const ClaimRef& ref, std::string_view node);

/// Checks one opaque configuration's `parameters` addressed to our driver: an object with
/// apiVersion gcu.enflame.com/v1alpha1 and kind GcuConfig (whole cards) or DrsConfig (DRS
/// instances), and no other field (strict, like the API server's decoding). `targets` are the
/// devices the config applies to (for the kind check). Errors quote the field.
[[nodiscard]] inject::Result<void> validate_opaque(const Json& parameters,
                                                   const std::vector<DeviceName>& targets);

}  // namespace dra
