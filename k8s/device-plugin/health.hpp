// SPDX-License-Identifier: Apache-2.0
#pragma once

// One health pass over the advertised cards: what the driver says (libefml's
// EfmlGetDevIsHealth through libinject's discovery; efsmi when there is no libefml), whether
// each card's device node is still the character device it was, and which cards the driver's
// events hold Unhealthy (events.hpp). Unlike NVIDIA's plugin, a card that recovers becomes
// Healthy again.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "device-plugin/plugin.hpp"
#include "inject/discover.hpp"
#include "inject/efml.hpp"

namespace device_plugin {

/// The driver's verdict per card (by UUID, else "#<index>"); empty when discovery failed as a
/// whole (then only the node check decides, and a card keeps the driver's last verdict).
using DriverHealth = std::optional<std::map<std::string, std::optional<bool>>>;

/// Asks the driver once (libefml; efsmi when there is no libefml).
[[nodiscard]] DriverHealth driver_health(const inject::discover::Options& opts);

/// Cards a driver event holds Unhealthy, by card index (PluginDevice::index), with the reason.
using EventHolds = std::map<std::uint32_t, std::string>;

/// What the daemon does with a driver event.
enum class EventAction {
    Ignore,   ///< a type we do not act on
    Log,      ///< 3 suspend: logged only
    Hold,     ///< 10 reset start, 20 EID: Unhealthy at once, until a reset finish
    Recheck,  ///< 11 reset finish: the hold goes, the card is checked again at once
};

/// "suspend", "reset start", "reset finish", "EID", or "type <n>".
[[nodiscard]] std::string event_name(int type);

/// Records `ev` in `holds` (event_id is the card index: efml.h does not say what event_id
/// is; the simulator and this plugin take it as the index EfmlGetDevCount counts) and says
/// what the daemon does next.
EventAction note_event(const inject::efml::DriverEvent& ev, EventHolds& holds);

/// Updates `inv`'s health in place from `driver`, the device nodes and `holds`; true when any
/// device changed (each change is logged). A node problem wins over the driver's verdict, which
/// wins over a hold. A DRS instance follows its card.
bool apply_health(const DriverHealth& driver, Inventory& inv, const EventHolds& holds = {});

}  // namespace device_plugin
