// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk toolkit install|uninstall|status`: what NVIDIA's "toolkit container" does, from
// inside a pod that mounts the host's root at --host-root. install copies the runtime, hook and
// enflame-ctk into the host's toolkit folder, writes the toolkit config, generates the CDI spec
// (by running the copied enflame-ctk chrooted into the host, so the spec names host paths),
// wires the runtime into the engine with the same edits as `runtime configure`, lets the
// engine itself check the result (containerd: `config dump`, rolled back when it refuses), and
// signals the engine only when its config changed. A state file in the toolkit folder records
// what was done; uninstall undoes exactly that and leaves the engine's config byte-identical.
#include "context.hpp"
#include "host_root.hpp"
#include "run_in_root.hpp"
#include "runtime_plan.hpp"

#include "inject/fs.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace rc = inject::runtime_config;
namespace fsys = std::filesystem;
using json = nlohmann::ordered_json;

namespace ctk {
namespace {

constexpr std::size_t kMaxBinary = 256u << 20;
constexpr std::size_t kMaxText = 4u << 20;
constexpr const char* kStateName = ".install-state.json";
constexpr const char* kToolkitConfig = "/etc/enflame-container-runtime/config.toml";
constexpr const char* kSpecName = "enflame.com-gpu.yaml";  // the name the package's refresh unit writes
const std::vector<std::string> kBinaries{"enflame-container-runtime",
                                         "enflame-container-runtime-hook", "enflame-ctk"};

struct ToolkitArgs {
    std::string root = "/";
    std::string toolkit_dir = "/usr/local/enflame/toolkit";
    std::string engine = "auto";
    std::string engine_config;
    std::string engine_socket;
    std::string cdi_dir = "/var/run/cdi";
    std::string restart_mode = "signal";
    std::string source_dir;
    std::string driver_root = "/";
    std::string dev_root = "/";
    std::string runtime_name = "enflame";
    std::string handover_file;
    int recheck = 10;
    bool set_as_default = false;
    bool enable_nri = false;
    std::string nri_socket = "/var/run/nri/nri.sock";
    bool wait = false;
    /// --accept-envvar-when-unprivileged: "true", "false" or "" (not given).
    std::string accept_envvar;
};

/// The pod annotation the operator sets on an installer pod it is about to replace with a new
/// version whose install flags are the same (k8s/operator/roll.hpp): the new pod takes the
/// toolkit over as it is, so the engine is restarted only if the new version changes its config.
constexpr const char* kHandoverLine = "enflame.com/toolkit-handover=\"true\"";

/// True when --handover-file (the pod's annotations as a downward API volume writes them, one
/// `key="value"` a line) holds the operator's handover mark.
bool handing_over(const ToolkitArgs& a) {
    if (a.handover_file.empty()) return false;
    auto text = inject::fs::read_file(a.handover_file, kMaxText);
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

inject::Error input_error(const std::string& what) {
    return inject::Error(inject::Errc::InvalidInput, what);
}

/// Puts `original` back (nullopt: removes the file).
inject::Result<void> restore(const HostRoot& h, const std::string& host_path,
                             const std::optional<std::string>& original) {
    if (original) return h.write(host_path, *original, 0644);
    return h.remove(host_path);
}

/// Creates `host_dir` and its missing parents in the root, recording each folder it created
/// (host path) so uninstall can remove them again.
inject::Result<void> make_dirs(const HostRoot& h, const std::string& host_dir, json& created) {
    std::vector<std::string> made;
    auto r = h.make_dirs(host_dir, made);
    for (auto& d : made) created.push_back(std::move(d));  // recorded even when a later one failed
    return r;
}

/// The first of the engine's usual binary paths present under the root ("" if none).
std::string engine_binary(const HostRoot& h, std::string_view engine) {
    const std::string bin = engine == "docker" ? "dockerd" : std::string(engine);
    for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/usr/sbin/", "/bin/"}) {
        const std::string host = dir + bin;
        if (h.executable(host)) return host;
    }
    return "";
}

/// --runtime auto: containerd, else CRI-O, else Docker (the order kubelet's engines are
/// usually found in; a node with dockerd still runs pods through containerd).
inject::Result<std::string> pick_engine(const ToolkitArgs& a, const HostRoot& h) {
    if (a.engine != "auto") {
        INJECT_TRY(auto e, rc::parse_engine(a.engine));
        std::string name(rc::engine_name(e));
        if (engine_binary(h, name).empty())
            return inject::fail(inject::Errc::NotFound,
                                "--runtime " + a.engine + ": " + name + " is not installed under '" +
                                    a.root + "' (no usr/bin, usr/local/bin, usr/sbin or bin/" +
                                    (name == "docker" ? "dockerd" : name) + ")");
        return name;
    }
    for (const char* e : {"containerd", "crio", "docker"})
        if (!engine_binary(h, e).empty()) return std::string(e);
    return inject::fail(inject::Errc::NotFound,
                        "--runtime auto: no container engine (containerd, crio, dockerd) is "
                        "installed under '" + a.root + "'");
}

std::string default_socket(std::string_view engine) {
    if (engine == "containerd") return "/run/containerd/containerd.sock";
    if (engine == "crio") return "/var/run/crio/crio.sock";
    return "/var/run/docker.sock";
}

/// Makes the engine load its changed config. containerd has no reload (SIGHUP would kill it
/// uncleanly): it gets SIGTERM, a clean stop its service manager (systemd Restart=always)
/// follows with a start. dockerd and CRI-O reload their config on SIGHUP.
void signal_engine(const ToolkitArgs& a, const HostRoot& h, const std::string& engine,
                   const std::string& socket) {
    if (a.restart_mode == "none") {
        std::cout << "note: --restart-mode none: restart " << engine << " to load the change\n";
        return;
    }
    const std::string path = h.show(socket);
    const pid_t pid = h.socket_owner(socket);
    if (pid <= 0) {
        std::cout << "note: " << engine << " is not running (nothing answers on '" << path
                  << "'): it loads the change when it starts\n";
        return;
    }
    const int sig = engine == "containerd" ? SIGTERM : SIGHUP;
    if (::kill(pid, sig) != 0) {
        std::cout << "warning: cannot signal " << engine << " (pid " << pid
                  << "): " << std::strerror(errno) << "; restart it to load the change\n";
        return;
    }
    std::cout << "signalled: " << engine << " (pid " << pid << ") with "
              << (sig == SIGTERM ? "SIGTERM (its service manager restarts it)" : "SIGHUP (reload)")
              << "\n";
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

/// The state file's host path.
std::string state_path(const ToolkitArgs& a) { return (fsys::path(a.toolkit_dir) / kStateName).string(); }

inject::Result<std::optional<json>> read_state(const ToolkitArgs& a, const HostRoot& h) {
    INJECT_TRY(auto text, h.read(state_path(a), kMaxText));
    if (!text) return std::optional<json>();
    auto j = json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("engine"))
        return inject::fail(input_error("'" + h.show(state_path(a)) + "': not a state file of ours"));
    return std::optional<json>(std::move(j));
}

inject::Result<void> write_state(const ToolkitArgs& a, const HostRoot& h, const json& st) {
    return h.write(state_path(a), st.dump(2) + "\n", 0644);
}

std::optional<std::string> opt_string(const json& j) {
    if (j.is_null()) return std::nullopt;
    return j.get<std::string>();
}

/// Undoes what the state file records, last step first. Every step runs even when one fails;
/// the first error is returned.
inject::Result<bool> undo_state(const ToolkitArgs& a, const HostRoot& h, const json& st) {
    std::optional<inject::Error> first;
    auto keep = [&first](inject::Result<void> r) {
        if (!r && !first) first = std::move(r).error();
    };
    bool engine_changed = false;
    if (st.value("engine_configured", false)) {
        auto r = engine_args(st);
        r.uninstall = true;
        auto changes = plan(r, h);
        if (!changes) {
            keep(inject::fail(std::move(changes).error()));
        } else {
            auto changed = apply_changes(h, *changes, false);
            if (!changed)
                keep(inject::fail(std::move(changed).error()));
            else
                engine_changed = *changed;
        }
    }
    for (const char* key : {"cdi_spec", "toolkit_config"}) {
        if (!st.contains(key)) continue;
        const auto& f = st.at(key);
        const auto path = f.at("path").get<std::string>();
        keep(restore(h, path, opt_string(f.at("original"))));
        std::cout << (f.at("original").is_null() ? "removed: " : "restored: ") << h.show(path) << "\n";
    }
    for (const auto& name : st.value("files", json::array()))
        keep(h.remove((fsys::path(a.toolkit_dir) / name.get<std::string>()).string()));
    keep(h.remove(state_path(a)));
    const auto dirs = st.value("created_dirs", json::array());
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)  // deepest first; only when empty
        h.remove_dir_if_empty(it->get<std::string>());
    if (first) return inject::fail(std::move(*first));
    return engine_changed;
}

inject::Result<void> copy_binaries(const ToolkitArgs& a, const HostRoot& h, json& st) {
    for (const auto& name : kBinaries) {
        const auto src = (fsys::path(a.source_dir) / name).string();
        auto bytes = inject::fs::read_file(src, kMaxBinary);
        if (!bytes) return inject::fail(std::move(bytes).error().context("--source-dir: reading '" + src + "'"));
        const auto dst = (fsys::path(a.toolkit_dir) / name).string();
        INJECT_TRY(auto now, h.read(dst, kMaxBinary));
        if (std::find(st["files"].begin(), st["files"].end(), name) == st["files"].end())
            st["files"].push_back(name);
        if (now && *now == *bytes) {
            std::cout << "unchanged: " << h.show(dst) << "\n";
            continue;
        }
        // forced: an existing file would keep its own mode, and this one has to run
        INJECT_TRY_VOID(h.write(dst, *bytes, 0755, true));
        std::cout << "installed: " << h.show(dst) << "\n";
    }
    return inject::ok();
}

/// Writes a file we own while installed: the first install keeps its original bytes in the
/// state so uninstall puts them back.
inject::Result<void> own_file(const ToolkitArgs& a, const HostRoot& h, json& st, const char* key,
                              const std::string& host_path, const std::string& text) {
    INJECT_TRY(auto now, h.read(host_path, kMaxText));
    if (!st.contains(key)) {
        st[key] = {{"path", host_path}, {"original", now ? json(*now) : json(nullptr)}};
        INJECT_TRY_VOID(write_state(a, h, st));
    }
    if (now && *now == text) {
        std::cout << "unchanged: " << h.show(host_path) << "\n";
        return inject::ok();
    }
    INJECT_TRY_VOID(h.write(host_path, text, 0644));
    std::cout << "updated: " << h.show(host_path) << "\n";
    return inject::ok();
}

/// The spec, from the copied enflame-ctk run chrooted into the host with the toolkit config:
/// its paths (devices, libraries, the hook) are the host's own.
inject::Result<void> write_cdi_spec(const ToolkitArgs& a, const HostRoot& h, json& st) {
    const auto host_spec = (fsys::path(a.cdi_dir) / kSpecName).string();
    // generated next to the spec under a name no CDI reader loads, then compared and moved
    const auto host_new = (fsys::path(a.cdi_dir) / ".enflame.com-gpu.yaml.new").string();
    const auto ctk = (fsys::path(a.toolkit_dir) / "enflame-ctk").string();
    INJECT_TRY(auto gen, run_in_root(a.root, {ctk, "--config", kToolkitConfig, "cdi", "generate",
                                              "--format", "yaml", "--output", host_new}));
    // read in the host's root: the file is where the chrooted enflame-ctk wrote it, behind the
    // host's own links (`/var/run` -> `/run`), not behind the pod's
    auto text = h.read(host_new, kMaxText);
    (void)h.remove(host_new);
    if (gen.status != 0)
        return inject::fail(inject::Errc::Io, "generating the CDI spec: " + last_line(gen.output));
    if (!text) return inject::fail(std::move(text).error());
    if (!*text) return inject::fail(inject::Errc::Io, "generating the CDI spec: no output");
    return own_file(a, h, st, "cdi_spec", host_spec, **text);
}

/// The engine's own check of its config after our change; an error names its complaint.
inject::Result<void> engine_accepts(const ToolkitArgs& a, const HostRoot& h, const std::string& engine,
                                    const std::string& config) {
    if (engine != "containerd") return inject::ok();  // dockerd/crio: checked by their reload
    const auto bin = engine_binary(h, engine);
    INJECT_TRY(auto r, run_in_root(a.root, {bin, "--config", config, "config", "dump"}));
    if (r.status != 0)
        return inject::fail(input_error("containerd rejects '" + config +
                                        "' with our runtime: " + last_line(r.output)));
    return inject::ok();
}

inject::Result<void> configure_engine(const ToolkitArgs& a, const HostRoot& h, json& st,
                                      const std::string& socket) {
    auto r = engine_args(st);
    INJECT_TRY(auto changes, plan(r, h));
    // What the files hold now, so a change the engine refuses is put back byte for byte.
    std::vector<std::pair<std::string, std::optional<std::string>>> before;
    for (const auto& c : changes) {
        INJECT_TRY(auto now, h.read(c.path, kMaxText));
        INJECT_TRY(auto bak, h.read(rc::backup_path(c.path), kMaxText));
        before.emplace_back(c.path, std::move(now));
        before.emplace_back(rc::backup_path(c.path), std::move(bak));
    }
    st["engine_configured"] = true;
    INJECT_TRY_VOID(write_state(a, h, st));
    auto changed = apply_changes(h, changes, false);
    inject::Result<void> checked = inject::ok();
    if (!changed)
        checked = inject::fail(std::move(changed).error());
    else if (*changed)
        checked = engine_accepts(a, h, r.engine, r.config);
    if (!checked) {
        for (const auto& [path, bytes] : before) (void)restore(h, path, bytes);
        st["engine_configured"] = false;
        (void)write_state(a, h, st);
        return inject::fail(std::move(checked).error().context("rolled back"));
    }
    if (*changed) signal_engine(a, h, r.engine, socket);
    return inject::ok();
}

/// Checks the flags and opens the host's root: every host path below is resolved in it.
inject::Result<HostRoot> open_host(const ToolkitArgs& a) {
    std::error_code ec;
    if (!fsys::is_directory(a.root, ec))
        return inject::fail(input_error("--host-root '" + a.root + "': not a folder"));
    const auto relative = [](const std::string& p) { return p.empty() || p.front() != '/'; };
    for (const auto* p : {&a.toolkit_dir, &a.cdi_dir, &a.driver_root, &a.dev_root, &a.nri_socket})
        if (relative(*p)) return inject::fail(input_error("'" + *p + "': host paths must be absolute"));
    for (const auto* p : {&a.engine_config, &a.engine_socket})  // empty: the engine's usual one
        if (!p->empty() && relative(*p))
            return inject::fail(input_error("'" + *p + "': host paths must be absolute"));
    if (a.restart_mode != "signal" && a.restart_mode != "none")
        return inject::fail(input_error("--restart-mode '" + a.restart_mode + "': want signal or none"));
    auto h = HostRoot::open(a.root);
    if (!h) return inject::fail(std::move(h).error().context("--host-root"));
    return h;
}

/// The state of a first install: what it is about to do, before anything is done.
inject::Result<json> first_state(const ToolkitArgs& a, const std::string& engine) {
    INJECT_TRY(auto e, rc::parse_engine(engine));
    std::vector<std::string> spec_dirs{"/etc/cdi"};
    if (a.cdi_dir != "/etc/cdi") spec_dirs.push_back(a.cdi_dir);
    const auto config = a.engine_config.empty() ? rc::default_config_path(e) : a.engine_config;
    json st = {{"engine", engine},
               {"engine_config", config},
               {"runtime_name", a.runtime_name},
               {"runtime_path", (fsys::path(a.toolkit_dir) / "enflame-container-runtime").string()},
               {"set_as_default", a.set_as_default},
               {"nri_enabled", a.enable_nri},
               {"nri_socket", a.nri_socket},
               {"cdi_spec_dirs", spec_dirs},
               {"engine_configured", false},
               {"files", json::array()},
               {"created_dirs", json::array()}};
    if (auto d = rc::drop_in_for(e, config)) st["drop_in"] = *d;
    return st;
}

/// accept-envvar-when-unprivileged for the toolkit config: the flag when given; else the value
/// in the config this installer wrote before (an administrator's edit of it is kept); else
/// false: on a shared node the environment, which any pod sets, gives no card
/// (docs/security.md). A config from before the state recorded it (an older installer wrote
/// true) counts as not ours.
inject::Result<bool> accept_envvar(const ToolkitArgs& a, const HostRoot& h, const json& st) {
    if (!a.accept_envvar.empty()) return a.accept_envvar == "true";
    if (!st.contains("accept_envvar_written")) return false;
    INJECT_TRY(auto now, h.read(kToolkitConfig, kMaxText));
    if (!now) return false;
    auto cfg = inject::config::parse(*now, h.show(kToolkitConfig));
    if (!cfg) return false;  // not ours to trust: the safe value, and own_file rewrites it
    return cfg->runtime.accept_envvar_when_unprivileged;
}

inject::Result<void> install_steps(const ToolkitArgs& a, const HostRoot& h, json& st) {
    auto& dirs = st["created_dirs"];
    INJECT_TRY_VOID(make_dirs(h, a.toolkit_dir, dirs));
    INJECT_TRY_VOID(write_state(a, h, st));  // from here on, uninstall can undo what follows
    INJECT_TRY_VOID(make_dirs(h, fsys::path(kToolkitConfig).parent_path().string(), dirs));
    INJECT_TRY_VOID(make_dirs(h, a.cdi_dir, dirs));
    if (const auto r = engine_args(st); st.at("engine") != "docker") {
        INJECT_TRY(auto e, rc::parse_engine(r.engine));
        const auto drop_in = r.drop_in.empty() ? *rc::default_drop_in(e) : r.drop_in;
        INJECT_TRY_VOID(make_dirs(h, fsys::path(drop_in).parent_path().string(), dirs));
    }
    INJECT_TRY_VOID(write_state(a, h, st));
    INJECT_TRY_VOID(copy_binaries(a, h, st));
    INJECT_TRY_VOID(write_state(a, h, st));
    inject::config::Config cfg;
    cfg.source = kToolkitConfig;
    cfg.cli.driver_root = a.driver_root;
    cfg.cli.dev_root = a.dev_root;
    cfg.runtime.hook_path = (fsys::path(a.toolkit_dir) / "enflame-container-runtime-hook").string();
    cfg.runtime.spec_dirs = st.at("cdi_spec_dirs").get<std::vector<std::string>>();
    INJECT_TRY(cfg.runtime.accept_envvar_when_unprivileged, accept_envvar(a, h, st));
    st["accept_envvar_written"] = cfg.runtime.accept_envvar_when_unprivileged;
    INJECT_TRY_VOID(own_file(a, h, st, "toolkit_config", kToolkitConfig, inject::config::to_toml(cfg)));
    INJECT_TRY_VOID(write_cdi_spec(a, h, st));
    INJECT_TRY_VOID(write_state(a, h, st));
    const auto engine = st.at("engine").get<std::string>();
    return configure_engine(a, h, st, a.engine_socket.empty() ? default_socket(engine) : a.engine_socket);
}

/// A re-install whose --enable-nri or --nri-socket differs from the installed state's: the
/// engine's edit is undone with the old choice first (the state then says "not configured"),
/// so configure_engine() writes the new one and signals the engine once it changed.
inject::Result<void> follow_nri_choice(const ToolkitArgs& a, const HostRoot& h, json& st) {
    const auto was = engine_args(st);
    if (was.opts.nri_enabled == a.enable_nri &&
        (!a.enable_nri || was.opts.nri_socket == a.nri_socket))
        return inject::ok();
    if (st.value("engine_configured", false)) {
        auto undo = was;
        undo.uninstall = true;
        INJECT_TRY(auto changes, plan(undo, h));
        INJECT_TRY(auto changed, apply_changes(h, changes, false));
        (void)changed;
        st["engine_configured"] = false;
    }
    st["nri_enabled"] = a.enable_nri;
    st["nri_socket"] = a.nri_socket;
    return write_state(a, h, st);
}

inject::Result<void> install(const ToolkitArgs& a) {
    INJECT_TRY(auto h, open_host(a));
    INJECT_TRY(auto engine, pick_engine(a, h));
    INJECT_TRY(auto prev, read_state(a, h));
    if (prev && prev->at("engine") != engine)
        return inject::fail(input_error("installed for " + prev->at("engine").get<std::string>() +
                                        " already: run 'enflame-ctk toolkit uninstall' first"));
    json st;
    if (prev) {
        st = *prev;
        INJECT_TRY_VOID(follow_nri_choice(a, h, st));
    } else {
        INJECT_TRY(st, first_state(a, engine));
    }
    auto r = install_steps(a, h, st);
    if (r) {
        std::cout << "installed: enflame runtime for " << engine
                  << (st.value("nri_enabled", false) ? ", NRI on" : "")
                  << " (state: " << h.show(state_path(a)) << ")\n";
        return inject::ok();
    }
    // Nothing half-configured: a first install that failed is undone whole; a re-install
    // that failed keeps the earlier, complete one (its engine edit was rolled back above).
    if (!prev) (void)undo_state(a, h, st);
    return inject::fail(std::move(r).error());
}

/// An exclusive lock on the toolkit folder (flock on the folder itself, released when the fd
/// closes), taken by uninstall and by the waiting installer's re-check; nullopt when the folder
/// does not exist (nothing installed).
inject::Result<std::optional<inject::fs::UniqueFd>> lock_toolkit(const ToolkitArgs& a,
                                                                 const HostRoot& h) {
    auto fd = inject::fs::open_in_root(h.fd(), a.toolkit_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!fd) {
        if (!h.exists(a.toolkit_dir)) return std::optional<inject::fs::UniqueFd>{};
        return inject::fail(std::move(fd).error());
    }
    while (::flock(fd->get(), LOCK_EX) != 0)
        if (errno != EINTR)
            return inject::fail(inject::Errc::Io, h.show(a.toolkit_dir) + ": flock: " +
                                                      std::strerror(errno));
    return std::optional<inject::fs::UniqueFd>{std::move(*fd)};
}

inject::Result<void> uninstall(const ToolkitArgs& a) {
    INJECT_TRY(auto h, open_host(a));
    if (handing_over(a)) {
        std::cout << "handing over: the operator replaces this pod with one of the same install "
                     "flags; it finds the toolkit in place (nothing undone, the engine left "
                     "running)\n";
        return inject::ok();
    }
    // the DaemonSet's waiting installer re-checks under the same lock: it never sees half of
    // the undo, and finds no state after it (nothing to repair)
    INJECT_TRY(auto lock, lock_toolkit(a, h));
    (void)lock;
    INJECT_TRY(auto st, read_state(a, h));
    if (!st) {
        std::cout << "nothing to undo: no " << h.show(state_path(a)) << "\n";
        return inject::ok();
    }
    INJECT_TRY(auto engine_changed, undo_state(a, h, *st));
    if (engine_changed) {
        const auto engine = st->at("engine").get<std::string>();
        signal_engine(a, h, engine, a.engine_socket.empty() ? default_socket(engine) : a.engine_socket);
        if (engine == "docker")  // a reload applies the keys a file has, and ours are gone
            std::cout << "note: dockerd lists the runtime until it restarts (its SIGHUP reload "
                         "keeps runtimes the file no longer names)\n";
    }
    std::cout << "uninstalled: " << h.show(a.toolkit_dir) << "\n";
    return inject::ok();
}

/// Installed as the state file says: complete, every file it names there, and the engine's
/// config still holding our runtime (configure would change nothing). The error says what is
/// missing.
inject::Result<json> check_installed(const ToolkitArgs& a, const HostRoot& h) {
    INJECT_TRY(auto st, read_state(a, h));
    if (!st) return inject::fail(inject::Errc::NotFound, "not installed: no " + h.show(state_path(a)));
    if (!st->value("engine_configured", false))
        return inject::fail(inject::Errc::NotFound, "not installed: the engine is not configured yet");
    for (const auto& name : st->at("files"))
        if (!h.exists((fsys::path(a.toolkit_dir) / name.get<std::string>()).string()))
            return inject::fail(inject::Errc::NotFound, "missing: " + name.get<std::string>());
    for (const char* key : {"toolkit_config", "cdi_spec"})
        if (!st->contains(key) || !h.exists(st->at(key).at("path").get<std::string>()))
            return inject::fail(inject::Errc::NotFound, std::string("missing: ") + key);
    INJECT_TRY(auto changes, plan(engine_args(*st), h));
    for (const auto& c : changes) {
        INJECT_TRY(auto now, h.read(c.path, kMaxText));
        if (!now || *now != c.content)
            return inject::fail(inject::Errc::NotFound, "'" + h.show(c.path) + "' lacks the enflame runtime");
    }
    return std::move(*st);
}

/// Each installed binary runs on this host: `NAME --version`, run as install runs enflame-ctk,
/// starts with its name. A binary built for another host (a library or glibc it lacks, another
/// architecture) fails with the loader's or the kernel's reason (docs/host-binaries.md).
inject::Result<void> binaries_run(const ToolkitArgs& a, const json& st) {
    for (const auto& f : st.at("files")) {
        const auto name = f.get<std::string>();
        INJECT_TRY(auto r, run_in_root(a.root, {(fsys::path(a.toolkit_dir) / name).string(), "--version"}));
        if (r.output.rfind(name + " ", 0) == 0) continue;
        const auto why = last_line(r.output);
        return inject::fail(inject::Errc::Unsupported,
                            name + " cannot run on this host: " +
                                (why.empty() ? "exit " + std::to_string(r.status) + ", no output" : why));
    }
    return inject::ok();
}

/// Ready when check_installed finds everything in place and the binaries run (the readiness
/// probe).
inject::Result<void> status(const ToolkitArgs& a) {
    INJECT_TRY(auto h, open_host(a));
    // not Ready: the operator waits for this to know the pod has seen its mark before it
    // deletes the pod (the preStop then leaves the toolkit in place)
    if (handing_over(a))
        return inject::fail(inject::Errc::Conflict,
                            "handing over to a new installer (enflame.com/toolkit-handover)");
    INJECT_TRY(auto st, check_installed(a, h));
    INJECT_TRY_VOID(binaries_run(a, st));
    std::cout << "installed: " << st.at("engine").get<std::string>() << " uses "
              << st.at("runtime_path").get<std::string>() << "\n";
    return inject::ok();
}

/// Blocks until SIGTERM or SIGINT (a DaemonSet's container has to keep running). Every
/// `a.recheck` seconds (0: never) it checks the install is still in place and, when something
/// rewrote the engine's config (a config manager, a package upgrade) or removed a piece,
/// installs again: the engine is signalled only then, and only when its config changed
/// (NVIDIA's toolkit loses its runtime silently in that case: gpu-operator #207, #598, #1651).
void wait_for_stop(const ToolkitArgs& a) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    std::cout << std::flush;
    const timespec tick{static_cast<time_t>(a.recheck), 0};
    for (;;) {
        const int sig =
            a.recheck > 0 ? ::sigtimedwait(&set, nullptr, &tick) : ::sigwaitinfo(&set, nullptr);
        if (sig > 0) return;
        if (errno != EAGAIN || handing_over(a)) continue;  // EINTR; or leaving: leave it as it is
        auto h = open_host(a);
        if (!h) continue;
        // An uninstall (the pod's preStop runs it before this process gets SIGTERM) holds the
        // lock while it undoes and removes the state: no state is no install to repair. The
        // re-install fought the preStop's undo before (the engine's config put back and the
        // engine signalled again, the pod stuck terminating).
        auto lock = lock_toolkit(a, *h);
        if (!lock || !*lock) continue;
        if (auto st = read_state(a, *h); !st || !*st) continue;
        auto in_place = check_installed(a, *h);
        if (in_place) continue;
        std::cout << "drift: " << in_place.error().what() << ": installing again\n";
        if (auto r = install(a); !r)
            std::cout << "warning: repairing the install: " << r.error().what() << " (again in "
                      << a.recheck << " s)\n";
        std::cout << std::flush;
    }
}

std::string self_dir() {
    std::error_code ec;
    auto self = fsys::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("/usr/bin") : self.parent_path().string();
}

void add_common(CLI::App* cmd, ToolkitArgs& a) {
    cmd->add_option("--host-root", a.root, "where the host's root is mounted")->capture_default_str();
    cmd->add_option("--toolkit-dir", a.toolkit_dir, "host folder for the runtime, hook and enflame-ctk")
        ->capture_default_str();
    cmd->add_option("--engine-socket", a.engine_socket,
                    "the engine's socket, to find the pid to signal (default: its usual path)");
    cmd->add_option("--restart-mode", a.restart_mode,
                    "signal: SIGTERM containerd (its service manager restarts it), SIGHUP dockerd "
                    "or crio, only when their config changed; none: leave it to the operator")
        ->capture_default_str();
}

void add_handover(CLI::App* cmd, ToolkitArgs& a) {
    cmd->add_option(
        "--handover-file", a.handover_file,
        "the pod's annotations (downward API); with enflame.com/toolkit-handover=\"true\" "
        "(set by enflame-gpu-operator before it replaces the pod) uninstall undoes "
        "nothing and status reports not ready");
}

void register_toolkit(CLI::App& app, Context& /*ctx*/) {
    auto* tk = app.add_subcommand("toolkit", "install the toolkit on a host (from a pod) or remove it");
    tk->require_subcommand(1);
    auto a = std::make_shared<ToolkitArgs>();
    a->source_dir = self_dir();
    auto* inst = tk->add_subcommand("install", "copy the toolkit onto the host and wire it into the engine");
    add_common(inst, *a);
    inst->add_option("--runtime", a->engine, "the engine: auto, containerd, crio or docker")->capture_default_str();
    inst->add_option("--engine-config", a->engine_config, "the engine's main config (host path; default: its usual one)");
    inst->add_option("--cdi-dir", a->cdi_dir, "host folder for the CDI spec")->capture_default_str();
    inst->add_option("--source-dir", a->source_dir, "where the binaries to copy are (default: this binary's folder)");
    inst->add_option("--driver-root", a->driver_root, "driver-root written into the toolkit config (host path)")
        ->capture_default_str();
    inst->add_option("--dev-root", a->dev_root, "dev-root written into the toolkit config (host path)")
        ->capture_default_str();
    inst->add_option("--runtime-name", a->runtime_name, "the runtime's name in the engine")->capture_default_str();
    inst->add_flag("--set-as-default", a->set_as_default, "make it the engine's default runtime");
    inst->add_flag(
            "--enable-nri", a->enable_nri,
            "also turn on the engine's NRI (containerd 1.7 has it off), for enflame-nri-plugin")
        ->envname("ENABLE_NRI");
    inst->add_option("--nri-socket", a->nri_socket,
                     "the NRI socket --enable-nri writes (host path)")
        ->capture_default_str();
    inst->add_option("--accept-envvar-when-unprivileged", a->accept_envvar,
                     "true: an unprivileged container's ENFLAME_VISIBLE_DEVICES gives cards (only "
                     "where every tenant is trusted); default: keep the installed config's value, "
                     "false on a first install")
        ->check(CLI::IsMember({"true", "false"}))
        ->envname("ACCEPT_ENVVAR_WHEN_UNPRIVILEGED");
    inst->add_flag("--wait", a->wait, "after installing, keep running until SIGTERM (a DaemonSet's main process)");
    inst->add_option(
            "--recheck-interval", a->recheck,
            "with --wait: every this many seconds check the install is in place and repair "
            "it (the engine signalled only if its config changed); 0: never")
        ->capture_default_str()
        ->check(CLI::Range(0, 86400));
    inst->callback([a] {
        auto r = install(*a);
        if (!r) throw Exit{report(r.error())};
        if (a->wait) wait_for_stop(*a);
    });
    auto* un = tk->add_subcommand("uninstall", "undo exactly what install did (the state file says what)");
    add_common(un, *a);
    add_handover(un, *a);
    un->callback([a] {
        auto r = uninstall(*a);
        if (!r) throw Exit{report(r.error())};
    });
    auto* st = tk->add_subcommand("status", "exit 0 when the toolkit is installed, wired in, and its binaries run here (a readiness probe)");
    add_common(st, *a);
    add_handover(st, *a);
    st->callback([a] {
        auto r = status(*a);
        if (!r) throw Exit{report(r.error())};
    });
}

const Registrar reg{45, register_toolkit};

}  // namespace
}  // namespace ctk
