// SPDX-License-Identifier: Apache-2.0
#pragma once

// The manager's life (docs/drs-manager.md, "The daemon"): the toolkit config and the ledger
// (converged at start), then informers on its own Node and on the layouts ConfigMap. Each
// change of the layout label or of the ConfigMap: discovery, the layout checked, the holders
// read, the plan run, the state reported on the node (label enflame.com/drs.config.state, and a
// Warning Event for `failed` and for a wait). An unchanged label and ConfigMap do nothing: no
// efsmi call, no API write. Idle it only watches; while waiting for holders it re-reads their
// files every `retry`; with the evict policy it evicts the pods among them (and asks again each
// `retry` while a disruption budget refuses). SIGTERM/SIGINT stop it after the plan in flight.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "drs-manager/evict.hpp"
#include "inject/result.hpp"
#include "inject/toolkit.hpp"
#include "k8s/apiserver.hpp"
#include "k8s/drs_layout_state.hpp"
#include "k8s/pod_resources.hpp"

namespace drs_manager {

struct DaemonOptions {
    std::string node_name;
    std::string config_path;
    bool config_path_given = false;
    std::string layouts_namespace = "enflame-system";
    std::string layouts_name = "enflame-drs-layouts";
    std::string checkpoint = "/var/lib/enflame/drs-manager/ledger.json";
    /// The layout and its state for the device plugin (k8s/drs_layout_state.hpp).
    std::string state_file = k8s::drs::kLayoutStatePath;
    std::string boot_id_file = k8s::drs::kBootIdPath;  ///< the boot each state is written in
    /// The plugins' checkpoints naming the instances containers hold.
    std::vector<std::string> holders_checkpoints{
        "/var/lib/kubelet/plugins/gcu.enflame.com/checkpoint.json",
        "/var/lib/kubelet/device-plugins/enflame-device-plugin/hami-instances.json"};
    /// The device plugin config of a node without the enflame.com/device-plugin.config label
    /// (passed on in the state file); empty: the plugin's own --plugin-config.
    std::string default_plugin_config;
    /// kubelet's pod-resources socket: pods holding instances through the device plugin.
    /// Empty: not asked; a missing socket holds nothing.
    std::string pod_resources_socket = k8s::kPodResourcesSocket;
    std::string default_layout;  ///< for a node without the label; empty: such a node is left alone
    std::chrono::milliseconds retry{5000};  ///< re-check of holders while waiting
    /// What to do about pods holding what a layout must change (drs-manager/evict.hpp).
    EvictionPolicy eviction = EvictionPolicy::Wait;
    /// Where the node's root is mounted, to refresh the toolkit's CDI spec in it after a layout
    /// change (drs-manager/cdi_spec.hpp); empty: never refreshed.
    std::string host_root = "/host";
    std::string toolkit_dir = inject::toolkit::Options{}.toolkit_dir;  ///< the installer's
};

/// Runs until SIGTERM/SIGINT. An error: the config or the ledger could not be read.
[[nodiscard]] inject::Result<void> run(const DaemonOptions& o,
                                       std::shared_ptr<k8s::api::Client> client);

}  // namespace drs_manager
