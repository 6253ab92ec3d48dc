// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk runtime configure|unconfigure`: wires enflame-container-runtime into Docker,
// containerd or CRI-O. inject::toolkit::plan picks the files and their new text and
// apply_changes writes them; this file parses the flags and prints what changed.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "context.hpp"
#include "inject/runtime_plan.hpp"

namespace ctk {
namespace {

using inject::toolkit::Change;
using inject::toolkit::HostRoot;
using inject::toolkit::RuntimeArgs;

/// enflame-container-runtime next to this binary (an installed package), else /usr/bin's.
std::string default_runtime_path() {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto sibling = self.parent_path() / "enflame-container-runtime";
        if (::access(sibling.c_str(), X_OK) == 0) return sibling.string();
    }
    return "/usr/bin/enflame-container-runtime";
}

/// --dry-run: the files as they would be written, on stdout (a "# PATH" line before each when
/// there are several).
void print_plan(const HostRoot& root, const std::vector<Change>& changes) {
    for (const auto& c : changes) {
        if (changes.size() > 1)
            std::cout << "# " << root.show(c.path) << (c.remove ? " (removed)" : "") << "\n";
        if (!c.remove) std::cout << c.content;
    }
}

void run(const RuntimeArgs& a) {
    if (a.opts.cdi_enabled && (a.engine == "crio" || a.engine == "cri-o"))
        std::cerr
            << "note: CRI-O has CDI on by default (1.23 and later); --cdi.enabled adds nothing\n";
    auto root = HostRoot::open("/");
    if (!root) throw Exit{report(root.error())};
    auto changes = plan(a, *root);
    if (!changes) throw Exit{report(changes.error())};
    if (a.dry_run) return print_plan(*root, *changes);
    std::vector<std::string> lines;
    auto changed = apply_changes(*root, *changes, lines);
    for (const auto& l : lines) std::cout << l << "\n";
    if (!changed) throw Exit{report(changed.error())};
    if (!*changed) return;
    if (a.engine == "docker" && a.uninstall)
        std::cout << "hint: restart dockerd to drop the runtime (its SIGHUP reload keeps a removed "
                     "default-runtime)\n";
    else if (a.engine == "docker")
        std::cout << "hint: send dockerd SIGHUP (or restart it) to load the change\n";
    else
        std::cout << "hint: restart " << a.engine << " to load the change\n";
}

void add_flags(CLI::App* cmd, RuntimeArgs& a, bool with_uninstall) {
    cmd->add_option("--runtime", a.engine, "the engine: docker, containerd or crio")->required();
    cmd->add_option("--config", a.config,
                    "the engine's main config (default: /etc/docker/daemon.json, "
                    "/etc/containerd/config.toml, /etc/crio/crio.conf)");
    cmd->add_option("--runtime-name", a.opts.runtime_name, "the name given to our runtime")
        ->capture_default_str();
    cmd->add_option("--runtime-path", a.opts.runtime_path, "path of enflame-container-runtime")
        ->capture_default_str();
    cmd->add_flag("--set-as-default", a.opts.set_as_default,
                  "make it the engine's default runtime");
    cmd->add_flag("--cdi.enabled", a.opts.cdi_enabled,
                  "turn on the engine's CDI support (docker features.cdi, containerd enable_cdi)");
    cmd->add_option("--cdi.spec-dirs", a.opts.cdi_spec_dirs, "containerd cdi_spec_dirs")
        ->capture_default_str();
    cmd->add_option("--crio.monitor-path", a.opts.monitor_path, "CRI-O monitor_path (conmon)")
        ->capture_default_str();
    cmd->add_flag("--enable-nri", a.opts.nri_enabled,
                  "turn on the engine's NRI for enflame-nri-plugin (containerd "
                  "[plugins.\"io.containerd.nri.v1.nri\"], crio [crio.nri])");
    cmd->add_option("--nri-socket", a.opts.nri_socket,
                    "the NRI socket written with --enable-nri (containerd socket_path, crio "
                    "nri_listen)")
        ->capture_default_str();
    cmd->add_option(
        "--drop-in", a.drop_in,
        "drop-in file for containerd/crio (default: conf.d/99-enflame.toml beside containerd's "
        "--config, /etc/crio/crio.conf.d/99-enflame.toml)");
    cmd->add_flag("--no-drop-in", a.no_drop_in,
                  "edit the main config in place instead of a drop-in");
    cmd->add_flag("--dry-run", a.dry_run, "print the result on stdout and change nothing");
    if (with_uninstall)
        cmd->add_flag("--uninstall", a.uninstall,
                      "remove what configure added (same as 'unconfigure')");
}

void register_runtime(CLI::App& app, Context& /*ctx*/) {
    auto* runtime = app.add_subcommand(
        "runtime", "configure a container engine to use enflame-container-runtime");
    runtime->require_subcommand(1);
    auto args = std::make_shared<RuntimeArgs>();
    args->opts.runtime_path = default_runtime_path();
    auto* conf = runtime->add_subcommand("configure",
                                         "add the enflame runtime to docker, containerd or crio");
    add_flags(conf, *args, true);
    conf->callback([args] { run(*args); });
    auto* unconf = runtime->add_subcommand("unconfigure", "remove what 'runtime configure' added");
    add_flags(unconf, *args, false);
    unconf->callback([args] {
        args->uninstall = true;
        run(*args);
    });
}

const Registrar reg{40, register_runtime};

}  // namespace
}  // namespace ctk
