// SPDX-License-Identifier: Apache-2.0
#include <CLI/CLI.hpp>

#include "epp/pool/endpoint_source.hpp"

namespace epp {

void add_pool_flags(CLI::App& app, PoolOptions& o) {
    app.add_option("--endpoints", o.endpoints,
                   "model servers of a standalone run: host:port[@namespace/pod],... (the pod "
                   "joins the GCU exporter's per-pod series)");
    app.add_option("--gcu-exporter", o.gcu_exporter,
                   "enflame-gcu-exporter metrics URL for every endpoint (with --pool-name: "
                   "instead of the exporter found on each pod's node)");
    app.add_option("--pool-name", o.pool_name,
                   "InferencePool (inference.networking.k8s.io/v1) whose pods are the endpoints");
    app.add_option("--pool-namespace", o.pool_namespace, "the InferencePool's namespace")
        ->capture_default_str();
    app.add_option("--kubeconfig", o.kubeconfig,
                   "kubeconfig file (default: in-cluster service account)");
    app.add_option("--gcu-exporter-namespace", o.exporter_namespace,
                   "namespace of the enflame-gcu-exporter pods")
        ->capture_default_str();
    app.add_option("--gcu-exporter-selector", o.exporter_selector,
                   "label selector of the enflame-gcu-exporter pods (empty: find none)")
        ->capture_default_str();
}

}  // namespace epp
