// SPDX-License-Identifier: Apache-2.0
#pragma once

// The labeler's life: load the toolkit config (and the device plugin's sharing config), then a
// pass every sleep interval: discovery, the labels, the features.d file written atomically
// through a dot-file. A failed pass keeps the last good file (it expires on its own) and logs
// one line; before any good pass there is no file. SIGHUP re-reads the configs and runs a pass, and
// so does enflame-drs-manager reporting a layout done (its state file, watched); SIGTERM/SIGINT
// remove the file and stop.

#include <chrono>
#include <string>

#include "k8s/drs_layout_state.hpp"

namespace feature_discovery {

struct DaemonOptions {
    std::string config_path;
    bool config_path_given = false;     ///< a missing explicit file is an error
    std::string plugin_config;          ///< the device plugin's config (sharing.hpp); empty = none
    std::string plugin_config_default;  ///< --plugin-config as given (run() sets it)
    /// The plugin's named configs (its --plugin-config-dir): the node's label picks one.
    std::string plugin_config_dir;
    std::string resource_name = "enflame.com/gcu";  ///< the device plugin's --resource-name
    /// enflame-drs-manager's state file: the layout in force labelled, a pass when it changes.
    /// Empty: neither.
    std::string drs_state_file = k8s::drs::kLayoutStatePath;
    /// The labels file ("-" = stdout).
    std::string output = "/etc/kubernetes/node-feature-discovery/features.d/enflame";
    bool oneshot = false;
    bool timestamp = true;  ///< write the `# +expiry-time=` line (now + 2 * sleep_interval)
    std::chrono::milliseconds sleep_interval{60000};
};

/// Runs one pass (oneshot) or until SIGTERM/SIGINT. Returns the exit code; errors that stop it
/// are printed as one "error: ..." line.
int run(const DaemonOptions& opts);

}  // namespace feature_discovery
