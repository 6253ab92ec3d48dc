// SPDX-License-Identifier: Apache-2.0
// enflame-feature-discovery: node labels for Enflame GCUs through NFD's local source
// (docs/kubelet-wire.md, node labels), the counterpart of NVIDIA's GPU feature discovery.
// This file parses flags (each also readable from an environment variable: GFD's EFD_-style
// names for ours, the device plugin's names for the options shared with it), sets up logging,
// and hands over.
#include <CLI/CLI.hpp>
#include <iostream>

#include "feature-discovery/daemon.hpp"
#include "feature-discovery/labels.hpp"
#include "k8s/daemon_cli.hpp"
#include "k8s/duration.hpp"

int main(int argc, char** argv) try {
    feature_discovery::DaemonOptions o;
    std::string interval = "60s";
    bool no_timestamp = false;
    std::string log_level = "info";

    CLI::App app{
        "enflame-feature-discovery: label a node's Enflame GCUs for Kubernetes through NFD's "
        "features.d",
        "enflame-feature-discovery"};
    k8s::add_common_flags(app, "enflame-feature-discovery", o.config_path, o.config_path_given);
    app.add_flag("--oneshot", o.oneshot, "label once and exit (the file stays)")
        ->envname("EFD_ONESHOT");
    app.add_option("--sleep-interval", interval,
                   "time between passes (e.g. 60s, 1m, 1m30s; at least 1s)")
        ->envname("EFD_SLEEP_INTERVAL")
        ->capture_default_str();
    app.add_option("--output", o.output, "the labels file, or - for stdout")
        ->envname("EFD_OUTPUT_FILE")
        ->capture_default_str();
    app.add_flag("--no-timestamp", no_timestamp,
                 "no '# +expiry-time=' line (the labels never expire)")
        ->envname("EFD_NO_TIMESTAMP");
    app.add_option("--plugin-config", o.plugin_config,
                   "the device plugin's YAML config: its sharing.timeSlicing gives the "
                   "sharing-strategy label")
        ->envname("PLUGIN_CONFIG");
    app.add_option("--resource-name", o.resource_name,
                   "the device plugin's resource name (as in --plugin-config)")
        ->envname("RESOURCE_NAME")
        ->capture_default_str();
    app.add_option("--plugin-config-dir", o.plugin_config_dir,
                   "the device plugin's named configs (its --plugin-config-dir): the one the "
                   "node label enflame.com/device-plugin.config picks gives the sharing labels")
        ->envname("PLUGIN_CONFIG_DIR");
    app.add_option("--drs-state-file", o.drs_state_file,
                   "enflame-drs-manager's state file: the layout in force labelled drs.config, "
                   "and a pass as soon as a layout is done; empty: neither")
        ->envname("DRS_STATE_FILE")
        ->capture_default_str();
    k8s::add_log_level_flag(app, log_level);
    if (auto code = k8s::parse_and_log(app, argc, argv, "enflame-feature-discovery", log_level))
        return *code;
    auto iv = k8s::parse_duration("--sleep-interval", interval, std::chrono::seconds(1),
                                  std::chrono::hours(24));
    if (!iv) return k8s::exit_error(iv.error());
    o.sleep_interval = *iv;
    o.timestamp = !no_timestamp;
    return feature_discovery::run(o);
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
