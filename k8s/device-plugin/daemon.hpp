// SPDX-License-Identifier: Apache-2.0
#pragma once

// The daemon's life: load the toolkit config and discover the cards, serve our socket,
// register with kubelet (retrying with backoff while kubelet is absent), and then one poll
// loop on a signalfd and an inotify fd: kubelet restarts (re-serve and re-register at once),
// SIGHUP (re-read the config), SIGTERM (stop, remove our socket), and the health timer.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "device-plugin/plugin.hpp"
#include "k8s/drs_layout_state.hpp"
#include "k8s/nri_lock.hpp"

namespace device_plugin {

struct DaemonOptions {
    std::string config_path;
    bool config_path_given = false;  ///< a missing explicit file is an error
    std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
    std::string socket_name = "enflame-gcu.sock";
    std::string kubelet_socket = "kubelet.sock";
    Settings settings;
    std::string plugin_config;  ///< sharing config (sharing.hpp) in force; empty = none
    /// --plugin-config as given: the config of a node whose label names none.
    std::string plugin_config_default;
    /// Named configs, <name>.yaml, one of which the node label enflame.com/device-plugin.config
    /// picks (passed on in drs_state_file). Empty: --plugin-config on every node.
    std::string plugin_config_dir;
    bool drs = true;  ///< advertise DRS instances per profile (enflame.com/drs-<profile>)
    /// The DRS manager's state file: re-list when a layout is done. Empty: not followed.
    std::string drs_state_file = k8s::drs::kLayoutStatePath;
    /// At start, how long to wait for the manager to put the layout in force in this boot
    /// (drs_wait.hpp); zero: advertise at once.
    std::chrono::milliseconds drs_wait{std::chrono::minutes(5)};
    bool health_checks = true;
    /// "hami": HAMi's scheduler decides (hami_mode.hpp); empty: kubelet's choice, as always.
    /// Unset (neither --scheduler nor SCHEDULER given): the plugin config's flags.scheduler.
    std::optional<std::string> scheduler;
    std::string node_name;   ///< HAMi mode: this node (pods by spec.nodeName, the annotations)
    std::string kubeconfig;  ///< HAMi mode: empty = the in-cluster service account
    std::string drs_resource = "enflame.com/drs-gcu";  ///< HAMi mode: the slices' resource
    /// HAMi mode: HAMi's scheduler's name; only pods naming it (and bound) are served.
    std::string hami_scheduler = "hami-scheduler";
    /// HAMi mode, HAMi <= 2.9: enflame.com/shared-gcu (gcushare's shared mode) instead of
    /// drs-gcu, gcu-memory and gcu-core. Unset: the plugin config's flags.hamiLegacyVgcu.
    std::optional<bool> hami_legacy;
    /// Its slices per card; unset: flags.hamiSharedSlices, else gcushare's 6.
    std::optional<std::uint32_t> hami_slices;
    /// Allocate only while enflame-nri-plugin holds `nri_lock` (--require-nri). Unset: the
    /// plugin config's flags.requireNri, else off.
    std::optional<bool> require_nri;
    std::string nri_lock{k8s::kNriLockPath};
    std::chrono::milliseconds sweep_interval{
        2000};  ///< HAMi mode: pods gone -> instances destroyed
    std::chrono::milliseconds health_interval{5000};
};

/// Runs until SIGTERM/SIGINT. Returns the exit code; errors before serving are printed as one
/// "error: ..." line.
int run(DaemonOptions opts);

}  // namespace device_plugin
