// SPDX-License-Identifier: Apache-2.0
// The generated-from record of a spec and the cheap staleness checks built on it. The checks
// run on the shim's create path, so they only stat and read a few small files.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <charconv>

#include "inject/cdi_provenance.hpp"
#include "inject/fs.hpp"
#include "inject/text.hpp"

namespace inject::cdi {
namespace {

std::string devnum(std::uint32_t major, std::uint32_t minor) {
    return std::to_string(major) + ":" + std::to_string(minor);
}

std::string trimmed(const std::string& s) {
    return std::string(text::trim_end(s, "\n \r"));
}

std::optional<std::uint32_t> number(std::string_view s) {
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

// "0/TR6Y46010000/0000:10:00.0/238:0"
std::optional<GeneratedCard> parse_card(std::string_view s) {
    std::vector<std::string_view> parts;
    for (std::size_t start = 0;;) {
        const auto slash = s.find('/', start);
        parts.push_back(s.substr(start, slash - start));
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    if (parts.size() != 4) return std::nullopt;
    const auto colon = parts[3].find(':');
    const auto index = number(parts[0]);
    const auto major = number(parts[3].substr(0, colon));
    const auto minor =
        colon == std::string_view::npos ? std::nullopt : number(parts[3].substr(colon + 1));
    if (!index || !major || !minor) return std::nullopt;
    return GeneratedCard{*index, std::string(parts[1]), std::string(parts[2]), *major, *minor};
}

// The record's fields are space-separated `key=value` words (unknown keys are skipped, for
// later additions). A hand-split line and not JSON: the shim reads it on every create, and a
// JSON parse of it cost more than all the staleness checks together.
Result<GeneratedFrom> parse_record(std::string_view line) {
    GeneratedFrom g;
    bool driver = false;
    while (!line.empty()) {
        const auto sp = line.find(' ');
        const std::string_view word = line.substr(0, sp);
        line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
        if (word.starts_with("driver=")) {
            g.driver_version = std::string(word.substr(7));
            driver = true;
        } else if (word.starts_with("card=")) {
            auto c = parse_card(word.substr(5));
            if (!c)
                return fail(Errc::InvalidInput, "bad card '" + std::string(word.substr(5)) +
                                                    "': want index/uuid/bus/major:minor");
            g.cards.push_back(std::move(*c));
        }
    }
    if (!driver) return fail(Errc::InvalidInput, "no driver=");
    return g;
}

bool plain(const std::string& s) {
    return s.find_first_of(" /\t\n\r") == std::string::npos;
}

// The sysfs "major:minor" of a card, or empty when its entry is gone.
std::string sysfs_dev(const HostPaths& p, const GeneratedCard& c) {
    for (const char* cls : {"enflame", "zixiao"}) {
        const std::string path =
            fs::join(p.driver_root, "/sys/bus/pci/devices/" + c.pci_bus_id + "/" + cls + "/" +
                                        p.device_prefix + std::to_string(c.minor) + "/dev");
        if (auto t = fs::read_file(path, 64)) return trimmed(*t);
    }
    return {};
}

}  // namespace

GeneratedFrom generated_from(const device::Host& host) {
    GeneratedFrom g;
    g.driver_version = host.driver_version;
    for (const auto& d : host.devices)
        g.cards.push_back(GeneratedCard{d.index, d.uuid, d.pci_bus_id, d.node.major, d.node.minor});
    return g;
}

std::string generated_from_comment(const GeneratedFrom& g) {
    // A field that would break the word split leaves the spec without a record (no cheap
    // check, never a wrong one). CDI names already keep such UUIDs out of a generated spec.
    if (!plain(g.driver_version) || g.driver_version.empty()) return {};
    std::string line = "# " + std::string(kGeneratedFromKey) + ": driver=" + g.driver_version;
    for (const auto& c : g.cards) {
        if (!plain(c.uuid) || !plain(c.pci_bus_id)) return {};
        line += " card=" + std::to_string(c.index) + "/" + c.uuid + "/" + c.pci_bus_id + "/" +
                devnum(c.major, c.minor);
    }
    return line + "\n";
}

Result<std::optional<GeneratedFrom>> read_generated_from(std::string_view text,
                                                         std::string_view source) {
    const std::string prefix = "# " + std::string(kGeneratedFromKey) + ": ";
    while (!text.empty() && text.front() == '#') {
        const auto nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        if (line.starts_with(prefix)) {
            auto g = parse_record(line.substr(prefix.size()));
            if (!g)
                return fail(Errc::InvalidInput, std::string(source) + ": " +
                                                    std::string(kGeneratedFromKey) + ": " +
                                                    g.error().message());
            return std::optional<GeneratedFrom>(std::move(*g));
        }
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return std::optional<GeneratedFrom>();
}

std::optional<std::string> stale_reason(const GeneratedFrom& g, const HostPaths& paths,
                                        const std::optional<std::vector<std::uint32_t>>& cards) {
    const std::string module = fs::join(paths.driver_root, "/sys/module/enflame/version");
    auto ver = fs::read_file(module, 256);
    if (!ver) return "the driver is not loaded ('" + module + "' is missing)";
    if (const auto now = trimmed(*ver); now != g.driver_version)
        return "the driver is " + now + ", the spec was generated for " + g.driver_version;
    for (const auto& c : g.cards) {
        if (cards && std::find(cards->begin(), cards->end(), c.index) == cards->end()) continue;
        // Built only for the message: this loop runs on every create.
        auto what = [&c] {
            return "card " + std::to_string(c.index) + " (" + c.uuid + ", " + c.pci_bus_id + ")";
        };
        const std::string sys = sysfs_dev(paths, c);
        if (sys.empty()) return what() + " is gone from sysfs";
        if (sys != devnum(c.major, c.minor))
            return what() + " is " + sys + " in sysfs, the spec says " + devnum(c.major, c.minor);
        const std::string node =
            fs::join(paths.dev_root, "/dev/" + paths.device_prefix + std::to_string(c.minor));
        struct stat st {};
        if (::stat(node.c_str(), &st) != 0) return what() + ": '" + node + "' is missing";
        if (!S_ISCHR(st.st_mode) || ::major(st.st_rdev) != c.major ||
            ::minor(st.st_rdev) != c.minor)
            return what() + ": '" + node + "' is not the character device " +
                   devnum(c.major, c.minor);
    }
    return std::nullopt;
}

std::optional<std::string> stale_edits(const ContainerEdits& edits) {
    for (const auto& n : edits.device_nodes) {
        const std::string& host = n.host_path.empty() ? n.path : n.host_path;
        struct stat st {};
        if (::stat(host.c_str(), &st) != 0) return "device node '" + host + "' is missing";
        if (!n.major || !n.minor) continue;  // the spec lets the runtime stat it
        const auto ma = static_cast<std::int64_t>(::major(st.st_rdev));
        const auto mi = static_cast<std::int64_t>(::minor(st.st_rdev));
        const bool type_ok = n.type == "b" ? S_ISBLK(st.st_mode) : S_ISCHR(st.st_mode);
        if (!type_ok || ma != *n.major || mi != *n.minor)
            return "device node '" + host + "' is " + std::to_string(ma) + ":" +
                   std::to_string(mi) + ", the spec says " + std::to_string(*n.major) + ":" +
                   std::to_string(*n.minor);
    }
    for (const auto& m : edits.mounts) {
        if (!m.type.empty() && m.type != "bind") continue;
        struct stat st {};
        if (::stat(m.host_path.c_str(), &st) != 0)
            return "mounted file '" + m.host_path + "' is missing";
    }
    return std::nullopt;
}

}  // namespace inject::cdi
