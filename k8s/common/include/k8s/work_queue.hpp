// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The work queue of keys (client-go's util/workqueue, rate-limited flavour).

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace k8s {

/// client-go's rate-limited work queue: add() coalesces a key already waiting; a key being
/// processed is re-queued after done() when it was added meanwhile, so no two workers ever
/// hold the same key; add_rate_limited() waits 100 ms doubling to 30 s per failing key,
/// forget() resets that.
class WorkQueue {
public:
    using Clock = std::chrono::steady_clock;
    /// `now` is the clock delays are measured on (tests pass one they move by hand).
    explicit WorkQueue(std::function<Clock::time_point()> now = Clock::now);

    static constexpr std::chrono::milliseconds kBaseDelay{100};
    static constexpr std::chrono::milliseconds kMaxDelay{30000};

    void add(const std::string& key);
    /// add() once `delay` has passed; a key already waiting keeps the earlier of the two times.
    void add_after(const std::string& key, std::chrono::milliseconds delay);
    /// add_after() by this key's backoff: kBaseDelay, doubled for each failure since the last
    /// forget(), at most kMaxDelay.
    void add_rate_limited(const std::string& key);
    void forget(const std::string& key);
    /// Failures counted for `key` since its last forget().
    [[nodiscard]] int requeues(const std::string& key);
    /// Blocks until a key is ready and hands it out (the caller calls done() with it), or
    /// returns nullopt once shut_down() was called and no key is queued.
    [[nodiscard]] std::optional<std::string> get();
    /// get() without blocking: nullopt when no key is ready now.
    [[nodiscard]] std::optional<std::string> try_get();
    void done(const std::string& key);
    /// Wakes every get(); keys added from now on are dropped.
    void shut_down();

private:
    std::optional<std::string> pop_ready();  // with mu_ held

    std::function<Clock::time_point()> now_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::string> queue_;
    std::set<std::string> dirty_, processing_;
    std::map<std::string, Clock::time_point> delayed_;  ///< key -> when it is added
    std::map<std::string, int> failures_;
    bool shutting_down_ = false;
};

}  // namespace k8s
