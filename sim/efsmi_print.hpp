// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What the efsmi simulator prints, as pure functions of the description (no faults applied
/// here but old_keys, which changes the format itself).

#include <string>

#include "model.hpp"

namespace sim {

/// `efsmi -q`: the layout of tests/fixtures/efsmi/efsmi-q-s60-*.txt. Telemetry values come
/// from the telemetry file in `dir` (telemetry.hpp; defaults when `dir` is empty).
[[nodiscard]] std::string efsmi_query_text(const Host& h, const std::string& dir = {});

/// `efsmi -q --json-format`: the JSON model of docs/efsmi-model.md.
[[nodiscard]] std::string efsmi_query_json(const Host& h, const std::string& dir = {});

/// Usage text (on -h, unknown flags and --json-format of an old driver).
[[nodiscard]] std::string efsmi_usage();

/// Output that is not efsmi's format at all (fault efsmi_output: garbage).
[[nodiscard]] std::string efsmi_garbage(const Host& h);

}  // namespace sim
