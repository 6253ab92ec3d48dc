// SPDX-License-Identifier: Apache-2.0
#include "device-plugin/health.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "inject/efml.hpp"
#include "inject/log.hpp"

namespace device_plugin {
namespace {

constexpr std::string_view kDriverSaysUnhealthy = "the driver reports it unhealthy";

std::string key(const std::string& uuid, std::uint32_t index) {
    return uuid.empty() ? "#" + std::to_string(index) : uuid;
}

// Empty when the node is the character device it was; otherwise why not.
std::string node_problem(const inject::device::DeviceNode& n) {
    struct stat st {};
    if (::lstat(n.host_path.c_str(), &st) != 0) return "device node '" + n.host_path + "' is gone";
    if (!S_ISCHR(st.st_mode)) return "'" + n.host_path + "' is no longer a character device";
    if (::major(st.st_rdev) != n.major || ::minor(st.st_rdev) != n.minor)
        return "'" + n.host_path + "' is now " + std::to_string(::major(st.st_rdev)) + ":" +
               std::to_string(::minor(st.st_rdev)) + ", was " + std::to_string(n.major) + ":" +
               std::to_string(n.minor);
    return {};
}

}  // namespace

namespace {

// The cards' health straight from libefml (EfmlGetDevIsHealth per card); nullopt when the
// library cannot say (driver gone, a call failing).
DriverHealth library_health(inject::efml::Library& lib) {
    auto n = lib.count();
    if (!n) {
        inject::log::debug("health: {}", n.error().what());
        return std::nullopt;
    }
    std::map<std::string, std::optional<bool>> out;
    for (std::uint32_t i = 0; i < *n; ++i) {
        auto s = lib.sample(i);
        if (!s) {
            inject::log::debug("health: {}", s.error().what());
            return std::nullopt;
        }
        out[key(s->uuid, i)] = lib.healthy(i);
    }
    return out;
}

}  // namespace

DriverHealth driver_health(const inject::discover::Options& opts) {
    auto o = opts;
    o.with_drs = false;  // health needs the cards only
    auto lib = inject::efml::Library::open(o);
    if (lib) return library_health(**lib);
    if (lib.error().code() != inject::Errc::NotFound) {
        inject::log::debug("health: libefml: {}", lib.error().what());
        return std::nullopt;
    }
    auto host = inject::discover::discover(o);
    if (!host) {
        inject::log::debug("health: discovery failed: {}", host.error().what());
        return std::nullopt;
    }
    std::map<std::string, std::optional<bool>> out;
    for (const auto& d : host->devices) out[key(d.uuid, d.index)] = d.healthy;
    return out;
}

std::string event_name(int type) {
    switch (type) {
        case 3:
            return "suspend";
        case 10:
            return "reset start";
        case 11:
            return "reset finish";
        case 20:
            return "EID";
        default:
            return "type " + std::to_string(type);
    }
}

EventAction note_event(const inject::efml::DriverEvent& ev, EventHolds& holds) {
    switch (ev.type) {
        case 3:
            return EventAction::Log;
        case 10:
        case 20:
            holds[ev.id] = "driver event " + event_name(ev.type) +
                           (ev.message.empty() ? "" : ": " + ev.message);
            return EventAction::Hold;
        case 11:
            holds.erase(ev.id);
            return EventAction::Recheck;
        default:
            return EventAction::Ignore;
    }
}

bool apply_health(const DriverHealth& driver, Inventory& inv, const EventHolds& holds) {
    bool changed = false;
    for (auto& d : inv.devices) {
        std::string why = node_problem(d.node);
        if (why.empty()) {
            bool driver_ok = d.why_unhealthy != kDriverSaysUnhealthy;  // the last verdict
            if (driver) {
                const auto it = driver->find(key(d.uuid, d.index));
                driver_ok = it != driver->end() && it->second.value_or(true);
                if (it == driver->end()) why = "the driver no longer lists it";
            }
            if (!driver_ok && why.empty()) why = kDriverSaysUnhealthy;
        }
        if (const auto h = holds.find(d.index); why.empty() && h != holds.end()) why = h->second;
        const bool healthy = why.empty();
        if (healthy != d.healthy) {
            changed = true;
            if (healthy)
                inject::log::warn("device {} is healthy again", d.id);
            else
                inject::log::warn("device {} is unhealthy: {}", d.id, why);
        }
        d.healthy = healthy;
        d.why_unhealthy = why;
    }
    return changed;
}

}  // namespace device_plugin
