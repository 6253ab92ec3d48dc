// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Wiring enflame-container-runtime into a container engine's configuration: Docker's
/// `daemon.json`, containerd's `config.toml` (versions 1, 2 and 3) and CRI-O's `crio.conf`.
/// Every edit is a pure function, text in and text out, so the `enflame-ctk runtime configure`
/// command and the Kubernetes plane share it; only write_file() touches the disk.
///
/// What is kept: JSON keeps every key and its order (nlohmann::ordered_json), re-indented with
/// the file's own indent width. TOML files we edit in place go through toml++, which keeps
/// every key and value but drops comments and sorts keys; the drop-ins we own are written
/// whole, and the one line we add to containerd's main config (`imports`) is a text edit that
/// touches nothing else. Removing our settings restores the original bytes when the document
/// is otherwise unchanged (see unconfigure()).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/result.hpp"

namespace inject::runtime_config {

/// The engines we configure.
enum class Engine { Docker, Containerd, Crio };

/// "docker", "containerd", "crio".
[[nodiscard]] std::string_view engine_name(Engine e) noexcept;
/// Parses an engine name; InvalidInput names the accepted ones.
[[nodiscard]] Result<Engine> parse_engine(std::string_view name);

/// What to add (or, for unconfigure(), what was added).
struct Options {
    /// The runtime's name in the engine's config (`docker run --runtime=<name>`).
    std::string runtime_name = "enflame";
    /// Absolute path of enflame-container-runtime.
    std::string runtime_path = "/usr/bin/enflame-container-runtime";
    /// Make it the engine's default runtime.
    bool set_as_default = false;
    /// Turn on the engine's CDI support (Docker `features.cdi`, containerd `enable_cdi`).
    bool cdi_enabled = false;
    /// containerd `cdi_spec_dirs` written with cdi_enabled.
    std::vector<std::string> cdi_spec_dirs{"/etc/cdi", "/var/run/cdi"};
    /// CRI-O `monitor_path` (conmon).
    std::string monitor_path = "/usr/libexec/crio/conmon";
    /// Turn on the engine's NRI, so enflame-nri-plugin can connect: containerd's
    /// `[plugins."io.containerd.nri.v1.nri"]` (`disable = false`, `disable_connections = false`,
    /// `socket_path`; off by default in 1.7, on in 2.x), CRI-O's `[crio.nri]` (`enable_nri`,
    /// `nri_listen`). Docker has no NRI.
    bool nri_enabled = false;
    /// The NRI socket written with nri_enabled (an absolute path).
    std::string nri_socket = "/var/run/nri/nri.sock";
};

/// The default drop-in file of an engine; nullopt for Docker (daemon.json has none).
[[nodiscard]] std::optional<std::string> default_drop_in(Engine e);
/// The drop-in file for the main config `config`: containerd's goes beside it
/// (`<folder of config>/conf.d/99-enflame.toml`, imported by its absolute path, so a containerd
/// started with `--config` elsewhere reads it); CRI-O reads drop-ins from its own --config-dir
/// whatever --config names, so its default stays. nullopt for Docker.
[[nodiscard]] std::optional<std::string> drop_in_for(Engine e, std::string_view config);
/// The default main config file of an engine.
[[nodiscard]] std::string default_config_path(Engine e);

/// Adds our runtime to a whole config file (`text` may be empty: a file that does not exist
/// yet). `source` names the input in errors ("<source>: line 3: ..."). Idempotent: applied to
/// its own output it returns the same bytes.
[[nodiscard]] Result<std::string> configure(Engine e, std::string_view text, const Options& opts,
                                            std::string_view source);

/// Removes what configure() with the same options adds: the runtime entry, a default-runtime
/// that names it, with cdi_enabled the CDI settings, and with nri_enabled the NRI keys (each
/// back to its value in `original` when it had one there). When `original` (the backup of the
/// file before the first configure) is given and the result means the same document, the
/// original bytes are returned, so configure then unconfigure is byte-identical.
[[nodiscard]] Result<std::string> unconfigure(Engine e, std::string_view text, const Options& opts,
                                              std::string_view source,
                                              std::optional<std::string_view> original = {});

/// The containerd config version of `text` (a missing `version` key means 1).
[[nodiscard]] Result<int> containerd_version(std::string_view text, std::string_view source);

/// The whole drop-in file for containerd or CRI-O. For containerd, `main_text` is the main
/// config: its version picks the tables, and its CRI plugin table is copied into the drop-in,
/// because containerd (1.6 at least) replaces a whole plugin table from an imported file
/// instead of merging it, which would otherwise drop the user's CRI settings.
[[nodiscard]] Result<std::string> drop_in(Engine e, std::string_view main_text, const Options& opts,
                                          std::string_view main_source);

/// Adds `path` to the top-level `imports` array of a containerd main config (a text edit that
/// leaves every other byte alone; `imports = [...]` is created after `version` if missing).
[[nodiscard]] Result<std::string> add_import(std::string_view text, std::string_view path,
                                             std::string_view source);
/// Undoes add_import(): removes `path` from `imports`, and the line if we created it.
[[nodiscard]] Result<std::string> remove_import(std::string_view text, std::string_view path,
                                                std::string_view source);

/// Sets one key of the toolkit's own config.toml: `key` is `section.name` or a bare name
/// looked up in both sections; `value` is a TOML value, or a bare word taken as a string.
/// The line holding the key is replaced (other lines and comments are kept) and the result is
/// validated with inject::config::parse, so an unknown key or bad value is an error.
[[nodiscard]] Result<std::string> set_config_key(std::string_view text, std::string_view key,
                                                 std::string_view value, std::string_view source);

/// What write_file() did.
enum class WriteOutcome { Unchanged, Written, Removed };

/// Replaces `path` with `content` (atomically), unless it already holds exactly that. Before
/// the first change of an existing file, copies it to `<path>.enflame.bak` (never overwritten
/// later, so it holds the first original). `remove` deletes the file instead.
[[nodiscard]] Result<WriteOutcome> write_file(const std::string& path, std::string_view content,
                                              bool remove = false);
/// write_file() of `path` inside the root `root_fd` (fs::open_root()): the file, its backup and
/// their folder are resolved with fs::open_in_root(), so a symlink in a node's root mounted into a
/// pod (`/var/run` -> `/run`) leads where it leads on the node, and never outside that root. The
/// folder must exist; the write is durable (fsync of the file and the folder).
[[nodiscard]] Result<WriteOutcome> write_file(int root_fd, std::string_view path,
                                              std::string_view content, bool remove = false);

/// The backup path of `path`.
[[nodiscard]] std::string backup_path(std::string_view path);

}  // namespace inject::runtime_config
