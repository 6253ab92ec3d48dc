// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// From an InferencePool and the pods of its namespace to the endpoints: pure functions over
/// the objects as the API server sends them (pool_watch.cpp feeds them from informers).

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epp/scheduling/model_rewrite.hpp"
#include "epp/target.hpp"
#include "inject/result.hpp"

namespace epp {

/// What the EPP reads of an InferencePool's spec.
struct PoolSpec {
    std::map<std::string, std::string> match_labels;  ///< spec.selector.matchLabels
    std::vector<int> target_ports;                    ///< spec.targetPorts[].number, in order
    bool operator==(const PoolSpec&) const = default;
};

/// The spec of `pool` (an inference.networking.k8s.io/v1 InferencePool). InvalidInput names
/// the pool and the field when the spec breaks the CRD's rules (no matchLabels, 0 or more
/// than 8 target ports, a port out of 1-65535, a port twice).
[[nodiscard]] inject::Result<PoolSpec> pool_spec(const nlohmann::json& pool);

/// The list's labelSelector for the pool's pods: "k1=v1,k2=v2" (keys sorted).
[[nodiscard]] std::string label_selector(const PoolSpec& spec);

/// True for a pod that may serve: its labels hold every matchLabel, its Ready condition is
/// True, it is not being deleted, and it has a podIP.
[[nodiscard]] bool candidate(const nlohmann::json& pod, const PoolSpec& spec);

/// The exporter's port when its pod names none "metrics" (deployments/exporter).
inline constexpr int kExporterPort = 9400;

/// Node name -> the metrics URL of the enflame-gcu-exporter pod on it
/// ("http://podIP:port/metrics", the container port named "metrics"), from the exporter pods
/// that are Ready, not deleting and have a podIP; on a node with two (a rolling update), the
/// first by name.
[[nodiscard]] std::map<std::string, std::string> exporters_by_node(
    const std::vector<nlohmann::json>& exporter_pods);

/// One Target per (candidate pod, target port): "podIP:port" (an IPv6 podIP in brackets),
/// its metrics on the same port, pod, namespace, node (spec.nodeName) and labels copied, and
/// the exporter of its node. Sorted by namespace, pod, then port order.
[[nodiscard]] std::vector<Target> pool_targets(
    const PoolSpec& spec, const std::vector<nlohmann::json>& pods,
    const std::map<std::string, std::string>& exporter_by_node);

/// Objective name -> priority from the InferenceObjectives (inference.networking.x-k8s.io
/// v1alpha2) of the pool's namespace whose spec.poolRef names `pool_name` (its kind
/// InferencePool and group inference.networking.k8s.io when given). A spec.priority left out
/// is 0; one that is not an int leaves its objective out (the config file's priority holds).
[[nodiscard]] std::map<std::string, int> objective_priorities(
    const std::vector<nlohmann::json>& objectives, const std::string& pool_name);

/// The InferenceModelRewrites (inference.networking.x-k8s.io v1alpha2) of the pool's namespace
/// whose spec.poolRef names `pool_name` (as for objectives): the valid ones, oldest first (by
/// metadata.creationTimestamp, then name), and the others by name with why they are left out
/// (parse_rewrite_rules' reason for spec.rules: the CRD's rules that an API server without
/// it does not check).
struct ClusterRewrites {
    std::vector<ModelRewrite> rewrites;
    std::map<std::string, std::string> refused;
    bool operator==(const ClusterRewrites&) const = default;
};
[[nodiscard]] ClusterRewrites model_rewrites(const std::vector<nlohmann::json>& objects,
                                             const std::string& pool_name);

}  // namespace epp
