// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk toolkit install|uninstall|status`: the flags, and the lines and exit code of what
// inject::toolkit (inject/toolkit.hpp, libinject/src/toolkit/) did: the installer NVIDIA calls
// the "toolkit container", run from a pod that mounts the host's root at --host-root.
#include <filesystem>
#include <iostream>
#include <memory>

#include "context.hpp"
#include "inject/toolkit.hpp"

namespace fsys = std::filesystem;

namespace ctk {
namespace {

struct ToolkitArgs : inject::toolkit::Options {
    bool wait = false;  ///< install --wait: then watch() until SIGTERM
};

void print(const inject::toolkit::Report& r) {
    for (const auto& l : r.lines) std::cout << l << "\n";
}

/// Prints the report's lines; an error leaves with its exit code.
void finish(const inject::toolkit::Report& r) {
    print(r);
    if (!r.result) throw Exit{report(r.result.error())};
}

std::string self_dir() {
    std::error_code ec;
    auto self = fsys::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("/usr/bin") : self.parent_path().string();
}

void add_common(CLI::App* cmd, ToolkitArgs& a) {
    cmd->add_option("--host-root", a.root, "where the host's root is mounted")
        ->capture_default_str();
    cmd->add_option("--toolkit-dir", a.toolkit_dir,
                    "host folder for the runtime, hook and enflame-ctk")
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
    auto* tk =
        app.add_subcommand("toolkit", "install the toolkit on a host (from a pod) or remove it");
    tk->require_subcommand(1);
    auto a = std::make_shared<ToolkitArgs>();
    a->source_dir = self_dir();
    auto* inst =
        tk->add_subcommand("install", "copy the toolkit onto the host and wire it into the engine");
    add_common(inst, *a);
    inst->add_option("--runtime", a->engine, "the engine: auto, containerd, crio or docker")
        ->capture_default_str();
    inst->add_option("--engine-config", a->engine_config,
                     "the engine's main config (host path; default: its usual one)");
    inst->add_option("--cdi-dir", a->cdi_dir, "host folder for the CDI spec")
        ->capture_default_str();
    inst->add_option("--source-dir", a->source_dir,
                     "where the binaries to copy are (default: this binary's folder)");
    inst->add_option("--driver-root", a->driver_root,
                     "driver-root written into the toolkit config (host path)")
        ->capture_default_str();
    inst->add_option("--dev-root", a->dev_root,
                     "dev-root written into the toolkit config (host path)")
        ->capture_default_str();
    inst->add_option("--runtime-name", a->runtime_name, "the runtime's name in the engine")
        ->capture_default_str();
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
    inst->add_flag("--wait", a->wait,
                   "after installing, keep running until SIGTERM (a DaemonSet's main process)");
    inst->add_option(
            "--recheck-interval", a->recheck,
            "with --wait: every this many seconds check the install is in place and repair "
            "it (the engine signalled only if its config changed); 0: never")
        ->capture_default_str()
        ->check(CLI::Range(0, 86400));
    inst->callback([a] {
        finish(inject::toolkit::install(*a));
        if (!a->wait) return;
        std::cout << std::flush;
        inject::toolkit::watch(*a, [](const inject::toolkit::Report& r) {
            print(r);
            std::cout << std::flush;
        });
    });
    auto* un =
        tk->add_subcommand("uninstall", "undo exactly what install did (the state file says what)");
    add_common(un, *a);
    add_handover(un, *a);
    un->callback([a] { finish(inject::toolkit::uninstall(*a)); });
    auto* st = tk->add_subcommand("status",
                                  "exit 0 when the toolkit is installed, wired in, and its "
                                  "binaries run here (a readiness probe)");
    add_common(st, *a);
    add_handover(st, *a);
    st->callback([a] { finish(inject::toolkit::status(*a)); });
}

const Registrar reg{45, register_toolkit};

}  // namespace
}  // namespace ctk
