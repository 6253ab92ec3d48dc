// SPDX-License-Identifier: Apache-2.0
// CDI container edits applied to an OCI runtime spec. Pure JSON in, JSON out; one template
// serves nlohmann::json and nlohmann::ordered_json (the shim uses the latter so a rewritten
// config.json keeps the key order the engine wrote).
#include "inject/oci.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace inject::oci {
namespace {

constexpr std::array<std::string_view, 6> kHookStages{
    "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};

Unexpected not_a(std::string_view where, std::string_view what) {
    return fail(Errc::InvalidInput,
                "config.json: '" + std::string(where) + "' is not " + std::string(what));
}

/// `parent[key]` as an object (created when absent). nullptr + error when it is something else.
template <typename J>
Result<J*> child_object(J& parent, const char* key, std::string_view where) {
    auto it = parent.find(key);
    if (it == parent.end()) return &(parent[key] = J::object());
    if (!it->is_object()) return not_a(where, "an object");
    return &*it;
}

template <typename J>
Result<J*> child_array(J& parent, const char* key, std::string_view where) {
    auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return &(parent[key] = J::array());
    if (!it->is_array()) return not_a(where, "an array");
    return &*it;
}

// The checks of one edit, shared by check_edits() below and the apply_* functions.
Result<void> check_node(const cdi::DeviceNode& d) {
    if (d.path.empty() || d.path.front() != '/')
        return fail(Errc::InvalidInput, "device node '" + d.path + "': path is not absolute");
    if (!d.major || !d.minor)
        return fail(Errc::InvalidInput, "device node '" + d.path + "': major/minor unknown");
    return ok();
}

Result<void> check_mount(const cdi::Mount& m) {
    if (m.container_path.empty() || m.container_path.front() != '/')
        return fail(Errc::InvalidInput,
                    "mount '" + m.container_path + "': container path is not absolute");
    return ok();
}

Result<void> check_hook(const cdi::Hook& h) {
    if (std::find(kHookStages.begin(), kHookStages.end(), h.hook_name) == kHookStages.end())
        return fail(Errc::InvalidInput,
                    "hook '" + h.path + "': unknown stage '" + h.hook_name + "'");
    if (h.path.empty() || h.path.front() != '/')
        return fail(Errc::InvalidInput, "hook '" + h.path + "': path is not absolute");
    return ok();
}

std::string key_of(std::string_view kv) {
    return std::string(kv.substr(0, kv.find('=')));
}

template <typename J>
Result<void> apply_env(J& spec, const std::vector<std::string>& env) {
    if (env.empty()) return ok();
    INJECT_TRY(J * process, child_object(spec, "process", "process"));
    INJECT_TRY(J * list, child_array(*process, "env", "process.env"));
    for (const auto& kv : env) {
        const std::string key = key_of(kv);
        bool replaced = false;
        for (auto& e : *list) {
            if (!e.is_string()) return not_a("process.env", "an array of strings");
            if (key_of(e.template get_ref<const std::string&>()) == key) {
                e = kv;
                replaced = true;
            }
        }
        if (!replaced) list->push_back(kv);
    }
    return ok();
}

template <typename J>
J device_json(const cdi::DeviceNode& d) {
    J o = J::object();
    o["path"] = d.path;
    o["type"] = d.type.empty() ? "c" : d.type;
    o["major"] = *d.major;
    o["minor"] = *d.minor;
    if (d.file_mode) o["fileMode"] = *d.file_mode;
    if (d.uid) o["uid"] = *d.uid;
    if (d.gid) o["gid"] = *d.gid;
    return o;
}

/// linux.devices entries (unless !with_nodes) and linux.resources.devices allow rules.
template <typename J>
Result<void> apply_devices(J& spec, const std::vector<cdi::DeviceNode>& nodes,
                           bool with_nodes = true) {
    if (nodes.empty()) return ok();
    INJECT_TRY(J * linux_, child_object(spec, "linux", "linux"));
    // Create both keys before taking pointers: an insert into an ordered_json object moves
    // its siblings (they live in one vector).
    if (with_nodes) INJECT_TRY_VOID(child_array(*linux_, "devices", "linux.devices"));
    INJECT_TRY_VOID(child_object(*linux_, "resources", "linux.resources"));
    J* devices = with_nodes ? &(*linux_)["devices"] : nullptr;
    J* resources = &(*linux_)["resources"];
    INJECT_TRY(J * rules, child_array(*resources, "devices", "linux.resources.devices"));
    for (const auto& d : nodes) {
        INJECT_TRY_VOID(check_node(d));
        if (devices != nullptr) {
            J entry = device_json<J>(d);
            auto same = std::find_if(devices->begin(), devices->end(), [&](const J& e) {
                return e.is_object() && e.contains("path") && e["path"] == d.path;
            });
            if (same != devices->end())
                *same = std::move(entry);
            else
                devices->push_back(std::move(entry));
        }

        if (d.type == "p") continue;  // a fifo needs no cgroup rule
        J rule = J::object();
        rule["allow"] = true;
        rule["type"] = d.type.empty() ? "c" : d.type;
        rule["major"] = *d.major;
        rule["minor"] = *d.minor;
        rule["access"] = d.permissions.empty() ? "rwm" : d.permissions;
        if (std::find(rules->begin(), rules->end(), rule) == rules->end())
            rules->push_back(std::move(rule));
    }
    return ok();
}

template <typename J>
Result<void> apply_mounts(J& spec, const std::vector<cdi::Mount>& mounts) {
    if (mounts.empty()) return ok();
    INJECT_TRY(J * list, child_array(spec, "mounts", "mounts"));
    for (const auto& m : mounts) {
        INJECT_TRY_VOID(check_mount(m));
        J o = J::object();
        o["destination"] = m.container_path;
        o["type"] = m.type.empty() ? "bind" : m.type;
        o["source"] = m.host_path;
        o["options"] = m.options;
        auto same = std::find_if(list->begin(), list->end(), [&](const J& e) {
            return e.is_object() && e.contains("destination") &&
                   e["destination"] == m.container_path;
        });
        if (same != list->end())
            *same = std::move(o);
        else
            list->push_back(std::move(o));
    }
    return ok();
}

template <typename J>
Result<void> apply_hooks(J& spec, const std::vector<cdi::Hook>& hooks) {
    if (hooks.empty()) return ok();
    INJECT_TRY(J * all, child_object(spec, "hooks", "hooks"));
    for (const auto& h : hooks) {
        INJECT_TRY_VOID(check_hook(h));
        const std::string where = "hooks." + h.hook_name;
        INJECT_TRY(J * stage, child_array(*all, h.hook_name.c_str(), where));
        J o = J::object();
        o["path"] = h.path;
        if (!h.args.empty()) o["args"] = h.args;
        if (!h.env.empty()) o["env"] = h.env;
        if (h.timeout) o["timeout"] = *h.timeout;
        if (std::find(stage->begin(), stage->end(), o) == stage->end())
            stage->push_back(std::move(o));
    }
    return ok();
}

template <typename J>
Result<void> apply_gids(J& spec, const std::vector<std::uint32_t>& gids) {
    if (gids.empty()) return ok();
    INJECT_TRY(J * process, child_object(spec, "process", "process"));
    INJECT_TRY(J * user, child_object(*process, "user", "process.user"));
    INJECT_TRY(J * list, child_array(*user, "additionalGids", "process.user.additionalGids"));
    for (auto g : gids) {
        if (g == 0) continue;  // CDI: gid 0 is never added (it would grant root's group)
        J v = g;
        if (std::find(list->begin(), list->end(), v) == list->end()) list->push_back(std::move(v));
    }
    return ok();
}

// check_edits: every error the apply_* functions above can meet, found without touching the
// spec, in the order they would meet them (the same first error). apply_impl used to apply
// to a deep copy and swap it in; copying and freeing the whole document was a tenth of the
// shim's work on a create.

/// `parent[key]` as child_object() would see it: nullptr when absent (or when `parent` is).
template <typename J>
Result<const J*> peek_object(const J* parent, const char* key, std::string_view where) {
    if (parent == nullptr) return static_cast<const J*>(nullptr);
    auto it = parent->find(key);
    if (it == parent->end()) return static_cast<const J*>(nullptr);
    if (!it->is_object()) return not_a(where, "an object");
    return &*it;
}

/// `parent[key]` as child_array() would see it: nullptr when absent or null.
template <typename J>
Result<const J*> peek_array(const J* parent, const char* key, std::string_view where) {
    if (parent == nullptr) return static_cast<const J*>(nullptr);
    auto it = parent->find(key);
    if (it == parent->end() || it->is_null()) return static_cast<const J*>(nullptr);
    if (!it->is_array()) return not_a(where, "an array");
    return &*it;
}

template <typename J>
Result<void> check_devices(const J& spec, const std::vector<cdi::DeviceNode>& nodes,
                           bool with_nodes) {
    if (nodes.empty()) return ok();
    INJECT_TRY(const J* linux_, peek_object(&spec, "linux", "linux"));
    if (with_nodes) INJECT_TRY_VOID(peek_array(linux_, "devices", "linux.devices"));
    INJECT_TRY(const J* resources, peek_object(linux_, "resources", "linux.resources"));
    INJECT_TRY_VOID(peek_array(resources, "devices", "linux.resources.devices"));
    for (const auto& d : nodes) INJECT_TRY_VOID(check_node(d));
    return ok();
}

template <typename J>
Result<void> check_edits(const J& spec, const cdi::ContainerEdits& edits) {
    if (!edits.env.empty()) {
        INJECT_TRY(const J* process, peek_object(&spec, "process", "process"));
        INJECT_TRY(const J* list, peek_array(process, "env", "process.env"));
        if (list != nullptr &&
            !std::all_of(list->begin(), list->end(), [](const J& e) { return e.is_string(); }))
            return not_a("process.env", "an array of strings");
    }
    INJECT_TRY_VOID(check_devices(spec, edits.device_nodes, true));
    if (!edits.mounts.empty()) {
        INJECT_TRY_VOID(peek_array(&spec, "mounts", "mounts"));
        for (const auto& m : edits.mounts) INJECT_TRY_VOID(check_mount(m));
    }
    if (!edits.hooks.empty()) {
        INJECT_TRY(const J* all, peek_object(&spec, "hooks", "hooks"));
        for (const auto& h : edits.hooks) {
            INJECT_TRY_VOID(check_hook(h));
            INJECT_TRY_VOID(peek_array(all, h.hook_name.c_str(), "hooks." + h.hook_name));
        }
    }
    if (!edits.additional_gids.empty()) {
        INJECT_TRY(const J* process, peek_object(&spec, "process", "process"));
        INJECT_TRY(const J* user, peek_object(process, "user", "process.user"));
        INJECT_TRY_VOID(peek_array(user, "additionalGids", "process.user.additionalGids"));
    }
    return ok();
}

template <typename J>
Result<void> apply_impl(J& spec, const cdi::ContainerEdits& edits) {
    if (!spec.is_object())
        return fail(Errc::InvalidInput, "config.json: the spec is not a JSON object");
    // Check every edit before touching the spec, so a bad edit leaves it as it was.
    INJECT_TRY_VOID(check_edits(spec, edits));
    INJECT_TRY_VOID(apply_env(spec, edits.env));
    INJECT_TRY_VOID(apply_devices(spec, edits.device_nodes));
    INJECT_TRY_VOID(apply_mounts(spec, edits.mounts));
    INJECT_TRY_VOID(apply_hooks(spec, edits.hooks));
    INJECT_TRY_VOID(apply_gids(spec, edits.additional_gids));
    return ok();
}

template <typename J>
bool privileged_impl(const J& spec) {
    const auto* process = spec.is_object() && spec.contains("process") ? &spec["process"] : nullptr;
    const auto* caps = process && process->is_object() && process->contains("capabilities")
                           ? &(*process)["capabilities"]
                           : nullptr;
    if (caps == nullptr || !caps->is_object() || !caps->contains("bounding") ||
        !(*caps)["bounding"].is_array())
        return false;
    const auto& b = (*caps)["bounding"];
    return std::find(b.begin(), b.end(), J("CAP_SYS_ADMIN")) != b.end();
}

/// Printable ASCII without '"' and '\\': what dump() copies as it is.
bool plain_ascii(const std::string& s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

void dump_string(const std::string& s, std::string& out) {
    if (plain_ascii(s)) {
        out += '"';
        out += s;
        out += '"';
    } else {
        out += nlohmann::ordered_json(s).dump();  // its escapes and its UTF-8 check
    }
}

void dump_to(const nlohmann::ordered_json& j, std::string& out) {
    using V = nlohmann::ordered_json::value_t;
    switch (j.type()) {
        case V::object: {
            out += '{';
            bool first = true;
            for (const auto& [k, v] : j.items()) {
                if (!first) out += ',';
                first = false;
                dump_string(k, out);
                out += ':';
                dump_to(v, out);
            }
            out += '}';
            return;
        }
        case V::array: {
            out += '[';
            bool first = true;
            for (const auto& v : j) {
                if (!first) out += ',';
                first = false;
                dump_to(v, out);
            }
            out += ']';
            return;
        }
        case V::string:
            dump_string(j.get_ref<const std::string&>(), out);
            return;
        case V::boolean:
            out += j.get<bool>() ? "true" : "false";
            return;
        case V::number_integer:
            out += std::to_string(j.get<std::int64_t>());
            return;
        case V::number_unsigned:
            out += std::to_string(j.get<std::uint64_t>());
            return;
        default:
            out += j.dump();
            return;  // null, floats (its own number format), binary
    }
}

}  // namespace

Result<std::string> dump(const nlohmann::ordered_json& spec) {
    try {
        std::string out;
        out.reserve(8192);
        dump_to(spec, out);
        return out;
    } catch (const nlohmann::json::exception& e) {
        return fail(Errc::InvalidInput, std::string("serializing config.json: ") + e.what());
    }
}

bool privileged(const nlohmann::json& spec) {
    return privileged_impl(spec);
}
bool privileged(const nlohmann::ordered_json& spec) {
    return privileged_impl(spec);
}

Result<void> apply(nlohmann::json& spec, const cdi::ContainerEdits& edits) {
    return apply_impl(spec, edits);
}

Result<void> apply(nlohmann::ordered_json& spec, const cdi::ContainerEdits& edits) {
    return apply_impl(spec, edits);
}

Result<void> allow_devices(nlohmann::ordered_json& spec,
                           const std::vector<cdi::DeviceNode>& nodes) {
    if (!spec.is_object())
        return fail(Errc::InvalidInput, "config.json: the spec is not a JSON object");
    INJECT_TRY_VOID(check_devices(spec, nodes, false));
    return apply_devices(spec, nodes, false);
}

Result<void> fill_device_numbers(cdi::ContainerEdits& edits) {
    for (auto& d : edits.device_nodes) {
        if (d.major && d.minor && !d.type.empty()) continue;
        const std::string& host = d.host_path.empty() ? d.path : d.host_path;
        struct stat st {};
        if (::stat(host.c_str(), &st) != 0)
            return fail(sys_error("device node '" + d.path + "': stat " + host));
        const auto fmt = st.st_mode & S_IFMT;
        std::string type = fmt == S_IFCHR ? "c" : fmt == S_IFBLK ? "b" : fmt == S_IFIFO ? "p" : "";
        if (type.empty())
            return fail(Errc::InvalidInput,
                        "device node '" + d.path + "': '" + host + "' is not a device node");
        if (d.type.empty()) d.type = type;
        if (!d.major) d.major = static_cast<std::int64_t>(major(st.st_rdev));
        if (!d.minor) d.minor = static_cast<std::int64_t>(minor(st.st_rdev));
        if (!d.file_mode) d.file_mode = static_cast<std::uint32_t>(st.st_mode & 07777);
    }
    return ok();
}

}  // namespace inject::oci
