// SPDX-License-Identifier: Apache-2.0
#pragma once

// HAMi mode: which pods' decisions are honoured, and whether a decision fits the pod it is on
// (issue 36). Pure: hami_mode.cpp applies these before it serves a pod.
//
// What is relied on. A pod's owner writes its spec and metadata (annotations, managedFields by
// a later update) but not its status (pods/status is the kubelet's and the control plane's).
// pods/binding sets spec.nodeName and the PodScheduled=True condition in one storage write; a
// pod created with spec.nodeName gets PodScheduled only from the kubelet, in the status write
// that also sets status.startTime, after admission, and Allocate runs during admission. So a
// pod that waits for Allocate (no startTime) and has PodScheduled was bound (by HAMi when its
// schedulerName is HAMi's: the default scheduler does not bind pods naming another). Also, no
// managedFields entry of the pod itself (not a subresource) may own f:spec/f:nodeName: that is
// what a create with nodeName records (a binding records none); a later update can rewrite
// managedFields, so this one only catches the cheap forgery. What remains forgeable: anything
// by an account that may write pods/status or pods/binding, and the annotations of a pod HAMi
// bound, which its owner can write at any time: the admission policy in
// deployments/overlays/hami refuses that, and check_*() below bound what they can get.

#include <cstdint>
#include <string>
#include <vector>

#include "device-plugin/hami.hpp"

namespace device_plugin::hami {

/// HAMi's scheduler's name (spec.schedulerName of the pods it places), --hami-scheduler-name.
inline constexpr const char* kDefaultScheduler = "hami-scheduler";

/// Why `pod` was not placed by HAMi's scheduler `scheduler` ("" when it was).
[[nodiscard]] std::string not_placed_by(const Json& pod, const std::string& scheduler);

/// The pods Allocate may serve: `pods` (a list) less those HAMi did not place (`skipped`, when
/// they look like they wait: the forged ones) and those the kubelet admitted already. A bind or
/// assigned time before the pod's creation (or missing) or after `now_s` is not trusted for
/// the order: such a pod comes last.
struct Screened {
    Json pods;
    std::vector<Broken> skipped;
};
[[nodiscard]] Screened screen(const Json& pods, const std::string& scheduler, std::int64_t now_s);

/// The name of container `i` of `pod` in HAMi's order (init containers first), "" when none.
[[nodiscard]] std::string container_at(const Json& pod, std::size_t i);

// Whether the decision gives container `i` no more than it asks; "" when it does, else why,
// naming the container.
/// Whole cards: no more cards than its limit of `resource`, each once.
[[nodiscard]] std::string check_cards(const Json& pod, const CardDecision& d, std::size_t i,
                                      const std::string& resource);
/// HAMi <= 2.9: no more cards than its slices need (`per_card` slices a card).
[[nodiscard]] std::string check_shared(const SharedDecision& d, std::size_t i,
                                       std::uint32_t per_card);
/// DRS: the profile (`profile`, of the card's `profiles`) has the slices the container asks
/// (its limit of names.drs), or is the smallest fitting its gcu-memory (GB) and gcu-core (%);
/// assigned-containers' request agrees.
[[nodiscard]] std::string check_drs(const Json& pod, const DrsContainer& c,
                                    const std::string& profile,
                                    const std::vector<inject::device::DrsProfile>& profiles,
                                    const Names& names);

}  // namespace device_plugin::hami
