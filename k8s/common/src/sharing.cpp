// SPDX-License-Identifier: Apache-2.0
#include "k8s/sharing.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "inject/fs.hpp"

namespace k8s {
namespace {

using inject::Errc;
using inject::fail;

bool is_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// A DNS-1123 subdomain: lowercase labels of [a-z0-9-], not starting or ending with '-'.
bool dns_subdomain(std::string_view s) {
    if (s.empty() || s.size() > 253) return false;
    std::size_t start = 0;
    while (start <= s.size()) {
        const std::size_t dot = std::min(s.find('.', start), s.size());
        const auto label = s.substr(start, dot - start);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
            return false;
        for (char c : label) {
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
        }
        start = dot + 1;
    }
    return true;
}

// A qualified name's name part: [A-Za-z0-9][-A-Za-z0-9_.]* ending alphanumeric, <= 63.
bool qualified_name(std::string_view s) {
    if (s.empty() || s.size() > 63 || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A problem at node `n` (its line) under key path `path`.
inject::Unexpected bad(std::string_view source, const YAML::Node& n, const std::string& path,
                       const std::string& why) {
    const std::string line =
        n.Mark().line >= 0 ? ": line " + std::to_string(n.Mark().line + 1) : "";
    return fail(Errc::InvalidInput, std::string(source) + line + ": " + path + ": " + why);
}

inject::Result<void> only_keys(std::string_view source, const YAML::Node& map,
                               const std::string& path, const std::set<std::string>& allowed) {
    if (!map.IsMap()) return bad(source, map, path, "want a mapping");
    for (const auto& kv : map) {
        const auto key = kv.first.as<std::string>();
        if (!allowed.contains(key))
            return bad(source, kv.first, path.empty() ? key : path + "." + key, "unknown key");
    }
    return inject::ok();
}

inject::Result<std::string> scalar(std::string_view source, const YAML::Node& n,
                                   const std::string& path) {
    if (!n.IsScalar()) return bad(source, n, path, "want a string");
    return n.as<std::string>();
}

inject::Result<bool> boolean(std::string_view source, const YAML::Node& n,
                             const std::string& path) {
    INJECT_TRY(const auto s, scalar(source, n, path));
    if (s == "true") return true;
    if (s == "false") return false;
    return bad(source, n, path, "want true or false, got '" + s + "'");
}

// `flags:`, as in NVIDIA's plugin config: options also given by a flag, which wins.
inject::Result<void> parse_flags(std::string_view source, const YAML::Node& flags, Sharing& out) {
    if (!flags || flags.IsNull()) return inject::ok();
    INJECT_TRY_VOID(only_keys(source, flags, "flags",
                              {"scheduler", "hamiLegacyVgcu", "hamiSharedSlices", "requireNri"}));
    if (const auto n = flags["scheduler"]; n && n.IsNull()) {
        out.scheduler = std::string();
    } else if (n) {
        INJECT_TRY(auto s, scalar(source, n, "flags.scheduler"));
        if (s != "" && s != "hami")
            return bad(source, n, "flags.scheduler", "want hami or \"\", got '" + s + "'");
        out.scheduler = std::move(s);
    }
    if (const auto n = flags["hamiLegacyVgcu"]) {
        INJECT_TRY(out.hami_legacy, boolean(source, n, "flags.hamiLegacyVgcu"));
    }
    if (const auto n = flags["requireNri"]) {
        INJECT_TRY(out.require_nri, boolean(source, n, "flags.requireNri"));
    }
    if (const auto n = flags["hamiSharedSlices"]) {
        INJECT_TRY(const auto s, scalar(source, n, "flags.hamiSharedSlices"));
        std::uint32_t v = 0;
        const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc{} || p != s.data() + s.size() || v == 0 || v > kMaxReplicas)
            return bad(source, n, "flags.hamiSharedSlices",
                       "want 1 to " + std::to_string(kMaxReplicas) + ", got '" + s + "'");
        out.hami_slices = v;
    }
    return inject::ok();
}

inject::Result<Sharing> parse_root(std::string_view source, const YAML::Node& root,
                                   const std::string& resource) {
    Sharing out;
    out.resource_name = resource;
    if (!root || root.IsNull()) return out;
    INJECT_TRY_VOID(only_keys(source, root, "", {"version", "sharing", "flags"}));
    if (!root["version"])
        return fail(Errc::InvalidInput, std::string(source) + ": version: missing (want v1)");
    INJECT_TRY(const auto version, scalar(source, root["version"], "version"));
    if (version != "v1")
        return bad(source, root["version"], "version", "want v1, got '" + version + "'");
    INJECT_TRY_VOID(parse_flags(source, root["flags"], out));
    const auto sharing = root["sharing"];
    if (!sharing || sharing.IsNull()) return out;
    INJECT_TRY_VOID(only_keys(source, sharing, "sharing", {"timeSlicing"}));
    const auto ts = sharing["timeSlicing"];
    if (!ts || ts.IsNull()) return out;
    INJECT_TRY_VOID(only_keys(source, ts, "sharing.timeSlicing", {"renameByDefault", "resources"}));
    bool rename_default = false;
    if (ts["renameByDefault"]) {
        INJECT_TRY(rename_default,
                   boolean(source, ts["renameByDefault"], "sharing.timeSlicing.renameByDefault"));
    }
    const auto list = ts["resources"];
    if (!list || list.IsNull()) return out;
    if (!list.IsSequence())
        return bad(source, list, "sharing.timeSlicing.resources", "want a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const auto r = list[i];
        const std::string path = "sharing.timeSlicing.resources[" + std::to_string(i) + "]";
        INJECT_TRY_VOID(only_keys(source, r, path, {"name", "replicas", "rename"}));
        if (!r["name"]) return bad(source, r, path + ".name", "missing");
        INJECT_TRY(const auto name, scalar(source, r["name"], path + ".name"));
        if (name != resource)
            return bad(source, r["name"], path + ".name",
                       "'" + name + "' is not the resource this plugin serves (" + resource + ")");
        if (!r["replicas"]) return bad(source, r, path + ".replicas", "missing");
        INJECT_TRY(const auto rep, scalar(source, r["replicas"], path + ".replicas"));
        std::uint32_t n = 0;
        const auto [p, ec] = std::from_chars(rep.data(), rep.data() + rep.size(), n);
        if (ec != std::errc{} || p != rep.data() + rep.size() || n < 1 || n > kMaxReplicas)
            return bad(source, r["replicas"], path + ".replicas",
                       "want a whole number from 1 to " + std::to_string(kMaxReplicas) + ", got '" +
                           rep + "'");
        out.replicas = n;
        if (r["rename"]) {
            INJECT_TRY(out.resource_name, scalar(source, r["rename"], path + ".rename"));
            if (auto ok = check_resource_name(out.resource_name); !ok)
                return bad(source, r["rename"], path + ".rename", ok.error().what());
        } else if (rename_default && n > 1) {
            out.resource_name = resource + ".shared";
        }
    }
    return out;
}

}  // namespace

inject::Result<void> check_resource_name(std::string_view name) {
    const auto bad = [&](const std::string& why) {
        return fail(Errc::InvalidInput, "resource name '" + std::string(name) + "': " + why);
    };
    const auto slash = name.find('/');
    if (slash == std::string_view::npos || name.find('/', slash + 1) != std::string_view::npos)
        return bad("want <domain>/<name>, e.g. enflame.com/gcu");
    const auto domain = name.substr(0, slash);
    if (!dns_subdomain(domain)) return bad("'" + std::string(domain) + "' is not a DNS subdomain");
    if (domain == "kubernetes.io" || domain.ends_with(".kubernetes.io") || domain == "k8s.io" ||
        domain.ends_with(".k8s.io"))
        return bad("the kubernetes.io and k8s.io domains are reserved");
    if (domain.starts_with("requests."))
        return bad("a domain starting with 'requests.' is reserved");
    if (!qualified_name(name.substr(slash + 1)))
        return bad("'" + std::string(name.substr(slash + 1)) +
                   "' is not a valid name (alphanumerics, '-', '_', '.'; at most 63)");
    return inject::ok();
}

inject::Result<Sharing> parse_plugin_config(std::string_view text, std::string_view source,
                                            const std::string& resource_name) {
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
        return parse_root(source, root, resource_name);
    } catch (const YAML::Exception& e) {
        return fail(Errc::InvalidInput, std::string(source) + ": line " +
                                            std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
}

inject::Result<Sharing> load_plugin_config(const std::string& path,
                                           const std::string& resource_name) {
    if (path.empty())
        return Sharing{1, resource_name, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
    auto text = inject::fs::read_file(path, 1 << 20);
    if (!text) return fail(std::move(text).error().context("--plugin-config"));
    return parse_plugin_config(*text, path, resource_name);
}

}  // namespace k8s
