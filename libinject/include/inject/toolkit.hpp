// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// `enflame-ctk toolkit install|uninstall|status`: what NVIDIA's "toolkit container" does, from
/// inside a pod that mounts the host's root at Options::root. install copies the runtime, hook
/// and enflame-ctk into the host's toolkit folder, writes the toolkit config, generates the CDI
/// spec (by running the copied enflame-ctk chrooted into the host, so the spec names host
/// paths), wires the runtime into the engine with the same edits as `runtime configure`
/// (inject/runtime_plan.hpp), lets the engine itself check the result (containerd: `config
/// dump`, rolled back when it refuses), and signals the engine only when its config changed. A
/// state file in the toolkit folder records what was done; uninstall undoes exactly that and
/// leaves the engine's config byte-identical.
///
/// Nothing here prints: each call returns a Report, the lines the command prints on stdout and
/// how it ended. Sources: libinject/src/toolkit/ (install.cpp, uninstall.cpp, status.cpp, the
/// state file in state.cpp, the engine in engine.cpp, the CDI spec in cdi_spec.cpp).

#include <functional>
#include <string>
#include <vector>

#include "inject/result.hpp"

namespace inject::toolkit {

/// The command's flags; every path but `root` and `source_dir` is a host path.
struct Options {
    std::string root = "/";  ///< where the host's root is mounted (--host-root)
    std::string toolkit_dir = "/usr/local/enflame/toolkit";
    std::string engine = "auto";  ///< --runtime: auto, containerd, crio or docker
    std::string engine_config;    ///< "": the engine's usual one
    std::string engine_socket;    ///< "": the engine's usual one
    std::string cdi_dir = "/var/run/cdi";
    std::string restart_mode = "signal";  ///< signal or none
    std::string source_dir;               ///< where the binaries to copy are (a path of ours)
    std::string driver_root = "/";
    std::string dev_root = "/";
    std::string runtime_name = "enflame";
    /// The pod's annotations as a downward API volume writes them ("" : none).
    std::string handover_file;
    int recheck = 10;  ///< watch(): seconds between checks; 0: never
    bool set_as_default = false;
    bool enable_nri = false;
    std::string nri_socket = "/var/run/nri/nri.sock";
    /// --accept-envvar-when-unprivileged: "true", "false" or "" (not given).
    std::string accept_envvar;
};

/// What a call did, for the command to print: its stdout lines in order (those of the steps
/// done before a failure too), and how it ended (an error is the command's `error: ` line and
/// exit code 1).
struct Report {
    std::vector<std::string> lines;
    Result<void> result;
};

/// Installs (or re-installs: only what changed is written, the engine signalled only when its
/// config changed). A first install that fails is undone whole; a re-install that fails keeps
/// the earlier, complete one.
[[nodiscard]] Report install(const Options& o);

/// Undoes what the state file records, under the toolkit folder's lock; with the operator's
/// handover mark in Options::handover_file, nothing. The runtime binary stays while a container
/// created through it is left (docs/toolkit.md), recorded so that a later uninstall (with no
/// state file) removes it once none is.
[[nodiscard]] Report uninstall(const Options& o);

/// Ready (result ok) when the install is complete and in place and its binaries run on this
/// host (the readiness probe); not Ready while handing over.
[[nodiscard]] Report status(const Options& o);

/// What refresh_cdi_spec() found.
enum class SpecRefresh {
    NotInstalled,  ///< no install state in Options::toolkit_dir (or no spec recorded yet)
    Unchanged,     ///< the spec already says what a generate says now: not written
    Updated,       ///< the spec was replaced
};

/// Regenerates the installed toolkit's CDI spec as install does (the copied enflame-ctk run
/// chrooted into Options::root with the toolkit config) and replaces the spec the state file
/// records only when the text differs (atomically, in the root). The state file is not written:
/// uninstall still puts back what the first install found. Holds the toolkit folder's lock, so
/// an uninstall never sees a spec written after it. Only Options::root and toolkit_dir are read.
/// For whoever changes the devices after install: the DRS manager (docs/drs-manager.md).
[[nodiscard]] Result<SpecRefresh> refresh_cdi_spec(const Options& o);

/// Blocks until SIGTERM or SIGINT (which it blocks in the calling thread): a DaemonSet's
/// container has to keep running. Every Options::recheck seconds (0: never) it checks the
/// install is still in place and, when something rewrote the engine's config (a config manager,
/// a package upgrade) or removed a piece, installs again: the engine is signalled only then, and
/// only when its config changed (NVIDIA's toolkit loses its runtime silently in that case:
/// gpu-operator #207, #598, #1651). `on_repair` gets each repair's report (its result is ok: a
/// failed repair is a warning line, tried again at the next check).
void watch(const Options& o, const std::function<void(const Report&)>& on_repair);

}  // namespace inject::toolkit
