// SPDX-License-Identifier: Apache-2.0
// What the scheduler reads from model servers' and gcu-exporter's /metrics: the Prometheus text
// reader, the per-engine families, llama.cpp's /slots KV usage and free GCU memory per pod.
#include <gtest/gtest.h>

#include <cmath>

#include "epp/scheduling/prom_text.hpp"
#include "epp/scheduling/server_metrics.hpp"

namespace {

using epp::Engine;

constexpr const char* kVllm =
    R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tiny"} 7.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.42
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="2048",prefix_caching="True"} 1.0
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql-lora",waiting_lora_adapters=""} 1.7e9
vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters="old"} 1.6e9
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="tiny"} 12345 1712345678000
)";

constexpr const char* kSglang = R"(# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="tiny",tp_rank="0"} 2.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="tiny",tp_rank="0"} 4.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="tiny",tp_rank="0"} 0.25
)";

constexpr const char* kLlama =
    R"(# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1216
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 2
)";

TEST(PromText, ReadsLabelsEscapesValuesAndSkipsBadLines) {
    int bad = 0;
    auto s = epp::parse_prometheus_text(
        "# HELP x y\n"
        "a_total 1\n"
        "b{l=\"q\\\"x\\\\y\\nz\",m=\"\"} +Inf\n"
        "c{l=\"1\",} 2.5e-3 1712345678000\r\n"
        "d{l=\"unterminated} 1\n"
        "e not-a-number\n"
        "  \n"
        "f NaN\n",
        &bad);
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s[0].name, "a_total");
    EXPECT_EQ(s[0].value, 1);
    EXPECT_EQ(s[1].labels.at("l"), "q\"x\\y\nz");
    EXPECT_EQ(s[1].labels.at("m"), "");
    EXPECT_TRUE(std::isinf(s[1].value));
    EXPECT_DOUBLE_EQ(s[2].value, 2.5e-3);  // trailing comma and timestamp accepted
    EXPECT_TRUE(std::isnan(s[3].value));
    EXPECT_EQ(bad, 2);
}

TEST(ServerMetrics, EachEngineIsFoundByItsFamiliesAndRead) {
    struct Case {
        const char* text;
        Engine engine;
        double waiting, running;
        std::optional<double> kv;
    };
    const Case cases[] = {
        {kVllm, Engine::Vllm, 7, 3, 0.42},
        {kSglang, Engine::Sglang, 4, 2, 0.25},
        {kLlama, Engine::LlamaCpp, 2, 1, std::nullopt},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(epp::engine_name(c.engine));
        auto samples = epp::parse_prometheus_text(c.text);
        EXPECT_EQ(epp::detect_engine(samples), c.engine);
        std::string why;
        auto m = epp::read_server_metrics(c.engine, samples, &why);
        ASSERT_TRUE(m) << why;
        EXPECT_EQ(m->waiting, c.waiting);
        EXPECT_EQ(m->running, c.running);
        EXPECT_EQ(m->kv, c.kv);
    }
}

TEST(ServerMetrics, VllmCacheConfigAndNewestLoraSeries) {
    auto m = epp::read_server_metrics(Engine::Vllm, epp::parse_prometheus_text(kVllm), nullptr);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->block_size, 16);
    EXPECT_EQ(m->num_gpu_blocks, 2048);
    ASSERT_TRUE(m->lora);
    EXPECT_EQ(m->lora->max_adapters, 2);
    EXPECT_EQ(m->lora->running, std::set<std::string>{"sql-lora"});
    EXPECT_TRUE(m->lora->waiting.empty());
}

TEST(ServerMetrics, OldVllmGaugeNameAndKvClamp) {
    auto m = epp::read_server_metrics(Engine::Vllm,
                                      epp::parse_prometheus_text("vllm:num_requests_waiting 0\n"
                                                                 "vllm:num_requests_running 0\n"
                                                                 "vllm:gpu_cache_usage_perc 1.5\n"),
                                      nullptr);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kv, 1.0);
}

TEST(ServerMetrics, WrongEngineOrMissingFamilySaysWhy) {
    std::string why;
    EXPECT_FALSE(epp::read_server_metrics(Engine::Vllm, epp::parse_prometheus_text(kSglang), &why));
    EXPECT_EQ(why, "no vllm:num_requests_waiting");
    EXPECT_FALSE(epp::read_server_metrics(
        Engine::Sglang, epp::parse_prometheus_text("sglang:num_queue_reqs 1\n"), &why));
    EXPECT_EQ(why, "no sglang:num_running_reqs");
    EXPECT_EQ(epp::detect_engine(epp::parse_prometheus_text("process_cpu_seconds_total 1\n")),
              Engine::Unknown);
}

TEST(ServerMetrics, EngineNames) {
    EXPECT_EQ(epp::engine_from_name("llama.cpp"), Engine::LlamaCpp);
    EXPECT_EQ(epp::engine_from_name("llamacpp"), Engine::LlamaCpp);
    EXPECT_EQ(epp::engine_from_name("sglang"), Engine::Sglang);
    EXPECT_EQ(epp::engine_from_name("trtllm"), std::nullopt);
}

TEST(LlamaSlots, BusySlotsTokensOverAllContext) {
    // Two slots of 1024: slot 0 busy with 300 prompt + 100 decoded, slot 1 idle with a
    // cached prompt that does not count.
    const char* slots = R"([
      {"id":0,"n_ctx":1024,"is_processing":true,"n_prompt_tokens":300,
       "next_token":[{"has_next_token":true,"n_decoded":100}]},
      {"id":1,"n_ctx":1024,"is_processing":false,"n_prompt_tokens":900,
       "next_token":{"n_decoded":5}}])";
    std::string why;
    auto kv = epp::llamacpp_kv_from_slots(slots, &why);
    ASSERT_TRUE(kv) << why;
    EXPECT_DOUBLE_EQ(*kv, 400.0 / 2048.0);
    EXPECT_FALSE(epp::llamacpp_kv_from_slots("{\"error\":\"slots disabled\"}", &why));
    EXPECT_EQ(why, "/slots is not a JSON list of slots");
    EXPECT_FALSE(epp::llamacpp_kv_from_slots("[{\"id\":0}]", &why));
    EXPECT_EQ(why, "a slot without n_ctx");
}

TEST(GcuMemory, FullestCardOfEachPodAndIdleCardsLeftOut) {
    const char* text =
        R"(enflame_gcu_memory_used_bytes{minor_number="0",uuid="A",pod_name="p1",pod_namespace="ns"} 30
enflame_gcu_memory_total_bytes{minor_number="0",uuid="A",pod_name="p1",pod_namespace="ns"} 100
enflame_gcu_memory_used_bytes{minor_number="1",uuid="B",pod_name="p1",pod_namespace="ns"} 90
enflame_gcu_memory_total_bytes{minor_number="1",uuid="B",pod_name="p1",pod_namespace="ns"} 100
enflame_gcu_memory_used_bytes{minor_number="2",uuid="C",pod_name="p2",pod_namespace="other"} 0
enflame_gcu_memory_total_bytes{minor_number="2",uuid="C",pod_name="p2",pod_namespace="other"} 200
enflame_gcu_memory_used_bytes{minor_number="3",uuid="D"} 0
enflame_gcu_memory_total_bytes{minor_number="3",uuid="D"} 100
)";
    auto m = epp::read_gcu_memory(epp::parse_prometheus_text(text));
    ASSERT_EQ(m.size(), 2u);
    const auto& p1 = m.at({"ns", "p1"});
    EXPECT_DOUBLE_EQ(p1.free_bytes, 80);
    EXPECT_DOUBLE_EQ(p1.total_bytes, 200);
    EXPECT_DOUBLE_EQ(p1.free_fraction, 0.1);
    EXPECT_DOUBLE_EQ(m.at({"other", "p2"}).free_fraction, 1.0);
}

}  // namespace
