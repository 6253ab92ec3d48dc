// SPDX-License-Identifier: Apache-2.0
// The operator and DRS layouts (issue 39): spec.drsManager deploys deployments/drs-manager with
// the CR's default layout, spec.devicePlugin.configs become the plugin's named configs (and
// defaultConfig its plugin.yaml), and the status counts each labelled node's layout state.
#include <gtest/gtest.h>

#include "k8s/sharing.hpp"
#include "operator/drs_status.hpp"
#include "operator/render.hpp"

namespace {

using gpu_operator::Json;

const std::string kTree = std::string(K8S_TESTS_DIR) + "/../../deployments";

std::vector<gpu_operator::Object> render(const Json& spec) {
    auto r = gpu_operator::render(kTree, spec, gpu_operator::Served{"v1", {}});
    EXPECT_TRUE(r) << r.error().what();
    return r ? *r : std::vector<gpu_operator::Object>{};
}

const Json* find(const std::vector<gpu_operator::Object>& objs, const std::string& key) {
    for (const auto& o : objs)
        if (gpu_operator::key_of(o.obj) == key) return &o.obj;
    return nullptr;
}

std::string env_of(const Json& ds, const std::string& name) {
    for (const auto& e : ds["spec"]["template"]["spec"]["containers"][0]["env"])
        if (e["name"] == name) return e.value("value", "");
    return "<unset>";
}

TEST(OperatorDrs, ManagerOffByDefaultOnWithItsFolderAndDefaultLayout) {
    auto objs = render(Json::object());
    EXPECT_FALSE(find(objs, "DaemonSet/enflame-system/enflame-drs-manager"));
    objs = render({{"drsManager", {{"enabled", true}, {"defaultLayout", "all-1g.11gb"}}},
                   {"hostPaths", {{"driverRoot", "/opt/sim"}}}});
    const Json* ds = find(objs, "DaemonSet/enflame-system/enflame-drs-manager");
    ASSERT_TRUE(ds);
    EXPECT_EQ(env_of(*ds, "DEFAULT_LAYOUT"), "all-1g.11gb");
    for (const char* key :
         {"ConfigMap/enflame-system/enflame-drs-layouts", "ClusterRoleBinding//enflame-drs-manager",
          "RoleBinding/enflame-system/enflame-drs-manager",
          "ValidatingAdmissionPolicy//enflame-drs-manager-own-node"})
        EXPECT_TRUE(find(objs, key)) << key;
    // its roles ship with deployments/operator: never rendered, so never written
    EXPECT_FALSE(find(objs, "ClusterRole//enflame-drs-manager"));
    EXPECT_FALSE(find(objs, "Role/enflame-system/enflame-drs-manager"));
    // it sees the driver through /host: the driver root moves under it
    const Json* cm = find(objs, "ConfigMap/enflame-system/enflame-drs-manager");
    ASSERT_TRUE(cm);
    EXPECT_NE(
        (*cm)["data"]["config.toml"].get<std::string>().find("driver-root = \"/host/opt/sim\""),
        std::string::npos);
}

TEST(OperatorDrs, NamedPluginConfigsAndTheDefault) {
    const std::string shared =
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: enflame.com/gcu\n      replicas: 4\n";
    auto objs = render({{"devicePlugin",
                         {{"configs", {{"shared4", shared}, {"whole", "version: v1\n"}}},
                          {"defaultConfig", "shared4"}}}});
    const Json* cm = find(objs, "ConfigMap/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(cm);
    EXPECT_EQ((*cm)["data"]["shared4.yaml"], shared);
    EXPECT_EQ((*cm)["data"]["whole.yaml"], "version: v1\n");
    EXPECT_EQ((*cm)["data"]["plugin.yaml"], shared);
    auto sh = k8s::parse_plugin_config(shared, "plugin.yaml", "enflame.com/gcu");
    ASSERT_TRUE(sh) << sh.error().what();
    EXPECT_EQ(sh->replicas, 4U);
    // a change of the configs changes the pod template, so the pods are replaced
    const Json* ds = find(objs, "DaemonSet/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(ds);
    const std::string a =
        (*ds)["spec"]["template"]["metadata"]["annotations"]["enflame.com/plugin-configs"];
    objs = render({{"devicePlugin", {{"configs", {{"shared4", shared}}}}}});
    ds = find(objs, "DaemonSet/enflame-system/enflame-device-plugin");
    ASSERT_TRUE(ds);
    EXPECT_NE((*ds)["spec"]["template"]["metadata"]["annotations"]["enflame.com/plugin-configs"],
              a);
    cm = find(objs, "ConfigMap/enflame-system/enflame-device-plugin");
    EXPECT_NE((*cm)["data"]["plugin.yaml"], shared);  // no default: the tree's plugin.yaml
}

TEST(OperatorDrs, StatusPerLabelledNodeCountedByState) {
    auto node = [](const std::string& name, const Json& labels) {
        return Json{{"metadata", {{"name", name}, {"labels", labels}}}};
    };
    const auto st =
        gpu_operator::drs_status({node("a", {{"enflame.com/drs.config", "all-1g.11gb"},
                                             {"enflame.com/drs.config.state", "success"}}),
                                  node("b", {{"enflame.com/drs.config", "all-full"},
                                             {"enflame.com/drs.config.state", "pending"}}),
                                  node("c", {{"enflame.com/drs.config", "mixed"}}),
                                  node("d", {{"enflame.com/gpu.present", "true"}}),
                                  node("e", {{"enflame.com/drs.config", "all-1g.11gb"},
                                             {"enflame.com/drs.config.state", "success"}})});
    EXPECT_EQ(st.nodes, (Json{{"a", "all-1g.11gb: success"},
                              {"b", "all-full: pending"},
                              {"c", "mixed: -"},
                              {"e", "all-1g.11gb: success"}}));
    EXPECT_EQ(st.summary, "1 pending, 2 success, 1 unreported");
    EXPECT_EQ(gpu_operator::drs_status({node("d", Json::object())}).summary, "");
}

}  // namespace
