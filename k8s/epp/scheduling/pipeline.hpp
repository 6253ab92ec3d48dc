// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// One scheduling profile: filters, then Σ clamp(score, 0, 1) x weight over its scorers, then
/// its picker. Pure apart from the picker's random source and round-robin counter.

#include <atomic>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "epp/scheduling/config.hpp"
#include "epp/scheduling/datastore.hpp"

namespace epp {

/// An endpoint as one request's filters and scorers see it.
struct Candidate {
    const Endpoint* endpoint = nullptr;
    bool stale = true;             ///< no metrics newer than the staleness threshold
    std::optional<GcuMemory> gcu;  ///< only when fresh
    size_t prefix_blocks = 0;      ///< leading prompt blocks it probably holds
    size_t active = 0;             ///< requests the EPP sent it that have not finished
    double score = 0;
};

/// What the scorers need of the request.
struct RequestFacts {
    std::string model;
    size_t prompt_blocks = 0;  ///< blocks of the prompt's prefix text
};

/// An endpoint's saturation for the utilization detector: max(queue / queueDepthThreshold,
/// kv / kvCacheUtilThreshold); a stale endpoint is 1.
[[nodiscard]] double endpoint_saturation(const Candidate& c, const SaturationConfig& s);

/// Drops stale endpoints and those over the detector's thresholds x (1 + headroom); if that
/// drops all, returns `in` unchanged (fail open, as upstream).
[[nodiscard]] std::vector<Candidate> filter_saturated(std::vector<Candidate> in,
                                                      const SaturationConfig& s);
/// Drops endpoints whose pod has less than `min_free` of a card's memory free, before they
/// run out of it; fails open like filter_saturated. Endpoints without GCU data stay.
[[nodiscard]] std::vector<Candidate> filter_gcu_memory(std::vector<Candidate> in, double min_free);
/// decode-filter / prefill-filter: keeps the endpoints of that role (may leave none).
[[nodiscard]] std::vector<Candidate> filter_role(std::vector<Candidate> in, bool prefill);

/// queue-scorer: (max - q) / (max - min) over the candidates; all equal: 1.
[[nodiscard]] std::vector<double> score_queue(const std::vector<Candidate>& c);
/// active-request-scorer (llm-d's): (max - active) / max over the candidates, where active
/// counts the requests this EPP sent an endpoint that have not finished; none anywhere: 1.
/// Unlike the queue it is current between two scrapes, so a burst spreads at once.
[[nodiscard]] std::vector<double> score_active(const std::vector<Candidate>& c);
/// kv-cache-utilization-scorer: 1 - kv (unknown kv: 1).
[[nodiscard]] double score_kv(const Candidate& c);
/// prefix-cache-scorer: matched / total prompt blocks (0 for a prompt without blocks).
[[nodiscard]] double score_prefix(const Candidate& c, const RequestFacts& r);
/// lora-affinity-scorer: 1 adapter loaded, 0.8 room to load it, 0.6 waiting to load, else 0;
/// 0.8 when the server reports no LoRA state.
[[nodiscard]] double score_lora(const Candidate& c, const std::string& model);
/// gcu-memory-scorer: free / total of the pod's fullest card; 0.5 when unknown.
[[nodiscard]] double score_gcu_memory(const Candidate& c);

/// One profile, ready to run.
class Profile {
public:
    Profile(ProfileConfig cfg, const SchedulerConfig& all);
    [[nodiscard]] const std::string& name() const { return cfg_.name; }
    /// The picked endpoints, best first; empty when the filters leave none.
    [[nodiscard]] std::vector<const Endpoint*> run(std::vector<Candidate> c, const RequestFacts& r,
                                                   std::mt19937_64& rng);
    /// Filters and scores only (for tests and the picker): the survivors with their scores.
    [[nodiscard]] std::vector<Candidate> score(std::vector<Candidate> c,
                                               const RequestFacts& r) const;

private:
    ProfileConfig cfg_;
    SaturationConfig saturation_;
    double gcu_min_free_;
    bool uses_gcu_;
    std::atomic<uint64_t> next_{0};  // round-robin-picker
};

/// max-score-picker: shuffle (random ties), stable sort by score descending, first `n`.
[[nodiscard]] std::vector<const Endpoint*> pick_max_score(std::vector<Candidate> c, size_t n,
                                                          std::mt19937_64& rng);

}  // namespace epp
