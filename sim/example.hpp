// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// `enflame-sim-host example`: a valid description with N cards, for tests and the demo.

#include <cstdint>
#include <optional>
#include <string>

#include "inject/result.hpp"

namespace sim {

struct ExampleOptions {
    std::uint32_t cards = 1;                 ///< 1..128
    std::string product = "S60";             ///< S60 | T10
    bool drs = false;                        ///< S60 DRS profiles and three instances
    std::optional<std::uint32_t> unhealthy;  ///< index of a card marked unhealthy
};

/// The description as YAML. Deterministic: UUIDs TR6Y4601<NNNN>, bus ids 0000:<0x10+i>:00.0,
/// NUMA node 0 for the first half of the cards and 1 for the rest.
[[nodiscard]] inject::Result<std::string> example_description(const ExampleOptions& o);

}  // namespace sim
