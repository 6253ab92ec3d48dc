// SPDX-License-Identifier: Apache-2.0
// The endpoint table: engines from labels, the config or probing; metrics kept across endpoint
// changes; llama.cpp's /slots joined to its metrics; gcu-exporter memory joined by pod.
#include <gtest/gtest.h>

#include "epp/scheduling/datastore.hpp"

namespace {

const char* kVllm = "vllm:num_requests_waiting 3\nvllm:num_requests_running 1\n";
const char* kSglang = "sglang:num_queue_reqs 2\nsglang:num_running_reqs 1\n";
const char* kLlama = "llamacpp:requests_deferred 1\nllamacpp:requests_processing 2\n";

epp::Target target(const std::string& address, std::map<std::string, std::string> labels = {}) {
    epp::Target t;
    t.address = address;
    t.metrics_url = "http://" + address + "/metrics";
    t.labels = std::move(labels);
    return t;
}

const epp::Endpoint& find(const std::vector<epp::Endpoint>& snap, const std::string& address) {
    for (const auto& e : snap)
        if (e.target.address == address) return e;
    throw std::runtime_error("no " + address);
}

TEST(Datastore, EngineFromLabelElseConfigElseProbe) {
    epp::Datastore probe(std::nullopt), configured(epp::Engine::Sglang);
    probe.set_targets({target("a"), target("b", {{epp::kEngineLabel, "vllm"}})});
    configured.set_targets({target("a")});
    EXPECT_EQ(probe.put_metrics("a", kSglang, epp::Clock::now()), "");  // probed: SGLang
    EXPECT_EQ(find(probe.snapshot(), "a").engine, epp::Engine::Sglang);
    // Labelled vLLM, answering SGLang: refused, saying what is missing.
    EXPECT_EQ(probe.put_metrics("b", kSglang, epp::Clock::now()), "no vllm:num_requests_waiting");
    EXPECT_FALSE(find(probe.snapshot(), "b").metrics);
    EXPECT_EQ(configured.put_metrics("a", kVllm, epp::Clock::now()), "no sglang:num_queue_reqs");
    EXPECT_EQ(probe.put_metrics("gone", kVllm, epp::Clock::now()), "endpoint gone");
}

TEST(Datastore, EndpointsThatStayKeepTheirMetrics) {
    epp::Datastore ds(std::nullopt);
    ds.set_targets({target("a"), target("b")});
    const auto at = epp::Clock::now();
    ASSERT_EQ(ds.put_metrics("a", kVllm, at), "");
    auto held = ds.set_targets({target("a", {{epp::kRoleLabel, "prefill"}}), target("c")});
    EXPECT_EQ(held, (std::set<std::string>{"a", "c"}));
    auto snap = ds.snapshot();
    ASSERT_EQ(snap.size(), 2u);
    const auto& a = find(snap, "a");
    ASSERT_TRUE(a.metrics);
    EXPECT_EQ(a.metrics->waiting, 3);
    EXPECT_EQ(a.scraped, at);
    EXPECT_TRUE(a.roles.prefill);  // the new labels count
    EXPECT_FALSE(find(snap, "c").metrics);
}

TEST(Datastore, LlamaCppKvFromSlots) {
    epp::Datastore ds(std::nullopt);
    ds.set_targets({target("l", {{epp::kEngineLabel, "llama.cpp"}})});
    EXPECT_EQ(ds.put_slots("l", R"([{"n_ctx":100,"is_processing":true,"n_prompt_tokens":25}])"),
              "");
    ASSERT_EQ(ds.put_metrics("l", kLlama, epp::Clock::now()), "");
    const auto snap = ds.snapshot();
    const auto& e = snap.front();
    EXPECT_EQ(e.metrics->waiting, 1);
    EXPECT_EQ(e.metrics->running, 2);
    EXPECT_EQ(e.metrics->kv, 0.25);
    EXPECT_EQ(ds.put_slots("l", "not json"), "/slots is not a JSON list of slots");
}

TEST(Datastore, GcuMemoryJoinedByPodOfTheSameExporter) {
    epp::Datastore ds(std::nullopt);
    auto a = target("a"), b = target("b"), c = target("c");
    a.pod = "pa", b.pod = "pb", c.pod = "pa";
    a.ns = b.ns = c.ns = "ns";
    a.gcu_metrics_url = b.gcu_metrics_url = "http://node1:9400/metrics";
    c.gcu_metrics_url = "http://node2:9400/metrics";  // same pod name, another node's exporter
    ds.set_targets({a, b, c});
    const char* text =
        "enflame_gcu_memory_used_bytes{uuid=\"u\",pod_name=\"pa\",pod_namespace=\"ns\"} 75\n"
        "enflame_gcu_memory_total_bytes{uuid=\"u\",pod_name=\"pa\",pod_namespace=\"ns\"} 100\n";
    ds.put_gcu("http://node1:9400/metrics", text, epp::Clock::now());
    auto snap = ds.snapshot();
    ASSERT_TRUE(find(snap, "a").gcu);
    EXPECT_DOUBLE_EQ(find(snap, "a").gcu->free_fraction, 0.25);
    EXPECT_FALSE(find(snap, "b").gcu);  // its pod holds no card on that node
    EXPECT_FALSE(find(snap, "c").gcu);  // not that exporter's
    // The pod gave its card back: its memory is no longer known.
    ds.put_gcu("http://node1:9400/metrics", "", epp::Clock::now());
    EXPECT_FALSE(find(ds.snapshot(), "a").gcu);
}

}  // namespace
