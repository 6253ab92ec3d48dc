// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The seam between where endpoints come from (--endpoints, or an InferencePool through pool/)
/// and the scheduler's datastore (scheduling/).

#include <map>
#include <string>

namespace epp {

/// One model-server endpoint the gateway may route to.
struct Target {
    std::string address;      ///< "ip:port", as it goes into x-gateway-destination-endpoint
    std::string metrics_url;  ///< its model-server metrics ("http://ip:port/metrics")
    /// The enflame-gcu-exporter metrics URL on its node (free GCU memory per pod); empty: none.
    std::string gcu_metrics_url;
    std::string pod, ns, node;  ///< empty in a standalone run
    /// The pod's labels (llm-d.ai/role, inference.networking.k8s.io/engine-type).
    std::map<std::string, std::string> labels;

    bool operator==(const Target&) const = default;
};

}  // namespace epp
