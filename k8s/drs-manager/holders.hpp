// SPDX-License-Identifier: Apache-2.0
#pragma once

// Who holds which DRS instance (docs/drs-manager.md, "Holders"): kubelet's pod-resources API
// (the device plugin's pods) and the checkpoints of the plugins that hand instances to containers,
// the DRA plugin's (claims whose devices record a createdInstance, or a whole card) and HAMi mode's
// (pods with instances). Their JSON is read here directly: the manager links neither plugin. Pure
// but for read_holder_files().

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drs-manager/plan.hpp"
#include "inject/device.hpp"
#include "inject/result.hpp"
#include "k8s/proto/podresources_v1.pb.h"

namespace drs_manager {

/// One instance (or, without `id`, one whole card) a checkpoint says is in use.
struct Held {
    std::uint32_t card = 0;
    std::optional<std::uint32_t> id;  ///< none: the whole card
    std::string profile, uuid;        ///< as recorded; empty: not compared
    std::string holder;               ///< "claim ns/name", "pod ns/name"
    friend bool operator==(const Held&, const Held&) = default;
};

/// The DRA plugin's checkpoint ({"version":1,"claims":{uid:{namespace,name,devices:[{device,
/// createdInstance?}]}},"pending":[...]}): each createdInstance, each whole card ("gcu-<n>"),
/// and each pending create with a made id. Errors name `source` and the field.
[[nodiscard]] inject::Result<std::vector<Held>> parse_dra_holders(std::string_view text,
                                                                  const std::string& source);
/// HAMi mode's checkpoint ({"version":1,"instances":[{podUID,namespace,pod,card,instance,uuid,
/// profile?}],"pending":[...]}): each instance, each pending create with a made id.
[[nodiscard]] inject::Result<std::vector<Held>> parse_hami_holders(std::string_view text,
                                                                   const std::string& source);

/// Pods holding cards or instances through the device plugin, from kubelet's pod-resources
/// List: each device ID of an enflame.com resource that is an instance's address on `host`
/// (DRS-<uuid>, or <card>:<profile>:<id>) holds that instance for "pod <ns>/<name>"; one that
/// is a card's UUID or index (a time-slicing replica's "::N" dropped) holds the card whole.
/// DRA claims are left to the DRA plugin's checkpoint.
[[nodiscard]] std::vector<Held> pod_resource_holders(const v1::ListPodResourcesResponse& r,
                                                     const inject::device::Host& host);

/// Reads each file, by its format (one holding "claims" is the DRA plugin's, one holding
/// "instances" HAMi's); a missing file holds nothing. An unreadable or unparsable file is an
/// error naming it: the manager cannot tell what is held, so it must not act.
[[nodiscard]] inject::Result<std::vector<Held>> read_holder_files(
    const std::vector<std::string>& paths);

/// What is held on `host` now.
struct HeldOnNode {
    Holders instances;  ///< by drs_name, for plan_layout
    std::map<std::uint32_t, std::vector<std::string>> whole_cards;  ///< card -> holders
    friend bool operator==(const HeldOnNode&, const HeldOnNode&) = default;
};

/// `held` matched against the instances `host` lists (k8s::drs::seen_in: the same id, with the
/// recorded profile and UUID where recorded); a record whose instance is gone or is another
/// one now holds nothing.
[[nodiscard]] HeldOnNode held_on(const inject::device::Host& host, const std::vector<Held>& held);

}  // namespace drs_manager
