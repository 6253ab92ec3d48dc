// SPDX-License-Identifier: Apache-2.0
// From an InferencePool and pods to the EPP's endpoints (epp/pool/pool_targets.hpp): the
// selector, readiness, deletion, podIP and targetPorts rules, the exporter of each pod's node,
// and a pool that breaks the CRD's rules refused with the pool and field named.
#include <gtest/gtest.h>

#include <optional>

#include "epp/pool/pool_targets.hpp"

namespace {

using nlohmann::json;

json pool(json selector, json ports) {
    return {{"metadata", {{"name", "llama"}, {"namespace", "serving"}}},
            {"spec", {{"selector", {{"matchLabels", selector}}}, {"targetPorts", ports}}}};
}

json pod(const std::string& name, const std::string& ip, json labels, bool ready = true,
         const std::string& node = "node-a") {
    json p = {{"metadata", {{"name", name}, {"namespace", "serving"}, {"labels", labels}}},
              {"spec", {{"nodeName", node}}},
              {"status",
               {{"podIP", ip},
                {"conditions",
                 {{{"type", "PodScheduled"}, {"status", "True"}},
                  {{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
    return p;
}

epp::PoolSpec spec_of(const json& p) {
    auto s = epp::pool_spec(p);
    EXPECT_TRUE(s) << s.error().what();
    return s ? *s : epp::PoolSpec{};
}

const json kApp = {{"app", "llama"}};

std::vector<std::string> addresses(const std::vector<epp::Target>& ts) {
    std::vector<std::string> out;
    for (const auto& t : ts) out.push_back(t.address);
    return out;
}

TEST(PoolSpec, ReadsMatchLabelsAndTargetPortsInOrder) {
    const auto s = spec_of(pool({{"app", "llama"}, {"tier", "gpu"}},
                                json::array({{{"number", 8001}}, {{"number", 8000}}})));
    EXPECT_EQ(s.match_labels,
              (std::map<std::string, std::string>{{"app", "llama"}, {"tier", "gpu"}}));
    EXPECT_EQ(s.target_ports, (std::vector<int>{8001, 8000}));
    EXPECT_EQ(epp::label_selector(s), "app=llama,tier=gpu");
}

TEST(PoolSpec, RefusesWhatTheCrdForbidsNamingThePoolAndField) {
    const json nine = json::array();
    json ports9 = json::array();
    for (int i = 0; i < 9; ++i) ports9.push_back({{"number", 8000 + i}});
    struct Case {
        std::string name;
        json pool;
        std::string error;
    };
    const std::vector<Case> cases{
        {"NoLabels", pool(json::object(), json::array({{{"number", 8000}}})),
         "InferencePool serving/llama: spec.selector.matchLabels: want at least one label"},
        {"NoPorts", pool(kApp, json::array()),
         "InferencePool serving/llama: spec.targetPorts: want 1 to 8 ports"},
        {"NinePorts", pool(kApp, ports9),
         "InferencePool serving/llama: spec.targetPorts: want 1 to 8 ports"},
        {"PortZero", pool(kApp, json::array({{{"number", 0}}})),
         "InferencePool serving/llama: spec.targetPorts: {\"number\":0}: want a number from 1 "
         "to 65535"},
        {"PortTwice", pool(kApp, json::array({{{"number", 8000}}, {{"number", 8000}}})),
         "InferencePool serving/llama: spec.targetPorts: port 8000 twice"},
        {"LabelNotString", pool({{"app", 3}}, json::array({{{"number", 8000}}})),
         "InferencePool serving/llama: spec.selector.matchLabels.app: not a string"},
    };
    for (const auto& c : cases) {
        auto s = epp::pool_spec(c.pool);
        ASSERT_FALSE(s) << c.name;
        EXPECT_EQ(s.error().what(), c.error) << c.name;
    }
}

TEST(PoolTargets, OnlyReadyLabelledLivePodsWithAnIpOneTargetPerPort) {
    const auto s = spec_of(pool(kApp, json::array({{{"number", 8000}}, {{"number", 8001}}})));
    json deleting = pod("deleting", "10.0.0.5", kApp);
    deleting["metadata"]["deletionTimestamp"] = "2026-12-07T07:00:00Z";
    json no_conditions = pod("starting", "10.0.0.6", kApp);
    no_conditions["status"].erase("conditions");
    const std::vector<json> pods{
        pod("b", "10.0.0.2", {{"app", "llama"}, {"llm-d.ai/role", "decode"}}),
        pod("a", "10.0.0.1", kApp),
        pod("not-ready", "10.0.0.3", kApp, false),
        pod("other-app", "10.0.0.4", {{"app", "mistral"}}),
        pod("no-label", "10.0.0.7", json::object()),
        pod("no-ip", "", kApp),
        deleting,
        no_conditions,
    };
    const auto ts = epp::pool_targets(s, pods, {});
    EXPECT_EQ(addresses(ts), (std::vector<std::string>{"10.0.0.1:8000", "10.0.0.1:8001",
                                                       "10.0.0.2:8000", "10.0.0.2:8001"}));
    ASSERT_EQ(ts.size(), 4u);
    EXPECT_EQ(ts[2].metrics_url, "http://10.0.0.2:8000/metrics");
    EXPECT_EQ(ts[2].pod, "b");
    EXPECT_EQ(ts[2].ns, "serving");
    EXPECT_EQ(ts[2].node, "node-a");
    EXPECT_EQ(ts[2].labels.at("llm-d.ai/role"), "decode");
    EXPECT_EQ(ts[2].gcu_metrics_url, "");
}

TEST(PoolTargets, EveryLabelMustMatchAnEmptyValueIsAValue) {
    const auto s =
        spec_of(pool({{"app", "llama"}, {"canary", ""}}, json::array({{{"number", 80}}})));
    const auto ts =
        epp::pool_targets(s,
                          {pod("has-both", "10.0.0.1", {{"app", "llama"}, {"canary", ""}}),
                           pod("lacks-canary", "10.0.0.2", kApp),
                           pod("canary-set", "10.0.0.3", {{"app", "llama"}, {"canary", "yes"}})},
                          {});
    EXPECT_EQ(addresses(ts), (std::vector<std::string>{"10.0.0.1:80"}));
}

TEST(PoolTargets, AnIpv6PodIpIsBracketed) {
    const auto s = spec_of(pool(kApp, json::array({{{"number", 8000}}})));
    const auto ts = epp::pool_targets(s, {pod("v6", "fd00::12", kApp)}, {});
    ASSERT_EQ(ts.size(), 1u);
    EXPECT_EQ(ts[0].address, "[fd00::12]:8000");
    EXPECT_EQ(ts[0].metrics_url, "http://[fd00::12]:8000/metrics");
}

json exporter(const std::string& name, const std::string& ip, const std::string& node,
              int port = 9400, bool ready = true) {
    json p = pod(name, ip, {{"app.kubernetes.io/name", "enflame-gcu-exporter"}}, ready, node);
    p["spec"]["containers"] = {{{"name", "enflame-gcu-exporter"},
                                {"ports", {{{"name", "metrics"}, {"containerPort", port}}}}}};
    return p;
}

TEST(PoolTargets, EachPodGetsTheReadyExporterOfItsNode) {
    json unnamed_port = exporter("exp-c", "10.1.0.3", "node-c");
    unnamed_port["spec"]["containers"][0]["ports"][0].erase("name");
    const auto by_node = epp::exporters_by_node({
        exporter("exp-b2", "10.1.0.22", "node-b"),
        exporter("exp-b1", "10.1.0.21", "node-b", 9500),
        exporter("exp-a-old", "10.1.0.9", "node-a", 9400, false),
        exporter("exp-a", "10.1.0.1", "node-a"),
        unnamed_port,
    });
    EXPECT_EQ(by_node,
              (std::map<std::string, std::string>{{"node-a", "http://10.1.0.1:9400/metrics"},
                                                  {"node-b", "http://10.1.0.21:9500/metrics"},
                                                  {"node-c", "http://10.1.0.3:9400/metrics"}}));
    const auto s = spec_of(pool(kApp, json::array({{{"number", 8000}}})));
    const auto ts = epp::pool_targets(s,
                                      {pod("on-a", "10.0.0.1", kApp, true, "node-a"),
                                       pod("on-b", "10.0.0.2", kApp, true, "node-b"),
                                       pod("on-d", "10.0.0.4", kApp, true, "node-d")},
                                      by_node);
    ASSERT_EQ(ts.size(), 3u);
    EXPECT_EQ(ts[0].gcu_metrics_url, "http://10.1.0.1:9400/metrics");
    EXPECT_EQ(ts[1].gcu_metrics_url, "http://10.1.0.21:9500/metrics");
    EXPECT_EQ(ts[2].gcu_metrics_url, "") << "no exporter on node-d";
}

json objective(const std::string& name, json spec) {
    return {{"metadata", {{"name", name}, {"namespace", "serving"}}}, {"spec", std::move(spec)}};
}

TEST(PoolTargets, ObjectivePrioritiesOfThisPoolOnly) {
    const json ref = {{"name", "llama"}};
    struct Case {
        const char* name;
        json spec;
        std::optional<int> want;  // nullopt: left out
    };
    const std::vector<Case> cases = {
        {"Sheddable", {{"priority", -1}, {"poolRef", ref}}, -1},
        {"NoPriorityIsZero", {{"poolRef", ref}}, 0},
        {"NullPriorityIsZero", {{"priority", nullptr}, {"poolRef", ref}}, 0},
        {"DefaultsSpelledOut",
         {{"priority", 7},
          {"poolRef",
           {{"name", "llama"},
            {"kind", "InferencePool"},
            {"group", "inference.networking.k8s.io"}}}},
         7},
        {"OtherPool", {{"priority", 3}, {"poolRef", {{"name", "mistral"}}}}, std::nullopt},
        {"OtherKind",
         {{"priority", 3}, {"poolRef", {{"name", "llama"}, {"kind", "Service"}}}},
         std::nullopt},
        {"OtherGroup",
         {{"priority", 3},
          {"poolRef", {{"name", "llama"}, {"group", "inference.networking.x-k8s.io"}}}},
         std::nullopt},
        {"NoPoolRef", {{"priority", 3}}, std::nullopt},
        {"PriorityNotAnInt", {{"priority", "high"}, {"poolRef", ref}}, std::nullopt},
        {"PriorityPastInt", {{"priority", 1LL << 40}, {"poolRef", ref}}, std::nullopt},
    };
    std::vector<json> objs;
    std::map<std::string, int> want;
    for (const auto& c : cases) {
        objs.push_back(objective(c.name, c.spec));
        if (c.want) want[c.name] = *c.want;
        const auto one = epp::objective_priorities({objective(c.name, c.spec)}, "llama");
        EXPECT_EQ(one.size(), c.want ? 1u : 0u) << c.name;
        if (c.want && !one.empty()) EXPECT_EQ(one.begin()->second, *c.want) << c.name;
    }
    EXPECT_EQ(epp::objective_priorities(objs, "llama"), want);
    objs.push_back("not an object");
    EXPECT_EQ(epp::objective_priorities(objs, "llama"), want);
}

json model_rewrite(const std::string& name, const std::string& created, json spec) {
    return {
        {"metadata", {{"name", name}, {"namespace", "serving"}, {"creationTimestamp", created}}},
        {"spec", std::move(spec)}};
}

TEST(PoolTargets, ModelRewritesOfThisPoolOldestFirstAndTheBrokenOnesSaidWhy) {
    const json to_b = json::parse(R"([{"matches": [{"model": {"value": "a"}}],
                                       "targets": [{"modelRewrite": "b", "weight": 100}]}])");
    const std::vector<json> objects = {
        model_rewrite("young", "2026-05-01T00:00:00Z",
                      {{"poolRef", {{"name", "llama"}}}, {"rules", to_b}}),
        model_rewrite("old", "2026-04-01T00:00:00Z",
                      {{"poolRef",
                        {{"name", "llama"},
                         {"kind", "InferencePool"},
                         {"group", "inference.networking.k8s.io"}}},
                       {"rules", to_b}}),
        model_rewrite("other-pool", "2026-01-01T00:00:00Z",
                      {{"poolRef", {{"name", "mistral"}}}, {"rules", to_b}}),
        model_rewrite("other-kind", "2026-01-01T00:00:00Z",
                      {{"poolRef", {{"name", "llama"}, {"kind", "Service"}}}, {"rules", to_b}}),
        model_rewrite("no-targets", "2026-01-01T00:00:00Z",
                      {{"poolRef", {{"name", "llama"}}},
                       {"rules", json::parse(R"([{"matches": [{"model": {"value": "a"}}]}])")}}),
        model_rewrite("no-rules", "2026-01-01T00:00:00Z", {{"poolRef", {{"name", "llama"}}}}),
        "not an object",
    };
    const auto got = epp::model_rewrites(objects, "llama");
    ASSERT_EQ(got.rewrites.size(), 2u);
    EXPECT_EQ(got.rewrites[0].name, "old");
    EXPECT_EQ(got.rewrites[0].created, "2026-04-01T00:00:00Z");
    EXPECT_EQ(got.rewrites[1].name, "young");
    EXPECT_EQ(epp::describe(got.rewrites), "old (a -> b 100), young (a -> b 100)");
    EXPECT_EQ(
        got.refused,
        (std::map<std::string, std::string>{
            {"no-rules", "spec.rules: want a list of rules"},
            {"no-targets", "spec.rules[0].targets: want at least one {modelRewrite, weight}"}}));
}

}  // namespace
