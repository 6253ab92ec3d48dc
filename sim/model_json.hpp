// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The normalised description as JSON: what the builder writes next to the simulators and
/// what they read back. The reader trusts the builder (every key present); it throws
/// nlohmann::json exceptions, which each simulator catches at its own top level.

#include <nlohmann/json.hpp>
#include <string>

#include "model.hpp"

namespace sim {

[[nodiscard]] nlohmann::ordered_json to_json(const Host& h);
[[nodiscard]] Host host_from_json(const nlohmann::json& j);

/// Reads and parses a normalised description file. Throws std::runtime_error naming the file.
[[nodiscard]] Host load_host_json(const std::string& path);

/// What the builder appends to the installed simulators: the description JSON and a
/// fixed-size trailer (magic, length). Bytes after the end of an ELF file are ignored by the
/// kernel and ld.so, so a simulator bind-mounted alone into a container (where no
/// enflame-sim.json lies next to it) still knows its host.
[[nodiscard]] std::string embedded_description(const std::string& json);

/// The description at `desc_path` if that file exists, else the one embedded at the end of
/// the file `self_path` (the simulator's own file). Throws std::runtime_error when neither.
[[nodiscard]] Host load_host(const std::string& desc_path, const std::string& self_path);

/// The runtime health switch a test flips while a daemon runs: a file of this name beside the
/// description (`<root>/usr/local/efsmi/efsmi-<ver>/enflame-sim-unhealthy`). While it exists
/// it decides every card's health: a card whose index or UUID is on one of its lines is
/// unhealthy, every other card healthy. Without it the description's `healthy` holds.
inline constexpr std::string_view kHealthSwitchFile = "enflame-sim-unhealthy";

/// Applies the health switch in folder `dir` to `h` (nothing when the file is absent).
void apply_health_switch(Host& h, const std::string& dir);

}  // namespace sim
