// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The scheduler's own metrics (enflame_epp_*), on the registry the EPP serves.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

namespace epp {

struct SchedulerMetrics {
    explicit SchedulerMetrics(prometheus::Registry& r);

    void picked(const std::string& endpoint) { picks.Add({{"endpoint", endpoint}}).Increment(); }
    void scrape_error(const std::string& source) {
        scrape_errors.Add({{"endpoint", source}}).Increment();
    }
    void outcome(int status) { outcomes.Add({{"status", std::to_string(status)}}).Increment(); }
    void rewritten(const std::string& rewrite, const std::string& model,
                   const std::string& target) {
        rewrites
            .Add({{"model_rewrite_name", rewrite}, {"model_name", model}, {"target_model", target}})
            .Increment();
    }

    prometheus::Family<prometheus::Counter>& picks;
    prometheus::Family<prometheus::Counter>& scrape_errors;
    prometheus::Family<prometheus::Counter>& outcomes;
    prometheus::Family<prometheus::Counter>& rewrites;
    prometheus::Histogram& duration;
    prometheus::Gauge& queue_size;
    prometheus::Gauge& pool_saturation;
    prometheus::Gauge& prefix_size;
    prometheus::Histogram& prefix_hit_ratio;
};

}  // namespace epp
