// SPDX-License-Identifier: Apache-2.0
#pragma once

// One health pass over the advertised cards: what the driver says (libefml's
// EfmlGetDevIsHealth through libinject's discovery; efsmi when there is no libefml) and
// whether each card's device node is still the character device it was. Unlike NVIDIA's
// plugin, a card that recovers becomes Healthy again.

#include "plugin.hpp"

#include "inject/discover.hpp"

namespace edp {

/// Updates `inv`'s health in place; true when any card changed (each change is logged).
bool check_health(const inject::discover::Options& opts, Inventory& inv);

}  // namespace edp
