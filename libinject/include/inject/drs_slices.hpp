// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// How DRS instances share a card, as docs/efsmi-model.md models it (and sim/drs.cpp does):
/// a card has as many slices as its largest `<g> * max_instances`, an instance of profile
/// `<g>g.<m>gb` takes `<g>` slices, one of any other name ("full") the whole card, and a new
/// instance goes to the first free run of slices aligned to its size.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "inject/device.hpp"

namespace inject::drs {

/// `<g>` of a `<g>g.<m>gb` profile name ("2g.22gb" -> 2); nullopt for other names ("full").
[[nodiscard]] std::optional<std::uint32_t> profile_slices(std::string_view profile);

/// Slices of a card offering `profiles`: the largest `<g> * max_instances`; 0 when no profile
/// names its `<g>`.
[[nodiscard]] std::uint32_t card_slices(const std::vector<device::DrsProfile>& profiles);

/// A run of slices, as efsmi's placement column prints it ("<first>:<count>", "2:2").
struct SliceRun {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
    friend bool operator==(const SliceRun&, const SliceRun&) = default;
};

/// "<first>:<count>" read; nullopt for any other text (an empty placement: older efsmi).
[[nodiscard]] std::optional<SliceRun> parse_placement(std::string_view text);

/// Where a new instance of `count` slices goes on a card of `slices` slices whose runs `taken`
/// are in use: the first free run starting at a multiple of `count`; nullopt when none is free.
[[nodiscard]] std::optional<std::uint32_t> first_fit(std::uint32_t slices,
                                                     const std::vector<SliceRun>& taken,
                                                     std::uint32_t count);

}  // namespace inject::drs
