// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// DRS in the efsmi simulator, as Enflame's own device plugin (gcushare 3.6.5) drives efsmi:
/// `[-i <card>] --drs --list-profile`, `[-i <card>] --drs --list-instance` (two layouts, fault
/// `drs_instance_layout`), `[-i <card>] --drs on|off`, `-i <card> --drs --create-instance
/// <profile-id>` and `-i <card> --drs --destroy-instance <instance-id>`. The instances and the
/// switched-off cards live in a state file beside enflame-sim.json (absent: the description's
/// instances, DRS on wherever a card offers profiles), written atomically under a lock.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model.hpp"

namespace sim {

inline constexpr std::string_view kDrsStateFile = "enflame-sim-drs.json";

/// What DRS looks like now.
struct DrsState {
    std::vector<Instance> instances;      ///< placement filled in
    std::vector<std::uint32_t> disabled;  ///< cards with DRS switched off
    std::uint64_t created = 0;            ///< instances created so far (makes their UUIDs)
};

/// Slices a card of `c` has: the largest `g * max_instances` of its `<g>g.<m>gb` profiles (S60: 4).
[[nodiscard]] std::uint32_t drs_capacity(const Host& h, const Card& c);

/// Fills in each instance's placement ("<start>:<slices>", first fit in list order) where it
/// is empty. Empty on success, else why an instance does not fit.
[[nodiscard]] std::string place_instances(const Host& h, std::vector<Instance>& instances);

/// The state in `dir` (the description's when there is no state file).
[[nodiscard]] DrsState drs_state(const Host& h, const std::string& dir);

/// What an efsmi run answers: stdout, stderr and the exit code.
struct Answer {
    std::string out, err;
    int code = 0;
};

enum class DrsOp { ListProfiles, ListInstances, On, Off, Create, Destroy };

/// Runs one DRS command on card `card` (every card when empty). `arg` is the profile id
/// (Create) or the instance id (Destroy), as typed.
[[nodiscard]] Answer efsmi_drs(const Host& h, const std::string& dir, DrsOp op,
                               std::optional<std::uint32_t> card, const std::string& arg);

}  // namespace sim
