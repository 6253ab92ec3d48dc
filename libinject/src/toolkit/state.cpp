// SPDX-License-Identifier: Apache-2.0
// The toolkit's state file (.install-state.json in the toolkit folder): what an install did,
// written before each step, so uninstall undoes exactly that; the flags checked and the host's
// root opened; the operator's handover mark; the toolkit folder's lock.
#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "toolkit_internal.hpp"

namespace inject::toolkit {

namespace rc = inject::runtime_config;
namespace fsys = std::filesystem;

namespace {

constexpr const char* kStateName = ".install-state.json";

/// The pod annotation the operator sets on an installer pod it is about to replace with a new
/// version whose install flags are the same (k8s/operator/roll.hpp): the new pod takes the
/// toolkit over as it is, so the engine is restarted only if the new version changes its config.
constexpr const char* kHandoverLine = "enflame.com/toolkit-handover=\"true\"";

std::optional<std::string> opt_string(const json& j) {
    if (j.is_null()) return std::nullopt;
    return j.get<std::string>();
}

}  // namespace

Result<HostRoot> open_host(const Options& o) {
    std::error_code ec;
    if (!fsys::is_directory(o.root, ec))
        return fail(input_error("--host-root '" + o.root + "': not a folder"));
    const auto relative = [](const std::string& p) { return p.empty() || p.front() != '/'; };
    for (const auto* p : {&o.toolkit_dir, &o.cdi_dir, &o.driver_root, &o.dev_root, &o.nri_socket})
        if (relative(*p)) return fail(input_error("'" + *p + "': host paths must be absolute"));
    for (const auto* p : {&o.engine_config, &o.engine_socket})  // empty: the engine's usual one
        if (!p->empty() && relative(*p))
            return fail(input_error("'" + *p + "': host paths must be absolute"));
    if (o.restart_mode != "signal" && o.restart_mode != "none")
        return fail(input_error("--restart-mode '" + o.restart_mode + "': want signal or none"));
    auto h = HostRoot::open(o.root);
    if (!h) return fail(std::move(h).error().context("--host-root"));
    return h;
}

/// The handover file holds the pod's annotations (downward API), one `key="value"` a line.
bool handing_over(const Options& o) {
    if (o.handover_file.empty()) return false;
    auto text = fs::read_file(o.handover_file, kMaxText);
    if (!text) return false;  // no file: no mark (the pod runs without the operator)
    std::string_view rest = *text;
    while (!rest.empty()) {
        const auto nl = rest.find('\n');
        if (rest.substr(0, nl) == kHandoverLine) return true;
        if (nl == std::string_view::npos) break;
        rest.remove_prefix(nl + 1);
    }
    return false;
}

std::string state_path(const Options& o) {
    return (fsys::path(o.toolkit_dir) / kStateName).string();
}

Result<std::optional<json>> read_state(const Options& o, const HostRoot& h) {
    INJECT_TRY(auto text, h.read(state_path(o), kMaxText));
    if (!text) return std::optional<json>();
    auto j = json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("engine"))
        return fail(input_error("'" + h.show(state_path(o)) + "': not a state file of ours"));
    return std::optional<json>(std::move(j));
}

Result<void> write_state(const Options& o, const HostRoot& h, const json& st) {
    return h.write(state_path(o), st.dump(2) + "\n", 0644);
}

Result<json> first_state(const Options& o, const std::string& engine) {
    INJECT_TRY(auto e, rc::parse_engine(engine));
    std::vector<std::string> spec_dirs{"/etc/cdi"};
    if (o.cdi_dir != "/etc/cdi") spec_dirs.push_back(o.cdi_dir);
    const auto config = o.engine_config.empty() ? rc::default_config_path(e) : o.engine_config;
    json st = {{"engine", engine},
               {"engine_config", config},
               {"runtime_name", o.runtime_name},
               {"runtime_path", (fsys::path(o.toolkit_dir) / "enflame-container-runtime").string()},
               {"set_as_default", o.set_as_default},
               {"nri_enabled", o.enable_nri},
               {"nri_socket", o.nri_socket},
               {"cdi_spec_dirs", spec_dirs},
               {"engine_configured", false},
               {"files", json::array()},
               {"created_dirs", json::array()}};
    if (auto d = rc::drop_in_for(e, config)) st["drop_in"] = *d;
    return st;
}

RuntimeArgs engine_args(const json& st) {
    RuntimeArgs r;
    r.engine = st.at("engine").get<std::string>();
    r.config = st.at("engine_config").get<std::string>();
    // a state written before the drop-in went beside the engine's config has it at the default
    r.drop_in = st.value("drop_in", std::string());
    r.opts.runtime_name = st.at("runtime_name").get<std::string>();
    r.opts.runtime_path = st.at("runtime_path").get<std::string>();
    r.opts.set_as_default = st.at("set_as_default").get<bool>();
    r.opts.cdi_enabled = r.engine != "crio";
    r.opts.cdi_spec_dirs = st.at("cdi_spec_dirs").get<std::vector<std::string>>();
    // a state written before --enable-nri has none
    r.opts.nri_enabled = st.value("nri_enabled", false);
    r.opts.nri_socket = st.value("nri_socket", r.opts.nri_socket);
    return r;
}

Result<void> restore(const HostRoot& h, const std::string& host_path,
                     const std::optional<std::string>& original) {
    if (original) return h.write(host_path, *original, 0644);
    return h.remove(host_path);
}

Result<bool> undo_state(const Options& o, const HostRoot& h, const json& st, Lines& out) {
    std::optional<Error> first;
    auto keep = [&first](Result<void> r) {
        if (!r && !first) first = std::move(r).error();
    };
    bool engine_changed = false;
    if (st.value("engine_configured", false)) {
        auto r = engine_args(st);
        r.uninstall = true;
        auto changes = plan(r, h);
        if (!changes) {
            keep(fail(std::move(changes).error()));
        } else {
            auto changed = apply_changes(h, *changes, out);
            if (!changed)
                keep(fail(std::move(changed).error()));
            else
                engine_changed = *changed;
        }
    }
    for (const char* key : {"cdi_spec", "toolkit_config"}) {
        if (!st.contains(key)) continue;
        const auto& f = st.at(key);
        const auto path = f.at("path").get<std::string>();
        keep(restore(h, path, opt_string(f.at("original"))));
        out.push_back((f.at("original").is_null() ? "removed: " : "restored: ") + h.show(path));
    }
    const auto dirs = st.value("created_dirs", json::array());
    // a container created through the runtime needs it until deleted (kill, delete, state): the
    // binary stays while one is left, and a later install or uninstall removes it
    std::vector<std::string> holders;
    const auto state_dirs = task_state_dirs(h, st);
    for (const auto& name : st.value("files", json::array())) {
        const auto path = (fsys::path(o.toolkit_dir) / name.get<std::string>()).string();
        if (path == runtime_binary(o) && h.exists(path)) {
            holders = runtime_holders(h, path, state_dirs);
            if (!holders.empty()) continue;
        }
        keep(h.remove(path));
    }
    if (!holders.empty()) keep(keep_runtime(o, h, state_dirs, dirs, holders, out));
    keep(h.remove(state_path(o)));
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)  // deepest first; only when empty
        h.remove_dir_if_empty(it->get<std::string>());
    if (first) return fail(std::move(*first));
    return engine_changed;
}

Result<std::optional<fs::UniqueFd>> lock_toolkit(const Options& o, const HostRoot& h) {
    auto fd = fs::open_in_root(h.fd(), o.toolkit_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!fd) {
        if (!h.exists(o.toolkit_dir)) return std::optional<fs::UniqueFd>{};
        return fail(std::move(fd).error());
    }
    while (::flock(fd->get(), LOCK_EX) != 0)
        if (errno != EINTR)
            return fail(Errc::Io, h.show(o.toolkit_dir) + ": flock: " + std::strerror(errno));
    return std::optional<fs::UniqueFd>{std::move(*fd)};
}

}  // namespace inject::toolkit
