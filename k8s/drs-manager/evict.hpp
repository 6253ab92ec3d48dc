// SPDX-License-Identifier: Apache-2.0
#pragma once

// The opt-in eviction of the pods that block a layout (docs/drs-manager.md, "Eviction"): with
// --eviction-policy evict, the pods holding instances the plan must destroy (or a card it must
// repartition) are evicted through the Eviction API, so PodDisruptionBudgets and the pods'
// grace periods hold as for `kubectl drain`. Pods holding a DRA claim are not evicted: the
// claim, not the pod, holds the instance.

#include <string>
#include <vector>

#include "drs-manager/plan.hpp"
#include "inject/result.hpp"
#include "k8s/apiserver.hpp"

namespace drs_manager {

enum class EvictionPolicy {
    Wait,   ///< wait for the holders to go (the default)
    Evict,  ///< evict the pods among them
};

/// "wait" or "evict"; anything else is InvalidInput naming `flag`.
[[nodiscard]] inject::Result<EvictionPolicy> parse_eviction_policy(const std::string& flag,
                                                                   const std::string& value);

/// A pod the plan waits for, and what it holds.
struct BlockingPod {
    std::string ns, name;
    std::vector<std::string> holds;  ///< drs_names ("1:1g.11gb:3") or "card N"
    friend bool operator==(const BlockingPod&, const BlockingPod&) = default;
};

/// The pods among the holders of `plan`'s blocked cards ("pod <ns>/<name>"), each once, in the
/// plan's order.
[[nodiscard]] std::vector<BlockingPod> blocking_pods(const Plan& plan);

/// POSTs a policy/v1 Eviction for the pod. A pod already gone is fine. A refusal (429: a
/// disruption budget; 403: not allowed) is an error whose text is the API server's.
[[nodiscard]] inject::Result<void> evict_pod(k8s::api::Client& api, const BlockingPod& pod);

}  // namespace drs_manager
