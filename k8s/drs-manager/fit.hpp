// SPDX-License-Identifier: Apache-2.0
#pragma once

// Whether instances fit a card, by efsmi's rule (inject/drs_slices.hpp): the layout check and
// the planner both ask it, with the instances in the order the planner creates them.

#include <cstdint>
#include <string_view>
#include <vector>

#include "inject/device.hpp"
#include "inject/drs_slices.hpp"

namespace drs_manager {

/// The slices of the node's cards and of each profile's instance.
struct CardSlices {
    std::uint32_t total = 1;  ///< inject::drs::card_slices, at least 1 as efsmi counts
    /// Slices an instance of `profile` takes: its `<g>`, or the whole card ("full").
    [[nodiscard]] std::uint32_t of(std::string_view profile) const;
};

[[nodiscard]] CardSlices card_slices_of(const std::vector<inject::device::DrsProfile>& profiles);

/// Sorts `creates` into the order the planner creates them: most slices first, then by name,
/// so that aligned first fit packs them.
void sort_for_creation(std::vector<inject::device::DrsProfile>& creates, const CardSlices& slices);

/// Whether `creates`, made one by one in their order, each finds a free aligned run on a card
/// whose runs `taken` are in use.
[[nodiscard]] bool fits(const CardSlices& slices, std::vector<inject::drs::SliceRun> taken,
                        const std::vector<inject::device::DrsProfile>& creates);

}  // namespace drs_manager
