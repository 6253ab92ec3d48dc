// SPDX-License-Identifier: Apache-2.0
// Node labels and the ordered rolling upgrade, as plans over the cache (roll.hpp).
#include "operator/roll.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <regex>

#include "k8s/apiserver.hpp"

namespace gpu_operator {

namespace {

using k8s::api::str;
const Json& meta(const Json& o) {
    static const Json empty = Json::object();
    return o.is_object() && o.contains("metadata") ? o["metadata"] : empty;
}
std::string label(const Json& o, const char* key) {
    return str(meta(o).value("labels", Json::object()), key);
}
std::string annotation(const Json& o, const char* key) {
    return str(meta(o).value("annotations", Json::object()), key);
}

/// NFD found an Enflame PCI device: pci-1e36.present (deviceLabelFields [vendor]) or, with
/// NFD's default [class, vendor], pci-<class>_1e36.present (the class of Enflame's cards: 1200).
bool enflame_pci(const Json& node) {
    const Json labels = node.value("metadata", Json::object()).value("labels", Json::object());
    static const std::regex kPci(
        "^feature\\.node\\.kubernetes\\.io/pci-([0-9a-f]{4}_)?1e36\\.present$");
    for (const auto& [k, v] : labels.items())
        if (v == "true" && std::regex_match(k, kPci)) return true;
    return false;
}

bool is_plugin(const std::string& name) {
    return name == "enflame-device-plugin" || name == "enflame-dra-plugin";
}

/// FNV-1a, 64 bits, of the template as JSON (keys sorted): the same in every replica and
/// version of the operator, unlike std::hash.
std::string hash_of(const Json& tmpl) {
    std::uint64_t h = 14695981039346656037ULL;
    for (const char c : tmpl.dump()) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ULL;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

bool pod_ready(const Json& pod) {
    for (const auto& c : pod.value("status", Json::object()).value("conditions", Json::array()))
        if (str(c, "type") == "Ready") return str(c, "status") == "True";
    return false;
}

/// A rolled pod's state on its node, worst first.
enum class PodState { Missing, Terminating, Old, NotReady, Ready };

}  // namespace

bool rolled(const Json& obj) {
    if (str(obj, "kind") != "DaemonSet") return false;
    const std::string name = str(meta(obj), "name");
    return name == kToolkitDs || is_plugin(name);
}

void prepare_roll(std::vector<Object>& objs) {
    std::string toolkit;
    auto mark = [](Json& ds) {
        Json& tmpl = ds["spec"]["template"];
        tmpl["metadata"]["labels"][kManagedBy] = kManagerName;
        const std::string h = hash_of(tmpl);
        tmpl["metadata"]["annotations"][kTemplateHash] = h;
        ds["spec"]["updateStrategy"] = {{"type", "OnDelete"}};
        return h;
    };
    for (auto& o : objs)
        if (rolled(o.obj) && str(meta(o.obj), "name") == kToolkitDs) toolkit = mark(o.obj);
    for (auto& o : objs) {
        if (!rolled(o.obj) || str(meta(o.obj), "name") == kToolkitDs) continue;
        if (!toolkit.empty())
            o.obj["spec"]["template"]["metadata"]["annotations"][kToolkitHash] = toolkit;
        mark(o.obj);
    }
}

Json node_label_body(const std::string& node, bool set) {
    Json body = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node}}}};
    if (set) {
        body["metadata"]["labels"][kGpuPresent] = "true";
        body["metadata"]["annotations"][kLabelsSetAnnotation] = kGpuPresent;
    }
    return body;
}

std::map<std::string, bool> plan_node_labels(const std::vector<Json>& nodes, bool active) {
    std::map<std::string, bool> out;
    for (const auto& n : nodes) {
        const std::string name = str(meta(n), "name");
        const bool want = active && enflame_pci(n);
        const bool ours = !annotation(n, kLabelsSetAnnotation).empty();
        if (want && (!ours || label(n, kGpuPresent) != "true"))
            out[name] = true;
        else if (!want && ours)
            out[name] = false;
    }
    return out;
}

RollPlan plan_roll(const std::map<std::string, std::string>& want, const std::vector<Json>& pods,
                   const std::map<std::string, Json>& nodes, const Json& max_unavailable,
                   const std::set<std::string>& deleting, const Json& toolkit_command) {
    // node -> DaemonSet -> its pod there (a live one over one terminating)
    std::map<std::string, std::map<std::string, const Json*>> on;
    for (const auto& p : pods) {
        const std::string node = str(p.value("spec", Json::object()), "nodeName");
        const std::string ds = label(p, "app.kubernetes.io/name");
        if (node.empty() || !want.count(ds)) continue;
        const Json*& slot = on[node][ds];
        if (!slot || meta(*slot).contains("deletionTimestamp")) slot = &p;
    }
    auto state = [&](const std::string& node, const std::string& ds) {
        const auto it = on[node].find(ds);
        if (it == on[node].end()) return PodState::Missing;
        const Json& p = *it->second;
        if (meta(p).contains("deletionTimestamp") || deleting.count(str(meta(p), "uid")))
            return PodState::Terminating;
        if (annotation(p, kTemplateHash) != want.at(ds)) return PodState::Old;
        return pod_ready(p) ? PodState::Ready : PodState::NotReady;
    };

    RollPlan plan;
    plan.total = static_cast<int>(on.size());
    int max = 1;
    if (max_unavailable.is_number_integer()) {
        max = max_unavailable.get<int>();
    } else if (max_unavailable.is_string()) {
        const std::string s = max_unavailable.get<std::string>();
        const double pct = s.empty() ? 0 : std::atof(s.c_str());
        max = s.back() == '%' ? static_cast<int>(std::ceil(pct * plan.total / 100.0))
                              : static_cast<int>(pct);
    }
    max = std::max(max, 1);

    struct Node {
        std::string name, state, message;
        bool unavailable = false, cordoned = false, toolkit_done = false;
        std::vector<const Json*> old_toolkit, old_plugins;
    };
    // an old toolkit pod the new one can take over from (same install flags)
    auto handover = [&](const Json& p) {
        if (toolkit_command.is_null()) return false;
        const Json cs = p.value("spec", Json::object()).value("containers", Json::array());
        return !cs.empty() && cs[0].value("command", Json()) == toolkit_command;
    };
    auto marked = [](const Json& p) { return annotation(p, kHandover) == "true"; };
    std::vector<Node> list;
    int unavailable = 0;
    for (const auto& [name, dss] : on) {
        Node n;
        n.name = name;
        const auto it = nodes.find(name);
        n.cordoned = it != nodes.end() &&
                     it->second.value("spec", Json::object()).value("unschedulable", false);
        bool old = false, plugins_pending = false;
        n.toolkit_done = !want.count(kToolkitDs) || state(name, kToolkitDs) == PodState::Ready;
        for (const auto& [ds, _] : want) {
            const PodState s = state(name, ds);
            if (s != PodState::Ready && !(s == PodState::Old && pod_ready(*dss.at(ds))))
                n.unavailable = true;
            if (s == PodState::Old || s == PodState::Terminating) old = true;
            if (s == PodState::Old)
                (ds == kToolkitDs ? n.old_toolkit : n.old_plugins).push_back(dss.at(ds));
            // marked for handover: on its way out (not Ready soon), its node counts as busy
            if (s == PodState::Old && ds == kToolkitDs && marked(*dss.at(ds))) n.unavailable = true;
            if (ds != kToolkitDs && s != PodState::Ready) plugins_pending = true;
        }
        if (n.unavailable) ++unavailable;
        if (!old && !n.unavailable) {
            n.state = "upToDate";
            ++plan.updated;
        } else if (n.cordoned && old) {
            n.state = "cordoned";
            n.message = "cordoned by the administrator: not upgraded until uncordoned";
            ++plan.cordoned;
        } else if (!n.toolkit_done) {
            n.state = n.old_toolkit.empty() || n.unavailable ? "toolkit" : "pending";
            n.message = n.state == "pending" ? "waiting for its turn (maxUnavailable)"
                                             : "toolkit pod being replaced or not Ready yet";
        } else if (plugins_pending || old) {
            n.state = "plugins";
            n.message = "toolkit Ready at the new version; plugins being replaced";
        } else {
            n.state = "upToDate";
            ++plan.updated;
        }
        list.push_back(std::move(n));
    }

    // Nodes half done (toolkit new, plugins old) go first, then the others by name.
    std::stable_sort(list.begin(), list.end(),
                     [](const Node& a, const Node& b) { return a.toolkit_done > b.toolkit_done; });
    int budget = max - unavailable;
    for (auto& n : list) {
        if (n.cordoned) continue;
        auto& victims = n.toolkit_done ? n.old_plugins : n.old_toolkit;
        if (victims.empty()) continue;
        if (!n.unavailable) {
            if (budget <= 0) {
                if (n.state == "plugins") n.message = "toolkit Ready; plugins wait for their turn";
                continue;
            }
            --budget;
        }
        n.state = n.toolkit_done ? "plugins" : "toolkit";
        n.message = n.toolkit_done ? "toolkit Ready at the new version; plugins being replaced"
                                   : "toolkit pod being replaced";
        for (const Json* p : victims) {
            if (n.toolkit_done || !handover(*p)) {
                plan.delete_pods.push_back(*p);
            } else if (!marked(*p)) {
                plan.mark_pods.push_back(*p);
                n.message = "toolkit pod marked for handover (same install flags)";
            } else if (pod_ready(*p)) {
                n.message = "toolkit pod marked for handover; waiting for it to report not Ready";
            } else {
                plan.delete_pods.push_back(*p);
                n.message = "toolkit pod handing over to the new version";
            }
        }
    }
    std::sort(list.begin(), list.end(),
              [](const Node& a, const Node& b) { return a.name < b.name; });
    for (const auto& n : list)
        plan.nodes.push_back({{"name", n.name}, {"state", n.state}, {"message", n.message}});
    return plan;
}

}  // namespace gpu_operator
