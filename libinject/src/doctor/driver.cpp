// SPDX-License-Identifier: Apache-2.0
// The doctor's driver and device-node checks. Device nodes are checked against sysfs on their
// own, not through discovery: discovery stops at the first bad node, the doctor names each.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <memory>

#include "device/backends.hpp"
#include "inject/discover.hpp"
#include "inject/doctor.hpp"
#include "inject/efml.hpp"
#include "inject/fs.hpp"
#include "inject/text.hpp"

namespace inject::doctor {
namespace {

constexpr std::string_view kInfoHint =
    "'enflame-ctk info --debug' shows what each discovery backend saw";

std::string trimmed(const std::string& s) {
    return std::string(text::trim_end(s, "\n "));
}

std::string octal(unsigned mode) {
    std::string s;
    for (int shift = 9; shift >= 0; shift -= 3)
        s += static_cast<char>('0' + ((mode >> shift) & 7u));
    return s;
}

std::vector<std::string> list_dir(const std::string& dir) {
    std::vector<std::string> out;
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) return out;
    while (const dirent* e = ::readdir(d.get()))
        if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    std::sort(out.begin(), out.end());
    return out;
}

// A card sysfs lists: its node name and "major:minor".
struct SysCard {
    std::string bus, name, dev;
};

std::vector<SysCard> sysfs_cards(const config::Config& cfg) {
    std::vector<SysCard> out;
    const std::string base = fs::join(cfg.cli.driver_root, "/sys/bus/pci/devices");
    for (const auto& bus : list_dir(base)) {
        for (const char* cls : {"enflame", "zixiao"}) {
            for (const auto& n : list_dir(base + "/" + bus + "/" + cls)) {
                if (!n.starts_with(cfg.cli.device_prefix) || n == cfg.cli.device_prefix + "ctl")
                    continue;
                auto t = fs::read_file(base + "/" + bus + "/" + cls + "/" + n + "/dev", 64);
                out.push_back(SysCard{bus, n, t ? trimmed(*t) : std::string()});
            }
        }
    }
    return out;
}

// One device node against what it must be (`want` "major:minor", empty = any character device).
Check node_check(const std::string& name, const std::string& host, const std::string& want) {
    Check c{"device." + name, Status::Ok, "", ""};
    struct stat st {};
    if (::stat(host.c_str(), &st) != 0) {
        c.status = Status::Fail;
        c.seen = "'" + host + "' is missing" + (want.empty() ? "" : " (sysfs says " + want + ")");
        c.fix =
            "reload the enflame driver (modprobe -r enflame && modprobe enflame), which creates "
            "it" +
            (want.empty() ? std::string()
                          : "; or: mknod -m 666 " + host + " c " + want.substr(0, want.find(':')) +
                                " " + want.substr(want.find(':') + 1));
        return c;
    }
    const std::string got =
        std::to_string(::major(st.st_rdev)) + ":" + std::to_string(::minor(st.st_rdev));
    if (!S_ISCHR(st.st_mode) || (!want.empty() && got != want)) {
        c.status = Status::Fail;
        c.seen = "'" + host + "' is " +
                 (S_ISCHR(st.st_mode) ? got : std::string("not a character device")) +
                 (want.empty() ? "" : ", sysfs says " + want);
        c.fix = "rm " + host +
                " and reload the enflame driver, which recreates it with the right numbers";
        return c;
    }
    const unsigned mode = st.st_mode & 07777u;
    c.seen = "'" + host + "' " + got + " mode " + octal(mode);
    if ((mode & 0666u) != 0666u) {
        c.status = Status::Warn;
        c.seen += ": a container user other than root cannot open it";
        c.fix = "chmod 666 " + host + " (for good: a udev rule, KERNEL==\"" + name +
                "\", MODE=\"0666\")";
    }
    return c;
}

discover::Options discovery_options(const Options& opts) {
    auto d = discover::options_from(opts.cfg);
    d.with_drs = false;  // DRS is not what decides whether a container gets its card
    return d;
}

Check module_check(const Options& opts) {
    const std::string path = fs::join(opts.cfg.cli.driver_root, "/sys/module/enflame/version");
    auto v = fs::read_file(path, 256);
    if (!v)
        return {"driver.module", Status::Fail,
                "the enflame module is not loaded: '" + path + "' is missing",
                "modprobe enflame (install the Enflame driver package if there is no such module)"};
    return {"driver.module", Status::Ok, "enflame " + trimmed(*v) + " loaded", ""};
}

Check efsmi_check(const discover::Options& d) {
    auto e = discover::detail::find_efsmi(d);
    if (!e)
        return {"driver.efsmi", Status::Warn,
                e.error().what() + " (discovery falls back to libefml)",
                "install efsmi with the Enflame driver package, at one of the paths above under "
                "driver-root"};
    return {"driver.efsmi", Status::Ok, e->path, ""};
}

Check backend_check(const discover::Options& d, std::optional<device::Host>& host) {
    auto h = discover::discover(d);
    if (!h) {
        host.reset();
        return {"driver.backend", Status::Fail, h.error().what(), std::string(kInfoHint)};
    }
    std::string seen = h->backend + " answered: " + std::to_string(h->devices.size()) +
                       (h->devices.size() == 1 ? " card" : " cards");
    for (const auto& f : h->fallbacks) seen += "; not used: " + f;
    Check c{"driver.backend", Status::Ok, seen, ""};
    if (h->devices.empty()) {
        c.status = Status::Fail;
        c.fix = "check the cards are seated and the driver bound to them (lspci -d 1e36:); " +
                std::string(kInfoHint);
    }
    host = std::move(*h);
    return c;
}

Check efml_check(const discover::Options& d) {
    auto p = efml::probe(d);
    if (!p && p.error().code() == Errc::NotFound)
        return {"driver.libefml", Status::Warn, p.error().what(),
                "install libefml with the Enflame driver package (efsmi then does all discovery)"};
    if (!p &&
        p.error().code() == Errc::Unsupported)  // the static host build (docs/host-binaries.md)
        return {"driver.libefml", Status::Warn, p.error().what(),
                "none needed: efsmi does the discovery; the package's dynamic enflame-ctk loads "
                "libefml"};
    if (!p)
        return {"driver.libefml", Status::Fail, p.error().what(),
                "reinstall the Enflame driver package"};
    if (p->missing.empty())
        return {"driver.libefml", Status::Ok, p->path + " has every known call", ""};
    std::string seen = p->path + " lacks";
    for (const auto& m : p->missing) seen += " " + m;
    return {"driver.libefml", Status::Warn, seen + " (their values stay unknown)",
            "upgrade the Enflame driver package to one whose libefml has these calls"};
}

}  // namespace

std::vector<Check> check_driver(const Options& opts, std::optional<device::Host>& host) {
    const auto d = discovery_options(opts);
    std::vector<Check> out;
    out.push_back(module_check(opts));
    out.push_back(efsmi_check(d));
    out.push_back(backend_check(d, host));
    out.push_back(efml_check(d));
    return out;
}

std::vector<Check> check_devices(const Options& opts) {
    std::vector<Check> out;
    const auto& cli = opts.cfg.cli;
    const auto cards = sysfs_cards(opts.cfg);
    if (cards.empty())
        out.push_back(
            {"device.cards", Status::Fail,
             "no Enflame card under '" + fs::join(cli.driver_root, "/sys/bus/pci/devices") + "'",
             "modprobe enflame; lspci -d 1e36: lists the cards the driver should bind"});
    for (const auto& c : cards) {
        auto check = node_check(c.name, fs::join(cli.dev_root, "/dev/" + c.name), c.dev);
        check.seen = c.bus + ": " + check.seen;
        out.push_back(std::move(check));
    }
    out.push_back(node_check(cli.device_prefix + "ctl",
                             fs::join(cli.dev_root, "/dev/" + cli.device_prefix + "ctl"), ""));
    return out;
}

}  // namespace inject::doctor
