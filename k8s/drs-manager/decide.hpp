// SPDX-License-Identifier: Apache-2.0
#pragma once

// What the daemon does about the node's layout (docs/drs-manager.md, "The daemon"): from the
// label, the layouts text, what discovery found and what is held, one decision. Pure.

#include <optional>
#include <string>
#include <string_view>

#include "drs-manager/holders.hpp"
#include "drs-manager/plan.hpp"
#include "inject/device.hpp"
#include "k8s/drs_layout_state.hpp"

namespace drs_manager {

/// The state label and its values (k8s/drs_layout_state.hpp: the operator reads them too).
using k8s::drs::kApplying;
using k8s::drs::kFailed;
using k8s::drs::kPending;
using k8s::drs::kStateLabel;
using k8s::drs::kSuccess;

/// The layout the node asks for: its label's value, else `default_layout`; empty: none.
[[nodiscard]] std::string wanted_layout(std::string_view label, std::string_view default_layout);

struct Decision {
    enum class Outcome {
        Failed,   ///< the layout cannot be had: `reason`; nothing is touched
        Blocked,  ///< the plan destroys held instances or repartitions a held card: `reason`
        Apply,    ///< `plan` to run
        Done,     ///< the node already has the layout
    };
    Outcome outcome = Outcome::Done;
    std::string reason;  ///< one line (Failed, Blocked)
    Plan plan;           ///< Blocked, Apply
};

/// The decision for layout `name` (non-empty) from `layouts_text` (the ConfigMap's key; none:
/// the ConfigMap or its key is missing), `source` naming it in errors, on `host` with `held`.
/// A blocked plan is not run at all: the layout is applied whole or not yet.
[[nodiscard]] Decision decide(const std::string& name,
                              const std::optional<std::string>& layouts_text,
                              const std::string& source, const inject::device::Host& host,
                              const HeldOnNode& held);

}  // namespace drs_manager
