// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Where requests wait while the pool is saturated: strict priority between bands, round-robin
/// between fairness ids (tenants) within a band, first come first served within a tenant.
/// A waiter blocks its own thread (the stream's); capacity is asked of `take`.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace epp {

class FairQueue {
public:
    enum class Outcome {
        Dispatched,  ///< go on to scheduling
        Full,        ///< the queue held its maximum: 429
        Expired,     ///< waited the TTL: 503
        Cancelled,   ///< cancel() or stop(): 503
    };

    /// `take` is asked, under the queue's lock, whether one more request may go now; it
    /// reserves that capacity when it says yes. It must not call back into the queue.
    FairQueue(size_t max_requests, std::chrono::milliseconds ttl, std::function<bool()> take)
        : max_(max_requests), ttl_(ttl), take_(std::move(take)) {}

    /// Waits until this request may go. Requests go in the order above, one per yes of `take`.
    [[nodiscard]] Outcome enter(const std::string& id, const std::string& flow, int priority);
    /// enter() without waiting: the outcome when there is one at once (nobody waits and `take`
    /// says yes, the queue is full, or stopped); nullopt when the request would wait.
    [[nodiscard]] std::optional<Outcome> try_enter();
    /// Capacity may have appeared (new metrics, a finished request): dispatch what `take` allows.
    void pump();
    /// Ends the wait of request `id` with Cancelled, if it waits.
    void cancel(const std::string& id);
    /// Ends every wait with Cancelled; later enter() calls return Cancelled at once.
    void stop();
    [[nodiscard]] size_t size() const;

private:
    struct Waiter {
        std::string id;
        int priority;
        std::string flow;
        bool done = false;
        Outcome outcome = Outcome::Dispatched;
    };
    struct Band {
        std::map<std::string, std::deque<std::shared_ptr<Waiter>>> flows;
        std::deque<std::string> turn;  // flows with waiters, the next to go first
    };
    [[nodiscard]] std::optional<Outcome> at_once_locked();
    void pump_locked();
    void remove_locked(const std::shared_ptr<Waiter>& w);

    mutable std::mutex mu_;
    std::condition_variable cv_;
    size_t max_;
    std::chrono::milliseconds ttl_;
    std::function<bool()> take_;
    std::map<int, Band, std::greater<int>> bands_;  // highest priority first
    size_t size_ = 0;
    bool stopped_ = false;
};

}  // namespace epp
