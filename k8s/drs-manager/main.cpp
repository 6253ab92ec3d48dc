// SPDX-License-Identifier: Apache-2.0
// enflame-drs-manager: makes a node's DRS instances match the layout its label
// enflame.com/drs.config names (docs/drs-manager.md), the counterpart of NVIDIA's MIG manager.
// This file parses flags, sets up logging and the API client, and hands over.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "drs-manager/daemon.hpp"
#include "k8s/daemon_cli.hpp"
#include "k8s/duration.hpp"

int main(int argc, char** argv) try {
    drs_manager::DaemonOptions o;
    if (const char* n = std::getenv("NODE_NAME")) o.node_name = n;
    std::string kubeconfig, log_level = "info", retry = "5s", eviction = "wait";
    std::string layouts = o.layouts_namespace + "/" + o.layouts_name;

    CLI::App app{
        "enflame-drs-manager: make this node's DRS instances match the layout its "
        "label enflame.com/drs.config names",
        "enflame-drs-manager"};
    k8s::add_common_flags(app, "enflame-drs-manager", o.config_path, o.config_path_given);
    app.add_option("--node-name", o.node_name, "this node's name (default: $NODE_NAME)");
    app.add_option("--kubeconfig", kubeconfig,
                   "kubeconfig file (default: in-cluster service account)")
        ->envname("KUBECONFIG");
    app.add_option("--layouts-configmap", layouts,
                   "namespace/name of the ConfigMap holding the layouts (key layouts.yaml); its "
                   "namespace also gets the manager's Events")
        ->envname("LAYOUTS_CONFIGMAP")
        ->capture_default_str();
    app.add_option("--checkpoint", o.checkpoint,
                   "the manager's DRS instance ledger (instances being made, instances made)")
        ->envname("CHECKPOINT")
        ->capture_default_str();
    app.add_option("--state-file", o.state_file,
                   "where the layout and its state are written for the device plugin, which "
                   "re-lists its DRS instances when a layout is done")
        ->envname("STATE_FILE")
        ->capture_default_str();
    app.add_option("--holders-checkpoint", o.holders_checkpoints,
                   "a plugin checkpoint naming the instances containers hold (the DRA plugin's "
                   "or HAMi mode's; repeat for each; a missing file holds nothing)")
        ->envname("HOLDERS_CHECKPOINTS")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--pod-resources-socket", o.pod_resources_socket,
                   "kubelet's pod-resources socket, asked which pods hold instances or cards "
                   "through the device plugin (a missing socket holds nothing; empty: not asked)")
        ->envname("POD_RESOURCES_SOCKET")
        ->capture_default_str();
    app.add_option("--default-layout", o.default_layout,
                   "the layout of a node without the label (default: leave such a node alone)")
        ->envname("DEFAULT_LAYOUT");
    app.add_option("--default-device-plugin-config", o.default_plugin_config,
                   "the device plugin config (a name in its config folder) of a node without "
                   "the label enflame.com/device-plugin.config, passed on in the state file "
                   "(default: the plugin's own)")
        ->envname("DEFAULT_DEVICE_PLUGIN_CONFIG");
    app.add_option("--retry", retry,
                   "while waiting for holders, how often their checkpoints are read again")
        ->envname("RETRY")
        ->capture_default_str();
    app.add_option("--eviction-policy", eviction,
                   "wait: wait for the pods holding what a layout must change to go; evict: "
                   "evict them through the Eviction API (PodDisruptionBudgets honoured; pods "
                   "holding a DRA claim are waited for)")
        ->envname("EVICTION_POLICY")
        ->capture_default_str();
    app.add_option("--host-root", o.host_root,
                   "where the node's root is mounted: the toolkit's CDI spec there is "
                   "regenerated after each layout change, so it names the new DRS instances "
                   "(empty: not refreshed)")
        ->envname("HOST_ROOT")
        ->capture_default_str();
    app.add_option("--toolkit-dir", o.toolkit_dir,
                   "the toolkit folder on the node, as given to 'enflame-ctk toolkit install'")
        ->envname("TOOLKIT_DIR")
        ->capture_default_str();
    k8s::add_log_level_flag(app, log_level);
    if (auto code = k8s::parse_and_log(app, argc, argv, "enflame-drs-manager", log_level))
        return *code;
    if (o.node_name.empty()) {
        std::cerr << "error: --node-name: missing (set it or NODE_NAME, e.g. from the pod's "
                     "spec.nodeName)\n";
        return 1;
    }
    const auto slash = layouts.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == layouts.size() ||
        layouts.find('/', slash + 1) != std::string::npos) {
        std::cerr << "error: --layouts-configmap '" << layouts << "': want namespace/name\n";
        return 1;
    }
    o.layouts_namespace = layouts.substr(0, slash);
    o.layouts_name = layouts.substr(slash + 1);
    auto iv = k8s::parse_duration("--retry", retry, std::chrono::seconds(1), std::chrono::hours(1));
    if (!iv) return k8s::exit_error(iv.error());
    o.retry = *iv;
    auto policy = drs_manager::parse_eviction_policy("--eviction-policy", eviction);
    if (!policy) return k8s::exit_error(policy.error());
    o.eviction = *policy;
    auto cfg =
        kubeconfig.empty() ? k8s::api::in_cluster_config() : k8s::api::load_kubeconfig(kubeconfig);
    if (!cfg) return k8s::exit_error(cfg.error());
    auto client = k8s::api::Client::create(std::move(*cfg));
    if (!client) return k8s::exit_error(client.error());
    if (auto r = drs_manager::run(o, std::shared_ptr<k8s::api::Client>(std::move(*client))); !r)
        return k8s::exit_error(r.error());
    return 0;
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
