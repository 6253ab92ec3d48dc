// SPDX-License-Identifier: Apache-2.0
#include "health.hpp"

#include "inject/log.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <map>

namespace edp {
namespace {

// The driver's verdict per card (by UUID, else index); empty when discovery fails as a whole
// (then only the node check decides, and a card keeps the driver's last verdict).
std::optional<std::map<std::string, std::optional<bool>>> driver_health(const inject::discover::Options& base) {
    auto opts = base;
    opts.with_drs = false;
    auto host = inject::discover::discover_with(opts, inject::discover::Backend::Efml);
    if (!host && host.error().code() == inject::Errc::NotFound) host = inject::discover::discover(opts);
    if (!host) {
        inject::log::debug("health: discovery failed: {}", host.error().what());
        return std::nullopt;
    }
    std::map<std::string, std::optional<bool>> out;
    for (const auto& d : host->devices) out[d.uuid.empty() ? "#" + std::to_string(d.index) : d.uuid] = d.healthy;
    return out;
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

bool check_health(const inject::discover::Options& opts, Inventory& inv) {
    const auto driver = driver_health(opts);
    bool changed = false;
    for (auto& d : inv.devices) {
        std::string why = node_problem(d.node);
        if (why.empty()) {
            bool driver_ok = d.why_unhealthy != "the driver reports it unhealthy";  // last verdict
            if (driver) {
                auto it = driver->find(d.uuid.empty() ? "#" + std::to_string(d.index) : d.uuid);
                driver_ok = it == driver->end() ? false : it->second.value_or(true);
                if (it == driver->end()) why = "the driver no longer lists it";
            }
            if (!driver_ok && why.empty()) why = "the driver reports it unhealthy";
        }
        const bool healthy = why.empty();
        if (healthy != d.healthy) {
            changed = true;
            if (healthy) inject::log::warn("device {} is healthy again", d.id);
            else inject::log::warn("device {} is unhealthy: {}", d.id, why);
        }
        d.healthy = healthy;
        d.why_unhealthy = why;
    }
    return changed;
}

}  // namespace edp
