// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The Kubernetes endpoint source: informers on the InferencePool (by name), on the pods of
/// its namespace (by the pool's matchLabels; started again when they change) and on the
/// enflame-gcu-exporter pods, and one thread that turns them into Targets (pool_targets.hpp);
/// informers on the namespace's InferenceObjectives and InferenceModelRewrites give the
/// objectives' priorities and the model rewrites.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "epp/pool/endpoint_source.hpp"
#include "epp/pool/pool_targets.hpp"
#include "k8s/reflector.hpp"

namespace epp {

class PoolWatch final : public EndpointSource {
public:
    PoolWatch(PoolOptions o, std::unique_ptr<k8s::api::Client> client);
    ~PoolWatch() override;
    PoolWatch(const PoolWatch&) = delete;
    PoolWatch& operator=(const PoolWatch&) = delete;

    void start(std::function<void(std::vector<Target>)> on_change, ObjectivesHandler on_objectives,
               RewritesHandler on_rewrites) override;
    void stop() override;
    [[nodiscard]] bool synced() const override { return synced_.load(); }

private:
    /// An informer and the thread it runs on.
    struct Running {
        std::unique_ptr<k8s::Informer> informer;
        std::thread thread;
        ~Running();
    };
    [[nodiscard]] std::unique_ptr<Running> run(k8s::ReflectorOptions o, std::string api_version,
                                               std::string kind);
    /// A kind of inference.networking.x-k8s.io/v1alpha2 in the pool's namespace
    /// (InferenceObjectives, InferenceModelRewrites), followed for what it says of the pool.
    struct Extra {
        const char* kind;     ///< "InferenceObjective"
        const char* plural;   ///< "inferenceobjectives"
        const char* without;  ///< what holds while it is not listed, for the log
        std::unique_ptr<Running> running{};
        bool told = false;                  ///< "not listed" logged
        std::optional<std::string> last{};  ///< what was last logged and handed on
    };
    /// Starts `e`'s informer.
    void run_extra(Extra& e);
    /// Whether `e` has been listed; if not, said once after kWarnUnlisted.
    [[nodiscard]] bool listed(Extra& e);
    /// Whether `text` (what `e` says of the pool) differs from what was last handed on; if so
    /// it is logged, and kept.
    [[nodiscard]] bool changed(Extra& e, const std::string& text);
    /// Notes that an informer saw a change: the loop looks again.
    void poke();
    /// The loop's thread: follows the informers until stop().
    void loop();
    /// One look at the informers: the pods' informer (re)started for the pool's selector, the
    /// targets handed on when they changed.
    void look();
    /// True once: the first time it is asked with `told` false after an informer had
    /// kWarnUnlisted to list (then `told` is set), so a missing list is logged one time.
    [[nodiscard]] bool first_overdue(bool& told) const;
    /// The objectives' priorities and the model rewrites handed on when they changed (the
    /// loop's thread).
    void look_objectives();
    void look_rewrites();

    PoolOptions o_;
    std::unique_ptr<k8s::api::Client> client_;
    std::function<void(std::vector<Target>)> on_change_;
    ObjectivesHandler on_objectives_;
    RewritesHandler on_rewrites_;
    std::unique_ptr<Running> pool_, pods_, exporters_;  ///< pods_: loop's thread
    Extra objectives_{"InferenceObjective", "inferenceobjectives",
                      "objective priorities come from the config file only"};
    Extra rewrites_{"InferenceModelRewrite", "inferencemodelrewrites",
                    "model rewrites come from the config file only"};
    std::string pods_selector_;  ///< what pods_ lists
    /// Pods' informers of earlier selectors: told to stop, joined at stop()
    std::vector<std::unique_ptr<Running>> retired_;
    std::optional<std::vector<Target>> last_;  ///< what on_change_ last got
    std::string bad_pool_;                     ///< the last pool error logged
    bool warned_unlisted_ = false;
    std::chrono::steady_clock::time_point started_;
    std::atomic<bool> synced_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    bool dirty_ = false, stop_ = false;  ///< under mu_
    std::thread loop_;
};

}  // namespace epp
