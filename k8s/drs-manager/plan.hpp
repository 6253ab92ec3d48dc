// SPDX-License-Identifier: Apache-2.0
#pragma once

// The planner (docs/drs-manager.md): what to destroy and create on each card so that its DRS
// instances become what the layout says, with the fewest efsmi calls, and which running
// containers it would have to wait for. Pure: the daemon discovers, plans, then acts.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "drs-manager/layout.hpp"
#include "inject/device.hpp"

namespace drs_manager {

/// The instances running containers hold, by inject::device::drs_name ("0:1g.11gb:1"), each
/// with who holds it ("namespace/pod").
using Holders = std::map<std::string, std::vector<std::string>>;

/// An instance the plan would destroy while containers hold it.
struct Hold {
    std::string instance;              ///< drs_name
    std::vector<std::string> holders;  ///< as the caller named them
    friend bool operator==(const Hold&, const Hold&) = default;
};

/// One card's changes: the destroys first, then the creates, each in order.
struct CardPlan {
    std::uint32_t card = 0;
    std::vector<inject::device::DrsInstance> destroy;
    std::vector<inject::device::DrsProfile> create;  ///< most slices first
    std::vector<Hold> holds;                         ///< held instances among `destroy`
    /// A blocked card waits, untouched, until its holders are gone.
    [[nodiscard]] bool blocked() const { return !holds.empty(); }
};

/// The cards that change, by index; a card already as its target is not in it.
struct Plan {
    std::vector<CardPlan> cards;
    [[nodiscard]] bool empty() const { return cards.empty(); }
    [[nodiscard]] bool blocked() const;
    /// efsmi calls the plan makes (destroys and creates of every card).
    [[nodiscard]] std::size_t operations() const;
};

/// The plan that gives each card of `targets` (resolve_layout's answer for `host`) its
/// instances. Instances already right are kept; the surplus of a profile is destroyed unheld
/// first, highest instance id first; a card is rebuilt only when the new instances would not
/// fit around the kept ones (efsmi's placements, where it prints them).
[[nodiscard]] Plan plan_layout(const std::vector<CardTarget>& targets,
                               const inject::device::Host& host, const Holders& holders);

/// One line for a card's changes: "card 0: destroy 0:2g.22gb:0 0:2g.22gb:1; create 1g.11gb x4",
/// and, when blocked, "; waiting for 0:2g.22gb:1 (held by ns/pod)".
[[nodiscard]] std::string describe(const CardPlan& plan);

}  // namespace drs_manager
