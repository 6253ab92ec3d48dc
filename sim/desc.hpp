// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Reading a host description (YAML or JSON, docs/efsmi-model.md) into a normalised,
/// validated sim::Host. Every error is one line: "line L: <key path>: <problem>", with the
/// file added as context by load_description().

#include <string>
#include <vector>

#include "inject/result.hpp"
#include "model.hpp"

namespace sim {

/// Where each list entry of the description starts (1-based lines, 0 when unknown), so the
/// cross-entry checks can point at the entry.
struct Lines {
    std::vector<int> cards;
    std::vector<int> profiles;
    std::vector<int> instances;
    std::vector<int> libraries;
};

/// A parsed description before the cross-entry checks.
struct Parsed {
    Host host;
    Lines lines;
};

/// Parses `text` (field-level checks and defaults only).
[[nodiscard]] inject::Result<Parsed> parse_description(const std::string& text);

/// The checks that span entries: duplicates, index range, DRS references and counts.
[[nodiscard]] inject::Result<void> validate(const Parsed& p);

/// Reads, parses and validates the file at `path`; errors carry "description '<path>'".
[[nodiscard]] inject::Result<Host> load_description(const std::string& path);

}  // namespace sim
