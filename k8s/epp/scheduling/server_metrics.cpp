// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/server_metrics.hpp"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

namespace epp {
namespace {

// The families of one engine; an empty name: the engine has none.
struct Families {
    Engine engine;
    const char* waiting;
    const char* running;
    std::vector<const char*> kv;  // the first one present wins (vLLM renamed its gauge)
};

const std::vector<Families>& families() {
    static const std::vector<Families> f{
        {Engine::Vllm,
         "vllm:num_requests_waiting",
         "vllm:num_requests_running",
         {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
        {Engine::Sglang,
         "sglang:num_queue_reqs",
         "sglang:num_running_reqs",
         {"sglang:token_usage"}},
        {Engine::LlamaCpp, "llamacpp:requests_deferred", "llamacpp:requests_processing", {}},
    };
    return f;
}

std::optional<int64_t> to_int(const std::string& s) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

std::set<std::string> split_list(const std::string& s) {
    std::set<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t comma = s.find(',', start);
        std::string item = s.substr(start, comma == std::string::npos ? comma : comma - start);
        if (!item.empty()) out.insert(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// vLLM writes one lora_requests_info series per change, its value the time of the change.
std::optional<LoraState> read_lora(const std::vector<Sample>& samples) {
    const Sample* newest = nullptr;
    for (const auto& s : samples)
        if (s.name == "vllm:lora_requests_info" && (!newest || s.value > newest->value))
            newest = &s;
    if (!newest) return std::nullopt;
    LoraState l;
    auto get = [&](const char* k) {
        auto it = newest->labels.find(k);
        return it == newest->labels.end() ? std::string() : it->second;
    };
    l.max_adapters = static_cast<int>(to_int(get("max_lora")).value_or(0));
    l.running = split_list(get("running_lora_adapters"));
    l.waiting = split_list(get("waiting_lora_adapters"));
    return l;
}

int64_t json_int(const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<int64_t>() : 0;
}

}  // namespace

std::optional<Engine> engine_from_name(std::string_view name) {
    if (name == "vllm") return Engine::Vllm;
    if (name == "sglang") return Engine::Sglang;
    if (name == "llamacpp" || name == "llama.cpp") return Engine::LlamaCpp;
    return std::nullopt;
}

const char* engine_name(Engine e) {
    switch (e) {
        case Engine::Vllm:
            return "vllm";
        case Engine::Sglang:
            return "sglang";
        case Engine::LlamaCpp:
            return "llamacpp";
        case Engine::Unknown:
            break;
    }
    return "unknown";
}

Engine detect_engine(const std::vector<Sample>& samples) {
    for (const auto& f : families())
        for (const auto& s : samples)
            if (s.name == f.waiting) return f.engine;
    return Engine::Unknown;
}

std::optional<ServerMetrics> read_server_metrics(Engine engine, const std::vector<Sample>& samples,
                                                 std::string* why) {
    auto f = std::find_if(families().begin(), families().end(),
                          [&](const Families& x) { return x.engine == engine; });
    if (f == families().end()) {
        if (why) *why = "no known engine's metrics (vllm:, sglang:, llamacpp:)";
        return std::nullopt;
    }
    ServerMetrics m;
    bool has_waiting = false, has_running = false;
    for (const auto& s : samples) {
        if (s.name == f->waiting) {
            m.waiting += s.value, has_waiting = true;
        } else if (s.name == f->running) {
            m.running += s.value, has_running = true;
        } else if (s.name == "vllm:cache_config_info") {
            if (auto it = s.labels.find("block_size"); it != s.labels.end())
                m.block_size = to_int(it->second);
            if (auto it = s.labels.find("num_gpu_blocks"); it != s.labels.end())
                m.num_gpu_blocks = to_int(it->second);
        }
    }
    // The first kv family present wins (vLLM renamed its gauge); of several series
    // (data-parallel ranks) the fullest decides.
    for (const char* name : f->kv) {
        for (const auto& s : samples)
            if (s.name == name) m.kv = std::max(m.kv.value_or(0.0), s.value);
        if (m.kv) break;
    }
    if (!has_waiting || !has_running) {
        if (why) *why = std::string("no ") + (has_waiting ? f->running : f->waiting);
        return std::nullopt;
    }
    if (m.kv) m.kv = std::clamp(*m.kv, 0.0, 1.0);
    if (engine == Engine::Vllm) m.lora = read_lora(samples);
    return m;
}

std::optional<double> llamacpp_kv_from_slots(std::string_view text, std::string* why) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_array() || j.empty()) {
        if (why) *why = "/slots is not a JSON list of slots";
        return std::nullopt;
    }
    int64_t ctx = 0, held = 0;
    for (const auto& slot : j) {
        if (!slot.is_object() || !slot.contains("n_ctx")) {
            if (why) *why = "a slot without n_ctx";
            return std::nullopt;
        }
        ctx += json_int(slot, "n_ctx");
        auto busy = slot.find("is_processing");
        if (busy == slot.end() || !busy->is_boolean() || !busy->get<bool>()) continue;
        held += json_int(slot, "n_prompt_tokens");
        // next_token is an object in some builds, a one-element list in others.
        if (auto nt = slot.find("next_token"); nt != slot.end()) {
            const auto& o = nt->is_array() && !nt->empty() ? (*nt)[0] : *nt;
            if (o.is_object()) held += json_int(o, "n_decoded");
        }
    }
    if (ctx <= 0) {
        if (why) *why = "slots with no context";
        return std::nullopt;
    }
    return std::clamp(static_cast<double>(held) / static_cast<double>(ctx), 0.0, 1.0);
}

std::map<std::pair<std::string, std::string>, GcuMemory> read_gcu_memory(
    const std::vector<Sample>& samples) {
    // Per pod and card (uuid, else minor number): used and total.
    struct Card {
        double used = -1, total = -1;
    };
    std::map<std::pair<std::string, std::string>, std::map<std::string, Card>> cards;
    for (const auto& s : samples) {
        bool used = s.name == "enflame_gcu_memory_used_bytes";
        if (!used && s.name != "enflame_gcu_memory_total_bytes") continue;
        auto label = [&](const char* k) {
            auto it = s.labels.find(k);
            return it == s.labels.end() ? std::string() : it->second;
        };
        std::string pod = label("pod_name"), ns = label("pod_namespace");
        if (pod.empty()) continue;
        std::string card = label("uuid");
        if (card.empty()) card = label("minor_number");
        Card& c = cards[{ns, pod}][card];
        (used ? c.used : c.total) = s.value;
    }
    std::map<std::pair<std::string, std::string>, GcuMemory> out;
    for (const auto& [key, per_card] : cards) {
        GcuMemory m;
        bool any = false;
        for (const auto& [id, c] : per_card) {
            if (c.used < 0 || c.total <= 0) continue;
            double free = std::max(0.0, c.total - c.used);
            m.free_bytes += free;
            m.total_bytes += c.total;
            m.free_fraction = std::min(m.free_fraction, free / c.total);
            any = true;
        }
        if (any) out[key] = m;
    }
    return out;
}

}  // namespace epp
