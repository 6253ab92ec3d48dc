// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// DRS operations: making and removing hard partitions of a card through efsmi's own commands
/// (`efsmi -i <card> --drs --create-instance <profile-id>`, `--destroy-instance <instance-id>`,
/// `--list-instance`; docs/efsmi-model.md). efsmi is found and run as discovery runs it
/// (under driver-root, no shell, a fixed environment, the configured timeout). efsmi does not
/// promise to print what it made in a form we can parse, so a create re-reads the card's
/// instances and takes the one that was not there before.

#include <cstdint>
#include <string>
#include <vector>

#include "inject/device.hpp"
#include "inject/discover.hpp"
#include "inject/result.hpp"

namespace inject::drs {

/// The DRS instances of card `card` (`efsmi -i <card> --drs --list-instance`).
[[nodiscard]] Result<std::vector<device::DrsInstance>> list_instances(const discover::Options& opts,
                                                                      std::uint32_t card);

/// Creates an instance of `profile` on card `card` and returns it as `--list-instance` shows it
/// afterwards (its id, and its UUID where efsmi prints one). Errors name the card, the profile
/// and efsmi's own message: "card 0: creating a DRS instance of profile '1g.11gb' (efsmi -i 0
/// --drs --create-instance 1): efsmi exited 1: 'Error: too many instances: ...'". When the card
/// shows no new instance of that profile, or more than one (someone else made one at the same
/// moment), it is an error (Conflict) and nothing is destroyed: the caller cannot tell which is
/// its own.
[[nodiscard]] Result<device::DrsInstance> create_instance(const discover::Options& opts,
                                                          std::uint32_t card,
                                                          const device::DrsProfile& profile);

/// Destroys instance `instance_id` of card `card`.
[[nodiscard]] Result<void> destroy_instance(const discover::Options& opts, std::uint32_t card,
                                            std::uint32_t instance_id);

}  // namespace inject::drs
