// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk info`: what discovery finds on this host, which backend answered and why the
// earlier ones did not. Text for people, `--format json` (stable keys) for scripts and tests.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "context.hpp"
#include "inject/discover.hpp"
#include "inject/efml.hpp"

namespace ctk {
namespace {

namespace disc = inject::discover;
using Json = nlohmann::ordered_json;

struct InfoArgs {
    std::string backend = "auto";
    std::string format = "text";
    std::string driver_root, dev_root;
    bool no_drs = false;
};

std::string octal(std::uint32_t mode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", mode);
    return buf;
}

Json node_json(const inject::device::DeviceNode& n) {
    return Json{{"path", n.path},   {"host_path", n.host_path}, {"major", n.major},
                {"minor", n.minor}, {"mode", octal(n.mode)},    {"uid", n.uid},
                {"gid", n.gid}};
}

Json host_json(const inject::device::Host& h) {
    Json devices = Json::array();
    for (const auto& d : h.devices) {
        Json drs = Json::array();
        for (const auto& i : d.drs_instances)
            drs.push_back({{"instance_id", i.instance_id},
                           {"profile", i.profile},
                           {"profile_id", i.profile_id ? Json(*i.profile_id) : Json(nullptr)},
                           {"uuid", i.uuid},
                           {"placement", i.placement},
                           {"name", inject::device::drs_address(i)}});
        devices.push_back({{"index", d.index},
                           {"minor", d.minor},
                           {"uuid", d.uuid},
                           {"serial", d.serial},
                           {"product", d.product},
                           {"architecture", d.architecture},
                           {"family", d.family},
                           {"memory_bytes", d.memory_bytes},
                           {"pci_bus_id", d.pci_bus_id},
                           {"pci_device_id", d.pci_device_id},
                           {"numa_node", d.numa_node},
                           {"healthy", d.healthy ? Json(*d.healthy) : Json(nullptr)},
                           {"driver_version", d.driver_version},
                           {"node", node_json(d.node)},
                           {"drs_instances", std::move(drs)}});
    }
    Json profiles = Json::array();
    for (const auto& p : h.drs_profiles)
        profiles.push_back({{"id", p.id},
                            {"name", p.name},
                            {"max_instances", p.max_instances},
                            {"memory_bytes", p.memory_bytes},
                            {"sips", p.sips}});
    return Json{{"backend", h.backend},
                {"fallbacks", h.fallbacks},
                {"driver_version", h.driver_version},
                {"control", h.control ? node_json(*h.control) : Json(nullptr)},
                {"drs_profiles", std::move(profiles)},
                {"devices", std::move(devices)}};
}

std::string mib(std::uint64_t bytes) {
    return bytes % (1ULL << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                     : std::to_string(bytes) + " B";
}

std::string or_unknown(const std::string& s) {
    return s.empty() ? "unknown" : s;
}

void print_text(const inject::device::Host& h) {
    std::cout << "backend: " << h.backend << "\n";
    for (const auto& f : h.fallbacks) std::cout << "  not used: " << f << "\n";
    std::cout << "driver version: " << or_unknown(h.driver_version) << "\n";
    if (h.control)
        std::cout << "control node: " << h.control->host_path << " (" << h.control->major << ":"
                  << h.control->minor << ")\n";
    else
        std::cout << "control node: none\n";
    for (const auto& p : h.drs_profiles)
        std::cout << "DRS profile " << p.id << ": " << p.name << " (up to " << p.max_instances
                  << ", " << mib(p.memory_bytes) << ")\n";
    std::cout << h.devices.size() << (h.devices.size() == 1 ? " card" : " cards") << "\n";
    for (const auto& d : h.devices) {
        std::cout << "GCU " << d.index << ": " << or_unknown(d.product);
        if (!d.architecture.empty()) std::cout << " (" << d.architecture << ", " << d.family << ")";
        std::cout << "\n    uuid " << or_unknown(d.uuid) << ", serial " << or_unknown(d.serial)
                  << "\n"
                  << "    node " << d.node.path << " (" << d.node.major << ":" << d.node.minor
                  << ", host " << d.node.host_path << ", minor " << d.minor << ")\n"
                  << "    bus " << or_unknown(d.pci_bus_id) << ", numa "
                  << (d.numa_node < 0 ? std::string("unknown") : std::to_string(d.numa_node))
                  << ", memory " << mib(d.memory_bytes) << ", health "
                  << (d.healthy ? (*d.healthy ? "ok" : "FAILED") : "unknown") << ", driver "
                  << or_unknown(d.driver_version) << "\n";
        for (const auto& i : d.drs_instances)
            std::cout << "    DRS " << i.instance_id << ": " << i.profile << " "
                      << inject::device::drs_address(i) << "\n";
    }
}

// Which known libefml calls the host's library lacks; null when there is no library.
Json efml_json(const disc::Options& opts) {
    auto p = inject::efml::probe(opts);
    if (!p && p.error().code() == inject::Errc::NotFound) return nullptr;
    if (!p) return Json{{"error", p.error().what()}};
    return Json{{"path", p->path}, {"missing", p->missing}};
}

void print_efml(const Json& e) {
    if (e.is_null()) return;
    if (e.contains("error")) {
        std::cout << "libefml: " << e["error"].get<std::string>() << "\n";
        return;
    }
    std::cout << "libefml: " << e["path"].get<std::string>();
    if (e["missing"].empty())
        std::cout << " (every known call)\n";
    else {
        std::cout << " lacks";
        for (const auto& m : e["missing"]) std::cout << " " << m.get<std::string>();
        std::cout << "\n";
    }
}

void run(Context& ctx, const InfoArgs& a) {
    auto cfg = ctx.config();
    if (!cfg) throw Exit{report(cfg.error())};
    disc::Options opts = disc::options_from(*cfg);
    auto backend = disc::parse_backend(a.backend);
    if (!backend) throw Exit{report(backend.error())};
    opts.backend = *backend;
    if (!a.driver_root.empty()) opts.driver_root = a.driver_root;
    if (!a.dev_root.empty()) opts.dev_root = a.dev_root;
    opts.with_drs = !a.no_drs;
    auto host = disc::discover(opts);
    if (!host) throw Exit{report(host.error())};
    const Json efml = efml_json(opts);
    if (a.format == "json") {
        Json j = host_json(*host);
        if (!efml.is_null()) j["libefml"] = efml;
        std::cout << j.dump(2) << "\n";
    } else {
        print_text(*host);
        print_efml(efml);
    }
}

void register_info(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<InfoArgs>();
    auto* cmd = app.add_subcommand("info", "show the Enflame cards discovery finds on this host");
    cmd->add_option("--backend", args->backend, "auto, efsmi-json, efsmi-text or libefml")
        ->check(CLI::IsMember({"auto", "efsmi-json", "efsmi-text", "libefml"}))
        ->capture_default_str();
    cmd->add_option("--format", args->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->add_option("--driver-root", args->driver_root,
                    "where efsmi, libefml and sys/ are (default: config)");
    cmd->add_option("--dev-root", args->dev_root, "where dev/gcu* are (default: config)");
    cmd->add_flag("--no-drs", args->no_drs, "do not ask efsmi for DRS profiles and instances");
    cmd->callback([&ctx, args] { run(ctx, *args); });
}

const Registrar reg{80, register_info};

}  // namespace
}  // namespace ctk
