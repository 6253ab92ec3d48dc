// SPDX-License-Identifier: Apache-2.0
// The doctor's CDI checks: the spec dirs load cleanly, no name is claimed twice, and every spec
// of our kind still describes the host. A stale spec is what podman's and CRI-O's own CDI
// cannot notice (the shim in auto mode does, and falls back to discovery).
#include <algorithm>

#include "inject/cdi_provenance.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/doctor.hpp"

namespace inject::doctor {
namespace {

bool all_digits(const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string devnum(const device::DeviceNode& n) {
    return std::to_string(n.major) + ":" + std::to_string(n.minor);
}

// Why the spec's per-card devices do not match the discovered host: {failures, warnings}.
void compare_devices(const cdi::Spec& spec, const device::Host& host, std::vector<std::string>& bad,
                     std::vector<std::string>& stale) {
    std::vector<std::uint32_t> named;
    for (const auto& d : spec.devices) {
        if (d.name == "all" || d.name.starts_with("DRS-") || d.name.find(':') != std::string::npos)
            continue;
        const device::Device* card = nullptr;
        for (const auto& h : host.devices)
            if ((all_digits(d.name) && std::to_string(h.index) == d.name) || h.uuid == d.name)
                card = &h;
        if (card == nullptr) {
            bad.push_back("device '" + d.name + "' names a card the host does not have");
            continue;
        }
        named.push_back(card->index);
        for (const auto& n : d.edits.device_nodes) {
            if (n.major && n.minor &&
                (*n.major != card->node.major || *n.minor != card->node.minor))
                bad.push_back("device '" + d.name + "' is " + std::to_string(*n.major) + ":" +
                              std::to_string(*n.minor) + ", the card is " + devnum(card->node));
        }
    }
    for (const auto& h : host.devices)
        if (std::find(named.begin(), named.end(), h.index) == named.end())
            stale.push_back("card " + std::to_string(h.index) + " (" + h.uuid +
                            ") is not in the spec");
}

void compare_record(const cdi::GeneratedFrom& g, const device::Host& host,
                    std::vector<std::string>& bad, std::vector<std::string>& stale) {
    if (g.driver_version != host.driver_version)
        stale.push_back("generated for driver " + g.driver_version + ", the driver is " +
                        host.driver_version);
    for (const auto& c : g.cards) {
        auto it = std::find_if(host.devices.begin(), host.devices.end(),
                               [&](const device::Device& d) { return d.index == c.index; });
        if (it == host.devices.end())
            bad.push_back("card " + std::to_string(c.index) + " (" + c.uuid + ") is gone");
        else if (it->uuid != c.uuid)
            bad.push_back("card " + std::to_string(c.index) + " was " + c.uuid + ", is now " +
                          it->uuid);
    }
}

Check spec_check(const Options& opts, const cdi::LoadedSpec& ls,
                 const std::optional<device::Host>& host) {
    std::vector<std::string> bad, stale;
    auto edits = ls.spec.edits;
    for (const auto& d : ls.spec.devices) cdi::merge_edits(edits, d.edits);
    if (auto why = cdi::stale_edits(edits)) bad.push_back(*why);
    std::string note;
    if (host) {
        compare_devices(ls.spec, *host, bad, stale);
        if (ls.generated_from) compare_record(*ls.generated_from, *host, bad, stale);
    } else if (ls.generated_from) {
        const cdi::HostPaths paths{opts.cfg.cli.driver_root, opts.cfg.cli.dev_root,
                                   opts.cfg.cli.device_prefix};
        if (auto why = cdi::stale_reason(*ls.generated_from, paths)) bad.push_back(*why);
    }
    if (!ls.generated_from)
        note = " (no generated-from record: the driver version is not compared)";
    Check c{"cdi.current", Status::Ok, ls.path + ": matches the host" + note, ""};
    if (bad.empty() && stale.empty()) return c;
    c.status = bad.empty() ? Status::Warn : Status::Fail;
    c.seen = ls.path + ": stale:";
    for (const auto& r : bad) c.seen += " " + r + ";";
    for (const auto& r : stale) c.seen += " " + r + ";";
    c.seen.pop_back();
    c.seen +=
        " (containers started through enflame-container-runtime in auto mode use discovery "
        "instead; "
        "podman and CRI-O use the spec as it is)";
    c.fix = "enflame-ctk cdi generate --output " + ls.path;
    return c;
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

}  // namespace

std::vector<Check> check_cdi(const Options& opts, const std::optional<device::Host>& host) {
    std::vector<Check> out;
    const auto& dirs = opts.cfg.runtime.spec_dirs;
    auto reg = cdi::Registry::load(dirs);
    if (!reg) {
        out.push_back(
            {"cdi.dirs", Status::Fail, reg.error().what(), "make the spec dirs readable by root"});
        return out;
    }
    for (const auto& p : reg->problems())
        out.push_back(
            {"cdi.spec", Status::Fail, p + " (podman and CRI-O skip this file)",
             "correct or remove the file; 'enflame-ctk cdi validate' lists every problem"});
    for (const auto& c : reg->conflicts())
        out.push_back({"cdi.names", Status::Fail, c + " (a request for it fails)",
                       "remove one of the two files"});
    const std::string& kind = opts.cfg.runtime.cdi_kind;
    bool ours = false;
    for (const auto& ls : reg->specs()) {
        if (ls.spec.kind != kind) continue;
        ours = true;
        out.push_back(spec_check(opts, ls, host));
    }
    if (!ours)
        out.push_back({"cdi.current", Status::Warn,
                       "no spec of kind '" + kind + "' in " + joined(dirs) +
                           ": podman and CRI-O cannot resolve '" + kind +
                           "=0' (the shim in auto mode needs none)",
                       "enflame-ctk cdi generate --output " +
                           (dirs.empty() ? std::string("/etc/cdi") : dirs.front()) +
                           "/enflame.com-gpu.yaml"});
    return out;
}

}  // namespace inject::doctor
