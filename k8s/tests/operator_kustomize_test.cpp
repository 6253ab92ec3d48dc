// SPDX-License-Identifier: Apache-2.0
// The operator's kustomize engine on made-up trees (a field it does not have refused by name;
// configMapGenerator's names and references as kubectl's), and the object helpers the
// controller compares and patches with.
#include <gtest/gtest.h>

#include <fstream>

#include "operator/render.hpp"
#include "temp_dir.hpp"

namespace {

using gpu_operator::Json;

const Json* find(const std::vector<gpu_operator::Object>& objs, const std::string& key) {
    for (const auto& o : objs)
        if (gpu_operator::key_of(o.obj) == key) return &o.obj;
    return nullptr;
}

TEST(OperatorKustomize, UnsupportedFieldRefusedNamingFileAndField) {
    k8s_test::TempDir d;
    std::ofstream(d.path() + "/kustomization.yaml")
        << "resources: []\nsecretGenerator:\n- name: x\n";
    auto r = gpu_operator::kustomize(d.path());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message(),
              d.path() +
                  "/kustomization.yaml: 'secretGenerator' is not supported by the "
                  "operator's renderer (resources, namespace, images, patches, "
                  "configMapGenerator are)");
    std::ofstream(d.path() + "/kustomization.yaml")
        << "configMapGenerator:\n- name: x\n  behavior: merge\n";
    r = gpu_operator::kustomize(d.path());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message(),
              d.path() +
                  "/kustomization.yaml: configMapGenerator: 'behavior' is not supported by the "
                  "operator's renderer");
}

// The names and references kubectl kustomize (v1.32, kustomize v5.5) printed for this very
// folder: its content hash (Go's JSON escaping of " \\ < & > and tabs included) and every kind
// of reference a pod template has to a ConfigMap.
TEST(OperatorKustomize, ConfigMapGeneratorNamesAndReferencesAsKubectl) {
    k8s_test::TempDir d;
    std::ofstream(d.path() + "/conf.txt") << "line one\n\ttab \"quoted\" <html> & \\ back\n";
    std::ofstream(d.path() + "/kustomization.yaml")
        << "namespace: ns\nresources: [ds.yaml]\nconfigMapGenerator:\n- name: cx\n  literals: "
           "[a=b]\n- name: cy\n  files: [k=conf.txt]\n  literals: [\"z=<1&2>\"]\n  options: "
           "{labels: {l: v}}\n";
    std::ofstream(d.path() + "/ds.yaml")
        << "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec:\n  template:\n    "
           "spec:\n      containers:\n      - name: c\n        image: i\n        env: [{name: E, "
           "valueFrom: {configMapKeyRef: {name: cx, key: a}}}]\n        envFrom: [{configMapRef: "
           "{name: cy}}]\n      volumes: [{name: v, configMap: {name: cy}}, {name: p, projected: "
           "{sources: [{configMap: {name: cx}}]}}]\n";
    auto r = gpu_operator::kustomize(d.path());
    ASSERT_TRUE(r) << r.error().what();
    const Json* cx = find(*r, "ConfigMap/ns/cx-4h2mbtbbt6");
    const Json* cy = find(*r, "ConfigMap/ns/cy-c95776c64f");
    ASSERT_TRUE(cx);
    ASSERT_TRUE(cy);
    EXPECT_EQ((*cy)["metadata"]["labels"], Json({{"l", "v"}}));
    EXPECT_EQ((*cy)["data"]["z"], "<1&2>");
    const Json* ds = find(*r, "DaemonSet/ns/d");
    ASSERT_TRUE(ds);
    const Json& ps = (*ds)["spec"]["template"]["spec"];
    EXPECT_EQ(ps["containers"][0]["env"][0]["valueFrom"]["configMapKeyRef"]["name"],
              "cx-4h2mbtbbt6");
    EXPECT_EQ(ps["containers"][0]["envFrom"][0]["configMapRef"]["name"], "cy-c95776c64f");
    EXPECT_EQ(ps["volumes"][0]["configMap"]["name"], "cy-c95776c64f");
    EXPECT_EQ(ps["volumes"][1]["projected"]["sources"][0]["configMap"]["name"], "cx-4h2mbtbbt6");
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
    for (const auto& c : cases) EXPECT_EQ(gpu_operator::contains(c.have, c.want), c.out) << c.name;
}

// The status patch: applied (RFC 7386, nlohmann's merge_patch) to what the server has, it gives
// exactly the status wanted, keys the new status dropped included. (A patch of the new status
// alone left status.upgrade.message from an earlier reconcile on the server: the cached status
// never equalled the computed one and every reconcile wrote it again.)
TEST(OperatorMergePatch, TurnsTheServersStatusIntoTheWantedOne) {
    const Json from = {{"state", "ready"},
                       {"upgrade", {{"message", "DaemonSets being applied"}}},
                       {"components", {{{"name", "toolkit"}, {"ready", true}}}},
                       {"gone", 1}};
    const Json to = {{"state", "ready"},
                     {"upgrade", {{"nodes", Json::array()}, {"totalNodes", 1}}},
                     {"components", {{{"name", "toolkit"}, {"ready", false}}}}};
    const Json patch = gpu_operator::merge_patch(from, to);
    EXPECT_EQ(patch, Json::parse(R"({"upgrade": {"message": null, "nodes": [], "totalNodes": 1},
        "components": [{"name": "toolkit", "ready": false}], "gone": null})"));
    Json server = from;
    server.merge_patch(patch);
    EXPECT_EQ(server, to);
    EXPECT_EQ(gpu_operator::merge_patch(to, to), Json::object());
    Json empty = Json::object();
    empty.merge_patch(gpu_operator::merge_patch(empty, to));
    EXPECT_EQ(empty, to);
}

}  // namespace
