// SPDX-License-Identifier: Apache-2.0
#pragma once

// One health pass over the advertised cards: what the driver says (libefml's
// EfmlGetDevIsHealth through libinject's discovery; efsmi when there is no libefml) and
// whether each card's device node is still the character device it was. Unlike NVIDIA's
// plugin, a card that recovers becomes Healthy again.

#include "plugin.hpp"

#include "inject/discover.hpp"

#include <map>
#include <optional>
#include <string>

namespace edp {

/// The driver's verdict per card (by UUID, else "#<index>"); empty when discovery failed as a
/// whole (then only the node check decides, and a card keeps the driver's last verdict).
using DriverHealth = std::optional<std::map<std::string, std::optional<bool>>>;

/// Asks the driver once (libefml; efsmi when there is no libefml).
[[nodiscard]] DriverHealth driver_health(const inject::discover::Options& opts);

/// Updates `inv`'s health in place from `driver` and the device nodes; true when any device
/// changed (each change is logged). A DRS instance follows its card.
bool apply_health(const DriverHealth& driver, Inventory& inv);

}  // namespace edp
