// SPDX-License-Identifier: Apache-2.0
// The GpuResource's components (components.hpp): the table, and what the CR's fields do to
// each component's objects.
#include "operator/components.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include "inject/config.hpp"
#include "k8s/apiserver.hpp"

namespace gpu_operator {

namespace {

using k8s::api::str;

void set_image(Json& c, const Json& cs) {
    const std::string repo = str(cs, "repository"), image = str(cs, "image"),
                      version = str(cs, "version");
    if (repo.empty() && image.empty() && version.empty()) return;
    ImageRef ref = ImageRef::parse(str(c, "image"));
    const auto slash = ref.name.rfind('/');
    std::string r = slash == std::string::npos ? "" : ref.name.substr(0, slash);
    std::string n = slash == std::string::npos ? ref.name : ref.name.substr(slash + 1);
    if (!repo.empty()) r = repo;
    if (!image.empty()) n = image;
    ref.name = r.empty() ? n : r + "/" + n;
    if (!version.empty()) {
        if (version.rfind("sha256:", 0) == 0)
            ref.digest = version, ref.tag.clear();
        else
            ref.tag = version, ref.digest.clear();
    }
    c["image"] = ref.str();
}

void merge_env(Json& c, const Json& env) {
    if (!c.contains("env")) c["env"] = Json::array();
    for (const auto& e : env) {
        auto it = std::find_if(c["env"].begin(), c["env"].end(), [&](const Json& have) {
            return str(have, "name") == str(e, "name");
        });
        if (it != c["env"].end())
            *it = e;
        else
            c["env"].push_back(e);
    }
}

/// A component's settings on a DaemonSet's pod template (its first container is the daemon).
void customize_pods(Json& obj, const Json& cs, const Json& ds) {
    Json& tmpl = obj["spec"]["template"];
    Json& ps = tmpl["spec"];
    if (ps.contains("containers") && !ps["containers"].empty()) {
        Json& c = ps["containers"][0];
        set_image(c, cs);
        if (!str(cs, "imagePullPolicy").empty()) c["imagePullPolicy"] = cs["imagePullPolicy"];
        if (cs.contains("args") && !cs["args"].empty()) {
            const char* list = c.contains("command") ? "command" : "args";
            for (const auto& a : cs["args"]) c[list].push_back(a);
        }
        if (cs.contains("env") && !cs["env"].empty()) merge_env(c, cs["env"]);
        if (cs.contains("resources") && !cs["resources"].empty()) c["resources"] = cs["resources"];
    }
    if (cs.contains("imagePullSecrets") && !cs["imagePullSecrets"].empty()) {
        ps["imagePullSecrets"] = Json::array();
        for (const auto& s : cs["imagePullSecrets"])
            ps["imagePullSecrets"].push_back({{"name", s}});
    }
    if (cs.contains("nodeSelector"))
        for (const auto& [k, v] : cs["nodeSelector"].items()) ps["nodeSelector"][k] = v;
    for (const Json* src : {&ds, &cs})
        if (src->contains("tolerations"))
            for (const auto& t : (*src)["tolerations"]) ps["tolerations"].push_back(t);
    if (!str(cs, "priorityClassName").empty())
        ps["priorityClassName"] = cs["priorityClassName"];
    else if (!str(ds, "priorityClassName").empty())
        ps["priorityClassName"] = ds["priorityClassName"];
    for (const char* meta : {"labels", "annotations"})
        if (ds.contains(meta))
            for (const auto& [k, v] : ds[meta].items()) tmpl["metadata"][meta][k] = v;
    if (str(ds, "updateStrategy") == "OnDelete") {
        obj["spec"]["updateStrategy"] = {{"type", "OnDelete"}};
    } else if (ds.contains("maxUnavailable") && ds["maxUnavailable"] != 1) {
        obj["spec"]["updateStrategy"] = {
            {"type", "RollingUpdate"},
            {"rollingUpdate", {{"maxUnavailable", ds["maxUnavailable"]}}}};
    }
}

/// Where the driver's files and the device nodes are on the node (spec.hostPaths).
struct Roots {
    std::string driver, dev;
};

/// A node path as a daemon that has the host's / at /host sees it.
std::string under_host(const std::string& p) {
    return p == "/" ? "/host" : "/host" + p;
}

/// A daemon's toolkit config.toml pointed at the node's roots, as its view of the host needs:
/// Mounted sees the driver under /host and the device nodes in the host's /dev (mounted at
/// /dev) unless they are elsewhere; MountedNamingHost also names both roots as the host sees
/// them (where its CDI specs point). A key the ConfigMap lacks is added after the section
/// header; a value goes in as a TOML string, so quotes or newlines in it stay in the value.
std::string retarget_config(const std::string& toml, const Roots& r, HostView view) {
    const bool host = view == HostView::MountedNamingHost;
    std::vector<std::pair<std::string, std::string>> set;  // key, value (only what moved)
    if (r.driver != "/") set.emplace_back("driver-root", under_host(r.driver));
    if (r.dev != "/") set.emplace_back("dev-root", under_host(r.dev));
    if (host && r.driver != "/") set.emplace_back("host-driver-root", r.driver);
    if (host && r.dev != "/") set.emplace_back("host-dev-root", r.dev);
    std::istringstream in(toml);
    std::vector<std::string> lines;
    std::set<std::string> seen;
    std::size_t header = std::string::npos;
    for (std::string line; std::getline(in, line);) {
        for (const auto& [key, value] : set)
            if (line.rfind(key + " =", 0) == 0) {
                line = key + " = " + inject::config::toml_string(value);
                seen.insert(key);
            }
        if (line == "[enflame-container-cli]") header = lines.size();
        lines.push_back(line);
    }
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        out += lines[i] + "\n";
        if (i == header)
            for (const auto& [key, value] : set)
                if (!seen.count(key))
                    out += key + " = " + inject::config::toml_string(value) + "\n";
    }
    return out;
}

void customize_host_paths(Object& o, const Component& c, const Json& spec) {
    const Json hp = spec.value("hostPaths", Json::object());
    const Roots r{hp.value("driverRoot", "/"), hp.value("devRoot", "/")};
    const std::string kubelet = hp.value("kubeletRoot", "/var/lib/kubelet");
    const std::string kind = str(o.obj, "kind");
    const bool moved = r.driver != "/" || r.dev != "/";
    // config.toml: the daemons' ConfigMaps; enflame-ctk.toml: NPD's plugin's
    const bool mounted = c.host == HostView::Mounted || c.host == HostView::MountedNamingHost;
    for (const char* key : {"config.toml", "enflame-ctk.toml"})
        if (moved && mounted && kind == "ConfigMap" && o.obj.contains("data") &&
            o.obj["data"].contains(key))
            o.obj["data"][key] = retarget_config(o.obj["data"][key].get<std::string>(), r, c.host);
    if (kind != "DaemonSet") return;
    Json& ps = o.obj["spec"]["template"]["spec"];
    if (c.host == HostView::Flags) {
        if (r.driver != "/") ps["containers"][0]["command"].push_back("--driver-root=" + r.driver);
        if (r.dev != "/") ps["containers"][0]["command"].push_back("--dev-root=" + r.dev);
    }
    if (kubelet != "/var/lib/kubelet" && ps.contains("volumes"))
        for (auto& v : ps["volumes"]) {
            const std::string p = v.contains("hostPath") ? str(v["hostPath"], "path") : "";
            if (p.rfind("/var/lib/kubelet", 0) == 0) v["hostPath"]["path"] = kubelet + p.substr(16);
        }
}

void customize_toolkit(Object& o, const Json& tk) {
    if (str(o.obj, "kind") != "DaemonSet") return;
    Json& cmd = o.obj["spec"]["template"]["spec"]["containers"][0]["command"];
    const std::string runtime = tk.value("runtime", "auto");
    for (auto& a : cmd)
        if (a == "--runtime=auto" && runtime != "auto") a = "--runtime=" + runtime;
    if (tk.value("setAsDefault", false)) cmd.push_back("--set-as-default");
    if (tk.contains("acceptEnvvarWhenUnprivileged"))
        cmd.push_back(std::string("--accept-envvar-when-unprivileged=") +
                      (tk["acceptEnvvarWhenUnprivileged"].get<bool>() ? "true" : "false"));
}

/// spec.devicePlugin.sharing into the plugin's own config (plugin.yaml in its ConfigMap, the
/// format enflame-device-plugin(8) reads), and a summary of it on the plugin's pod template: the
/// plugin reads its config at start, so a change of it must replace the pods (the operator's
/// roll follows the template). No sharing: the tree's config and template as they are.
void customize_sharing(Object& o, const Json& dp) {
    const Json ts = dp.value("sharing", Json::object()).value("timeSlicing", Json::object());
    if (!ts.contains("replicas")) return;
    const long long replicas = ts["replicas"].get<long long>();
    const bool rename = ts.value("renameByDefault", false);
    const std::string kind = str(o.obj, "kind");
    if (kind == "ConfigMap" && o.obj.contains("data") && o.obj["data"].contains("plugin.yaml"))
        o.obj["data"]["plugin.yaml"] =
            "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: " +
            std::string(rename ? "true" : "false") +
            "\n    resources:\n    - name: enflame.com/gcu\n      replicas: " +
            std::to_string(replicas) + "\n";
    if (kind == "DaemonSet")
        o.obj["spec"]["template"]["metadata"]["annotations"]["enflame.com/sharing"] =
            "timeSlicing replicas=" + std::to_string(replicas) +
            " renameByDefault=" + (rename ? "true" : "false");
}

/// spec.devicePlugin: sharing (above), and the named configs a node picks with the label
/// enflame.com/device-plugin.config (docs/drs-manager.md): configs.<name> becomes <name>.yaml
/// in the plugin's ConfigMap, defaultConfig's the plugin.yaml every unlabelled node reads. The
/// pod template carries the configs' hash, so a change replaces the pods as sharing's does.
void customize_device_plugin(Object& o, const Json& dp) {
    customize_sharing(o, dp);
    const Json configs = dp.value("configs", Json::object());
    const std::string def = str(dp, "defaultConfig");
    if (configs.empty() && def.empty()) return;
    const std::string kind = str(o.obj, "kind");
    if (kind == "ConfigMap" && o.obj.contains("data") && o.obj["data"].contains("plugin.yaml")) {
        for (const auto& [name, text] : configs.items()) o.obj["data"][name + ".yaml"] = text;
        if (!def.empty() && configs.contains(def)) o.obj["data"]["plugin.yaml"] = configs[def];
    }
    if (kind == "DaemonSet") {
        Json all = configs;
        all["."] = def;  // not a config name: the default's choice in the hash too
        o.obj["spec"]["template"]["metadata"]["annotations"]["enflame.com/plugin-configs"] =
            content_hash(all);
    }
}

/// spec.drsManager: the layouts, the layout of an unlabelled node, the device plugin config it
/// names, and the eviction policy (render() adds its binding).
void customize_drs_manager(Object& o, const Json& dm) {
    const std::string kind = str(o.obj, "kind");
    if (kind == "ConfigMap" && str(o.obj["metadata"], "name") == "enflame-drs-layouts" &&
        !str(dm, "layouts").empty())
        o.obj["data"]["layouts.yaml"] = dm["layouts"];
    if (kind != "DaemonSet") return;
    Json env = Json::array();
    if (str(dm, "evictionPolicy") == "Evict")
        env.push_back({{"name", "EVICTION_POLICY"}, {"value", "evict"}});
    if (!str(dm, "defaultLayout").empty())
        env.push_back({{"name", "DEFAULT_LAYOUT"}, {"value", dm["defaultLayout"]}});
    if (!str(dm, "defaultDevicePluginConfig").empty())
        env.push_back(
            {{"name", "DEFAULT_DEVICE_PLUGIN_CONFIG"}, {"value", dm["defaultDevicePluginConfig"]}});
    if (!env.empty()) merge_env(o.obj["spec"]["template"]["spec"]["containers"][0], env);
}

}  // namespace

const std::vector<Component>& components() {
    static const std::vector<Component> kTable{
        {"toolkit", "installer", true, HostView::Flags, customize_toolkit},
        {"featureDiscovery", "feature-discovery", true, HostView::Mounted, nullptr},
        {"nfd", "nfd", false, HostView::None, nullptr},
        {"devicePlugin", "device-plugin", true, HostView::Mounted, customize_device_plugin},
        {"draDriver", "dra", false, HostView::MountedNamingHost, nullptr},
        {"exporter", "exporter", true, HostView::Runtime, nullptr},
        {"npd", "npd", false, HostView::Mounted, nullptr},
        {"nodeExporter", "node-exporter", false, HostView::None, nullptr},
        {"drsManager", "drs-manager", false, HostView::Mounted, customize_drs_manager},
    };
    return kTable;
}

const Component* component_named(const std::string& field) {
    for (const auto& c : components())
        if (field == c.field) return &c;
    return nullptr;
}

std::string component_of_folder(const std::string& folder) {
    for (const auto& c : components())
        if (folder == c.folder) return c.field;
    return "base";
}

bool enabled(const Json& spec, const std::string& component) {
    const Component* c = component_named(component);
    if (!c) return true;  // base
    if (!spec.contains(component) || !spec[component].contains("enabled")) return c->on_by_default;
    return spec[component]["enabled"].get<bool>();
}

void customize(Object& o, const Json& spec) {
    const Component* c = component_named(o.component);
    const Json cs = spec.value(o.component, Json::object());
    const std::string kind = str(o.obj, "kind");
    if (kind == "DaemonSet") customize_pods(o.obj, cs, spec.value("daemonsets", Json::object()));
    // NFD's master: the component's own settings, not the DaemonSets' (spec.daemonsets)
    if (kind == "Deployment") customize_pods(o.obj, cs, Json::object());
    if (c && c->own) c->own(o, cs);
    static const Component kBase{"base", "", true, HostView::None, nullptr};
    customize_host_paths(o, c ? *c : kBase, spec);
}

}  // namespace gpu_operator
