// SPDX-License-Identifier: Apache-2.0
#include "epp/pool/pool_targets.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "k8s/apiserver.hpp"

namespace epp {

using inject::Errc;
using inject::fail;
using k8s::api::str;
using nlohmann::json;

namespace {

const json kEmpty = json::object();

const json& field(const json& j, const char* name) {
    if (!j.is_object()) return kEmpty;
    const auto it = j.find(name);
    return it == j.end() ? kEmpty : *it;
}

/// Ready condition True, no deletionTimestamp, a podIP.
bool serving(const json& pod) {
    if (field(pod, "metadata").contains("deletionTimestamp")) return false;
    const json& status = field(pod, "status");
    if (str(status, "podIP").empty()) return false;
    const json& conds = field(status, "conditions");
    if (!conds.is_array()) return false;
    return std::any_of(conds.begin(), conds.end(), [](const json& c) {
        return str(c, "type") == "Ready" && str(c, "status") == "True";
    });
}

std::string host_port(const std::string& ip, int port) {
    const bool v6 = ip.find(':') != std::string::npos;
    return (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

}  // namespace

inject::Result<PoolSpec> pool_spec(const json& pool) {
    const json& md = field(pool, "metadata");
    const std::string name = "InferencePool " + str(md, "namespace") + "/" + str(md, "name");
    const json& spec = field(pool, "spec");
    const auto bad = [&](const std::string& why) {
        return fail(Errc::InvalidInput, name + ": " + why);
    };
    PoolSpec out;
    const json& labels = field(field(spec, "selector"), "matchLabels");
    if (!labels.is_object() || labels.empty())
        return bad("spec.selector.matchLabels: want at least one label");
    for (const auto& [k, v] : labels.items()) {
        if (!v.is_string()) return bad("spec.selector.matchLabels." + k + ": not a string");
        out.match_labels[k] = v.get<std::string>();
    }
    const json& ports = field(spec, "targetPorts");
    if (!ports.is_array() || ports.empty() || ports.size() > 8)
        return bad("spec.targetPorts: want 1 to 8 ports");
    std::set<int> seen;
    for (const json& p : ports) {
        const json& n = field(p, "number");
        if (!n.is_number_integer() || n.get<long>() < 1 || n.get<long>() > 65535)
            return bad("spec.targetPorts: " + p.dump() + ": want a number from 1 to 65535");
        const int port = n.get<int>();
        if (!seen.insert(port).second)
            return bad("spec.targetPorts: port " + std::to_string(port) + " twice");
        out.target_ports.push_back(port);
    }
    return out;
}

std::string label_selector(const PoolSpec& spec) {
    std::string out;
    for (const auto& [k, v] : spec.match_labels) out += (out.empty() ? "" : ",") + k + "=" + v;
    return out;
}

bool candidate(const json& pod, const PoolSpec& spec) {
    if (spec.match_labels.empty() || !serving(pod)) return false;
    const json& labels = field(field(pod, "metadata"), "labels");
    return std::all_of(spec.match_labels.begin(), spec.match_labels.end(), [&](const auto& kv) {
        return labels.contains(kv.first) && str(labels, kv.first.c_str()) == kv.second;
    });
}

std::map<std::string, std::string> exporters_by_node(const std::vector<json>& exporter_pods) {
    std::map<std::string, std::pair<std::string, std::string>> best;  // node -> (name, url)
    for (const json& pod : exporter_pods) {
        const std::string node = str(field(pod, "spec"), "nodeName");
        if (node.empty() || !serving(pod)) continue;
        int port = kExporterPort;
        for (const json& c : field(field(pod, "spec"), "containers"))
            for (const json& p : field(c, "ports"))
                if (str(p, "name") == "metrics" && field(p, "containerPort").is_number_integer())
                    port = field(p, "containerPort").get<int>();
        const std::string name = str(field(pod, "metadata"), "name");
        const std::string url =
            "http://" + host_port(str(field(pod, "status"), "podIP"), port) + "/metrics";
        auto it = best.find(node);
        if (it == best.end() || name < it->second.first) best[node] = {name, url};
    }
    std::map<std::string, std::string> out;
    for (const auto& [node, p] : best) out[node] = p.second;
    return out;
}

std::vector<Target> pool_targets(const PoolSpec& spec, const std::vector<json>& pods,
                                 const std::map<std::string, std::string>& exporter_by_node) {
    std::vector<const json*> picked;
    for (const json& pod : pods)
        if (candidate(pod, spec)) picked.push_back(&pod);
    const auto key = [](const json* p) {
        const json& md = field(*p, "metadata");
        return std::pair(str(md, "namespace"), str(md, "name"));
    };
    std::sort(picked.begin(), picked.end(),
              [&](const json* a, const json* b) { return key(a) < key(b); });
    std::vector<Target> out;
    for (const json* pod : picked) {
        const json& md = field(*pod, "metadata");
        Target base;
        base.pod = str(md, "name");
        base.ns = str(md, "namespace");
        base.node = str(field(*pod, "spec"), "nodeName");
        for (const auto& [k, v] : field(md, "labels").items())
            if (v.is_string()) base.labels[k] = v.get<std::string>();
        if (const auto it = exporter_by_node.find(base.node); it != exporter_by_node.end())
            base.gcu_metrics_url = it->second;
        const std::string ip = str(field(*pod, "status"), "podIP");
        for (int port : spec.target_ports) {
            Target t = base;
            t.address = host_port(ip, port);
            t.metrics_url = "http://" + t.address + "/metrics";
            out.push_back(std::move(t));
        }
    }
    return out;
}

namespace {

// spec.poolRef names the pool: its name, and its kind and group when given (left out: these).
bool for_pool(const json& spec, const std::string& pool_name) {
    const json& ref = field(spec, "poolRef");
    const auto named = [&ref](const char* key, const char* dflt) {
        const std::string v = str(ref, key);
        return v.empty() ? std::string(dflt) : v;
    };
    return str(ref, "name") == pool_name && named("kind", "InferencePool") == "InferencePool" &&
           named("group", "inference.networking.k8s.io") == "inference.networking.k8s.io";
}

}  // namespace

std::map<std::string, int> objective_priorities(const std::vector<json>& objectives,
                                                const std::string& pool_name) {
    std::map<std::string, int> out;
    for (const auto& o : objectives) {
        const json& spec = field(o, "spec");
        if (!for_pool(spec, pool_name)) continue;
        const json& priority = field(spec, "priority");
        int value = 0;
        if (priority.is_number_integer() &&
            priority.get<int64_t>() >= std::numeric_limits<int>::min() &&
            priority.get<int64_t>() <= std::numeric_limits<int>::max())
            value = priority.get<int>();
        else if (!(priority.is_object() && priority.empty()) && !priority.is_null())
            continue;
        out[str(field(o, "metadata"), "name")] = value;
    }
    return out;
}

ClusterRewrites model_rewrites(const std::vector<json>& objects, const std::string& pool_name) {
    ClusterRewrites out;
    for (const auto& o : objects) {
        const json& spec = field(o, "spec");
        if (!for_pool(spec, pool_name)) continue;
        const json& md = field(o, "metadata");
        ModelRewrite rw{str(md, "name"), str(md, "creationTimestamp"), {}};
        auto rules = parse_rewrite_rules(field(spec, "rules"), "spec.rules");
        if (!rules) {
            out.refused[rw.name] = rules.error().what();
            continue;
        }
        rw.rules = std::move(*rules);
        out.rewrites.push_back(std::move(rw));
    }
    std::sort(out.rewrites.begin(), out.rewrites.end(), older);
    return out;
}

}  // namespace epp
