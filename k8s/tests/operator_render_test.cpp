// SPDX-License-Identifier: Apache-2.0
// The operator's renderer over this repository's deployments/ tree: a GpuResource's fields
// land where a user would look for them, disabled components are left out, and a
// kustomization feature the renderer does not have is refused by name (never silently
// rendered differently from kubectl kustomize; operator.bats compares the two).
#include <gtest/gtest.h>

#include <fstream>

#include "k8s/sharing.hpp"
#include "render.hpp"
#include "temp_dir.hpp"

namespace {

using op::Json;

const std::string kTree = std::string(K8S_TESTS_DIR) + "/../../deployments";

const Json* find(const std::vector<op::Object>& objs, const std::string& key) {
    for (const auto& o : objs)
        if (op::key_of(o.obj) == key) return &o.obj;
    return nullptr;
}

std::vector<op::Object> render(const Json& spec, const std::string& dra = "v1") {
    auto r = op::render(kTree, spec, dra);
    EXPECT_TRUE(r) << r.error().what();
    return r ? *r : std::vector<op::Object>{};
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
    EXPECT_TRUE(find(objs, "Namespace//enflame-system"));
    EXPECT_TRUE(find(objs, "DaemonSet/enflame-system/enflame-toolkit-installer"));
}

TEST(OperatorRender, DraDriverAddsItsObjectsClusterScopedDeviceClass) {
    auto objs = render({{"draDriver", {{"enabled", true}}}}, "v1beta1");
    const Json* dc = nullptr;
    for (const auto& o : objs)
        if (o.obj["kind"] == "DeviceClass") dc = &o.obj;
    ASSERT_TRUE(dc);
    EXPECT_EQ((*dc)["apiVersion"], "resource.k8s.io/v1beta1");
    EXPECT_FALSE((*dc)["metadata"].contains("namespace"));
    EXPECT_EQ(op::path_of(*dc), "/apis/resource.k8s.io/v1beta1/deviceclasses/" +
                                    (*dc)["metadata"]["name"].get<std::string>());
    const Json* crb = find(objs, "ClusterRoleBinding//enflame-dra-plugin");
    ASSERT_TRUE(crb);
    EXPECT_EQ((*crb)["subjects"][0]["namespace"], "enflame-system");
    EXPECT_TRUE(find(objs, "DaemonSet/enflame-system/enflame-device-plugin"));  // side by side
}

TEST(OperatorRender, DriverRootReachesInstallerAndConfigs) {
    auto objs = render({{"hostPaths", {{"driverRoot", "/opt/sim"}}}});
    const Json* inst = find(objs, "DaemonSet/enflame-system/enflame-toolkit-installer");
    ASSERT_TRUE(inst);
    const Json& cmd = (*inst)["spec"]["template"]["spec"]["containers"][0]["command"];
    EXPECT_EQ(cmd[cmd.size() - 2], "--driver-root=/opt/sim");
    EXPECT_EQ(cmd.back(), "--dev-root=/opt/sim");
    const Json* cm = find(objs, "ConfigMap/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(cm);
    const std::string toml = (*cm)["data"]["config.toml"];
    EXPECT_NE(toml.find("driver-root = \"/host/opt/sim\""), std::string::npos) << toml;
    EXPECT_NE(toml.find("dev-root = \"/host/opt/sim\""), std::string::npos) << toml;
}

TEST(OperatorRender, EveryObjectCarriesTheOperatorsLabel) {
    for (const auto& o : render(Json::object()))
        EXPECT_EQ(o.obj["metadata"]["labels"][op::kManagedBy], op::kManagerName)
            << op::key_of(o.obj);
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

TEST(OperatorKustomize, UnsupportedFieldRefusedNamingFileAndField) {
    k8s_test::TempDir d;
    std::ofstream(d.path() + "/kustomization.yaml")
        << "resources: []\nconfigMapGenerator:\n- name: x\n";
    auto r = op::kustomize(d.path());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message(),
              d.path() +
                  "/kustomization.yaml: 'configMapGenerator' is not supported by the "
                  "operator's renderer (resources, namespace, images, patches are)");
}

TEST(OperatorContains, Table) {
    struct Case {
        const char* name;
        Json have, want;
        bool out;
    };
    const Case cases[] = {
        {"extra server fields", {{"a", 1}, {"b", 2}}, {{"a", 1}}, true},
        {"value differs", {{"a", 1}}, {{"a", 2}}, false},
        {"missing field", {{"a", 1}}, {{"c", 1}}, false},
        {"list longer", {{"l", {1, 2, 3}}}, {{"l", {1, 2}}}, false},
        {"list items subset", {{"l", {{{"x", 1}, {"y", 2}}}}}, {{"l", {{{"x", 1}}}}}, true},
        {"string vs number", {{"a", "1"}}, {{"a", 1}}, false},
    };
    for (const auto& c : cases) EXPECT_EQ(op::contains(c.have, c.want), c.out) << c.name;
}

}  // namespace
