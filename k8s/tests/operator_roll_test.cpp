// SPDX-License-Identifier: Apache-2.0
// The operator's node labels and ordered roll as plans over a cache (roll.hpp): what it would
// label, unlabel and delete for a given set of nodes and pods. operator.bats watches the same
// on a real cluster.
#include <gtest/gtest.h>

#include "operator/roll.hpp"

namespace {

using gpu_operator::Json;

const std::string kTree = std::string(K8S_TESTS_DIR) + "/../../deployments";

Json node(const std::string& name, bool nfd, bool ours = false, bool present = false,
          bool cordoned = false) {
    Json n = {{"metadata", {{"name", name}, {"labels", Json::object()}}}};
    if (nfd) n["metadata"]["labels"][gpu_operator::kNfdPciLabel] = "true";
    if (present) n["metadata"]["labels"][gpu_operator::kGpuPresent] = "true";
    if (ours)
        n["metadata"]["annotations"][gpu_operator::kLabelsSetAnnotation] =
            gpu_operator::kGpuPresent;
    if (cordoned) n["spec"]["unschedulable"] = true;
    return n;
}

TEST(OperatorNodeLabels, SetWhereNfdFoundTheCardRemoveOnlyOurs) {
    const std::vector<Json> nodes = {
        node("fresh", true),                // NFD saw 1e36: label it
        node("done", true, true, true),     // labelled by us already: nothing
        node("gone", false, true, true),    // ours, card gone: remove
        node("admin", false, false, true),  // the administrator's label: never touched
        node("cpu", false)};                // nothing to do
    const auto plan = gpu_operator::plan_node_labels(nodes, true);
    EXPECT_EQ(plan, (std::map<std::string, bool>{{"fresh", true}, {"gone", false}}));
    // the CR gone: every label we set goes, the administrator's stays
    const auto off = gpu_operator::plan_node_labels(nodes, false);
    EXPECT_EQ(off, (std::map<std::string, bool>{{"done", false}, {"gone", false}}));
}

// The NFD deployments/nfd ships runs with upstream's default PCI label fields (class, vendor):
// an Enflame card (class 1200) shows as pci-1200_1e36.present. Other vendors' labels, a false
// value, or 1e36 as a device id do not count.
TEST(OperatorNodeLabels, NfdDefaultClassVendorLabelCounts) {
    auto with = [](const std::string& label, const std::string& value) {
        Json n = {{"metadata", {{"name", label}, {"labels", {{label, value}}}}}};
        return n;
    };
    const std::vector<Json> nodes = {
        with("feature.node.kubernetes.io/pci-1200_1e36.present", "true"),
        with("feature.node.kubernetes.io/pci-0b40_1e36.present", "true"),
        with("feature.node.kubernetes.io/pci-0300_10de.present", "true"),
        with("feature.node.kubernetes.io/pci-1200_1e36.present", "false"),
        with("feature.node.kubernetes.io/pci-1e36_1e36x.present", "true"),
        with("feature.node.kubernetes.io/pci-1200_10de_1e36.present", "true")};
    EXPECT_EQ(
        gpu_operator::plan_node_labels(nodes, true),
        (std::map<std::string, bool>{{"feature.node.kubernetes.io/pci-1200_1e36.present", true},
                                     {"feature.node.kubernetes.io/pci-0b40_1e36.present", true}}));
}

TEST(OperatorNodeLabels, ApplyBodies) {
    const Json set = gpu_operator::node_label_body("n1", true);
    EXPECT_EQ(set["metadata"]["labels"][gpu_operator::kGpuPresent], "true");
    EXPECT_EQ(set["metadata"]["annotations"][gpu_operator::kLabelsSetAnnotation],
              gpu_operator::kGpuPresent);
    // removal is an apply of nothing by the same field manager
    EXPECT_EQ(gpu_operator::node_label_body("n1", false),
              (Json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}}));
}

std::vector<gpu_operator::Object> rendered(const Json& spec) {
    auto r = gpu_operator::render(kTree, spec, gpu_operator::Served{});
    EXPECT_TRUE(r) << r.error().what();
    auto objs = r ? *r : std::vector<gpu_operator::Object>{};
    gpu_operator::prepare_roll(objs);
    return objs;
}
const Json& ds(const std::vector<gpu_operator::Object>& objs, const std::string& name) {
    for (const auto& o : objs)
        if (o.obj["kind"] == "DaemonSet" && o.obj["metadata"]["name"] == name) return o.obj;
    static const Json none;
    ADD_FAILURE() << "no DaemonSet " << name;
    return none;
}
std::string hash(const Json& d, const char* key = gpu_operator::kTemplateHash) {
    return d["spec"]["template"]["metadata"].value("annotations", Json::object()).value(key, "");
}

TEST(OperatorRoll, ToolkitAndPluginsAreOnDeleteWithHashes) {
    const auto a = rendered(Json::object());
    const Json& tk = ds(a, "enflame-toolkit-installer");
    const Json& dp = ds(a, "enflame-device-plugin");
    EXPECT_EQ(tk["spec"]["updateStrategy"], (Json{{"type", "OnDelete"}}));
    EXPECT_EQ(dp["spec"]["updateStrategy"], (Json{{"type", "OnDelete"}}));
    EXPECT_EQ(hash(tk).size(), 16U);
    EXPECT_EQ(hash(dp, gpu_operator::kToolkitHash), hash(tk));
    EXPECT_EQ(tk["spec"]["template"]["metadata"]["labels"][gpu_operator::kManagedBy],
              gpu_operator::kManagerName);
    // the exporter is rolled by its DaemonSet controller as the CR says
    EXPECT_FALSE(gpu_operator::rolled(ds(a, "enflame-gcu-exporter")));
    EXPECT_EQ(hash(ds(a, "enflame-gcu-exporter")), "");
    // a new toolkit version: a new toolkit hash, and so a new plugin hash (it restarts after)
    const auto b = rendered({{"toolkit", {{"version", "0.2.0"}}}});
    EXPECT_NE(hash(ds(b, "enflame-toolkit-installer")), hash(tk));
    EXPECT_NE(hash(ds(b, "enflame-device-plugin")), hash(dp));
    // the same spec twice: the same hashes (a second replica or a restart rolls nothing)
    EXPECT_EQ(hash(ds(rendered(Json::object()), "enflame-device-plugin")), hash(dp));
}

const std::map<std::string, std::string> kWant = {{"enflame-toolkit-installer", "T2"},
                                                  {"enflame-device-plugin", "P2"}};

Json pod(const std::string& ds, const std::string& node, const std::string& hash, bool ready = true,
         bool terminating = false) {
    Json p = {
        {"metadata",
         {{"name", ds + "-" + node},
          {"namespace", "enflame-system"},
          {"uid", ds + "@" + node},
          {"labels", {{"app.kubernetes.io/name", ds}}},
          {"annotations", {{gpu_operator::kTemplateHash, hash}}}}},
        {"spec", {{"nodeName", node}}},
        {"status", {{"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
    if (terminating) p["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z";
    return p;
}
std::vector<std::string> names(const gpu_operator::RollPlan& p) {
    std::vector<std::string> out;
    for (const auto& d : p.delete_pods) out.push_back(d["metadata"]["name"]);
    return out;
}
std::string state(const gpu_operator::RollPlan& p, const std::string& n) {
    for (const auto& e : p.nodes)
        if (e["name"] == n) return e["state"];
    return "";
}
std::map<std::string, Json> nodes_of(std::initializer_list<Json> l) {
    std::map<std::string, Json> m;
    for (const auto& n : l) m[n["metadata"]["name"]] = n;
    return m;
}

TEST(OperatorRoll, OneNodeToolkitFirstThenPluginOnceToolkitReady) {
    const auto nodes = nodes_of({node("a", true)});
    // both old: only the toolkit pod goes
    auto p = gpu_operator::plan_roll(
        kWant,
        {pod("enflame-toolkit-installer", "a", "T1"), pod("enflame-device-plugin", "a", "P1")},
        nodes, 1, {});
    EXPECT_EQ(names(p), std::vector<std::string>{"enflame-toolkit-installer-a"});
    EXPECT_EQ(state(p, "a"), "toolkit");
    // the new toolkit pod not Ready yet: the plugin waits
    p = gpu_operator::plan_roll(kWant,
                                {pod("enflame-toolkit-installer", "a", "T2", false),
                                 pod("enflame-device-plugin", "a", "P1")},
                                nodes, 1, {});
    EXPECT_TRUE(p.delete_pods.empty());
    EXPECT_EQ(state(p, "a"), "toolkit");
    // Ready at the new version: now the plugin
    p = gpu_operator::plan_roll(
        kWant,
        {pod("enflame-toolkit-installer", "a", "T2"), pod("enflame-device-plugin", "a", "P1")},
        nodes, 1, {});
    EXPECT_EQ(names(p), std::vector<std::string>{"enflame-device-plugin-a"});
    EXPECT_EQ(state(p, "a"), "plugins");
    // all new and Ready
    p = gpu_operator::plan_roll(
        kWant,
        {pod("enflame-toolkit-installer", "a", "T2"), pod("enflame-device-plugin", "a", "P2")},
        nodes, 1, {});
    EXPECT_TRUE(p.delete_pods.empty());
    EXPECT_EQ(state(p, "a"), "upToDate");
    EXPECT_EQ(p.updated, 1);
}

std::vector<Json> old_pods(std::initializer_list<const char*> ns) {
    std::vector<Json> out;
    for (const char* n : ns) {
        out.push_back(pod("enflame-toolkit-installer", n, "T1"));
        out.push_back(pod("enflame-device-plugin", n, "P1"));
    }
    return out;
}

TEST(OperatorRoll, AtMostMaxUnavailableNodesAtOnce) {
    const auto nodes = nodes_of({node("a", true), node("b", true), node("c", true)});
    const auto pods = old_pods({"a", "b", "c"});
    EXPECT_EQ(gpu_operator::plan_roll(kWant, pods, nodes, 1, {}).delete_pods.size(), 1U);
    EXPECT_EQ(gpu_operator::plan_roll(kWant, pods, nodes, 2, {}).delete_pods.size(), 2U);
    EXPECT_EQ(gpu_operator::plan_roll(kWant, pods, nodes, "50%", {}).delete_pods.size(),
              2U);  // 1.5 up
    // a pod deleted a moment ago that the cache still shows Ready: node a is busy, b waits
    const auto p = gpu_operator::plan_roll(kWant, pods, nodes, 1, {"enflame-toolkit-installer@a"});
    EXPECT_TRUE(p.delete_pods.empty());
    EXPECT_EQ(state(p, "a"), "toolkit");
    EXPECT_EQ(state(p, "b"), "pending");
}

TEST(OperatorRoll, HalfDoneNodeFinishesBeforeTheNextStarts) {
    const auto nodes = nodes_of({node("a", true), node("b", true)});
    auto pods = old_pods({"a"});
    pods.push_back(pod("enflame-toolkit-installer", "b", "T2"));  // b: toolkit done,
    pods.push_back(pod("enflame-device-plugin", "b", "P1"));      // plugin old
    const auto p = gpu_operator::plan_roll(kWant, pods, nodes, 1, {});
    EXPECT_EQ(names(p), std::vector<std::string>{"enflame-device-plugin-b"});
    EXPECT_EQ(state(p, "a"), "pending");
}

TEST(OperatorRoll, CordonedNodeSkippedAndReported) {
    const auto nodes = nodes_of({node("a", true, false, false, true), node("b", true)});
    const auto p = gpu_operator::plan_roll(kWant, old_pods({"a", "b"}), nodes, 1, {});
    EXPECT_EQ(names(p), std::vector<std::string>{"enflame-toolkit-installer-b"});
    EXPECT_EQ(state(p, "a"), "cordoned");
    EXPECT_EQ(p.cordoned, 1);
    // alone and cordoned: nothing happens at all
    const auto q = gpu_operator::plan_roll(kWant, old_pods({"a"}), nodes, 1, {});
    EXPECT_TRUE(q.delete_pods.empty());
    EXPECT_EQ(state(q, "a"), "cordoned");
}

// An old toolkit pod whose replacement has the same command is handed over: marked first, deleted
// only once it reports not Ready (its installer saw the mark, so its preStop undoes nothing).
// Another command (a flag changed): deleted at once, its preStop uninstalls as before.
TEST(OperatorRoll, SameInstallFlagsHandOverInsteadOfUninstall) {
    const auto nodes = nodes_of({node("a", true), node("b", true)});
    const Json cmd = {"/usr/bin/enflame-ctk", "toolkit", "install", "--wait"};
    auto with_cmd = [](Json p, const Json& c, bool marked) {
        p["spec"]["containers"] = {{{"name", "x"}, {"command", c}}};
        if (marked) p["metadata"]["annotations"][gpu_operator::kHandover] = "true";
        return p;
    };
    auto pods = [&](bool marked, bool ready, const Json& c) {
        return std::vector<Json>{
            with_cmd(pod("enflame-toolkit-installer", "a", "T1", ready), c, marked),
            pod("enflame-device-plugin", "a", "P1"),
            with_cmd(pod("enflame-toolkit-installer", "b", "T1"), c, false),
            pod("enflame-device-plugin", "b", "P1")};
    };
    // not marked yet: marked, nothing deleted; node b waits (maxUnavailable 1)
    auto p = gpu_operator::plan_roll(kWant, pods(false, true, cmd), nodes, 1, {}, cmd);
    ASSERT_EQ(p.mark_pods.size(), 1U);
    EXPECT_EQ(p.mark_pods[0]["metadata"]["name"], "enflame-toolkit-installer-a");
    EXPECT_TRUE(p.delete_pods.empty());
    EXPECT_EQ(state(p, "a"), "toolkit");
    EXPECT_EQ(state(p, "b"), "pending");
    // marked, still Ready (the kubelet has not refreshed the pod's annotations file): wait, and
    // node a still holds the one unavailable slot
    p = gpu_operator::plan_roll(kWant, pods(true, true, cmd), nodes, 1, {}, cmd);
    EXPECT_TRUE(p.mark_pods.empty());
    EXPECT_TRUE(p.delete_pods.empty());
    EXPECT_EQ(state(p, "b"), "pending");
    // marked and not Ready: now it goes
    p = gpu_operator::plan_roll(kWant, pods(true, false, cmd), nodes, 1, {}, cmd);
    EXPECT_TRUE(p.mark_pods.empty());
    EXPECT_EQ(names(p), std::vector<std::string>{"enflame-toolkit-installer-a"});
    // the new template's command differs: deleted at once, no mark
    p = gpu_operator::plan_roll(
        kWant, pods(false, true, cmd), nodes, 1, {},
        Json{"/usr/bin/enflame-ctk", "toolkit", "install", "--set-as-default"});
    EXPECT_TRUE(p.mark_pods.empty());
    EXPECT_EQ(names(p), std::vector<std::string>{"enflame-toolkit-installer-a"});
}

}  // namespace
