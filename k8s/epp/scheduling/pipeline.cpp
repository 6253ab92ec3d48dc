// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/pipeline.hpp"

#include <algorithm>

namespace epp {
namespace {

template <typename Keep>
std::vector<Candidate> keep_or_all(std::vector<Candidate> in, Keep keep) {
    std::vector<Candidate> out;
    out.reserve(in.size());
    for (const auto& c : in)
        if (keep(c)) out.push_back(c);
    if (out.empty()) return in;  // fail open
    return out;
}

std::vector<const Endpoint*> first_n(const std::vector<Candidate>& c, size_t n) {
    std::vector<const Endpoint*> out;
    for (size_t i = 0; i < c.size() && i < n; ++i) out.push_back(c[i].endpoint);
    return out;
}

}  // namespace

double endpoint_saturation(const Candidate& c, const SaturationConfig& s) {
    if (c.stale || !c.endpoint->metrics) return 1.0;
    const auto& m = *c.endpoint->metrics;
    return std::max(m.waiting / s.queue_threshold, m.kv.value_or(0.0) / s.kv_threshold);
}

std::vector<Candidate> filter_saturated(std::vector<Candidate> in, const SaturationConfig& s) {
    const double room = 1 + s.headroom;
    return keep_or_all(std::move(in), [&](const Candidate& c) {
        if (c.stale || !c.endpoint->metrics) return false;
        const auto& m = *c.endpoint->metrics;
        return m.waiting <= s.queue_threshold * room && m.kv.value_or(0.0) <= s.kv_threshold * room;
    });
}

std::vector<Candidate> filter_gcu_memory(std::vector<Candidate> in, double min_free) {
    return keep_or_all(std::move(in), [&](const Candidate& c) {
        return !c.gcu || c.gcu->free_fraction >= min_free;
    });
}

std::vector<Candidate> filter_role(std::vector<Candidate> in, bool prefill) {
    std::erase_if(in, [&](const Candidate& c) {
        return prefill ? !c.endpoint->roles.prefill : !c.endpoint->roles.decode;
    });
    return in;
}

std::vector<double> score_queue(const std::vector<Candidate>& c) {
    auto q = [](const Candidate& x) {
        return x.endpoint->metrics ? x.endpoint->metrics->waiting : 0.0;
    };
    double lo = 0, hi = 0;
    for (size_t i = 0; i < c.size(); ++i) {
        lo = i == 0 ? q(c[i]) : std::min(lo, q(c[i]));
        hi = i == 0 ? q(c[i]) : std::max(hi, q(c[i]));
    }
    std::vector<double> out;
    out.reserve(c.size());
    for (const auto& x : c) out.push_back(hi == lo ? 1.0 : (hi - q(x)) / (hi - lo));
    return out;
}

std::vector<double> score_active(const std::vector<Candidate>& c) {
    size_t hi = 0;
    for (const auto& x : c) hi = std::max(hi, x.active);
    std::vector<double> out;
    out.reserve(c.size());
    for (const auto& x : c)
        out.push_back(hi == 0 ? 1.0 : static_cast<double>(hi - x.active) / static_cast<double>(hi));
    return out;
}

double score_kv(const Candidate& c) {
    if (!c.endpoint->metrics || !c.endpoint->metrics->kv) return 1.0;
    return 1.0 - *c.endpoint->metrics->kv;
}

double score_prefix(const Candidate& c, const RequestFacts& r) {
    if (r.prompt_blocks == 0) return 0;
    return static_cast<double>(std::min(c.prefix_blocks, r.prompt_blocks)) /
           static_cast<double>(r.prompt_blocks);
}

double score_lora(const Candidate& c, const std::string& model) {
    if (!c.endpoint->metrics || !c.endpoint->metrics->lora) return 0.8;
    const LoraState& l = *c.endpoint->metrics->lora;
    if (l.running.count(model)) return 1.0;
    if (l.waiting.count(model)) return 0.6;
    if (static_cast<int>(l.running.size() + l.waiting.size()) < l.max_adapters) return 0.8;
    return 0.0;
}

double score_gcu_memory(const Candidate& c) {
    return c.gcu ? c.gcu->free_fraction : 0.5;
}

std::vector<const Endpoint*> pick_max_score(std::vector<Candidate> c, size_t n,
                                            std::mt19937_64& rng) {
    std::shuffle(c.begin(), c.end(), rng);
    std::stable_sort(c.begin(), c.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    return first_n(c, n);
}

Profile::Profile(ProfileConfig cfg, const SchedulerConfig& all)
    : cfg_(std::move(cfg)), saturation_(all.saturation), gcu_min_free_(all.gcu_min_free) {
    uses_gcu_ = std::any_of(cfg_.scorers.begin(), cfg_.scorers.end(),
                            [](const WeightedScorer& s) { return s.type == "gcu-memory-scorer"; });
}

std::vector<Candidate> Profile::score(std::vector<Candidate> c, const RequestFacts& r) const {
    for (const auto& f : cfg_.filters) c = filter_role(std::move(c), f == "prefill-filter");
    if (c.empty()) return c;
    c = filter_saturated(std::move(c), saturation_);
    if (uses_gcu_) c = filter_gcu_memory(std::move(c), gcu_min_free_);
    for (auto& x : c) x.score = 0;
    for (const auto& s : cfg_.scorers) {
        std::vector<double> v;
        if (s.type == "queue-scorer") {
            v = score_queue(c);
        } else if (s.type == "active-request-scorer") {
            v = score_active(c);
        } else {
            v.reserve(c.size());
            for (const auto& x : c) {
                if (s.type == "kv-cache-utilization-scorer")
                    v.push_back(score_kv(x));
                else if (s.type == "prefix-cache-scorer")
                    v.push_back(score_prefix(x, r));
                else if (s.type == "lora-affinity-scorer")
                    v.push_back(score_lora(x, r.model));
                else
                    v.push_back(score_gcu_memory(x));
            }
        }
        for (size_t i = 0; i < c.size(); ++i) c[i].score += std::clamp(v[i], 0.0, 1.0) * s.weight;
    }
    return c;
}

std::vector<const Endpoint*> Profile::run(std::vector<Candidate> c, const RequestFacts& r,
                                          std::mt19937_64& rng) {
    c = score(std::move(c), r);
    const auto n = static_cast<size_t>(cfg_.picker.max_endpoints);
    if (c.empty()) return {};
    if (cfg_.picker.type == "random-picker") {
        std::shuffle(c.begin(), c.end(), rng);
        return first_n(c, n);
    }
    if (cfg_.picker.type == "round-robin-picker") {
        std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
            return a.endpoint->target.address < b.endpoint->target.address;
        });
        std::rotate(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(next_++ % c.size()),
                    c.end());
        return first_n(c, n);
    }
    return pick_max_score(std::move(c), n, rng);
}

}  // namespace epp
