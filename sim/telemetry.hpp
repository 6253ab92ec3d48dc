// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Values a test changes while a daemon keeps the simulated libefml open (sim/README.md,
/// "Runtime switches"): telemetry, driver events and the driver going away. All live in files
/// beside enflame-sim.json; the simulators read them on every call.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model.hpp"

namespace sim {

inline constexpr std::string_view kTelemetryFile = "enflame-sim-telemetry.json";
inline constexpr std::string_view kEventsFile = "enflame-sim-events.jsonl";
inline constexpr std::string_view kDriverGoneFile = "enflame-sim-driver-gone";
/// A number of milliseconds every libefml call (EfmlInit included) waits before it answers: a
/// hung library, for the callers' timeouts.
inline constexpr std::string_view kEfmlStallFile = "enflame-sim-efml-stall-ms";

/// One card's readings. Defaults: what the efsmi fixture shows.
struct Telemetry {
    double usage = 0.0;  ///< percent
    std::uint64_t memory_used_mib = 0;
    double temperature = 35, memory_temperature = 38, board_temperature = 30;  ///< C
    double power = 96, power_capability = 300;                                 ///< W
    std::uint32_t dtu_clock = 1200, hbm_clock = 7000;                          ///< MHz
    std::uint64_t ecc_single_bit = 0, ecc_double_bit = 0;
    int pcie_link_width = 8, pcie_link_speed = 3;  ///< X8, Gen3
    int pcie_max_link_width = 16, pcie_max_link_speed = 5;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> processes;  ///< pid, MiB
};

/// Card `c`'s telemetry: defaults (memory used from the description) overlaid with the
/// telemetry file in `dir`. A missing or unreadable file means defaults.
[[nodiscard]] Telemetry telemetry_of(const Card& c, const std::string& dir);

/// Merges `key=value` settings into card `card`'s entry of the telemetry file in `dir`
/// (temp file + rename). Empty on success, else a one-line reason (nothing written).
[[nodiscard]] std::string set_telemetry(const std::string& dir, std::uint32_t card,
                                        const std::vector<std::string>& settings);

struct SimEvent {
    std::uint32_t card = 0;
    int type = 0;
    std::string message;
};

/// The event type for a name (suspend, reset-start, reset-finish, eid) or a number.
[[nodiscard]] std::optional<int> event_type(std::string_view s);

/// Appends an event to the events file in `dir`. Empty on success, else the reason.
[[nodiscard]] std::string append_event(const std::string& dir, const SimEvent& e);

/// Every event of the events file in `dir`, oldest first.
[[nodiscard]] std::vector<SimEvent> read_events(const std::string& dir);

/// Writes `text` to `path` through a temp file in the same folder, fsync and rename. Empty on
/// success, else the reason (the old file stays).
[[nodiscard]] std::string write_file_atomic(const std::string& path, const std::string& text);

/// Whether the driver-gone switch is on in `dir`.
[[nodiscard]] bool driver_gone(const std::string& dir);

/// Waits as long as the stall switch in `dir` says (no file: not at all).
void efml_stall(const std::string& dir);

}  // namespace sim
