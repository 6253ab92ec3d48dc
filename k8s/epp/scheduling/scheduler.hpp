// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The scheduler behind epp::Picker: model rewrites, a datastore of endpoints and their scraped
/// metrics, the filter -> scorer -> picker pipeline, the approximate prefix cache, P/D,
/// admission and fair queuing (docs/epp-scheduling.md).
///
/// How main.cpp wires it:
///
///     epp::SchedulingOptions so;
///     epp::add_scheduling_flags(app, so);          // before app.parse
///     ...
///     epp::Scheduler sched(so, registry);          // throws std::runtime_error, one line,
///                                                  // on a bad --config-file: print it, exit 1
///     sched.set_targets(targets);                  // again whenever the endpoints change
///     sched.start();                               // the scrape thread
///     ... serve: ready() for health, the Picker calls from each stream ...
///     sched.stop();                                // before the registry goes away
///
/// All public calls are thread-safe. decide() may block (the fair queue) for at most the
/// configured request TTL; finished() must follow every decide().

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "epp/request.hpp"
#include "epp/scheduling/model_rewrite.hpp"
#include "epp/target.hpp"

namespace CLI {
class App;
}
namespace prometheus {
class Registry;
}

namespace epp {

/// Command-line settings of the scheduling side; the rest comes from the config file.
struct SchedulingOptions {
    std::string config_file;  ///< EndpointPickerConfig YAML; empty: the built-in default
    std::chrono::milliseconds refresh{50};           ///< model-server metrics scrape interval
    std::chrono::milliseconds staleness{200};        ///< older metrics: saturated, filtered
    std::chrono::milliseconds scrape_timeout{1000};  ///< one poll of one endpoint
    std::chrono::milliseconds gcu_refresh{1000};     ///< gcu-exporter scrape interval
    /// Overrides the config's picker: max-score-picker, random-picker or round-robin-picker
    /// (the bench compares them in one binary). Empty: the config's.
    std::string picker;
};

/// Adds --config-file, --refresh-metrics-interval, --metrics-staleness-threshold,
/// --scrape-timeout, --gcu-refresh-interval and --picker to `app`.
void add_scheduling_flags(CLI::App& app, SchedulingOptions& o);

/// Everything behind Picker. Its metrics (enflame_epp_*) go on `metrics`, which must outlive it.
class Scheduler : public Picker {
public:
    /// Reads the config; throws std::runtime_error with one line naming the file, the key and
    /// the reason when it is bad.
    Scheduler(SchedulingOptions o, prometheus::Registry& metrics);
    ~Scheduler() override;
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    /// The endpoints to route to, replacing the last set (from any thread). Endpoints that
    /// stay keep their metrics and prefix state; departed ones are forgotten.
    void set_targets(std::vector<Target> targets);
    /// Starts the scrape thread (idempotent); stop() joins it and releases queued requests
    /// with 503.
    void start();
    void stop();
    /// Objective name -> priority from the cluster's InferenceObjectives, replacing the last
    /// set (from any thread). They win over the config file's objectives of the same name.
    void set_objectives(std::map<std::string, int> priorities);
    /// An objective's priority: the cluster's, else the config file's, else 0.
    [[nodiscard]] int priority_of(const std::string& objective) const;
    /// The cluster's InferenceModelRewrites for the pool, replacing the last set (from any
    /// thread). An object replaces the config file's rewrite of the same name, and the objects
    /// come before the file's rewrites in precedence (model_rewrite.hpp, RewriteTable).
    void set_model_rewrites(std::vector<ModelRewrite> objects);
    /// The model `r` goes upstream with: a target of the rule that matches r.model, drawn by
    /// weight and counted in enflame_epp_model_rewrite_decisions_total; else r.model_rewrite
    /// (the header); else r.model. A request without a model keeps none.
    [[nodiscard]] std::string target_model(const Request& r);
    /// True once there is at least one endpoint (readiness).
    [[nodiscard]] bool ready() const;

    [[nodiscard]] Decision decide(const Request& r) override;
    [[nodiscard]] std::optional<Decision> try_decide(const Request& r) override;
    void served(const Request& r, const std::string& endpoint) override;
    void finished(const Request& r) override;

    struct State;

private:
    /// decide(), or with `may_wait` false try_decide().
    [[nodiscard]] std::optional<Decision> admit(const Request& r, bool may_wait);
    std::unique_ptr<State> s_;
};

}  // namespace epp
