// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The operator's work queue of keys (client-go's util/workqueue, rate-limited flavour).

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace op {

/// client-go's rate-limited work queue: add() coalesces a key already waiting; a key being
/// processed is re-queued after done() when it was added meanwhile; add_rate_limited() waits
/// 100 ms doubling to 30 s per failing key, forget() resets that.
class WorkQueue {
public:
    void add(const std::string& key);
    void add_after(const std::string& key, std::chrono::milliseconds delay);
    void add_rate_limited(const std::string& key);
    void forget(const std::string& key);
    /// Blocks until a key is ready.
    [[nodiscard]] std::string get();
    void done(const std::string& key);

private:
    using Clock = std::chrono::steady_clock;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::string> queue_;
    std::set<std::string> dirty_, processing_;
    std::multimap<Clock::time_point, std::string> delayed_;
    std::map<std::string, int> failures_;
};

}  // namespace op
