// SPDX-License-Identifier: Apache-2.0
// The generated-from record of a spec and the cheap staleness checks built on it. The checks
// run on the shim's create path, so they only stat and read a few small files.
#include "inject/cdi_provenance.hpp"

#include "inject/fs.hpp"

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>

namespace inject::cdi {
namespace {

using Json = nlohmann::json;

std::string devnum(std::uint32_t major, std::uint32_t minor) {
    return std::to_string(major) + ":" + std::to_string(minor);
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
    return s;
}

Result<GeneratedFrom> from_json(const std::string& text) {
    try {
        const Json j = Json::parse(text);
        GeneratedFrom g;
        g.driver_version = j.at("driver").get<std::string>();
        for (const auto& c : j.at("cards")) {
            GeneratedCard gc;
            gc.index = c.at("index").get<std::uint32_t>();
            gc.uuid = c.at("uuid").get<std::string>();
            gc.pci_bus_id = c.at("bus").get<std::string>();
            const auto dev = c.at("dev").get<std::string>();
            const auto colon = dev.find(':');
            if (colon == std::string::npos) return fail(Errc::InvalidInput, "dev '" + dev + "' is not major:minor");
            gc.major = static_cast<std::uint32_t>(std::stoul(dev.substr(0, colon)));
            gc.minor = static_cast<std::uint32_t>(std::stoul(dev.substr(colon + 1)));
            g.cards.push_back(std::move(gc));
        }
        return g;
    } catch (const std::exception& e) {
        return fail(Errc::InvalidInput, e.what());
    }
}

// The sysfs "major:minor" of a card, or empty when its entry is gone.
std::string sysfs_dev(const HostPaths& p, const GeneratedCard& c) {
    for (const char* cls : {"enflame", "zixiao"}) {
        const std::string path = fs::join(p.driver_root, "/sys/bus/pci/devices/" + c.pci_bus_id + "/" + cls + "/" +
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
    Json cards = Json::array();
    for (const auto& c : g.cards)
        cards.push_back({{"index", c.index}, {"uuid", c.uuid}, {"bus", c.pci_bus_id}, {"dev", devnum(c.major, c.minor)}});
    const Json j = {{"driver", g.driver_version}, {"cards", std::move(cards)}};
    // ASCII only (\u escapes), so a comment line can never be cut by a multi-byte character.
    return "# " + std::string(kGeneratedFromKey) + ": " + j.dump(-1, ' ', true) + "\n";
}

Result<std::optional<GeneratedFrom>> read_generated_from(std::string_view text, std::string_view source) {
    const std::string prefix = "# " + std::string(kGeneratedFromKey) + ": ";
    while (!text.empty() && text.front() == '#') {
        const auto nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        if (line.starts_with(prefix)) {
            auto g = from_json(std::string(line.substr(prefix.size())));
            if (!g)
                return fail(Errc::InvalidInput,
                            std::string(source) + ": " + std::string(kGeneratedFromKey) + ": " + g.error().message());
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
        const std::string what = "card " + std::to_string(c.index) + " (" + c.uuid + ", " + c.pci_bus_id + ")";
        const std::string sys = sysfs_dev(paths, c);
        if (sys.empty()) return what + " is gone from sysfs";
        if (sys != devnum(c.major, c.minor))
            return what + " is " + sys + " in sysfs, the spec says " + devnum(c.major, c.minor);
        const std::string node = fs::join(paths.dev_root, "/dev/" + paths.device_prefix + std::to_string(c.minor));
        struct stat st {};
        if (::stat(node.c_str(), &st) != 0) return what + ": '" + node + "' is missing";
        if (!S_ISCHR(st.st_mode) || ::major(st.st_rdev) != c.major || ::minor(st.st_rdev) != c.minor)
            return what + ": '" + node + "' is not the character device " + devnum(c.major, c.minor);
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
            return "device node '" + host + "' is " + std::to_string(ma) + ":" + std::to_string(mi) +
                   ", the spec says " + std::to_string(*n.major) + ":" + std::to_string(*n.minor);
    }
    for (const auto& m : edits.mounts) {
        if (!m.type.empty() && m.type != "bind") continue;
        struct stat st {};
        if (::stat(m.host_path.c_str(), &st) != 0) return "mounted file '" + m.host_path + "' is missing";
    }
    return std::nullopt;
}

}  // namespace inject::cdi
