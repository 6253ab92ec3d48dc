// SPDX-License-Identifier: Apache-2.0
// enflame-device-plugin: kubelet's device plugin for Enflame GCUs (docs/kubelet-wire.md, device
// plugin). This file parses flags (each also readable from an environment variable of the same
// name, as NVIDIA's plugin users expect), sets up logging, and hands over to the daemon.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "device-plugin/daemon.hpp"
#include "k8s/daemon_cli.hpp"
#include "k8s/duration.hpp"

namespace {

// DP_DISABLE_HEALTHCHECKS as NVIDIA's users set it: "all" (or true/1) turns health checks off.
inject::Result<bool> health_disabled_by_env() {
    const char* v = std::getenv("DP_DISABLE_HEALTHCHECKS");
    if (!v || !*v) return false;
    const std::string s = v;
    if (s == "all" || s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
    return inject::fail(inject::Errc::InvalidInput,
                        "DP_DISABLE_HEALTHCHECKS '" + s + "': want all (or unset)");
}

}  // namespace

int main(int argc, char** argv) try {
    device_plugin::DaemonOptions o;
    std::string id_strategy = "uuid";
    // cdi-cri,cdi-annotations: the CDI names make a runtime with CDI on (containerd 1.7+ with
    // enable_cdi, CRI-O) give the cards with plain runc, as the shipped example pod expects; the
    // annotations (kubelet's, which a pod cannot set) give them through our shim, the legacy
    // hook and the NRI plugin. No env: the installer's toolkit config ignores an unprivileged
    // container's env, which any pod sets (docs/security.md).
    std::vector<std::string> list_strategies{"cdi-cri", "cdi-annotations"};
    std::string interval = "5s";
    bool no_health = false;
    bool no_drs = false;
    std::string log_level = "info";

    CLI::App app{
        "enflame-device-plugin: advertise Enflame GCUs to kubelet and allocate them to containers",
        "enflame-device-plugin"};
    k8s::add_common_flags(app, "enflame-device-plugin", o.config_path, o.config_path_given);
    app.add_option("--kubelet-dir", o.kubelet_dir,
                   "kubelet's device-plugin folder (holds kubelet.sock and our socket)")
        ->envname("KUBELET_DIR")
        ->capture_default_str();
    app.add_option("--socket-name", o.socket_name, "our socket's name in that folder")
        ->envname("SOCKET_NAME")
        ->capture_default_str();
    app.add_option("--resource-name", o.settings.resource_name,
                   "the extended resource we advertise")
        ->envname("RESOURCE_NAME")
        ->capture_default_str();
    app.add_option("--plugin-config", o.plugin_config,
                   "the plugin's YAML config (version: v1; sharing.timeSlicing), re-read on SIGHUP")
        ->envname("PLUGIN_CONFIG");
    app.add_flag("--no-drs", no_drs,
                 "do not advertise DRS instances (by default each profile with instances is "
                 "<domain>/drs-<profile>)")
        ->envname("NO_DRS");
    app.add_option("--plugin-config-dir", o.plugin_config_dir,
                   "a folder of named plugin configs (<name>.yaml): the node label "
                   "enflame.com/device-plugin.config=<name>, passed on by enflame-drs-manager "
                   "in the state file, picks one; no label: the plugin config above")
        ->envname("PLUGIN_CONFIG_DIR");
    app.add_option("--drs-state-file", o.drs_state_file,
                   "the DRS manager's state file (its --state-file): when it reports a layout "
                   "done, the DRS instances are listed again and kubelet told; empty: not "
                   "followed")
        ->envname("DRS_STATE_FILE")
        ->capture_default_str();
    std::string drs_wait = "5m";
    app.add_option("--drs-wait", drs_wait,
                   "at start, while that state file is another boot's or names a layout being "
                   "applied: wait this long for the manager before registering (e.g. 5m, 30s); "
                   "0: register at once")
        ->envname("DRS_WAIT")
        ->capture_default_str();
    app.add_option("--device-id-strategy", id_strategy, "what kubelet calls a card: uuid or index")
        ->envname("DEVICE_ID_STRATEGY")
        ->capture_default_str();
    app.add_option("--device-list-strategy", list_strategies,
                   "how Allocate passes the cards: envvar, cdi-cri, cdi-annotations (repeatable or "
                   "a comma list)")
        ->envname("DEVICE_LIST_STRATEGY")
        ->capture_default_str();
    app.add_flag("--pass-device-specs", o.settings.pass_device_specs,
                 "also return DeviceSpecs for /dev/gcuN and /dev/gcuctl")
        ->envname("PASS_DEVICE_SPECS");
    app.add_option("--health-interval", interval, "time between health checks (e.g. 5s, 500ms)")
        ->envname("HEALTH_INTERVAL")
        ->capture_default_str();
    app.add_flag("--disable-health-checks", no_health,
                 "no health checks: every card stays Healthy (also DP_DISABLE_HEALTHCHECKS=all)");
    std::string scheduler;
    auto* scheduler_opt =
        app.add_option("--scheduler", scheduler,
                       "who picks the card: empty (kubelet) or hami (HAMi's scheduler: its pod "
                       "annotations decide; resources enflame.com/gcu and enflame.com/drs-gcu); "
                       "default: the plugin config's flags.scheduler, else empty")
            ->envname("SCHEDULER")
            ->check(CLI::IsMember({"", "hami"}));
    o.node_name = std::getenv("NODE_NAME") ? std::getenv("NODE_NAME") : "";
    app.add_option("--node-name", o.node_name, "HAMi mode: this node's name (default: $NODE_NAME)");
    app.add_option("--kubeconfig", o.kubeconfig,
                   "HAMi mode: kubeconfig file (default: in-cluster service account)")
        ->envname("KUBECONFIG");
    app.add_option("--drs-resource-name", o.drs_resource,
                   "HAMi mode: the DRS slices' resource (HAMi's resourceNameDRSGCU)")
        ->envname("DRS_RESOURCE_NAME")
        ->capture_default_str();
    app.add_option("--hami-scheduler-name", o.hami_scheduler,
                   "HAMi mode: HAMi's scheduler's name; only pods naming it as spec.schedulerName "
                   "and bound by it are served")
        ->envname("HAMI_SCHEDULER_NAME")
        ->capture_default_str();
    bool legacy = false;
    auto* legacy_opt = app.add_flag("--hami-legacy-vgcu", legacy,
                                    "HAMi mode for HAMi <= 2.9: register enflame.com/shared-gcu "
                                    "(gcushare's shared mode: cards x slices) instead of "
                                    "drs-gcu, gcu-memory and gcu-core (default: the plugin "
                                    "config's flags.hamiLegacyVgcu)")
                           ->envname("HAMI_LEGACY_VGCU");
    std::uint32_t slices = 0;
    auto* slices_opt = app.add_option("--hami-shared-slices", slices,
                                      "slices per card of enflame.com/shared-gcu (default: "
                                      "flags.hamiSharedSlices, else gcushare's 6)")
                           ->envname("HAMI_SHARED_SLICES")
                           ->check(CLI::Range(1, 64));
    bool require_nri = false;
    auto* require_nri_opt =
        app.add_flag("--require-nri", require_nri,
                     "refuse Allocate while enflame-nri-plugin is not running on the node (it "
                     "holds --nri-lock-file), so a container never starts without its card "
                     "(default: the plugin config's flags.requireNri)")
            ->envname("REQUIRE_NRI");
    app.add_option("--nri-lock-file", o.nri_lock,
                   "the file enflame-nri-plugin holds locked while it runs (its --lock-file)")
        ->envname("NRI_LOCK_FILE")
        ->capture_default_str();
    k8s::add_log_level_flag(app, log_level);
    if (auto code = k8s::parse_and_log(app, argc, argv, "enflame-device-plugin", log_level))
        return *code;
    const auto fail = k8s::exit_error;
    auto ids = device_plugin::parse_id_strategy(id_strategy);
    if (!ids) return fail(ids.error());
    o.settings.id_strategy = *ids;
    auto lists = device_plugin::parse_list_strategies(list_strategies);
    if (!lists) return fail(lists.error());
    o.settings.lists = *lists;
    auto iv = k8s::parse_duration("--health-interval", interval, std::chrono::milliseconds(100),
                                  std::chrono::hours(24));
    if (!iv) return fail(iv.error());
    o.health_interval = *iv;
    auto wait = k8s::parse_duration("--drs-wait", drs_wait, std::chrono::milliseconds(0),
                                    std::chrono::hours(24));
    if (!wait) return fail(wait.error());
    o.drs_wait = *wait;
    auto env_off = health_disabled_by_env();
    if (!env_off) return fail(env_off.error());
    o.health_checks = !no_health && !*env_off;
    o.drs = !no_drs;
    // flag > env > config: CLI11 counts a value from SCHEDULER as given.
    if (scheduler_opt->count() > 0) o.scheduler = scheduler;
    if (legacy_opt->count() > 0) o.hami_legacy = legacy;
    if (slices_opt->count() > 0) o.hami_slices = slices;
    if (require_nri_opt->count() > 0) o.require_nri = require_nri;
    return device_plugin::run(std::move(o));
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
