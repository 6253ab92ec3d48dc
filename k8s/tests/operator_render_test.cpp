// SPDX-License-Identifier: Apache-2.0
// The operator's renderer over this repository's deployments/ tree: a GpuResource's fields
// land where a user would look for them and disabled components are left out
// (operator_render.bats compares a default render with kubectl kustomize; the engine's own
// tests are in operator_kustomize_test.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "inject/config.hpp"
#include "k8s/sharing.hpp"
#include "operator/render.hpp"
#include "temp_dir.hpp"

namespace {

using gpu_operator::Json;

const std::string kTree = std::string(K8S_TESTS_DIR) + "/../../deployments";

const Json* find(const std::vector<gpu_operator::Object>& objs, const std::string& key) {
    for (const auto& o : objs)
        if (gpu_operator::key_of(o.obj) == key) return &o.obj;
    return nullptr;
}

/// Every monitoring.coreos.com/v1 kind the operator applies, served (prometheus-operator's CRDs).
const std::set<std::string> kAllMonitoring(gpu_operator::kMonitoringKinds.begin(),
                                           gpu_operator::kMonitoringKinds.end());

std::vector<gpu_operator::Object> render(const Json& spec, const std::string& dra = "v1",
                                         const std::set<std::string>& monitoring = {}) {
    auto r = gpu_operator::render(kTree, spec, gpu_operator::Served{dra, monitoring});
    EXPECT_TRUE(r) << r.error().what();
    return r ? *r : std::vector<gpu_operator::Object>{};
}

TEST(OperatorRender, ImageFromRepositoryImageVersion) {
    auto objs = render(
        {{"devicePlugin", {{"repository", "registry.example.com/enflame"}, {"version", "9.9"}}}});
    const Json* ds = find(objs, "DaemonSet/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(ds);
    EXPECT_EQ((*ds)["spec"]["template"]["spec"]["containers"][0]["image"],
              "registry.example.com/enflame/enflame-toolkit:9.9");
    // another component keeps the tree's image
    const Json* fd = find(objs, "DaemonSet/enflame-system/enflame-feature-discovery");
    ASSERT_TRUE(fd);
    EXPECT_EQ((*fd)["spec"]["template"]["spec"]["containers"][0]["image"],
              "enflame-container-toolkit/enflame-toolkit:0.1.0");
}

TEST(OperatorRender, EnvArgsNodeSelectorTolerationsPriority) {
    const Json spec = {
        {"featureDiscovery",
         {{"env",
           {{{"name", "EFD_SLEEP_INTERVAL"}, {"value", "5s"}}, {{"name", "NEW"}, {"value", "1"}}}},
          {"args", {"--oneshot"}},
          {"nodeSelector", {{"pool", "gcu"}}},
          {"priorityClassName", "mine"}}},
        {"daemonsets", {{"tolerations", {{{"key", "k"}, {"operator", "Exists"}}}}}}};
    auto objs = render(spec);
    const Json* ds = find(objs, "DaemonSet/enflame-system/enflame-feature-discovery");
    ASSERT_TRUE(ds);
    const Json& ps = (*ds)["spec"]["template"]["spec"];
    const Json& env = ps["containers"][0]["env"];
    int interval = 0;
    for (const auto& e : env)
        if (e["name"] == "EFD_SLEEP_INTERVAL") {
            ++interval;
            EXPECT_EQ(e["value"], "5s");
        }
    EXPECT_EQ(interval, 1);  // replaced, not added twice
    EXPECT_EQ(env.back()["name"], "NEW");
    EXPECT_EQ(ps["containers"][0]["command"].back(), "--oneshot");
    EXPECT_EQ(ps["nodeSelector"]["pool"], "gcu");
    EXPECT_EQ(ps["tolerations"].back()["key"], "k");
    EXPECT_EQ(ps["priorityClassName"], "mine");
}

TEST(OperatorRender, DisabledComponentLeftOutBaseKept) {
    auto objs =
        render({{"exporter", {{"enabled", false}}}, {"devicePlugin", {{"enabled", false}}}});
    EXPECT_FALSE(find(objs, "DaemonSet/enflame-system/enflame-gcu-exporter"));
    EXPECT_FALSE(find(objs, "Service/enflame-system/enflame-gcu-exporter"));
    EXPECT_FALSE(find(objs, "ConfigMap/enflame-system/enflame-device-plugin"));
    EXPECT_TRUE(find(objs, "DaemonSet/enflame-system/enflame-toolkit-installer"));
    // deployments/operator ships the namespace: the operator never writes one
    EXPECT_FALSE(find(objs, "Namespace//enflame-system"));
}

TEST(OperatorRender, DraDriverAddsItsObjectsClusterScopedDeviceClass) {
    auto objs = render({{"draDriver", {{"enabled", true}}}}, "v1beta1");
    const Json* dc = nullptr;
    for (const auto& o : objs)
        if (o.obj["kind"] == "DeviceClass") dc = &o.obj;
    ASSERT_TRUE(dc);
    EXPECT_EQ((*dc)["apiVersion"], "resource.k8s.io/v1beta1");
    EXPECT_FALSE((*dc)["metadata"].contains("namespace"));
    EXPECT_EQ(gpu_operator::path_of(*dc), "/apis/resource.k8s.io/v1beta1/deviceclasses/" +
                                              (*dc)["metadata"]["name"].get<std::string>());
    const Json* crb = find(objs, "ClusterRoleBinding//enflame-dra-plugin");
    ASSERT_TRUE(crb);
    EXPECT_EQ((*crb)["subjects"][0]["namespace"], "enflame-system");
    EXPECT_TRUE(find(objs, "DaemonSet/enflame-system/enflame-device-plugin"));  // side by side
    // the operator lists each kind where its Roles let it: a namespaced kind in its namespace
    EXPECT_EQ(gpu_operator::path_of(*dc, true), "/apis/resource.k8s.io/v1beta1/deviceclasses");
    const Json* ds = find(objs, "DaemonSet/enflame-system/enflame-dra-plugin");
    ASSERT_TRUE(ds);
    EXPECT_EQ(gpu_operator::path_of(*ds, true),
              "/apis/apps/v1/namespaces/enflame-system/daemonsets");
    EXPECT_FALSE(find(objs, "ClusterRole//enflame-dra-plugin"));  // deployments/operator's
}

/// The toolkit config.toml of ConfigMap `name` in `objs`, parsed as the daemon reads it.
static inject::config::Config config_of(const std::vector<gpu_operator::Object>& objs,
                                        const std::string& name) {
    const Json* cm = find(objs, "ConfigMap/enflame-system/" + name);
    EXPECT_TRUE(cm) << name;
    if (!cm) return {};
    auto cfg = inject::config::parse((*cm)["data"]["config.toml"].get<std::string>(), name);
    EXPECT_TRUE(cfg) << cfg.error().what();
    return cfg ? *cfg : inject::config::Config{};
}

// Each component's config follows hostPaths as its daemon sees the node: the installer takes
// both roots as flags; a daemon with the host's / at /host finds the driver there and the
// device nodes in the host's /dev (at its /dev) unless devRoot moves them; the exporter sees
// the driver through the runtime and keeps / (with /host<root> it found nothing, failed its
// probe and restarted forever: seen on a cluster, 3/4 notReady).
TEST(OperatorRender, HostPathsFollowEachComponentsViewOfTheNode) {
    const auto installer_cmd = [](const std::vector<gpu_operator::Object>& objs) {
        const Json* ds = find(objs, "DaemonSet/enflame-system/enflame-toolkit-installer");
        return ds ? (*ds)["spec"]["template"]["spec"]["containers"][0]["command"] : Json();
    };
    const auto has = [](const Json& cmd, const std::string& a) {
        return std::find(cmd.begin(), cmd.end(), a) != cmd.end();
    };
    auto objs = render({{"hostPaths", {{"driverRoot", "/opt/sim"}}}});
    Json cmd = installer_cmd(objs);
    EXPECT_TRUE(has(cmd, "--driver-root=/opt/sim")) << cmd;
    for (const auto& a : cmd) EXPECT_NE(a.get<std::string>().rfind("--dev-root", 0), 0U) << a;
    auto dp = config_of(objs, "enflame-device-plugin");
    EXPECT_EQ(dp.cli.driver_root, "/host/opt/sim");
    EXPECT_EQ(dp.cli.dev_root, "/");
    auto fd = config_of(objs, "enflame-feature-discovery");
    EXPECT_EQ(fd.cli.driver_root, "/host/opt/sim");
    auto ex = config_of(objs, "enflame-gcu-exporter");
    EXPECT_EQ(ex.cli.driver_root, "/");
    EXPECT_EQ(ex.cli.dev_root, "/");

    objs = render({{"hostPaths", {{"driverRoot", "/opt/sim"}, {"devRoot", "/opt/sim"}}}});
    cmd = installer_cmd(objs);
    EXPECT_TRUE(has(cmd, "--driver-root=/opt/sim")) << cmd;
    EXPECT_TRUE(has(cmd, "--dev-root=/opt/sim")) << cmd;
    dp = config_of(objs, "enflame-device-plugin");
    EXPECT_EQ(dp.cli.dev_root, "/host/opt/sim");
    ex = config_of(objs, "enflame-gcu-exporter");
    EXPECT_EQ(ex.cli.driver_root, "/");
    EXPECT_EQ(ex.cli.dev_root, "/");
}

// spec.toolkit.acceptEnvvarWhenUnprivileged reaches the installer only when set: unset, each
// node keeps its config's value (false on a first install).
TEST(OperatorRender, AcceptEnvvarOnlyWhenSet) {
    const auto installer_cmd = [](const Json& tk) {
        auto objs = render({{"toolkit", tk}});
        const Json* ds = find(objs, "DaemonSet/enflame-system/enflame-toolkit-installer");
        return ds ? (*ds)["spec"]["template"]["spec"]["containers"][0]["command"] : Json();
    };
    const auto has = [](const Json& cmd, const std::string& a) {
        return std::find(cmd.begin(), cmd.end(), a) != cmd.end();
    };
    const Json unset = installer_cmd(Json::object());
    for (const auto& a : unset)
        EXPECT_NE(a.get<std::string>().rfind("--accept-envvar", 0), 0U) << a;
    EXPECT_TRUE(has(installer_cmd({{"acceptEnvvarWhenUnprivileged", true}}),
                    "--accept-envvar-when-unprivileged=true"));
    EXPECT_TRUE(has(installer_cmd({{"acceptEnvvarWhenUnprivileged", false}}),
                    "--accept-envvar-when-unprivileged=false"));
}

/// The ConfigMaps' config.toml files for driver root `root` load, and name it where the
/// daemon sees the host at /host.
static void expect_configs_use(const std::string& root) {
    auto objs = render({{"hostPaths", {{"driverRoot", root}}}, {"draDriver", {{"enabled", true}}}});
    int seen = 0;
    for (const auto& o : objs) {
        if (o.obj["kind"] != "ConfigMap" || !o.obj.contains("data") ||
            !o.obj["data"].contains("config.toml"))
            continue;
        ++seen;
        auto cfg = inject::config::parse(o.obj["data"]["config.toml"].get<std::string>(),
                                         gpu_operator::key_of(o.obj));
        ASSERT_TRUE(cfg) << cfg.error().what();
        EXPECT_EQ(cfg->cli.driver_root, o.component == "exporter" ? "/" : "/host" + root)
            << gpu_operator::key_of(o.obj);
        EXPECT_EQ(cfg->cli.dev_root, "/") << gpu_operator::key_of(o.obj);
        EXPECT_EQ(cfg->cli.device_prefix, "gcu") << gpu_operator::key_of(o.obj);
        if (o.component == "draDriver") {
            EXPECT_EQ(cfg->cli.host_driver_root, root);
            EXPECT_TRUE(cfg->cli.host_dev_root.empty() || cfg->cli.host_dev_root == "/")
                << cfg->cli.host_dev_root;
        }
    }
    EXPECT_GE(seen, 3);
    const Json* dra = find(objs, "ConfigMap/enflame-system/enflame-dra-plugin");
    ASSERT_TRUE(dra);
}

// Every config.toml the operator rewrites for another driver root is one the daemons load:
// the shipped DRA ConfigMap names host-driver-root already, and a second one made the plugin
// refuse its config (seen on the cluster: "cannot redefine existing string"). A root holding a
// quote and a newline stays in the value: it adds no key to every daemon's config.
TEST(OperatorRender, DriverRootConfigsParseAsTheDaemonsReadThem) {
    for (const std::string root : {"/opt/sim", "/opt/x\"\ndevice-prefix = \"evil"}) {
        SCOPED_TRACE(root);
        expect_configs_use(root);
    }
}

TEST(OperatorRender, EveryObjectCarriesTheOperatorsLabel) {
    for (const auto& o : render(Json::object()))
        EXPECT_EQ(o.obj["metadata"]["labels"][gpu_operator::kManagedBy], gpu_operator::kManagerName)
            << gpu_operator::key_of(o.obj);
}

TEST(OperatorRender, SharingIntoThePluginsConfigAndTemplate) {
    auto objs =
        render({{"devicePlugin",
                 {{"sharing", {{"timeSlicing", {{"replicas", 4}, {"renameByDefault", true}}}}}}}});
    const Json* cm = find(objs, "ConfigMap/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(cm);
    EXPECT_EQ((*cm)["data"]["plugin.yaml"],
              "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
              "    - name: enflame.com/gcu\n      replicas: 4\n");
    // what the plugin itself makes of it
    auto sh = k8s::parse_plugin_config((*cm)["data"]["plugin.yaml"].get<std::string>(),
                                       "plugin.yaml", "enflame.com/gcu");
    ASSERT_TRUE(sh) << sh.error().what();
    EXPECT_EQ(sh->replicas, 4U);
    EXPECT_EQ(sh->resource_name, "enflame.com/gcu.shared");
    // the plugin's config.toml untouched
    EXPECT_EQ((*cm)["data"]["config.toml"],
              "[enflame-container-cli]\ndriver-root = \"/host\"\ndev-root = \"/\"\n");
    const Json* ds = find(objs, "DaemonSet/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(ds);
    EXPECT_EQ((*ds)["spec"]["template"]["metadata"]["annotations"]["enflame.com/sharing"],
              "timeSlicing replicas=4 renameByDefault=true");
    // no sharing: the tree's config, no annotation
    objs = render(Json::object());
    cm = find(objs, "ConfigMap/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(cm);
    EXPECT_NE((*cm)["data"]["plugin.yaml"].get<std::string>().find("# sharing:"),
              std::string::npos);
    ds = find(objs, "DaemonSet/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(ds);
    EXPECT_FALSE((*ds)["spec"]["template"]["metadata"].contains("annotations"));
}

const gpu_operator::Object* find_obj(const std::vector<gpu_operator::Object>& objs,
                                     const std::string& kind, const std::string& name) {
    for (const auto& o : objs)
        if (o.obj["kind"] == kind && o.obj["metadata"]["name"] == name) return &o;
    return nullptr;
}

std::string first_image(const Json& ds) {
    return ds["spec"]["template"]["spec"]["containers"][0]["image"];
}

TEST(OperatorRender, NpdAndNodeExporterOffByDefault) {
    auto objs = render(Json::object());
    EXPECT_FALSE(find_obj(objs, "DaemonSet", "enflame-npd"));
    EXPECT_FALSE(find_obj(objs, "ClusterRoleBinding", "enflame-npd"));
    EXPECT_FALSE(find_obj(objs, "DaemonSet", "enflame-node-exporter"));
    EXPECT_FALSE(find_obj(objs, "Service", "enflame-node-exporter"));
}

TEST(OperatorRender, NpdOnItsFolderWithTheCrsImage) {
    auto objs = render(
        {{"npd",
          {{"enabled", true}, {"repository", "registry.example.com/npd"}, {"version", "v9.9"}}}});
    const gpu_operator::Object* ds = find_obj(objs, "DaemonSet", "enflame-npd");
    ASSERT_TRUE(ds);
    EXPECT_EQ(ds->component, "npd");
    EXPECT_EQ(ds->obj["metadata"]["namespace"], "enflame-system");
    EXPECT_EQ(first_image(ds->obj), "registry.example.com/npd/node-problem-detector:v9.9");
    // the init container that copies our plugin in keeps our image
    EXPECT_EQ(ds->obj["spec"]["template"]["spec"]["initContainers"][0]["image"],
              "enflame-container-toolkit/enflame-toolkit:0.1.0");
    EXPECT_TRUE(find(objs, "ServiceAccount/enflame-system/enflame-npd"));
    const Json* crb = find(objs, "ClusterRoleBinding//enflame-npd");
    ASSERT_TRUE(crb);
    EXPECT_EQ((*crb)["roleRef"]["name"], "system:node-problem-detector");
    // its generated ConfigMap under kustomize's hashed name, which the DaemonSet mounts
    const Json* vol = nullptr;
    for (const auto& v : ds->obj["spec"]["template"]["spec"]["volumes"])
        if (v["name"] == "config") vol = &v;
    ASSERT_TRUE(vol);
    const std::string cm = (*vol)["configMap"]["name"];
    EXPECT_EQ(cm.rfind("enflame-npd-", 0), 0U) << cm;
    EXPECT_EQ(cm.size(), std::string("enflame-npd-").size() + 10);
    const Json* data = find(objs, "ConfigMap/enflame-system/" + cm);
    ASSERT_TRUE(data);
    EXPECT_TRUE((*data)["data"].contains("enflame-gcu-monitor.json"));
    EXPECT_FALSE(find_obj(objs, "DaemonSet", "enflame-node-exporter"));
}

TEST(OperatorRender, NpdConfigFollowsDriverRootUnderANewName) {
    auto plain = render({{"npd", {{"enabled", true}}}});
    auto moved =
        render({{"npd", {{"enabled", true}}}, {"hostPaths", {{"driverRoot", "/opt/sim"}}}});
    auto cm_of = [](const std::vector<gpu_operator::Object>& objs) -> const Json* {
        for (const auto& o : objs)
            if (o.obj["kind"] == "ConfigMap" && o.component == "npd") return &o.obj;
        return nullptr;
    };
    const Json* a = cm_of(plain);
    const Json* b = cm_of(moved);
    ASSERT_TRUE(a);
    ASSERT_TRUE(b);
    const std::string toml = (*b)["data"]["enflame-ctk.toml"];
    EXPECT_NE(toml.find("driver-root = \"/host/opt/sim\""), std::string::npos) << toml;
    // another content, another name: the DaemonSet's pods are replaced, not left on the old
    EXPECT_NE((*a)["metadata"]["name"], (*b)["metadata"]["name"]);
    const gpu_operator::Object* ds = find_obj(moved, "DaemonSet", "enflame-npd");
    ASSERT_TRUE(ds);
    EXPECT_EQ(ds->obj["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
              (*b)["metadata"]["name"]);
}

TEST(OperatorRender, NodeExporterOnItsFolderWithTheCrsImage) {
    auto objs = render({{"nodeExporter", {{"enabled", true}, {"version", "1.2.3"}}}});
    const gpu_operator::Object* ds = find_obj(objs, "DaemonSet", "enflame-node-exporter");
    ASSERT_TRUE(ds);
    EXPECT_EQ(ds->component, "nodeExporter");
    EXPECT_EQ(ds->obj["metadata"]["namespace"], "kube-system");
    EXPECT_EQ(first_image(ds->obj), "enflame-container-toolkit/node-exporter:1.2.3");
    EXPECT_TRUE(find(objs, "Service/kube-system/enflame-node-exporter"));
    EXPECT_FALSE(find_obj(objs, "DaemonSet", "enflame-npd"));
}

/// The status line for COMPONENT's FIELD ("" when monitoring_status has none).
std::string monitor_status(const Json& spec, const std::set<std::string>& served,
                           const std::string& component, const std::string& field) {
    const gpu_operator::Served sv{"v1", served};
    auto objs = render(spec, "v1", served);
    for (const auto& m : gpu_operator::monitoring_status(spec, sv, objs))
        if (m.component == component && m.field == field) return m.message;
    return "";
}

TEST(OperatorRender, ServiceMonitorOnlyWhenAskedAndServed) {
    const Json on = {
        {"exporter",
         {{"serviceMonitor",
           {{"enabled", true}, {"interval", "30s"}, {"labels", {{"release", "kube-prom"}}}}}}}};
    // asked and served: deployments/monitoring/operator's, with the CR's interval and labels,
    // beside the exporter's Service it selects
    auto objs = render(on, "v1", {"ServiceMonitor"});
    const gpu_operator::Object* sm = find_obj(objs, "ServiceMonitor", "enflame-gcu-exporter");
    ASSERT_TRUE(sm);
    EXPECT_EQ(sm->component, "exporter");
    EXPECT_EQ(sm->obj["spec"]["endpoints"][0]["interval"], "30s");
    EXPECT_EQ(sm->obj["metadata"]["labels"]["release"], "kube-prom");
    EXPECT_EQ(sm->obj["metadata"]["labels"][gpu_operator::kManagedBy], gpu_operator::kManagerName);
    EXPECT_EQ(gpu_operator::path_of(sm->obj),
              "/apis/monitoring.coreos.com/v1/namespaces/enflame-system/servicemonitors/"
              "enflame-gcu-exporter");
    const gpu_operator::Object* svc = find_obj(objs, "Service", "enflame-gcu-exporter");
    ASSERT_TRUE(svc);
    EXPECT_EQ(sm->obj["spec"]["namespaceSelector"]["matchNames"],
              Json::array({svc->obj["metadata"]["namespace"]}));
    EXPECT_EQ(sm->obj["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
              svc->obj["metadata"]["labels"]["app.kubernetes.io/name"]);
    EXPECT_EQ(monitor_status(on, {"ServiceMonitor"}, "exporter", "serviceMonitor"),
              "applied ServiceMonitor/enflame-system/enflame-gcu-exporter");
    // only the one asked for: not the node exporter's, not the rules
    EXPECT_FALSE(find_obj(objs, "ServiceMonitor", "enflame-node-exporter"));
    EXPECT_FALSE(find_obj(objs, "PrometheusRule", "enflame-gcu"));
    // asked, not served (another kind is): nothing, and the reason for the status
    EXPECT_FALSE(
        find_obj(render(on, "v1", {"PodMonitor"}), "ServiceMonitor", "enflame-gcu-exporter"));
    const std::string why = monitor_status(on, {"PodMonitor"}, "exporter", "serviceMonitor");
    EXPECT_NE(why.find("skipped: the API server does not serve monitoring.coreos.com/v1 "
                       "ServiceMonitor"),
              std::string::npos)
        << why;
    // served, not asked (the default), or the exporter off: nothing, nothing to say
    EXPECT_FALSE(find_obj(render(Json::object(), "v1", kAllMonitoring), "ServiceMonitor",
                          "enflame-gcu-exporter"));
    EXPECT_EQ(monitor_status(Json::object(), {}, "exporter", "serviceMonitor"), "");
    Json off = on;
    off["exporter"]["enabled"] = false;
    EXPECT_FALSE(
        find_obj(render(off, "v1", kAllMonitoring), "ServiceMonitor", "enflame-gcu-exporter"));
    EXPECT_EQ(monitor_status(off, {}, "exporter", "serviceMonitor"), "");
}

// The node exporter's ServiceMonitor, NPD's PodMonitor and the alert rules: each from
// deployments/monitoring/operator, each only with its component on, asked and its kind served.
TEST(OperatorRender, NodeExporterServiceMonitorNpdPodMonitorPrometheusRule) {
    const Json spec = {
        {"nodeExporter",
         {{"enabled", true}, {"serviceMonitor", {{"enabled", true}, {"interval", "1m"}}}}},
        {"npd",
         {{"enabled", true},
          {"podMonitor", {{"enabled", true}, {"interval", "45s"}, {"labels", {{"r", "p"}}}}}}},
        {"exporter", {{"prometheusRule", {{"enabled", true}, {"labels", {{"release", "x"}}}}}}}};
    auto objs = render(spec, "v1", kAllMonitoring);
    const gpu_operator::Object* nsm = find_obj(objs, "ServiceMonitor", "enflame-node-exporter");
    ASSERT_TRUE(nsm);
    EXPECT_EQ(nsm->component, "nodeExporter");
    EXPECT_EQ(nsm->obj["spec"]["endpoints"][0]["interval"], "1m");
    const gpu_operator::Object* pm = find_obj(objs, "PodMonitor", "enflame-npd");
    ASSERT_TRUE(pm);
    EXPECT_EQ(pm->component, "npd");
    EXPECT_EQ(pm->obj["spec"]["podMetricsEndpoints"][0]["interval"], "45s");
    EXPECT_EQ(pm->obj["metadata"]["labels"]["r"], "p");
    // it selects the pods deployments/npd makes, on their port's name
    const gpu_operator::Object* npd = find_obj(objs, "DaemonSet", "enflame-npd");
    ASSERT_TRUE(npd);
    EXPECT_EQ(pm->obj["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
              npd->obj["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]);
    EXPECT_EQ(pm->obj["spec"]["podMetricsEndpoints"][0]["port"],
              npd->obj["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"]);
    const gpu_operator::Object* rule = find_obj(objs, "PrometheusRule", "enflame-gcu");
    ASSERT_TRUE(rule);
    EXPECT_EQ(rule->component, "exporter");
    EXPECT_EQ(rule->obj["metadata"]["labels"]["release"], "x");
    EXPECT_FALSE(rule->obj["spec"]["groups"][0]["rules"].empty());
    EXPECT_EQ(gpu_operator::path_of(rule->obj),
              "/apis/monitoring.coreos.com/v1/namespaces/kube-system/prometheusrules/enflame-gcu");
    EXPECT_FALSE(find_obj(objs, "ServiceMonitor", "enflame-gcu-exporter"));  // not asked
    EXPECT_EQ(monitor_status(spec, kAllMonitoring, "npd", "podMonitor"),
              "applied PodMonitor/kube-system/enflame-npd");
    EXPECT_EQ(monitor_status(spec, kAllMonitoring, "exporter", "prometheusRule"),
              "applied PrometheusRule/kube-system/enflame-gcu");
    // only ServiceMonitor served: the PodMonitor and the rules skipped, each saying why
    objs = render(spec, "v1", {"ServiceMonitor"});
    EXPECT_TRUE(find_obj(objs, "ServiceMonitor", "enflame-node-exporter"));
    EXPECT_FALSE(find_obj(objs, "PodMonitor", "enflame-npd"));
    EXPECT_FALSE(find_obj(objs, "PrometheusRule", "enflame-gcu"));
    EXPECT_NE(monitor_status(spec, {"ServiceMonitor"}, "npd", "podMonitor")
                  .find("does not serve monitoring.coreos.com/v1 PodMonitor"),
              std::string::npos);
    EXPECT_NE(monitor_status(spec, {"ServiceMonitor"}, "exporter", "prometheusRule")
                  .find("does not serve monitoring.coreos.com/v1 PrometheusRule"),
              std::string::npos);
    // the component off: its monitor goes with it, and nothing is said
    Json off = spec;
    off["npd"]["enabled"] = false;
    EXPECT_FALSE(find_obj(render(off, "v1", kAllMonitoring), "PodMonitor", "enflame-npd"));
    EXPECT_EQ(monitor_status(off, kAllMonitoring, "npd", "podMonitor"), "");
}

TEST(OperatorRender, NfdOffByDefault) {
    auto objs = render(Json::object());
    for (const auto& o : objs) EXPECT_NE(o.component, "nfd") << gpu_operator::key_of(o.obj);
    EXPECT_FALSE(find_obj(objs, "Deployment", "enflame-nfd-master"));
    EXPECT_FALSE(find_obj(objs, "CustomResourceDefinition", "nodefeatures.nfd.k8s-sigs.io"));
}

// nfd on: deployments/nfd (upstream's image by its reference, pinned in its kustomization), the
// CRDs NFD's daemons use, their accounts and RBAC; the CR's image fields reach both daemons;
// spec.daemonsets (a DaemonSet-only setting) stays off the master's Deployment.
TEST(OperatorRender, NfdOnItsFolderWithTheCrsImage) {
    auto objs = render({{"nfd", {{"enabled", true}}}});
    const gpu_operator::Object* master = find_obj(objs, "Deployment", "enflame-nfd-master");
    const gpu_operator::Object* worker = find_obj(objs, "DaemonSet", "enflame-nfd-worker");
    ASSERT_TRUE(master);
    ASSERT_TRUE(worker);
    EXPECT_EQ(master->component, "nfd");
    EXPECT_EQ(first_image(master->obj), first_image(worker->obj));
    EXPECT_EQ(first_image(master->obj).rfind("registry.k8s.io/nfd/node-feature-discovery:v", 0), 0U)
        << first_image(master->obj);
    for (const char* crd : {"nodefeatures.nfd.k8s-sigs.io", "nodefeaturerules.nfd.k8s-sigs.io",
                            "nodefeaturegroups.nfd.k8s-sigs.io"}) {
        const Json* c = find(objs, std::string("CustomResourceDefinition//") + crd);
        ASSERT_TRUE(c) << crd;
        EXPECT_EQ(gpu_operator::path_of(*c),
                  std::string("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/") + crd);
    }
    EXPECT_TRUE(find(objs, "ServiceAccount/enflame-system/enflame-nfd-master"));
    EXPECT_TRUE(find(objs, "RoleBinding/enflame-system/enflame-nfd-worker"));
    // the roles come with deployments/operator: the operator binds them, never writes them
    EXPECT_FALSE(find(objs, "ClusterRole//enflame-nfd-worker"));
    EXPECT_FALSE(find(objs, "ClusterRole//enflame-nfd-master"));
    const Json* crb = find(objs, "ClusterRoleBinding//enflame-nfd-master");
    ASSERT_TRUE(crb);
    EXPECT_EQ((*crb)["subjects"][0]["namespace"], "enflame-system");

    objs = render({{"nfd",
                    {{"enabled", true},
                     {"repository", "mirror.example.com/nfd"},
                     {"version", "v0.99.0"},
                     {"nodeSelector", {{"pool", "gcu"}}}}},
                   {"daemonsets", {{"updateStrategy", "OnDelete"}}}});
    master = find_obj(objs, "Deployment", "enflame-nfd-master");
    worker = find_obj(objs, "DaemonSet", "enflame-nfd-worker");
    ASSERT_TRUE(master);
    ASSERT_TRUE(worker);
    for (const auto* o : {master, worker}) {
        EXPECT_EQ(first_image(o->obj), "mirror.example.com/nfd/node-feature-discovery:v0.99.0");
        EXPECT_EQ(o->obj["spec"]["template"]["spec"]["nodeSelector"]["pool"], "gcu");
    }
    EXPECT_EQ(worker->obj["spec"]["updateStrategy"]["type"], "OnDelete");
    EXPECT_FALSE(master->obj["spec"].contains("updateStrategy"));
}

}  // namespace
