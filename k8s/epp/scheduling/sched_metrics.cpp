// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/sched_metrics.hpp"

namespace epp {

SchedulerMetrics::SchedulerMetrics(prometheus::Registry& r)
    : picks(prometheus::BuildCounter()
                .Name("enflame_epp_picks_total")
                .Help("Requests routed, by the primary endpoint picked.")
                .Register(r)),
      scrape_errors(prometheus::BuildCounter()
                        .Name("enflame_epp_scrape_errors_total")
                        .Help("Failed metric scrapes, by endpoint address or gcu-exporter URL.")
                        .Register(r)),
      outcomes(prometheus::BuildCounter()
                   .Name("enflame_epp_scheduler_outcomes_total")
                   .Help("Scheduling decisions by HTTP status: 200 routed, 429 shed or queue "
                         "full, 503 no endpoint or queue timeout.")
                   .Register(r)),
      rewrites(prometheus::BuildCounter()
                   .Name("enflame_epp_model_rewrite_decisions_total")
                   .Help("Requests whose model a model rewrite rule matched, by the rewrite's "
                         "name, the client's model and the target model picked.")
                   .Register(r)),
      duration(prometheus::BuildHistogram()
                   .Name("enflame_epp_scheduling_duration_seconds")
                   .Help("Time to pick endpoints for one request, after any queue wait.")
                   .Register(r)
                   .Add({}, prometheus::Histogram::BucketBoundaries{1e-5, 2.5e-5, 5e-5, 1e-4,
                                                                    2.5e-4, 5e-4, 1e-3, 1e-2})),
      queue_size(prometheus::BuildGauge()
                     .Name("enflame_epp_queue_size")
                     .Help("Requests waiting in the fair queue.")
                     .Register(r)
                     .Add({})),
      pool_saturation(prometheus::BuildGauge()
                          .Name("enflame_epp_pool_saturation")
                          .Help("Average over endpoints of max(queue/threshold, kv/threshold); "
                                "a stale endpoint counts 1. At 1 or more, sheddable requests "
                                "get 429 and the others queue.")
                          .Register(r)
                          .Add({})),
      prefix_size(prometheus::BuildGauge()
                      .Name("enflame_epp_prefix_indexer_size")
                      .Help("Prompt blocks in the approximate prefix index, summed over endpoints.")
                      .Register(r)
                      .Add({})),
      prefix_hit_ratio(
          prometheus::BuildHistogram()
              .Name("enflame_epp_prefix_indexer_hit_ratio")
              .Help("Share of a prompt's blocks the picked endpoint probably holds.")
              .Register(r)
              .Add({}, prometheus::Histogram::BucketBoundaries{0, 0.1, 0.25, 0.5, 0.75, 0.9, 1})) {}

}  // namespace epp
