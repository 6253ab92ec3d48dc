// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The Prometheus Operator's objects a GpuResource can ask for (exporter.serviceMonitor,
/// exporter.prometheusRule, nodeExporter.serviceMonitor, npd.podMonitor), applied only while
/// the server serves their kinds; deployments/monitoring/operator holds one of each.

#include <set>
#include <string>
#include <vector>

#include "operator/kustomize.hpp"

namespace gpu_operator {

/// The Prometheus Operator's group, whose kinds the operator applies only while they are served.
inline constexpr const char* kMonitoringGroupVersion = "monitoring.coreos.com/v1";
/// Its kinds the GpuResource can ask for.
inline const std::vector<std::string> kMonitoringKinds{"ServiceMonitor", "PodMonitor",
                                                       "PrometheusRule"};

/// What the API server serves that changes what is rendered (discovery).
struct Served {
    std::string dra_version = "v1";      ///< resource.k8s.io: v1 or v1beta1
    std::set<std::string> monitoring{};  ///< monitoring.coreos.com/v1 kinds served
};

/// The monitoring objects `spec` asks for whose kind is served, from `manifests`, with the CR's
/// labels and scrape interval, each marked with the component that asked.
[[nodiscard]] inject::Result<std::vector<Object>> monitors(const std::string& manifests,
                                                           const Json& spec, const Served& served);

/// One monitoring object the CR asks for, for status.components[component].field: "applied
/// Kind/namespace/name", or "skipped: " and why.
struct MonitorStatus {
    std::string component, field, message;
};

/// Every monitoring object an enabled component asks for, with what became of it (`rendered`:
/// render()'s output for the same spec and served).
[[nodiscard]] std::vector<MonitorStatus> monitoring_status(const Json& spec, const Served& served,
                                                           const std::vector<Object>& rendered);

/// A spec with every component on and every monitoring object asked for: render() of it (all
/// kinds served) is everything the operator can apply.
[[nodiscard]] Json everything_on();

}  // namespace gpu_operator
