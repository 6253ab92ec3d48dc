// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What the scheduler reads from a model server's /metrics (per engine family) and from
/// gcu-exporter's /metrics (free device memory per pod). Pure functions over parsed samples.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "epp/scheduling/prom_text.hpp"

namespace epp {

/// The metric families a model server writes.
enum class Engine { Unknown, Vllm, Sglang, LlamaCpp };

/// The pod label that names the engine (upstream's), and its values we know.
inline constexpr const char* kEngineLabel = "inference.networking.k8s.io/engine-type";

/// "vllm", "sglang", "llamacpp" or "llama.cpp"; nullopt for anything else.
[[nodiscard]] std::optional<Engine> engine_from_name(std::string_view name);
[[nodiscard]] const char* engine_name(Engine e);

/// The engine whose queue family appears in `samples`; Unknown when none does.
[[nodiscard]] Engine detect_engine(const std::vector<Sample>& samples);

/// LoRA adapters as vLLM reports them (vllm:lora_requests_info, newest series).
struct LoraState {
    int max_adapters = 0;
    std::set<std::string> running, waiting;
};

/// One model server's load, as the scorers see it.
struct ServerMetrics {
    double waiting = 0;        ///< requests queued in the server
    double running = 0;        ///< requests being served
    std::optional<double> kv;  ///< KV-cache usage 0..1; llama.cpp: from /slots
    std::optional<int64_t> block_size, num_gpu_blocks;
    std::optional<LoraState> lora;
};

/// The load of an `engine` server from its samples; nullopt, with `*why`, when its queue or
/// running family is missing (a scrape of something else, or the wrong engine).
[[nodiscard]] std::optional<ServerMetrics> read_server_metrics(Engine engine,
                                                               const std::vector<Sample>& samples,
                                                               std::string* why);

/// KV usage of a llama.cpp server from its GET /slots JSON: the tokens held by the slots that
/// are processing (prompt plus decoded) over the context of all slots. Idle slots keep their
/// prompt cache, but like vLLM's free cached blocks that memory is reusable, so it does not
/// count. nullopt, with `*why`, when the text is not a list of slots with n_ctx.
[[nodiscard]] std::optional<double> llamacpp_kv_from_slots(std::string_view text, std::string* why);

/// Device memory of the cards a pod holds.
struct GcuMemory {
    double free_bytes = 0;
    double total_bytes = 0;
    /// free/total of its fullest card: a pod out-of-memories on its first full card.
    double free_fraction = 1;
};

/// gcu-exporter's enflame_gcu_memory_{used,total}_bytes by (pod_namespace, pod_name); series
/// without a pod (idle cards) are left out.
[[nodiscard]] std::map<std::pair<std::string, std::string>, GcuMemory> read_gcu_memory(
    const std::vector<Sample>& samples);

}  // namespace epp
