// SPDX-License-Identifier: Apache-2.0
// The GCU health checks behind `enflame-ctk health` (NPD's custom plugin). Each returns one
// Verdict whose line names the first card at fault and how many more there are. The device
// node and CDI checks are the doctor's (inject::doctor), read here as verdicts; the others ask
// libefml in process. The state folder keeps what a check must compare with its last run.
#include "inject/health.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "inject/discover.hpp"
#include "inject/doctor.hpp"
#include "inject/efml.hpp"
#include "inject/fs.hpp"
#include "inject/text.hpp"

namespace inject::health {
namespace {

using doctor::Status;

std::string trimmed(const std::string& s) {
    return std::string(text::trim_end(s, "\n "));
}

Verdict fine(std::string line) {
    return {Code::Ok, std::move(line)};
}
Verdict problem(std::string line) {
    return {Code::Problem, std::move(line)};
}
Verdict unknown(std::string line) {
    return {Code::Unknown, std::move(line)};
}

// "GCU 2 (0000:12:00.0)", or "GCU 2" when the bus id is unknown.
std::string card_name(const efml::Sample& s) {
    return "GCU " + std::to_string(s.index) +
           (s.pci_bus_id.empty() ? "" : " (" + s.pci_bus_id + ")");
}

// The first finding, and how many more there are.
Verdict first_of(const std::vector<std::string>& found, std::string_view all_ok) {
    if (found.empty()) return fine(std::string(all_ok));
    std::string line = found.front();
    if (found.size() > 1) line += "; +" + std::to_string(found.size() - 1) + " more";
    return problem(std::move(line));
}

Result<std::unique_ptr<efml::Library>> open_library(const Options& opts) {
    auto lib = efml::Library::open(discover::options_from(opts.cfg));
    if (!lib) return fail(std::move(lib).error().context("libefml"));
    return lib;
}

// Every card's sample; an error when the library cannot be opened or counted.
Result<std::vector<efml::Sample>> samples(const Options& opts) {
    INJECT_TRY(auto lib, open_library(opts));
    INJECT_TRY(auto n, lib->count());
    std::vector<efml::Sample> out;
    for (std::uint32_t i = 0; i < n; ++i) {
        INJECT_TRY(auto s, lib->sample(i));
        out.push_back(std::move(s));
    }
    return out;
}

Verdict check_driver(const Options& opts) {
    const std::string path = fs::join(opts.cfg.cli.driver_root, "/sys/module/enflame/version");
    auto v = fs::read_file(path, 256);
    if (!v) return problem("enflame driver not loaded (no /sys/module/enflame/version)");
    const std::string version = trimmed(*v);
    const auto& known = opts.driver_versions;
    if (!known.empty() && std::find(known.begin(), known.end(), version) == known.end())
        return problem("enflame driver " + version + " is not a known version (" + known.front() +
                       (known.size() > 1 ? ", ..." : "") + ")");
    auto lib = open_library(opts);
    if (!lib && lib.error().code() == Errc::NotFound)
        return fine("enflame driver " + version + " loaded (no libefml)");
    if (!lib) return problem("enflame driver " + version + " loaded but " + lib.error().what());
    auto n = (*lib)->count();
    if (!n)
        return problem("enflame driver " + version + " loaded but libefml: " + n.error().what());
    return fine("enflame driver " + version + " loaded, " + std::to_string(*n) + " cards");
}

// The PCI functions with Enflame's vendor id under driver-root's sysfs, and whether a driver
// class folder (enflame/ or zixiao/) shows the driver bound to each.
std::map<std::string, bool> pci_cards(const Options& opts) {
    std::map<std::string, bool> out;
    const std::string base = fs::join(opts.cfg.cli.driver_root, "/sys/bus/pci/devices");
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(base, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        const auto dir = it->path().string();
        auto vendor = fs::read_file(dir + "/vendor", 64);
        if (!vendor || trimmed(*vendor) != "0x1e36") continue;
        struct stat st {};
        const bool bound = ::stat((dir + "/enflame").c_str(), &st) == 0 ||
                           ::stat((dir + "/zixiao").c_str(), &st) == 0;
        out[it->path().filename().string()] = bound;
    }
    return out;
}

Result<void> ensure_dir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return fail(Errc::Io, "creating state folder '" + dir + "': " + ec.message(), ec.value());
    return inject::ok();
}

// The state file's lines, or none when it does not exist yet.
std::vector<std::string> read_state(const std::string& path) {
    std::vector<std::string> out;
    if (auto t = fs::read_file(path, 1 << 20)) {
        std::istringstream in(*t);
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) out.push_back(line);
    }
    return out;
}

Result<void> write_state(const Options& opts, const std::string& name,
                         const std::vector<std::string>& lines) {
    INJECT_TRY_VOID(ensure_dir(opts.state_dir));
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    return fs::atomic_write(opts.state_dir + "/" + name, text);
}

Verdict check_devices(const Options& opts) {
    doctor::Options d;
    d.cfg = opts.cfg;
    std::vector<std::string> found;
    for (const auto& c : doctor::check_devices(d)) {
        if (c.status != Status::Fail) continue;
        std::string seen = c.seen;
        // the node's host path as the host knows it (dev-root is where the container sees it)
        if (opts.cfg.cli.dev_root != "/")
            for (auto p = seen.find(opts.cfg.cli.dev_root); p != std::string::npos;
                 p = seen.find(opts.cfg.cli.dev_root))
                seen.erase(p, opts.cfg.cli.dev_root.size());
        found.push_back("GCU " + seen);
    }
    const auto now = pci_cards(opts);
    for (const auto& [bus, bound] : now)
        if (!bound) found.push_back("GCU " + bus + " is on the PCI bus but no driver is bound");
    // Cards seen before stay expected: a card that fell off the bus leaves no trace in sysfs.
    const std::string state = "cards";
    auto seen = read_state(opts.state_dir + "/" + state);
    bool changed = false;
    for (const auto& bus : seen)
        if (!now.contains(bus)) found.push_back("GCU " + bus + " is gone from the PCI bus");
    for (const auto& [bus, bound] : now)
        if (std::find(seen.begin(), seen.end(), bus) == seen.end()) {
            seen.push_back(bus);
            changed = true;
        }
    if (changed)
        if (auto w = write_state(opts, state, seen); !w) return unknown(w.error().what());
    return first_of(found,
                    "all " + std::to_string(now.size()) + " GCUs present with their device nodes");
}

Verdict check_health(const Options& opts) {
    auto lib = open_library(opts);
    if (!lib) return unknown(lib.error().what());
    auto n = (*lib)->count();
    if (!n) return unknown("libefml: " + n.error().what());
    std::vector<std::string> found;
    std::uint32_t known = 0;
    for (std::uint32_t i = 0; i < *n; ++i) {
        const auto h = (*lib)->healthy(i);
        if (!h) continue;
        ++known;
        if (!*h) found.push_back("GCU " + std::to_string(i) + " is unhealthy (libefml)");
    }
    if (known == 0 && *n > 0) return unknown("libefml reports no health (no EfmlGetDevIsHealth)");
    return first_of(found, "all " + std::to_string(*n) + " GCUs healthy");
}

std::string fmt_number(double v) {
    std::ostringstream o;
    o << std::round(v * 10) / 10;
    return o.str();
}

Verdict check_temperature(const Options& opts) {
    auto all = samples(opts);
    if (!all) return unknown(all.error().what());
    std::vector<std::string> found;
    bool any = false;
    for (const auto& s : *all) {
        if (!s.temperature_c) continue;
        any = true;
        if (*s.temperature_c > opts.max_temperature_c)
            found.push_back(card_name(s) + " at " + fmt_number(*s.temperature_c) + " C, over " +
                            fmt_number(opts.max_temperature_c) + " C");
    }
    if (!any && !all->empty()) return unknown("libefml reports no temperature");
    return first_of(found, "all " + std::to_string(all->size()) + " GCUs at or under " +
                               fmt_number(opts.max_temperature_c) + " C");
}

Verdict check_pcie(const Options& opts) {
    auto all = samples(opts);
    if (!all) return unknown(all.error().what());
    std::vector<std::string> found;
    bool any = false;
    for (const auto& s : *all) {
        if (!s.pcie_link_width || !s.pcie_max_link_width) continue;
        any = true;
        const bool narrow = *s.pcie_link_width < *s.pcie_max_link_width;
        const bool slow = opts.link_speed && s.pcie_link_speed && s.pcie_max_link_speed &&
                          *s.pcie_link_speed < *s.pcie_max_link_speed;
        if (!narrow && !slow) continue;
        auto gen = [](const std::optional<int>& g) {
            return g ? "Gen" + std::to_string(*g) + " " : std::string();
        };
        found.push_back(card_name(s) + " PCIe " + gen(s.pcie_link_speed) + "x" +
                        std::to_string(*s.pcie_link_width) + ", max " + gen(s.pcie_max_link_speed) +
                        "x" + std::to_string(*s.pcie_max_link_width));
    }
    if (!any && !all->empty()) return unknown("libefml reports no PCIe link");
    return first_of(found, "all " + std::to_string(all->size()) + " GCUs at full PCIe link");
}

// One line of the ecc state file: KEY COUNT RISE_EPOCH BEFORE (the count before the last rise).
struct EccState {
    std::uint64_t count = 0;
    std::int64_t rise = 0;
    std::uint64_t before = 0;
};

Verdict check_ecc(const Options& opts) {
    auto all = samples(opts);
    if (!all) return unknown(all.error().what());
    const std::string state = "ecc";
    std::map<std::string, EccState> last;
    for (const auto& line : read_state(opts.state_dir + "/" + state)) {
        std::istringstream in(line);
        std::string key;
        EccState e;
        if (in >> key >> e.count >> e.rise >> e.before) last[key] = e;
    }
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(opts.now.time_since_epoch()).count();
    std::vector<std::string> found;
    bool any = false, changed = false;
    for (const auto& s : *all) {
        if (!s.ecc_double_bit) continue;
        any = true;
        const std::string key = s.uuid.empty() ? std::to_string(s.index) : s.uuid;
        auto it = last.find(key);
        if (it == last.end()) {  // first sight: a count from before is no rise
            last[key] = EccState{*s.ecc_double_bit, 0, 0};
            changed = true;
            continue;
        }
        EccState& e = it->second;
        if (*s.ecc_double_bit != e.count) {
            // a rise starts the hold; a drop is a counter reset by a driver reload
            e = *s.ecc_double_bit > e.count ? EccState{*s.ecc_double_bit, now, e.count}
                                            : EccState{*s.ecc_double_bit, e.rise, e.before};
            changed = true;
        }
        if (e.rise != 0 && now - e.rise < opts.ecc_hold.count())
            found.push_back(card_name(s) + " ECC double-bit errors rose " +
                            std::to_string(e.before) + " -> " + std::to_string(e.count));
    }
    if (changed) {
        std::vector<std::string> lines;
        lines.reserve(last.size());
        for (const auto& [k, e] : last)
            lines.push_back(k + " " + std::to_string(e.count) + " " + std::to_string(e.rise) + " " +
                            std::to_string(e.before));
        if (auto w = write_state(opts, state, lines); !w) return unknown(w.error().what());
    }
    if (!any && !all->empty()) return unknown("libefml reports no ECC counts");
    return first_of(found, "no GCU's ECC double-bit count rose");
}

Verdict check_cdi(const Options& opts) {
    doctor::Options d;
    d.cfg = opts.cfg;
    std::vector<std::string> found;
    bool compared = false;
    for (const auto& c : doctor::check_cdi(d, std::nullopt)) {
        if (c.name == "cdi.current" && c.status == Status::Ok) compared = true;
        if (c.status != Status::Fail) continue;
        std::string seen = c.seen;
        if (auto p = seen.find(" (containers started"); p != std::string::npos) seen.erase(p);
        found.push_back("CDI " + seen);
    }
    return first_of(found, compared ? "the CDI specs match the host"
                                    : "no " + opts.cfg.runtime.cdi_kind + " CDI spec to compare");
}

using CheckFn = Verdict (*)(const Options&);

const std::vector<std::pair<std::string_view, CheckFn>>& checks() {
    static const std::vector<std::pair<std::string_view, CheckFn>> c{
        {"driver", check_driver}, {"devices", check_devices},         {"health", check_health},
        {"ecc", check_ecc},       {"temperature", check_temperature}, {"pcie", check_pcie},
        {"cdi", check_cdi}};
    return c;
}

}  // namespace

const std::vector<std::string_view>& check_names() {
    static const std::vector<std::string_view> names = [] {
        std::vector<std::string_view> n;
        for (const auto& [name, fn] : checks()) n.push_back(name);
        return n;
    }();
    return names;
}

Result<Verdict> run(std::string_view name, const Options& opts) {
    for (const auto& [n, fn] : checks()) {
        if (n != name) continue;
        auto v = fn(opts);
        v.line = fit_line(v.line);
        return v;
    }
    std::string all;
    for (const auto& n : check_names()) all += (all.empty() ? "" : ", ") + std::string(n);
    return fail(Errc::InvalidInput,
                "unknown check '" + std::string(name) + "': want one of " + all);
}

std::string fit_line(std::string_view s, std::size_t max) {
    s = s.substr(0, s.find('\n'));
    if (s.size() <= max) return std::string(s);
    std::size_t cut = max >= 3 ? max - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0u) == 0x80u)
        --cut;  // not mid-sequence
    return std::string(s.substr(0, cut)) + (max >= 3 ? "..." : "");
}

}  // namespace inject::health
