// SPDX-License-Identifier: Apache-2.0
// What the operator applies for a GpuResource (render.hpp), and the object helpers.
#include "operator/render.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "k8s/reflector.hpp"
#include "operator/components.hpp"

namespace gpu_operator {

namespace fs = std::filesystem;

namespace {

/// Kinds the API server keeps cluster-scoped that kustomize does not know to be: overlays/dra
/// removes the namespace kustomize gives a DeviceClass.
const std::set<std::string> kServerClusterScoped{"DeviceClass", "GpuResource"};
/// What deployments/operator ships, so the operator never writes it: the stack's namespace and
/// the roles its daemons are bound to (writing a role would take `escalate`).
const std::set<std::string> kShippedWithOperator{"Namespace", "ClusterRole", "Role"};

using k8s::api::str;

std::string group_of(const std::string& api_version) {
    const auto slash = api_version.find('/');
    return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

}  // namespace

inject::Result<std::vector<Object>> render(const std::string& manifests, const Json& spec,
                                           const Served& served) {
    INJECT_TRY(auto objs, load_dir(fs::path(manifests)));
    std::set<std::string> have;
    for (const auto& o : objs) have.insert(key_of(o.obj));
    auto add = [&](std::vector<Object> more) {
        for (auto& o : more)
            if (have.insert(key_of(o.obj)).second) objs.push_back(std::move(o));
    };
    if (enabled(spec, "draDriver")) {
        INJECT_TRY(auto dra, load_dir(fs::path(manifests) / "overlays" /
                                      (served.dra_version == "v1beta1" ? "dra-v1beta1" : "dra")));
        add(std::move(dra));
    }
    // not in deployments/ (the default install): their own folders, as `kubectl apply -k` them
    for (const auto& [component, folder] :
         {std::pair{"nfd", "nfd"}, std::pair{"npd", "npd"},
          std::pair{"nodeExporter", "node-exporter"}, std::pair{"drsManager", "drs-manager"}})
        if (enabled(spec, component)) {
            INJECT_TRY(auto more, load_dir(fs::path(manifests) / folder));
            add(std::move(more));
        }
    // the evict policy's binding (its role is shipped with the operator, as the others are)
    if (enabled(spec, "drsManager") &&
        str(spec.value("drsManager", Json::object()), "evictionPolicy") == "Evict") {
        INJECT_TRY(auto more, load_dir(fs::path(manifests) / "drs-manager-eviction"));
        for (auto& o : more) o.component = "drsManager";
        add(std::move(more));
    }
    INJECT_TRY(auto mon, monitors(manifests, spec, served));
    add(std::move(mon));
    std::vector<Object> out;
    for (auto& o : objs) {
        if (o.component.empty()) o.component = component_of_folder(o.folder);
        if (!enabled(spec, o.component) || kShippedWithOperator.count(str(o.obj, "kind"))) continue;
        customize(o, spec);
        o.obj["metadata"]["labels"][kManagedBy] = kManagerName;
        out.push_back(std::move(o));
    }
    suffix_generated(out);
    return out;
}
std::string key_of(const Json& obj) {
    return k8s::object_key(obj);
}

std::string plural_of(const std::string& kind) {
    std::string p = kind;
    std::transform(p.begin(), p.end(), p.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (p.back() == 's') return p + "es";
    if (p.back() == 'y') return p.substr(0, p.size() - 1) + "ies";
    return p + "s";
}

std::string path_of(const Json& obj, bool collection) {
    const std::string av = str(obj, "apiVersion");
    const std::string kind = str(obj, "kind");
    std::string p = group_of(av).empty() ? "/api/" + av : "/apis/" + av;
    const std::string ns = str(obj.value("metadata", Json::object()), "namespace");
    if (!ns.empty() && !kustomize_cluster_scoped(kind) && !kServerClusterScoped.count(kind))
        p += "/namespaces/" + ns;
    p += "/" + plural_of(kind);
    if (!collection) p += "/" + str(obj["metadata"], "name");
    return p;
}

bool contains(const Json& have, const Json& want) {
    if (want.is_object()) {
        if (!have.is_object()) return false;
        for (const auto& [k, v] : want.items())
            if (!have.contains(k) || !contains(have[k], v)) return false;
        return true;
    }
    if (want.is_array()) {
        if (!have.is_array() || have.size() != want.size()) return false;
        for (std::size_t i = 0; i < want.size(); ++i)
            if (!contains(have[i], want[i])) return false;
        return true;
    }
    return have == want;
}

Json merge_patch(const Json& from, const Json& to) {
    if (!from.is_object() || !to.is_object()) return to;
    Json patch = Json::object();
    for (const auto& [k, v] : to.items())
        if (!from.contains(k) || from[k] != v) patch[k] = merge_patch(from.value(k, Json()), v);
    for (const auto& [k, v] : from.items())
        if (!to.contains(k)) patch[k] = nullptr;
    return patch;
}

}  // namespace gpu_operator
