// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The DRS manager's report to the device plugin on the same node (docs/drs-manager.md, "The
/// device plugin follows"): a small JSON file naming the layout and its state, the same values
/// as the node's labels, replaced atomically at each state change. The plugin watches it
/// (k8s/file_watch.hpp) and re-lists its DRS instances when a layout is done, so the node
/// advertises enflame.com/drs-<profile> within a second without the plugin asking the API
/// server or efsmi in between.

#include <optional>
#include <string>

#include "inject/result.hpp"

namespace k8s::drs {

/// Where the manager writes it (beside its ledger) and the plugin reads it (through its /host
/// mount in the shipped DaemonSet).
inline constexpr const char* kLayoutStatePath = "/var/lib/enflame/drs-manager/state.json";

/// The node label naming the layout a node should have, and the one the manager reports its
/// state in (the operator's status reads both).
inline constexpr const char* kLayoutLabel = "enflame.com/drs.config";
inline constexpr const char* kStateLabel = "enflame.com/drs.config.state";
/// The states, as the state label and the state file carry them.
inline constexpr const char* kPending = "pending";
inline constexpr const char* kApplying = "applying";
inline constexpr const char* kSuccess = "success";
inline constexpr const char* kFailed = "failed";
/// The node label naming the device plugin's config for the node (a file of the plugin's
/// config folder); the manager passes its value on in the state file.
inline constexpr const char* kPluginConfigLabel = "enflame.com/device-plugin.config";

/// The kernel's id of the running boot: DRS instances do not survive a reboot, so a state
/// written in another boot says nothing about the instances there are now.
inline constexpr const char* kBootIdPath = "/proc/sys/kernel/random/boot_id";

struct LayoutState {
    std::string layout;  ///< the label's value (or the manager's default layout); "" for none
    std::string state;   ///< pending, applying, success or failed; "" before any layout
    /// The node's kPluginConfigLabel (or the manager's default); "" for the plugin's own.
    std::string device_plugin_config = {};
    /// The boot the manager wrote it in (read_boot_id); "" from a manager older than bootId.
    std::string boot_id = {};
    bool operator==(const LayoutState&) const = default;
    /// success or failed: the manager is not changing instances now.
    [[nodiscard]] bool settled() const { return state == kSuccess || state == kFailed; }
};

/// Replaces `path` (its folder made if missing): temp file, fsync, rename.
[[nodiscard]] inject::Result<void> write_layout_state(const std::string& path,
                                                      const LayoutState& s);
/// Reads it; none when the file does not exist. A file that is not such JSON: InvalidInput
/// naming the file and the reason.
[[nodiscard]] inject::Result<std::optional<LayoutState>> read_layout_state(const std::string& path);

/// The boot id in `path` (kBootIdPath; tests pass a file of their own), without its newline.
/// Errors name the file; an empty file is InvalidInput.
[[nodiscard]] inject::Result<std::string> read_boot_id(const std::string& path);

/// Whether a device plugin starting in boot `boot_id` must hold back its DRS instances: the
/// state is from another boot (whatever it says), or from this one with a layout named and
/// not settled. A missing file (no manager on the node), a layout "" and a file without a
/// bootId (an older manager's) count as this boot's and ready.
[[nodiscard]] bool waits_for_layout(const std::optional<LayoutState>& s,
                                    const std::string& boot_id);

/// The device plugin config file a state picks: `<dir>/<name>.yaml` for its
/// device_plugin_config, `fallback` (the plugin's --plugin-config) when it names none or `dir`
/// is empty. NotFound when the named file is missing, InvalidInput for a name that is not a
/// plain file name; both say the label.
[[nodiscard]] inject::Result<std::string> plugin_config_path(const std::optional<LayoutState>& s,
                                                             const std::string& dir,
                                                             const std::string& fallback);

}  // namespace k8s::drs
