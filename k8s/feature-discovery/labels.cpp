// SPDX-License-Identifier: Apache-2.0
#include "feature-discovery/labels.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <set>

namespace feature_discovery {
namespace {

using inject::Errc;
using inject::fail;

constexpr std::uint64_t kMiB = 1024 * 1024;

bool alnum(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

void add(Labels& out, std::string_view name, std::string_view value) {
    auto v = sanitise(value);
    if (!v.empty()) out.emplace_back(std::string(kPrefix) + std::string(name), std::move(v));
}

// Whole profile names joined with '-' while they fit in one label value: a profile cut in
// half would name a profile the card does not have.
std::string profile_list(const std::vector<inject::device::DrsProfile>& profiles) {
    std::string out;
    for (const auto& p : profiles) {
        const auto name = sanitise(p.name);
        if (name.empty()) continue;
        const std::size_t need = out.size() + (out.empty() ? 0 : 1) + name.size();
        if (need > kMaxValueChars) break;
        if (!out.empty()) out += '-';
        out += name;
    }
    return out;
}

}  // namespace

std::string sanitise(std::string_view value) {
    std::string s;
    s.reserve(std::min(value.size(), kMaxValueChars));
    for (char c : value) {
        if (s.size() == kMaxValueChars) break;
        s += (alnum(c) || c == '.' || c == '_' || c == '-') ? c : '-';
    }
    const auto first = std::find_if(s.begin(), s.end(), alnum);
    const auto last = std::find_if(s.rbegin(), s.rend(), alnum).base();
    return first < last ? std::string(first, last) : std::string();
}

DriverVersion split_driver_version(std::string_view version) {
    DriverVersion d;
    d.full = std::string(version);
    const auto dot1 = version.find('.');
    d.major = std::string(version.substr(0, dot1));
    if (dot1 == std::string_view::npos) return d;
    const auto rest = version.substr(dot1 + 1);
    const auto dot2 = rest.find('.');
    d.minor = std::string(rest.substr(0, dot2));
    if (dot2 != std::string_view::npos) d.revision = std::string(rest.substr(dot2 + 1));
    return d;
}

std::vector<std::string> models(const inject::device::Host& host) {
    std::vector<std::string> out;
    for (const auto& d : host.devices) {
        if (std::find(out.begin(), out.end(), d.product) == out.end()) out.push_back(d.product);
    }
    return out;
}

Labels make_labels(const inject::device::Host& host, const SharingInfo& sharing,
                   std::string_view drs_layout) {
    Labels out;
    const bool any = !host.devices.empty();
    add(out, "present", any ? "true" : "false");
    add(out, "count", std::to_string(host.devices.size()));
    if (!any) return out;
    const auto& first = host.devices.front();
    const auto known = inject::device::product_info(first.product);
    add(out, "model", first.product);
    if (first.memory_bytes > 0) add(out, "memory", std::to_string(first.memory_bytes / kMiB));
    add(out, "family", first.family.empty() ? known.family : first.family);
    add(out, "arch", first.architecture.empty() ? known.architecture : first.architecture);
    const auto driver = split_driver_version(host.driver_version.empty() ? first.driver_version
                                                                         : host.driver_version);
    add(out, "driver-version.full", driver.full);
    add(out, "driver-version.major", driver.major);
    add(out, "driver-version.minor", driver.minor);
    add(out, "driver-version.revision", driver.revision);
    add(out, "drs.capable", host.drs_profiles.empty() ? "false" : "true");
    add(out, "drs.profiles", profile_list(host.drs_profiles));
    add(out, "drs.config", drs_layout);
    // Instances per listed profile, 0 included, as NVIDIA's GFD counts MIG devices per profile
    // (a nodeAffinity Gt selects a node with enough slices).
    for (const auto& p : host.drs_profiles) {
        const auto name = sanitise(p.name);
        if (name.empty() || name != p.name) continue;  // not a label name part as it is
        std::size_t n = 0;
        for (const auto& d : host.devices)
            n += static_cast<std::size_t>(std::count_if(
                d.drs_instances.begin(), d.drs_instances.end(),
                [&](const inject::device::DrsInstance& i) { return i.profile == p.name; }));
        add(out, "drs." + name + ".count", std::to_string(n));
    }
    if (!sharing.strategy.empty()) {
        add(out, "sharing-strategy", sharing.strategy);
        add(out, "replicas", std::to_string(sharing.replicas));
    }
    std::set<std::int32_t> numa;
    for (const auto& d : host.devices) {
        if (d.numa_node >= 0) numa.insert(d.numa_node);
    }
    add(out, "numa-nodes", std::to_string(numa.size()));
    return out;
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
    const std::time_t secs = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[32];
    const auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(buf, n);
}

inject::Result<std::string> render(const Labels& labels,
                                   std::optional<std::chrono::system_clock::time_point> expiry) {
    std::string text;
    if (expiry) text += "# +expiry-time=" + rfc3339(*expiry) + "\n";
    for (const auto& [name, value] : labels) text += name + "=" + value + "\n";
    if (text.size() > kMaxFileBytes)
        return fail(Errc::InvalidInput, "the labels file would be " + std::to_string(text.size()) +
                                            " bytes, over NFD's limit of " +
                                            std::to_string(kMaxFileBytes) + " bytes (64 KiB)");
    return text;
}

}  // namespace feature_discovery
