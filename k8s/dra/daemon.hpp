// SPDX-License-Identifier: Apache-2.0
#pragma once

// The plugin's life: load the toolkit config and discover the cards, load the checkpoint and
// converge the CDI folder with it, serve DRAPlugin (v1 and v1beta1) on
// <plugins-dir>/<driver>/dra.sock and Registration on <plugins-registry>/<driver>-reg.sock, and
// then one poll loop on a signalfd and inotify on both folders: a socket of ours deleted
// (kubelet restart, or someone cleaning up) is served again at once; SIGTERM/SIGINT stop and
// remove both sockets (removing the registration socket deregisters us).

#include <functional>
#include <string>

#include "dra/driver.hpp"

namespace dra {

struct DaemonOptions {
    std::string config_path;
    bool config_path_given = false;  ///< a missing explicit file is an error
    std::string driver_root;         ///< overrides the config's driver-root when set
    std::string dev_root;            ///< overrides the config's dev-root when set
    std::string host_driver_root;    ///< overrides the config's host-driver-root when set
    std::string host_dev_root;       ///< overrides the config's host-dev-root when set
    std::string node_name;
    std::string plugins_registry = "/var/lib/kubelet/plugins_registry";
    std::string plugins_dir = "/var/lib/kubelet/plugins";
    std::string cdi_root = "/var/run/cdi";
    std::string
        ctk_path;  ///< host path of enflame-ctk for the specs' update-ldcache hook; empty: none
};

/// Something that runs beside the sockets (the ResourceSlice publisher): started after the
/// sockets serve, told each time kubelet reports it registered the plugin (a kubelet that
/// restarted has deleted the node's slices; it may run on a gRPC thread), stopped before the
/// sockets go. Each may be empty.
struct Companion {
    std::function<void()> start;
    std::function<void()> registered_again;
    std::function<void()> stop;
};

/// Makes the companion once the configuration is loaded, from the way the daemon discovers
/// the node's cards.
using MakeCompanion = std::function<Companion(Discoverer)>;

/// Runs until SIGTERM/SIGINT. `claims` fetches ResourceClaims. Returns the exit code; errors
/// before serving are printed as one "error: ..." line.
int run(const DaemonOptions& opts, ClaimSource claims, const MakeCompanion& make_companion = {});

}  // namespace dra
