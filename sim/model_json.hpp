// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The normalised description as JSON: what the builder writes next to the simulators and
/// what they read back. The reader trusts the builder (every key present); it throws
/// nlohmann::json exceptions, which each simulator catches at its own top level.

#include "model.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace sim {

[[nodiscard]] nlohmann::ordered_json to_json(const Host& h);
[[nodiscard]] Host host_from_json(const nlohmann::json& j);

/// Reads and parses a normalised description file. Throws std::runtime_error naming the file.
[[nodiscard]] Host load_host_json(const std::string& path);

}  // namespace sim
