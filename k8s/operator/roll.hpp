// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What the operator does on nodes, as pure functions of the cache (the controller writes):
/// - node labels: `enflame.com/gpu.present=true` on nodes where NFD found an Enflame PCI device
///   (`feature.node.kubernetes.io/pci-1e36.present=true`, or NFD's default class_vendor form
///   `pci-1200_1e36.present`), as NVIDIA's operator does with 10de (pci-0300_10de too);
/// - the ordered rolling upgrade: the toolkit installer and the plugins are OnDelete DaemonSets
///   the operator rolls itself, node by node, at most `daemonsets.maxUnavailable` nodes at once,
///   on each node the toolkit first and the device plugin / DRA plugin only once the node's
///   toolkit pod is Ready at the new template (NVIDIA's gpu-operator #596); cordoned nodes are
///   skipped and reported.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "operator/render.hpp"

namespace gpu_operator {

/// NFD's label for an Enflame PCI device with deviceLabelFields [vendor]; with its default
/// [class, vendor] the label is pci-<class>_1e36.present, which counts too.
inline constexpr const char* kNfdPciLabel = "feature.node.kubernetes.io/pci-1e36.present";
inline constexpr const char* kGpuPresent = "enflame.com/gpu.present";
/// On a node: the labels the operator set (so it removes those only). Its field manager for
/// node labels is kNodeLabelManager: server-side apply then removes exactly what it applied,
/// and a label another manager set too stays.
inline constexpr const char* kLabelsSetAnnotation = "enflame.com/gpu-operator.labels";
inline constexpr const char* kNodeLabelManager = "enflame-gpu-operator-node-labels";
/// On the pod template of a rolled DaemonSet: a hash of the template (the pod's revision as the
/// operator sees it); on the plugins' templates also the toolkit's, so a new toolkit restarts
/// the plugins after it.
inline constexpr const char* kTemplateHash = "enflame.com/pod-template-hash";
inline constexpr const char* kToolkitHash = "enflame.com/toolkit-template-hash";
inline constexpr const char* kToolkitDs = "enflame-toolkit-installer";
/// On an old toolkit installer pod whose replacement has the same install flags (only the image
/// differs): the installer sees it through a downward API file, reports not Ready, and its
/// preStop then leaves the toolkit in place for the new pod, which changes the engine's config
/// (and restarts the engine) only if the new version writes other bytes. The operator deletes
/// such a pod only once it is marked and not Ready (the kubelet has refreshed the file).
inline constexpr const char* kHandover = "enflame.com/toolkit-handover";

/// True for the DaemonSets the operator rolls itself (toolkit installer, device plugin, DRA).
[[nodiscard]] bool rolled(const Json& obj);

/// Makes the rolled DaemonSets among `objs` OnDelete, with the hash annotations and the
/// operator's label on their pod templates (its pod watch selects on it).
void prepare_roll(std::vector<Object>& objs);

/// A server-side apply body for Node `node`: `set` true applies the label and the record of
/// it; false applies nothing, which removes what kNodeLabelManager applied before.
[[nodiscard]] Json node_label_body(const std::string& node, bool set);

/// The nodes whose label to set (true) or remove (false). `active`: a GpuResource is in effect
/// (false: remove every label the operator set). Nodes already as wanted are left out.
[[nodiscard]] std::map<std::string, bool> plan_node_labels(const std::vector<Json>& nodes,
                                                           bool active);

struct RollPlan {
    std::vector<Json> delete_pods;  ///< pods to delete now, in order
    std::vector<Json> mark_pods;    ///< toolkit pods to annotate kHandover=true now
    Json nodes = Json::array();     ///< [{name, state, message}], one per node with rolled pods
    int updated = 0, cordoned = 0, total = 0;
};

/// One step of the roll. `want`: DaemonSet name -> the template hash it has now (only the rolled
/// DaemonSets of the enabled components); `pods`: their pods (any node); `nodes`: Nodes by name;
/// `max_unavailable`: the CR's `daemonsets.maxUnavailable` (a number or "N%", of the nodes
/// with rolled pods, rounded up, at least 1); `deleting`: uids of pods already deleted that the
/// cache may not show as terminating yet; `toolkit_command`: the new toolkit template's command
/// (null: unknown): an old toolkit pod with that same command is handed over (kHandover), not
/// uninstalled.
[[nodiscard]] RollPlan plan_roll(const std::map<std::string, std::string>& want,
                                 const std::vector<Json>& pods,
                                 const std::map<std::string, Json>& nodes,
                                 const Json& max_unavailable, const std::set<std::string>& deleting,
                                 const Json& toolkit_command = Json());

}  // namespace gpu_operator
