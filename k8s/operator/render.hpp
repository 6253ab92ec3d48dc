// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What the operator applies for a GpuResource: the deployments/ tree through kustomize's
/// engine (kustomize.hpp), the components the CR turns on with their fields filled in
/// (components.hpp), the monitoring objects it asks for (monitors.hpp); and the object helpers
/// the controller uses (keys, REST paths, comparison, merge patches).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inject/result.hpp"
#include "operator/kustomize.hpp"
#include "operator/monitors.hpp"

namespace gpu_operator {

/// The label on everything the operator applies (its watches select on it).
inline constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagerName = "enflame-gpu-operator";

/// What the operator applies for a GpuResource `spec` (defaults filled by the API server):
/// deployments/overlays/device-plugin, plus deployments/overlays/dra (or dra-v1beta1 when
/// `served.dra_version` is v1beta1) when the DRA driver is on, deployments/nfd,
/// deployments/npd and deployments/node-exporter when nfd / npd / nodeExporter are on, and the
/// objects of deployments/monitoring/operator the CR asks for (exporter.serviceMonitor,
/// exporter.prometheusRule, nodeExporter.serviceMonitor, npd.podMonitor) whose kind the server
/// serves, all under `manifests`; objects of disabled components left out; image,
/// args, env, resources, nodeSelector, tolerations, priorityClassName, hostPaths and
/// daemonsets settings filled in. What deployments/operator ships (the Namespace, the roles) is
/// left out. A default spec gives `kubectl kustomize deployments/` but those.
[[nodiscard]] inject::Result<std::vector<Object>> render(const std::string& manifests,
                                                         const Json& spec, const Served& served);

/// A kind's REST resource name (ServiceMonitor -> servicemonitors).
[[nodiscard]] std::string plural_of(const std::string& kind);

/// "Kind/namespace/name" (namespace empty for cluster-scoped objects).
[[nodiscard]] std::string key_of(const Json& obj);

/// The REST path of an object (`collection` true: its collection in its namespace, for list
/// and watch).
[[nodiscard]] std::string path_of(const Json& obj, bool collection = false);

/// Every field in `want` is in `have` with the same value (lists: same length, item by item).
[[nodiscard]] bool contains(const Json& have, const Json& want);

/// The JSON merge patch (RFC 7386) that turns `from` into `to`: changed keys with their new
/// value, removed keys as null, arrays whole. A patch of `to` alone would leave keys `from`
/// had and `to` dropped (a status field that no longer applies), so the object never equals
/// `to` and every later comparison writes again. {} when they are equal.
[[nodiscard]] Json merge_patch(const Json& from, const Json& to);

}  // namespace gpu_operator
