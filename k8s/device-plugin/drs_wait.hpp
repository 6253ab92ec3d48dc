// SPDX-License-Identifier: Apache-2.0
#pragma once

// The device plugin's start after a reboot (docs/drs-manager.md, "The device plugin follows"):
// the DRS manager's state file survives the reboot, the DRS instances do not, so a plugin that
// advertised at once would offer whole cards until the manager made the layout again, and a pod
// could be scheduled on that list. It waits for the manager first, for a bounded time.

#include <chrono>
#include <string>

#include "inject/result.hpp"
#include "k8s/file_watch.hpp"

namespace device_plugin {

enum class LayoutWait {
    NotNeeded,  ///< no state file, or its layout is in force (or none named) in this boot
    Ready,      ///< waited: the manager settled the layout in this boot
    TimedOut,   ///< waited the whole limit: advertise what there is
    Stopped,    ///< SIGTERM or SIGINT came while waiting
};

/// Waits while the state file `path` (which `watch` watches) makes a plugin of this boot wait
/// (k8s::drs::waits_for_layout, the boot id read from `boot_id_path`), at most `limit` (zero:
/// no wait), reading stop signals from `sig_fd` (a signalfd; SIGHUP is read and ignored).
/// Logs one line when it starts waiting and one when it ends. An unreadable state file counts
/// as one to wait for (the manager replaces it). Errors: the boot id, the watch.
[[nodiscard]] inject::Result<LayoutWait> wait_for_layout(k8s::FileWatch& watch,
                                                         const std::string& path,
                                                         const std::string& boot_id_path,
                                                         std::chrono::milliseconds limit,
                                                         int sig_fd);

}  // namespace device_plugin
