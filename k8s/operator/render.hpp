// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The objects the operator applies, from the same kustomize tree as deployments/ (one source
/// of truth): `kustomize()` reads a kustomization folder as `kubectl kustomize` does for the
/// features this tree uses (resources, namespace, images, JSON 6902 patches); anything else in a
/// kustomization is refused by name, so a new feature cannot slip by unrendered.
/// `render()` then fills in a GpuResource's spec.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "inject/result.hpp"

namespace op {

using Json = nlohmann::json;

/// One rendered object and the component it belongs to: the deployments/ folder its file came
/// from, mapped to the CR's field (installer -> toolkit, device-plugin -> devicePlugin, ...;
/// base and folders the map does not know -> "base", always deployed).
struct Object {
    Json obj;
    std::string component;
    /// Made by a configMapGenerator: its name gets kustomize's content hash once the CR's
    /// fields are in (so a changed config rolls the pods that mount it).
    bool generated = false;
};

/// The Prometheus Operator's group, whose kinds the operator applies only while they are served.
inline constexpr const char* kMonitoringGroupVersion = "monitoring.coreos.com/v1";
/// Its kinds the GpuResource can ask for (deployments/monitoring/operator holds one of each
/// for our components).
inline const std::vector<std::string> kMonitoringKinds{"ServiceMonitor", "PodMonitor",
                                                       "PrometheusRule"};

/// What the API server serves that changes what is rendered (discovery).
struct Served {
    std::string dra_version = "v1";      ///< resource.k8s.io: v1 or v1beta1
    std::set<std::string> monitoring{};  ///< monitoring.coreos.com/v1 kinds served
};

/// The label on everything the operator applies (its watches select on it).
inline constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagerName = "enflame-gpu-operator";

/// `kubectl kustomize DIR` for the features deployments/ uses (resources, namespace, images,
/// patches, configMapGenerator). Errors name the file and field.
[[nodiscard]] inject::Result<std::vector<Object>> kustomize(const std::string& dir);

/// A YAML stream (documents separated by ---) as JSON values, nulls left out.
[[nodiscard]] inject::Result<std::vector<Json>> parse_yaml_stream(const std::string& text,
                                                                  const std::string& what);

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

/// One monitoring object the CR asks for, for status.components[component].field: "applied
/// Kind/namespace/name", or "skipped: " and why.
struct MonitorStatus {
    std::string component, field, message;
};
/// A spec with every component on and every monitoring object asked for: render() of it (all
/// kinds served) is everything the operator can apply.
[[nodiscard]] Json everything_on();

/// Every monitoring object an enabled component asks for, with what became of it (`rendered`:
/// render()'s output for the same spec and served).
[[nodiscard]] std::vector<MonitorStatus> monitoring_status(const Json& spec, const Served& served,
                                                           const std::vector<Object>& rendered);

/// A kind's REST resource name (ServiceMonitor -> servicemonitors).
[[nodiscard]] std::string plural_of(const std::string& kind);

/// "Kind/namespace/name" (namespace empty for cluster-scoped objects).
[[nodiscard]] std::string key_of(const Json& obj);

/// The REST path of an object (`collection` true: its collection in its namespace, for list
/// and watch).
[[nodiscard]] std::string path_of(const Json& obj, bool collection = false);

/// Every field in `want` is in `have` with the same value (lists: same length, item by item).
[[nodiscard]] bool contains(const Json& have, const Json& want);

/// Appends a byte as two lowercase hex digits.
void append_hex(std::string& out, unsigned char b);

/// The JSON merge patch (RFC 7386) that turns `from` into `to`: changed keys with their new
/// value, removed keys as null, arrays whole. A patch of `to` alone would leave keys `from`
/// had and `to` dropped (a status field that no longer applies), so the object never equals
/// `to` and every later comparison writes again. {} when they are equal.
[[nodiscard]] Json merge_patch(const Json& from, const Json& to);

}  // namespace op
