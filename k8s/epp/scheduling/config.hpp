// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The scheduler's configuration: an EndpointPickerConfig YAML close to upstream's (plugins
/// with type/name/parameters, scheduling profiles naming them by pluginRef with a weight),
/// plus our objectives -> priorities, model rewrites and flowControl limits.
/// docs/epp-scheduling.md has the format; examples/epp/ has files.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "epp/scheduling/model_rewrite.hpp"
#include "epp/scheduling/prefix_index.hpp"
#include "epp/scheduling/server_metrics.hpp"

namespace epp {

/// A scorer in a profile and its weight (Σ clamp(score, 0, 1) x weight).
struct WeightedScorer {
    std::string type;  ///< queue-scorer, kv-cache-utilization-scorer, prefix-cache-scorer, ...
    double weight = 1;
};

/// The picker of a profile.
struct PickerConfig {
    std::string type = "max-score-picker";  ///< or random-picker, round-robin-picker
    /// maxNumOfEndpoints: the primary plus fallbacks; 3 (upstream: 1) so that a gateway which
    /// retries has two more endpoints to try, in score order.
    int max_endpoints = 3;
};

/// One scheduling profile: role filters, scorers, a picker.
struct ProfileConfig {
    std::string name;
    std::vector<std::string> filters;  ///< decode-filter, prefill-filter
    std::vector<WeightedScorer> scorers;
    PickerConfig picker;
};

/// upstream's utilization-detector: when an endpoint or the pool is saturated.
struct SaturationConfig {
    double queue_threshold = 5;  ///< queueDepthThreshold
    double kv_threshold = 0.8;   ///< kvCacheUtilThreshold
    double headroom = 0;         ///< headroom: the filter drops q > threshold x (1 + headroom)
    std::optional<std::chrono::milliseconds> staleness;  ///< metricsStalenessThreshold
};

/// disagg-profile-handler with prefix-based-pd-decider.
struct PdConfig {
    bool enabled = false;
    int non_cached_tokens =
        16;  ///< prefill when the uncached prompt has this many tokens; 0: never
    std::string decode_profile = "decode", prefill_profile = "prefill";
};

/// The fair queue's bounds.
struct FlowControlConfig {
    size_t max_requests = 1000;            ///< maxRequests: a full queue answers 429
    std::chrono::milliseconds ttl{60000};  ///< defaultRequestTTL: a longer wait answers 503
};

/// The whole configuration.
struct SchedulerConfig {
    std::vector<ProfileConfig> profiles;  ///< the first is the primary without P/D
    SaturationConfig saturation;
    PrefixOptions prefix;
    bool prefix_auto_tune = true;  ///< LRU capacity from num_gpu_blocks when known
    PdConfig pd;
    FlowControlConfig flow;
    double gcu_min_free = 0.05;  ///< gcu-memory-scorer minFreeFraction: filtered below
    /// active-request-scorer requestTimeout: a request still counted after this is dropped
    /// (its end was never seen).
    std::chrono::milliseconds active_request_timeout{120000};
    std::map<std::string, int> priorities;     ///< objective name -> priority (< 0: sheddable)
    std::vector<ModelRewrite> model_rewrites;  ///< modelRewrites, in file order
    std::optional<Engine> default_engine;      ///< core-metrics-extractor defaultEngine; else probe
};

/// Upstream's default (queue 2, kv 2, prefix 3, max-score-picker) plus gcu-memory-scorer 1 and
/// llm-d's active-request-scorer 1 (docs/epp-scheduling.md says why).
[[nodiscard]] SchedulerConfig default_config();

/// Parses `yaml`; throws std::runtime_error "<source>: <key>: <reason>" on a bad one.
[[nodiscard]] SchedulerConfig parse_config(std::string_view yaml, const std::string& source);

/// Reads and parses the file at `path` (errors name the file).
[[nodiscard]] SchedulerConfig load_config(const std::string& path);

}  // namespace epp
