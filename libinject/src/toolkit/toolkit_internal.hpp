// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the toolkit's files share (inject/toolkit.hpp is the interface): the state file
// (state.cpp), the engine (engine.cpp), and the install steps status.cpp repeats on drift.
// `out` is the caller's Report::lines: what the command prints, in order.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/fs.hpp"
#include "inject/host_root.hpp"
#include "inject/process.hpp"
#include "inject/result.hpp"
#include "inject/runtime_plan.hpp"
#include "inject/toolkit.hpp"

namespace inject::toolkit {

using json = nlohmann::ordered_json;
using Lines = std::vector<std::string>;

inline constexpr std::size_t kMaxBinary = 256u << 20;
inline constexpr std::size_t kMaxText = 4u << 20;
inline constexpr const char* kToolkitConfig = "/etc/enflame-container-runtime/config.toml";

inline Error input_error(const std::string& what) {
    return Error(Errc::InvalidInput, what);
}

// state.cpp: the state file and what it records

/// Checks the flags and opens the host's root: every host path is resolved in it.
[[nodiscard]] Result<HostRoot> open_host(const Options& o);
/// True when Options::handover_file holds the operator's handover mark.
[[nodiscard]] bool handing_over(const Options& o);
/// The state file's host path.
[[nodiscard]] std::string state_path(const Options& o);
[[nodiscard]] Result<std::optional<json>> read_state(const Options& o, const HostRoot& h);
[[nodiscard]] Result<void> write_state(const Options& o, const HostRoot& h, const json& st);
/// The state of a first install: what it is about to do, before anything is done.
[[nodiscard]] Result<json> first_state(const Options& o, const std::string& engine);
/// The engine's edit the state records, as `runtime configure` takes it.
[[nodiscard]] RuntimeArgs engine_args(const json& st);
/// Puts `original` back (nullopt: removes the file).
[[nodiscard]] Result<void> restore(const HostRoot& h, const std::string& host_path,
                                   const std::optional<std::string>& original);
/// Undoes what the state file records, last step first; every step runs even when one fails,
/// and the first error is returned. True when the engine's config changed.
[[nodiscard]] Result<bool> undo_state(const Options& o, const HostRoot& h, const json& st,
                                      Lines& out);
/// An exclusive lock on the toolkit folder (flock on the folder itself, released when the fd
/// closes); nullopt when the folder does not exist (nothing installed).
[[nodiscard]] Result<std::optional<fs::UniqueFd>> lock_toolkit(const Options& o, const HostRoot& h);

// holders.cpp: the containers still running through the toolkit's runtime binary

/// The runtime binary's host path: <toolkit_dir>/enflame-container-runtime.
[[nodiscard]] std::string runtime_binary(const Options& o);
/// The containerd state folders whose task bundles to look at for the engine `st` records: its
/// config's `state`, /run/containerd and dockerd's own containerd's.
[[nodiscard]] std::vector<std::string> task_state_dirs(const HostRoot& h, const json& st);
/// The ids of the containers running through `runtime_path`: containerd task bundles under
/// `state_dirs` whose runtime is it, and conmon processes (CRI-O, podman) given it with -r.
[[nodiscard]] std::vector<std::string> runtime_holders(const HostRoot& h,
                                                       const std::string& runtime_path,
                                                       const std::vector<std::string>& state_dirs);
/// Leaves the runtime binary in place for `holders`: writes the leftover record (atomically)
/// and says so in one line.
[[nodiscard]] Result<void> keep_runtime(const Options& o, const HostRoot& h,
                                        const std::vector<std::string>& state_dirs,
                                        const json& created_dirs,
                                        const std::vector<std::string>& holders, Lines& out);
/// The leftover record of a runtime binary kept by an earlier uninstall; nullopt when none.
[[nodiscard]] Result<std::optional<json>> read_leftover(const Options& o, const HostRoot& h);
[[nodiscard]] Result<void> forget_leftover(const Options& o, const HostRoot& h);
/// Removes a kept runtime binary (and the record, and the folders it records if empty) once no
/// container runs through it; else keeps it, saying so again.
[[nodiscard]] Result<void> remove_leftover(const Options& o, const HostRoot& h, const json& rec,
                                           Lines& out);

// engine.cpp: finding, checking and signalling the container engine

/// --runtime auto: containerd, else CRI-O, else Docker.
[[nodiscard]] Result<std::string> pick_engine(const Options& o, const HostRoot& h);
/// The engine's socket: --engine-socket, else its usual path.
[[nodiscard]] std::string engine_socket(const Options& o, std::string_view engine);
/// Makes the engine load its changed config (or says why it did not).
void signal_engine(const Options& o, const HostRoot& h, const std::string& engine, Lines& out);
/// Wires the runtime into the engine as the state says, checked by the engine and rolled back
/// when it refuses; signals it when its config changed.
[[nodiscard]] Result<void> configure_engine(const Options& o, const HostRoot& h, json& st,
                                            Lines& out);
/// Runs a program of the host's root, chrooted into it, as the node would (process::run with
/// stdout and stderr together and a 60 s bound).
[[nodiscard]] Result<process::Output> run_in_root(const std::string& root,
                                                  std::vector<std::string> argv);

// cdi_spec.cpp: the CDI spec install writes and refresh_cdi_spec() keeps up to date

/// The spec's name in --cdi-dir.
inline constexpr const char* kCdiSpecName = "enflame.com-gpu.yaml";
/// The spec as the copied enflame-ctk (in `toolkit_dir`, run chrooted into `o.root` with the
/// toolkit config) generates it now: its paths are the host's own. Generated next to
/// `host_spec` under a name no CDI reader loads, read back in the root and removed.
[[nodiscard]] Result<std::string> generate_cdi_spec(const Options& o, const HostRoot& h,
                                                    const std::string& host_spec);

// install.cpp, status.cpp

[[nodiscard]] Result<void> install_into(const Options& o, Lines& out);
/// Installed as the state file says; the error says what is missing.
[[nodiscard]] Result<json> check_installed(const Options& o, const HostRoot& h);

}  // namespace inject::toolkit
