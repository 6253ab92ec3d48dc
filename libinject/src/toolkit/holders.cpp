// SPDX-License-Identifier: Apache-2.0
// Which containers still run through the toolkit's runtime binary, so uninstall never removes
// it under them: containerd (and Docker on containerd) would fail every kill and delete of such
// a container on the missing binary, and the pod stays Terminating for good. containerd's runc
// shim keeps, per task, a bundle folder <state>/io.containerd.runtime.v2.task/<namespace>/<id>/
// holding `options.json` (its "binary_name") and `runtime` (the path alone) until the task is
// deleted; CRI-O and podman run one conmon per container with `-r <runtime path>`. The binary is
// kept while any is left, in a leftover record (.kept-runtime.json) that a later install or
// uninstall reads. Every path is the host's, read in the host root.
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>

#include "inject/text.hpp"
#include "toolkit_internal.hpp"

namespace inject::toolkit {

namespace fsys = std::filesystem;

namespace {

constexpr const char* kLeftoverName = ".kept-runtime.json";
constexpr const char* kTasks = "io.containerd.runtime.v2.task";

/// containerd's `state` folder from its config's top level ("" when unset or unreadable).
std::string containerd_state(const HostRoot& h, const std::string& config) {
    auto text = h.read(config, kMaxText);
    if (!text || !*text) return {};
    try {
        const auto t = toml::parse(**text, config);
        return std::string(t["state"].value_or(std::string_view{}));
    } catch (const toml::parse_error&) {
        return {};
    }
}

std::string same_path(const std::string& p) {
    return fsys::path(p).lexically_normal().string();
}

/// The binary a bundle's task runs through: `runtime`, else options.json's binary_name.
std::string bundle_runtime(const HostRoot& h, const std::string& bundle) {
    if (auto r = h.read(bundle + "/runtime", 4096); r && *r) return std::string(text::trim(**r));
    auto o = h.read(bundle + "/options.json", kMaxText);
    if (!o || !*o) return {};
    auto j = json::parse(**o, nullptr, false);
    if (!j.is_object() || !j.contains("binary_name") || !j["binary_name"].is_string()) return {};
    return j["binary_name"].get<std::string>();
}

/// conmon (CRI-O, podman) and conmon-rs name the runtime with -r/--runtime; the container's id
/// is its -c/--cid (conmon-rs has none: the pid then).
void conmon_holders(const HostRoot& h, const std::string& runtime, std::vector<std::string>& ids) {
    for (const auto& pid : h.list("/proc")) {
        if (pid.empty() ||
            !std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        auto cmd = h.read("/proc/" + pid + "/cmdline", 1u << 20);
        if (!cmd || !*cmd || (*cmd)->empty()) continue;
        auto argv = text::split(text::trim_end(**cmd, std::string_view("\0", 1)), '\0');
        if (fsys::path(argv[0]).filename().string().rfind("conmon", 0) != 0) continue;
        bool held = false;
        std::string id;
        for (std::size_t i = 1; i < argv.size(); ++i) {
            const auto& a = argv[i];
            const bool last = i + 1 == argv.size();
            if ((a == "-r" || a == "--runtime") && !last) held |= same_path(argv[i + 1]) == runtime;
            if (a.rfind("--runtime=", 0) == 0) held |= same_path(a.substr(10)) == runtime;
            if ((a == "-c" || a == "--cid") && !last) id = argv[i + 1];
            if (a.rfind("--cid=", 0) == 0) id = a.substr(6);
        }
        if (held) ids.push_back(id.empty() ? "pid " + pid : id);
    }
}

std::string leftover_path(const Options& o) {
    return (fsys::path(o.toolkit_dir) / kLeftoverName).string();
}

/// "abc, def, ghi, ..." with a 64-hex id cut to 12 characters, as crictl and docker show one.
std::string first_ids(const std::vector<std::string>& ids) {
    std::string s;
    for (std::size_t i = 0; i < ids.size() && i < 3; ++i) {
        auto id = ids[i];
        if (id.size() == 64 && id.find_first_not_of("0123456789abcdef") == std::string::npos)
            id.resize(12);
        s += (i ? ", " : "") + id;
    }
    return ids.size() > 3 ? s + ", ..." : s;
}

}  // namespace

std::string runtime_binary(const Options& o) {
    return (fsys::path(o.toolkit_dir) / "enflame-container-runtime").string();
}

std::vector<std::string> task_state_dirs(const HostRoot& h, const json& st) {
    std::vector<std::string> dirs;
    if (st.value("engine", std::string()) == "containerd")
        if (auto s = containerd_state(h, st.value("engine_config", std::string())); !s.empty())
            dirs.push_back(s);
    // containerd's default, and the one dockerd starts itself when no containerd runs
    for (const char* d : {"/run/containerd", "/var/run/docker/containerd/daemon"})
        if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.emplace_back(d);
    return dirs;
}

std::vector<std::string> runtime_holders(const HostRoot& h, const std::string& runtime_path,
                                         const std::vector<std::string>& state_dirs) {
    const auto runtime = same_path(runtime_path);
    std::vector<std::string> ids;
    for (const auto& s : state_dirs) {
        const auto tasks = s + "/" + kTasks;
        for (const auto& ns : h.list(tasks))
            for (const auto& id : h.list(tasks + "/" + ns))
                if (same_path(bundle_runtime(h, tasks + "/" + ns + "/" + id)) == runtime)
                    ids.push_back(id);
    }
    conmon_holders(h, runtime, ids);
    return ids;
}

Result<void> keep_runtime(const Options& o, const HostRoot& h,
                          const std::vector<std::string>& state_dirs, const json& created_dirs,
                          const std::vector<std::string>& holders, Lines& out) {
    const json rec = {{"runtime_path", runtime_binary(o)},
                      {"state_dirs", state_dirs},
                      {"created_dirs", created_dirs}};
    // HostRoot::write: a temp file in the toolkit folder, fsync, rename, fsync of the folder
    INJECT_TRY_VOID(h.write(leftover_path(o), rec.dump(2) + "\n", 0644));
    out.push_back(
        "kept: " + h.show(runtime_binary(o)) + ": " + std::to_string(holders.size()) +
        (holders.size() == 1 ? " container still runs" : " containers still run") +
        " through it (" + first_ids(holders) +
        "); the next 'enflame-ctk toolkit install' or 'uninstall' removes it once they are gone");
    return ok();
}

Result<std::optional<json>> read_leftover(const Options& o, const HostRoot& h) {
    INJECT_TRY(auto text, h.read(leftover_path(o), kMaxText));
    if (!text) return std::optional<json>();
    auto j = json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("runtime_path"))
        return fail(input_error("'" + h.show(leftover_path(o)) + "': not a record of ours"));
    return std::optional<json>(std::move(j));
}

Result<void> forget_leftover(const Options& o, const HostRoot& h) {
    return h.remove(leftover_path(o));
}

Result<void> remove_leftover(const Options& o, const HostRoot& h, const json& rec, Lines& out) {
    const auto dirs = rec.value("state_dirs", json::array()).get<std::vector<std::string>>();
    const auto holders = runtime_holders(h, runtime_binary(o), dirs);
    if (!holders.empty())
        return keep_runtime(o, h, dirs, rec.value("created_dirs", json::array()), holders, out);
    INJECT_TRY_VOID(h.remove(runtime_binary(o)));
    out.push_back("removed: " + h.show(runtime_binary(o)) +
                  " (no container runs through it any more)");
    INJECT_TRY_VOID(forget_leftover(o, h));
    const auto created = rec.value("created_dirs", json::array());
    for (auto it = created.rbegin(); it != created.rend(); ++it)
        h.remove_dir_if_empty(it->get<std::string>());
    return ok();
}

}  // namespace inject::toolkit
