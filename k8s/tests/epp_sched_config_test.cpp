// SPDX-License-Identifier: Apache-2.0
// The EndpointPickerConfig file: the default, the shipped examples, and one-line errors that
// name the file, the key and the reason (modelRewrites' too).
#include <gtest/gtest.h>

#include <stdexcept>

#include "epp/scheduling/config.hpp"

namespace {

const std::string kExamples = std::string(K8S_TESTS_DIR) + "/../../examples/epp/";

std::vector<std::pair<std::string, double>> scorers(const epp::ProfileConfig& p) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& s : p.scorers) out.emplace_back(s.type, s.weight);
    return out;
}

TEST(Config, DefaultIsUpstreamsWeightsPlusGcuMemoryAndActiveRequests) {
    auto c = epp::default_config();
    ASSERT_EQ(c.profiles.size(), 1u);
    EXPECT_EQ(scorers(c.profiles[0]),
              (std::vector<std::pair<std::string, double>>{{"queue-scorer", 2},
                                                           {"kv-cache-utilization-scorer", 2},
                                                           {"prefix-cache-scorer", 3},
                                                           {"gcu-memory-scorer", 1},
                                                           {"active-request-scorer", 1}}));
    EXPECT_EQ(c.profiles[0].picker.type, "max-score-picker");
    EXPECT_EQ(c.profiles[0].picker.max_endpoints, 3);
    EXPECT_FALSE(c.pd.enabled);
    EXPECT_EQ(c.saturation.queue_threshold, 5);
    EXPECT_EQ(c.saturation.kv_threshold, 0.8);
    EXPECT_EQ(c.prefix.block_chars(), 64u);
    EXPECT_EQ(c.prefix.lru_capacity, 31250u);
    EXPECT_EQ(c.gcu_min_free, 0.05);
}

TEST(Config, AFileWithoutProfilesGetsTheDefaultProfile) {
    auto c = epp::parse_config("kind: EndpointPickerConfig\n", "x.yaml");
    EXPECT_EQ(scorers(c.profiles.at(0)), scorers(epp::default_config().profiles.at(0)));
}

TEST(Config, ShippedExampleIsTheDefaultWrittenOut) {
    auto c = epp::load_config(kExamples + "epp-config.yaml");
    auto d = epp::default_config();
    ASSERT_EQ(c.profiles.size(), 1u);
    EXPECT_EQ(c.profiles[0].name, d.profiles[0].name);
    EXPECT_EQ(scorers(c.profiles[0]), scorers(d.profiles[0]));
    EXPECT_EQ(c.profiles[0].picker.type, d.profiles[0].picker.type);
    EXPECT_EQ(c.profiles[0].picker.max_endpoints, d.profiles[0].picker.max_endpoints);
    EXPECT_EQ(c.prefix.block_chars(), d.prefix.block_chars());
    EXPECT_EQ(c.prefix.max_blocks, d.prefix.max_blocks);
    EXPECT_EQ(c.prefix.lru_capacity, d.prefix.lru_capacity);
    EXPECT_EQ(c.gcu_min_free, d.gcu_min_free);
    EXPECT_EQ(c.saturation.queue_threshold, d.saturation.queue_threshold);
    EXPECT_EQ(c.saturation.kv_threshold, d.saturation.kv_threshold);
    EXPECT_EQ(c.saturation.staleness, std::chrono::milliseconds(200));
    EXPECT_EQ(c.flow.max_requests, d.flow.max_requests);
    EXPECT_EQ(c.flow.ttl, d.flow.ttl);
    EXPECT_EQ(c.priorities, (std::map<std::string, int>{{"interactive", 10}, {"batch", -1}}));
}

TEST(Config, ShippedPdExample) {
    auto c = epp::load_config(kExamples + "pd-config.yaml");
    EXPECT_TRUE(c.pd.enabled);
    EXPECT_EQ(c.pd.non_cached_tokens, 16);
    ASSERT_EQ(c.profiles.size(), 2u);
    EXPECT_EQ(c.profiles[0].name, "decode");
    EXPECT_EQ(c.profiles[0].filters, std::vector<std::string>{"decode-filter"});
    EXPECT_EQ(c.profiles[1].filters, std::vector<std::string>{"prefill-filter"});
    EXPECT_EQ(scorers(c.profiles[1]),
              (std::vector<std::pair<std::string, double>>{
                  {"queue-scorer", 1}, {"prefix-cache-scorer", 2}, {"gcu-memory-scorer", 1}}));
}

TEST(Config, NamedPluginsAndPickerChoice) {
    auto c = epp::parse_config(R"(
plugins:
- {name: q, type: queue-scorer}
- {name: rr, type: round-robin-picker, parameters: {maxNumOfEndpoints: 1}}
- {type: prefix-based-pd-decider, parameters: {nonCachedTokens: 0}}
schedulingProfiles:
- name: only
  plugins: [{pluginRef: q, weight: 0.5}, {pluginRef: rr}]
)",
                               "x.yaml");
    EXPECT_EQ(scorers(c.profiles.at(0)),
              (std::vector<std::pair<std::string, double>>{{"queue-scorer", 0.5}}));
    EXPECT_EQ(c.profiles[0].picker.type, "round-robin-picker");
    EXPECT_EQ(c.profiles[0].picker.max_endpoints, 1);
    EXPECT_EQ(c.pd.non_cached_tokens, 0);
    EXPECT_FALSE(c.pd.enabled);  // a decider without disagg-profile-handler
}

TEST(Config, BadFilesSayFileKeyAndReasonOnOneLine) {
    const std::pair<const char*, const char*> cases[] = {
        {"plugins: [{type: magic-scorer}]",
         "f.yaml: plugins[0].type: unknown plugin type 'magic-scorer'"},
        {"plugins: [{type: queue-scorer, parameters: {x: 1}}]\n"
         "schedulingProfiles: [{name: a, plugins: [{pluginRef: queue-scorer, weight: -1}]}]",
         "f.yaml: schedulingProfiles[0].plugins[0].weight: want a number from 0 to 1e+06, got -1"},
        {"plugins: [{type: gcu-memory-scorer, parameters: {minFreeFraction: 2}}]",
         "f.yaml: plugins[0].parameters.minFreeFraction: want a number from 0 to 1, got 2"},
        {"plugins: [{type: prefix-cache-scorer, parameters: {blockSize: 64}}]",
         "f.yaml: plugins[0].parameters.blockSize: unknown key"},
        {"schedulingProfiles: [{name: a, plugins: [{pluginRef: nope}]}]",
         "f.yaml: schedulingProfiles[0].plugins[0].pluginRef: no plugin named 'nope'"},
        {"plugins: [{type: max-score-picker}, {name: p2, type: random-picker}]\n"
         "schedulingProfiles: [{name: a, plugins: [{pluginRef: max-score-picker}, "
         "{pluginRef: p2}]}]",
         "f.yaml: schedulingProfiles[0].plugins[1].pluginRef: a second picker in profile 'a'"},
        {"plugins: [{type: disagg-profile-handler}]",
         "f.yaml: schedulingProfiles: no profile 'decode' for disagg-profile-handler"},
        {"plugins: [{type: utilization-detector, parameters: {metricsStalenessThreshold: "
         "soon}}]",
         "f.yaml: plugins[0].parameters.metricsStalenessThreshold"},
        {"plugins: [{type: active-request-scorer, parameters: {requestTimeout: 0s}}]",
         "f.yaml: plugins[0].parameters.requestTimeout"},
        {"objectives: [{name: batch}]", "f.yaml: objectives[0].priority: missing"},
        {"objectives: [{name: batch, priority: low}]",
         "f.yaml: objectives[0].priority: want an integer"},
        {"modelRewrites: [{name: c, rules: [{targets: [{modelRewrite: b, weight: 0}]}]}]",
         "f.yaml: modelRewrites[0].rules[0].targets[0].weight: want an integer from 1 to "
         "1000000, got 0"},
        {"modelRewrites: [{name: c, rules: [{targets: [{modelRewrite: b, weight: 2000000}]}]}]",
         "f.yaml: modelRewrites[0].rules[0].targets[0].weight: want an integer from 1 to "
         "1000000, got 2000000"},
        {"modelRewrites: [{name: c, rules: [{targets: [{modelRewrite: b, weight: '5'}]}]}]",
         "f.yaml: modelRewrites[0].rules[0].targets[0].weight: want an integer from 1 to "
         "1000000, got \"5\""},
        {"modelRewrites: [{name: c, rules: [{matches: [{model: {type: RegularExpression, "
         "value: a}}], targets: [{modelRewrite: b}]}]}]",
         "f.yaml: modelRewrites[0].rules[0].matches[0].model.type: want Exact, got "
         "\"RegularExpression\""},
        {"modelRewrites: [{name: c, rules: [{matches: [{model: {value: a}}]}]}]",
         "f.yaml: modelRewrites[0].rules[0].targets: want at least one {modelRewrite, weight}"},
        {"modelRewrites: [{name: c}]", "f.yaml: modelRewrites[0].rules: want a list of rules"},
        {"modelRewrites: [{rules: [{targets: [{modelRewrite: b}]}]}]",
         "f.yaml: modelRewrites[0].name: missing"},
        {"modelRewrites: [{name: c, rules: [{targets: [{modelRewrite: b}]}]}, {name: c, rules: "
         "[{targets: [{modelRewrite: b}]}]}]",
         "f.yaml: modelRewrites[1].name: a second rewrite named 'c'"},
        {"modelRewrites: [{name: c, poolRef: {name: p}, rules: [{targets: [{modelRewrite: "
         "b}]}]}]",
         "f.yaml: modelRewrites[0].poolRef: unknown key"},
        {"modelRewrites: {name: c}", "f.yaml: modelRewrites: want a list of {name, rules}"},
        {"flowControl: {maxRequests: 0}",
         "f.yaml: flowControl.maxRequests: want an integer from 1 to 10000000, got 0"},
        {"kind: Deployment", "f.yaml: kind: want EndpointPickerConfig"},
        {"schedulingProfile: []", "f.yaml: (top).schedulingProfile: unknown key"},
        {"plugins: [{type: queue-scorer}\n", "f.yaml: line "},
        {"- a\n- b\n", "f.yaml: (top): want a map"},
    };
    for (const auto& [yaml, want] : cases) {
        try {
            (void)epp::parse_config(yaml, "f.yaml");
            ADD_FAILURE() << "accepted: " << yaml;
        } catch (const std::runtime_error& e) {
            std::string msg = e.what();
            EXPECT_EQ(msg.rfind(want, 0), 0u) << "got: " << msg;
            EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        }
    }
}

TEST(Config, ActiveRequestScorerAndItsTimeout) {
    auto c = epp::parse_config(
        "plugins: [{type: active-request-scorer, parameters: {requestTimeout: 30s}}]\n"
        "schedulingProfiles: [{name: a, plugins: [{pluginRef: active-request-scorer, weight: "
        "2}]}]",
        "f.yaml");
    ASSERT_EQ(c.profiles.size(), 1u);
    ASSERT_EQ(c.profiles[0].scorers.size(), 1u);
    EXPECT_EQ(c.profiles[0].scorers[0].type, "active-request-scorer");
    EXPECT_EQ(c.profiles[0].scorers[0].weight, 2);
    EXPECT_EQ(c.active_request_timeout, std::chrono::seconds(30));
    EXPECT_EQ(epp::default_config().active_request_timeout, std::chrono::minutes(2));
}

TEST(Config, MissingFileIsNamed) {
    try {
        (void)epp::load_config("/nonexistent/epp.yaml");
        ADD_FAILURE();
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "/nonexistent/epp.yaml: cannot read the config file");
    }
}

}  // namespace
