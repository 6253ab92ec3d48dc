// SPDX-License-Identifier: Apache-2.0
// CDI spec writing: YAML as go-yaml writes it (a string quoted only where a reader would take it
// for something else) and JSON with the fields in the reference's order. Reading: spec_read.cpp.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "inject/cdi_io.hpp"
#include "tree.hpp"

namespace inject::cdi {
namespace {

using detail::Node;
using detail::resolve_plain;

// A string that go-yaml / yaml-cpp read back as the same string when written plain.
bool plain_ok(std::string_view s) {
    if (s.empty()) return false;
    if (!std::isalpha(static_cast<unsigned char>(s[0])) && s[0] != '/' && s[0] != '_') return false;
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (!std::isalnum(u) && std::string_view("/_.=:,@+-").find(c) == std::string_view::npos)
            return false;
    }
    if (s.back() == ':') return false;
    return resolve_plain(s) == Node::Kind::String;
}

std::string quote(std::string_view s) {
    return nlohmann::json(std::string(s))
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string scalar(std::string_view s) {
    return plain_ok(s) ? std::string(s) : quote(s);
}

class YamlWriter {
public:
    std::string out;

    void line(int indent, std::string_view text) {
        out.append(static_cast<std::size_t>(indent), ' ');
        out += text;
        out += '\n';
    }
    void kv(int indent, std::string_view key, std::string_view value) {
        line(indent, std::string(key) + ": " + std::string(value));
    }
    // A list of scalars under `key`, items at the key's indent (go-yaml's style).
    void strs(int indent, std::string_view key, const std::vector<std::string>& v) {
        if (v.empty()) return;
        line(indent, std::string(key) + ":");
        for (const auto& s : v) line(indent, "- " + scalar(s));
    }
    void str_map(int indent, std::string_view key, const std::map<std::string, std::string>& m) {
        if (m.empty()) return;
        line(indent, std::string(key) + ":");
        for (const auto& [k, v] : m) kv(indent + 2, scalar(k), scalar(v));
    }
    // Writes fields of a list item: the first gets "- ", the rest indent + 2.
    struct Item {
        YamlWriter& w;
        int indent;
        bool first = true;
        std::string prefix() {
            std::string p = first ? std::string(static_cast<std::size_t>(indent), ' ') + "- "
                                  : std::string(static_cast<std::size_t>(indent + 2), ' ');
            first = false;
            return p;
        }
        void kv(std::string_view k, std::string_view v) {
            w.out += prefix() + std::string(k) + ": " + std::string(v) + "\n";
        }
        void key(std::string_view k) { w.out += prefix() + std::string(k) + ":\n"; }
    };

    void edits(int indent, const ContainerEdits& e) {
        strs(indent, "env", e.env);
        if (!e.device_nodes.empty()) {
            line(indent, "deviceNodes:");
            for (const auto& d : e.device_nodes) {
                Item it{*this, indent};
                it.kv("path", scalar(d.path));
                if (!d.host_path.empty()) it.kv("hostPath", scalar(d.host_path));
                if (!d.type.empty()) it.kv("type", scalar(d.type));
                if (d.major) it.kv("major", std::to_string(*d.major));
                if (d.minor) it.kv("minor", std::to_string(*d.minor));
                if (d.file_mode) it.kv("fileMode", std::to_string(*d.file_mode));
                if (!d.permissions.empty()) it.kv("permissions", scalar(d.permissions));
                if (d.uid) it.kv("uid", std::to_string(*d.uid));
                if (d.gid) it.kv("gid", std::to_string(*d.gid));
            }
        }
        if (!e.hooks.empty()) {
            line(indent, "hooks:");
            for (const auto& h : e.hooks) {
                Item it{*this, indent};
                it.kv("hookName", scalar(h.hook_name));
                it.kv("path", scalar(h.path));
                if (!h.args.empty()) {
                    it.key("args");
                    strs_items(indent + 2, h.args);
                }
                if (!h.env.empty()) {
                    it.key("env");
                    strs_items(indent + 2, h.env);
                }
                if (h.timeout) it.kv("timeout", std::to_string(*h.timeout));
            }
        }
        if (!e.mounts.empty()) {
            line(indent, "mounts:");
            for (const auto& m : e.mounts) {
                Item it{*this, indent};
                it.kv("hostPath", scalar(m.host_path));
                it.kv("containerPath", scalar(m.container_path));
                if (!m.type.empty()) it.kv("type", scalar(m.type));
                if (!m.options.empty()) {
                    it.key("options");
                    strs_items(indent + 2, m.options);
                }
            }
        }
        if (!e.additional_gids.empty()) {
            line(indent, "additionalGids:");
            for (auto g : e.additional_gids) line(indent, "- " + std::to_string(g));
        }
    }
    void strs_items(int indent, const std::vector<std::string>& v) {
        for (const auto& s : v) line(indent, "- " + scalar(s));
    }
};

nlohmann::ordered_json edits_json(const ContainerEdits& e) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    if (!e.env.empty()) j["env"] = e.env;
    if (!e.device_nodes.empty()) {
        auto& arr = j["deviceNodes"] = nlohmann::ordered_json::array();
        for (const auto& d : e.device_nodes) {
            nlohmann::ordered_json x;
            x["path"] = d.path;
            if (!d.host_path.empty()) x["hostPath"] = d.host_path;
            if (!d.type.empty()) x["type"] = d.type;
            if (d.major) x["major"] = *d.major;
            if (d.minor) x["minor"] = *d.minor;
            if (d.file_mode) x["fileMode"] = *d.file_mode;
            if (!d.permissions.empty()) x["permissions"] = d.permissions;
            if (d.uid) x["uid"] = *d.uid;
            if (d.gid) x["gid"] = *d.gid;
            arr.push_back(std::move(x));
        }
    }
    if (!e.hooks.empty()) {
        auto& arr = j["hooks"] = nlohmann::ordered_json::array();
        for (const auto& h : e.hooks) {
            nlohmann::ordered_json x;
            x["hookName"] = h.hook_name;
            x["path"] = h.path;
            if (!h.args.empty()) x["args"] = h.args;
            if (!h.env.empty()) x["env"] = h.env;
            if (h.timeout) x["timeout"] = *h.timeout;
            arr.push_back(std::move(x));
        }
    }
    if (!e.mounts.empty()) {
        auto& arr = j["mounts"] = nlohmann::ordered_json::array();
        for (const auto& m : e.mounts) {
            nlohmann::ordered_json x;
            x["hostPath"] = m.host_path;
            x["containerPath"] = m.container_path;
            if (!m.type.empty()) x["type"] = m.type;
            if (!m.options.empty()) x["options"] = m.options;
            arr.push_back(std::move(x));
        }
    }
    if (!e.additional_gids.empty()) j["additionalGids"] = e.additional_gids;
    return j;
}

nlohmann::ordered_json str_map_json(const std::map<std::string, std::string>& m) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& [k, v] : m) j[k] = v;
    return j;
}

}  // namespace

std::string to_yaml(const Spec& spec) {
    YamlWriter w;
    w.kv(0, "cdiVersion", scalar(spec.version));
    w.kv(0, "kind", scalar(spec.kind));
    w.str_map(0, "annotations", spec.annotations);
    if (spec.devices.empty()) {
        w.line(0, "devices: []");
    } else {
        w.line(0, "devices:");
        for (const auto& d : spec.devices) {
            YamlWriter::Item it{w, 0};
            it.kv("name", scalar(d.name));
            if (!d.annotations.empty()) {
                it.key("annotations");
                for (const auto& [k, v] : d.annotations) w.kv(4, scalar(k), scalar(v));
            }
            if (d.edits.empty()) {
                it.kv("containerEdits", "{}");
            } else {
                it.key("containerEdits");
                w.edits(4, d.edits);
            }
        }
    }
    if (!spec.edits.empty()) {
        w.line(0, "containerEdits:");
        w.edits(2, spec.edits);
    }
    return std::move(w.out);
}

std::string to_json(const Spec& spec) {
    nlohmann::ordered_json j;
    j["cdiVersion"] = spec.version;
    j["kind"] = spec.kind;
    if (!spec.annotations.empty()) j["annotations"] = str_map_json(spec.annotations);
    auto& devs = j["devices"] = nlohmann::ordered_json::array();
    for (const auto& d : spec.devices) {
        nlohmann::ordered_json x;
        x["name"] = d.name;
        if (!d.annotations.empty()) x["annotations"] = str_map_json(d.annotations);
        x["containerEdits"] = edits_json(d.edits);
        devs.push_back(std::move(x));
    }
    if (!spec.edits.empty()) j["containerEdits"] = edits_json(spec.edits);
    return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

Format format_for_path(std::string_view path) noexcept {
    return path.size() >= 5 && path.substr(path.size() - 5) == ".json" ? Format::Json
                                                                       : Format::Yaml;
}

Result<Format> parse_format(std::string_view name) {
    if (name == "yaml" || name == "yml") return Format::Yaml;
    if (name == "json") return Format::Json;
    return fail(Errc::InvalidInput,
                "unknown format '" + std::string(name) + "': want yaml or json");
}

std::string serialize(const Spec& spec, Format format) {
    return format == Format::Json ? to_json(spec) : to_yaml(spec);
}

}  // namespace inject::cdi
