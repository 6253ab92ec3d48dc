// SPDX-License-Identifier: Apache-2.0
// Model rewrites (k8s/epp/scheduling/model_rewrite.hpp): which rule applies to a model
// (an Exact match before a match-all one, then the oldest object, then the first rule; the
// cluster's objects before the config file's), the weighted draw of a target, the rules'
// errors naming the key and the reason, and the config file's modelRewrites (its errors are in
// epp_sched_config_test.cpp).
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

#include "epp/scheduling/config.hpp"
#include "epp/scheduling/model_rewrite.hpp"

namespace {

using nlohmann::json;

epp::ModelRewrite rewrite(const std::string& name, const std::string& created,
                          const std::vector<json>& rules) {
    auto parsed = epp::parse_rewrite_rules(json(rules), "rules");
    EXPECT_TRUE(parsed) << parsed.error().what();
    return {name, created, parsed ? *parsed : std::vector<epp::RewriteRule>{}};
}

json exact(const std::string& model, const std::string& target) {
    return {{"matches", {{{"model", {{"type", "Exact"}, {"value", model}}}}}},
            {"targets", {{{"modelRewrite", target}}}}};
}

json every(const std::string& target) {
    return {{"targets", {{{"modelRewrite", target}, {"weight", 1}}}}};
}

// The target the table sends `model` to, "-" for none; the rules here have one target each.
std::string target_of(const epp::RewriteTable& t, const std::string& model) {
    const auto m = t.match(model);
    return m ? m->rewrite->name + ":" + m->rule->targets.at(0).model : "-";
}

TEST(ModelRewrite, ExactBeatsMatchAllThenTheOldestObjectThenTheFirstRule) {
    const epp::RewriteTable t(
        {
            rewrite("young", "2026-03-01T00:00:00Z", {exact("llama", "young-llama")}),
            rewrite("catch-all", "2026-01-01T00:00:00Z", {every("everything")}),
            rewrite("old", "2026-02-01T00:00:00Z",
                    {exact("qwen", "old-qwen"), exact("llama", "old-llama-1"),
                     exact("llama", "old-llama-2"), every("old-everything")}),
            // as old as `old`: the name decides
            rewrite("aardvark", "2026-02-01T00:00:00Z", {exact("mistral", "aardvark-mistral")}),
            rewrite("zebra", "2026-02-01T00:00:00Z", {exact("mistral", "zebra-mistral")}),
        },
        {});
    EXPECT_EQ(target_of(t, "llama"), "old:old-llama-1");
    EXPECT_EQ(target_of(t, "qwen"), "old:old-qwen");
    EXPECT_EQ(target_of(t, "mistral"), "aardvark:aardvark-mistral");
    EXPECT_EQ(target_of(t, "other"), "catch-all:everything");
    EXPECT_EQ(
        target_of(
            epp::RewriteTable(
                {rewrite("young", "2026-03-01T00:00:00Z", {exact("llama", "young-llama")})}, {}),
            "other"),
        "-");
    // the order of precedence, as logged
    std::vector<std::string> names;
    for (const auto& r : t.rewrites()) names.push_back(r.name);
    EXPECT_EQ(names, (std::vector<std::string>{"catch-all", "aardvark", "old", "zebra", "young"}));
}

TEST(ModelRewrite, TheClusterObjectsComeBeforeTheFileAndReplaceItsRewriteOfTheSameName) {
    const std::vector<epp::ModelRewrite> file = {
        rewrite("canary", "", {exact("llama", "file-canary")}),
        rewrite("qwen", "", {exact("qwen", "file-qwen")}),
        rewrite("catch-all", "", {every("file-everything")}),
    };
    const epp::RewriteTable only_file({}, file);
    EXPECT_EQ(target_of(only_file, "llama"), "canary:file-canary");
    const epp::RewriteTable t({rewrite("canary", "2026-01-01T00:00:00Z", {exact("mistral", "c")}),
                               rewrite("cluster-all", "2026-01-01T00:00:00Z", {every("k")})},
                              file);
    EXPECT_EQ(target_of(t, "mistral"), "canary:c");
    EXPECT_EQ(target_of(t, "llama"), "cluster-all:k") << "the file's canary is replaced";
    EXPECT_EQ(target_of(t, "qwen"), "qwen:file-qwen") << "an Exact match beats a match-all one";
    EXPECT_EQ(target_of(t, "other"), "cluster-all:k");
}

std::map<std::string, int> draws(const epp::RewriteRule& rule, int n) {
    std::mt19937_64 rng(7);
    std::map<std::string, int> out;
    for (int i = 0; i < n; ++i) ++out[epp::pick_target(rule, rng)];
    return out;
}

TEST(ModelRewrite, TargetsAreDrawnByWeightAndEvenlyWithoutWeights) {
    const auto split = epp::parse_rewrite_rules(
        json::parse(R"([{"targets": [{"modelRewrite": "stable", "weight": 90},
                                     {"modelRewrite": "canary", "weight": 10}]},
                        {"targets": [{"modelRewrite": "a"}, {"modelRewrite": "b"},
                                     {"modelRewrite": "c"}]},
                        {"targets": [{"modelRewrite": "weighted", "weight": 1},
                                     {"modelRewrite": "unweighted"}]}])"),
        "rules");
    ASSERT_TRUE(split) << split.error().what();
    // 10000 draws: a binomial's standard deviation is 30 (90/10) and 47 (thirds); 5 of them
    auto got = draws((*split)[0], 10000);
    EXPECT_NEAR(got["stable"], 9000, 150);
    EXPECT_NEAR(got["canary"], 1000, 150);
    got = draws((*split)[1], 10000);
    for (const char* m : {"a", "b", "c"}) EXPECT_NEAR(got[m], 3333, 235) << m;
    got = draws((*split)[2], 1000);
    EXPECT_EQ(got, (std::map<std::string, int>{{"weighted", 1000}}))
        << "a target without a weight beside weighted ones is never drawn";
}

TEST(ModelRewrite, BadRulesSayTheKeyAndTheReason) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"targets": []})", "spec.rules: want a list of rules"},
        {R"([])", "spec.rules: want a list of rules"},
        {R"([{"targets": []}])", "spec.rules[0].targets: want at least one {modelRewrite, weight}"},
        {R"([{"matches": [{"model": {"value": "a"}}]}])",
         "spec.rules[0].targets: want at least one {modelRewrite, weight}"},
        {R"([{"targets": [{"modelRewrite": "b", "weight": 0}]}])",
         "spec.rules[0].targets[0].weight: want an integer from 1 to 1000000, got 0"},
        {R"([{"targets": [{"modelRewrite": "b", "weight": 1000001}]}])",
         "spec.rules[0].targets[0].weight: want an integer from 1 to 1000000, got 1000001"},
        {R"([{"targets": [{"modelRewrite": "b", "weight": "90"}]}])",
         "spec.rules[0].targets[0].weight: want an integer from 1 to 1000000, got \"90\""},
        {R"([{"targets": [{"weight": 5}]}])", "spec.rules[0].targets[0].modelRewrite: missing"},
        {R"([{"targets": [{"modelRewrite": ""}]}])",
         "spec.rules[0].targets[0].modelRewrite: want a model name"},
        {R"([{"matches": [{"model": {"type": "Prefix", "value": "a"}}],
              "targets": [{"modelRewrite": "b"}]}])",
         "spec.rules[0].matches[0].model.type: want Exact, got \"Prefix\""},
        {R"([{"matches": [{"model": {"type": "Exact"}}], "targets": [{"modelRewrite": "b"}]}])",
         "spec.rules[0].matches[0].model.value: missing"},
        {R"([{"matches": [{}], "targets": [{"modelRewrite": "b"}]}])",
         "spec.rules[0].matches[0].model: missing"},
        {R"([{"matches": {"model": {}}, "targets": [{"modelRewrite": "b"}]}])",
         "spec.rules[0].matches: want a list of {model: {type, value}}"},
        {R"([{"targets": [{"modelRewrite": "b", "weigth": 5}]}])",
         "spec.rules[0].targets[0].weigth: unknown key"},
        {R"(["x"])", "spec.rules[0]: want a map"},
    };
    for (const auto& [text, want] : cases) {
        const auto r = epp::parse_rewrite_rules(json::parse(text), "spec.rules");
        ASSERT_FALSE(r) << "accepted: " << text;
        EXPECT_EQ(r.error().what(), want);
    }
}

TEST(Config, ModelRewritesAreReadFromTheFile) {
    const auto c = epp::parse_config(R"(
modelRewrites:
  - name: llama-canary
    rules:
      - matches: [{model: {type: Exact, value: llama}}, {model: {value: llama-chat}}]
        targets: [{modelRewrite: llama-v1, weight: 90}, {modelRewrite: llama-v2, weight: 10}]
  - name: default-model
    rules:
      - targets: [{modelRewrite: "0.5"}]
)",
                                     "f.yaml");
    ASSERT_EQ(c.model_rewrites.size(), 2u);
    EXPECT_EQ(epp::describe(c.model_rewrites),
              "llama-canary (llama|llama-chat -> llama-v1 90, llama-v2 10), default-model (* -> "
              "0.5)");
    EXPECT_TRUE(epp::default_config().model_rewrites.empty());
}

}  // namespace
