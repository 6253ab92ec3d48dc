// SPDX-License-Identifier: Apache-2.0
// The container engine the toolkit wires the runtime into: which one is installed in the host's
// root, its own check of our edit (containerd: `config dump`, rolled back when it refuses), and
// the signal that makes it load the change.
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "toolkit_internal.hpp"

namespace inject::toolkit {

namespace rc = inject::runtime_config;

namespace {

/// The first of the engine's usual binary paths present under the root ("" if none).
std::string engine_binary(const HostRoot& h, std::string_view engine) {
    const std::string bin = engine == "docker" ? "dockerd" : std::string(engine);
    for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/usr/sbin/", "/bin/"}) {
        std::string host = dir + bin;
        if (h.executable(host)) return host;
    }
    return "";
}

/// The engine's own check of its config after our change; an error names its complaint.
Result<void> engine_accepts(const Options& o, const HostRoot& h, const std::string& engine,
                            const std::string& config) {
    if (engine != "containerd") return ok();  // dockerd/crio: checked by their reload
    const auto bin = engine_binary(h, engine);
    auto r = run_in_root(o.root, {bin, "--config", config, "config", "dump"});
    if (!r || r->exit_code != 0)
        return fail(input_error("containerd rejects '" + config + "' with our runtime: " +
                                (r ? process::last_line(r->out) : r.error().what())));
    return ok();
}

}  // namespace

Result<process::Output> run_in_root(const std::string& root, std::vector<std::string> argv) {
    process::Command c;
    c.path = argv.front();
    c.argv = std::move(argv);
    c.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
    c.timeout = std::chrono::seconds(60);
    c.root = root;
    c.merge_stderr = true;
    return process::run(c);
}

Result<std::string> pick_engine(const Options& o, const HostRoot& h) {
    // auto: the order kubelet's engines are usually found in (a node with dockerd still runs
    // pods through containerd)
    if (o.engine != "auto") {
        INJECT_TRY(auto e, rc::parse_engine(o.engine));
        std::string name(rc::engine_name(e));
        if (engine_binary(h, name).empty())
            return fail(Errc::NotFound, "--runtime " + o.engine + ": " + name +
                                            " is not installed under '" + o.root +
                                            "' (no usr/bin, usr/local/bin, usr/sbin or bin/" +
                                            (name == "docker" ? "dockerd" : name) + ")");
        return name;
    }
    for (const char* e : {"containerd", "crio", "docker"})
        if (!engine_binary(h, e).empty()) return std::string(e);
    return fail(Errc::NotFound,
                "--runtime auto: no container engine (containerd, crio, dockerd) is "
                "installed under '" +
                    o.root + "'");
}

std::string engine_socket(const Options& o, std::string_view engine) {
    if (!o.engine_socket.empty()) return o.engine_socket;
    if (engine == "containerd") return "/run/containerd/containerd.sock";
    if (engine == "crio") return "/var/run/crio/crio.sock";
    return "/var/run/docker.sock";
}

/// containerd has no reload (SIGHUP would kill it uncleanly): it gets SIGTERM, a clean stop its
/// service manager (systemd Restart=always) follows with a start. dockerd and CRI-O reload their
/// config on SIGHUP.
void signal_engine(const Options& o, const HostRoot& h, const std::string& engine, Lines& out) {
    if (o.restart_mode == "none") {
        out.push_back("note: --restart-mode none: restart " + engine + " to load the change");
        return;
    }
    const auto socket = engine_socket(o, engine);
    const std::string path = h.show(socket);
    const pid_t pid = h.socket_owner(socket);
    if (pid <= 0) {
        out.push_back("note: " + engine + " is not running (nothing answers on '" + path +
                      "'): it loads the change when it starts");
        return;
    }
    const int sig = engine == "containerd" ? SIGTERM : SIGHUP;
    if (::kill(pid, sig) != 0) {
        out.push_back("warning: cannot signal " + engine + " (pid " + std::to_string(pid) +
                      "): " + std::strerror(errno) + "; restart it to load the change");
        return;
    }
    out.push_back(
        "signalled: " + engine + " (pid " + std::to_string(pid) + ") with " +
        (sig == SIGTERM ? "SIGTERM (its service manager restarts it)" : "SIGHUP (reload)"));
}

Result<void> configure_engine(const Options& o, const HostRoot& h, json& st, Lines& out) {
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
    INJECT_TRY_VOID(write_state(o, h, st));
    auto changed = apply_changes(h, changes, out);
    const bool wrote = changed && *changed;
    Result<void> checked = ok();
    if (!changed)
        checked = fail(std::move(changed).error());
    else if (wrote)
        checked = engine_accepts(o, h, r.engine, r.config);
    if (!checked) {
        for (const auto& [path, bytes] : before) (void)restore(h, path, bytes);
        st["engine_configured"] = false;
        (void)write_state(o, h, st);
        return fail(std::move(checked).error().context("rolled back"));
    }
    if (wrote) signal_engine(o, h, r.engine, out);
    return ok();
}

}  // namespace inject::toolkit
