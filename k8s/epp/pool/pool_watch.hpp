// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The Kubernetes endpoint source: informers on the InferencePool (by name), on the pods of
/// its namespace (by the pool's matchLabels; started again when they change) and on the
/// enflame-gcu-exporter pods, and one thread that turns them into Targets (pool_targets.hpp);
/// an informer on the namespace's InferenceObjectives gives the objectives' priorities.

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

    void start(std::function<void(std::vector<Target>)> on_change,
               ObjectivesHandler on_objectives) override;
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
    /// The objectives' priorities handed on when they changed (the loop's thread).
    void look_objectives();

    PoolOptions o_;
    std::unique_ptr<k8s::api::Client> client_;
    std::function<void(std::vector<Target>)> on_change_;
    ObjectivesHandler on_objectives_;
    std::unique_ptr<Running> pool_, pods_, exporters_, objectives_;  ///< pods_: loop's thread
    std::string pods_selector_;                                      ///< what pods_ lists
    /// Pods' informers of earlier selectors: told to stop, joined at stop()
    std::vector<std::unique_ptr<Running>> retired_;
    std::optional<std::vector<Target>> last_;                    ///< what on_change_ last got
    std::string bad_pool_;                                       ///< the last pool error logged
    std::optional<std::map<std::string, int>> last_objectives_;  ///< what on_objectives_ got
    bool warned_unlisted_ = false, told_no_objectives_ = false;
    std::chrono::steady_clock::time_point started_;
    std::atomic<bool> synced_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    bool dirty_ = false, stop_ = false;  ///< under mu_
    std::thread loop_;
};

}  // namespace epp
