// SPDX-License-Identifier: Apache-2.0
// The work queue (work_queue.hpp).
#include "work_queue.hpp"

#include <algorithm>

namespace op {

using Clock = std::chrono::steady_clock;

void WorkQueue::add(const std::string& key) {
    {
        const std::lock_guard lock(mu_);
        if (!dirty_.insert(key).second) return;
        if (processing_.count(key)) return;  // done() queues it again
        queue_.push_back(key);
    }
    cv_.notify_one();
}

void WorkQueue::add_after(const std::string& key, std::chrono::milliseconds delay) {
    {
        const std::lock_guard lock(mu_);
        delayed_.emplace(Clock::now() + delay, key);
    }
    cv_.notify_one();
}

void WorkQueue::add_rate_limited(const std::string& key) {
    int n;
    {
        const std::lock_guard lock(mu_);
        n = failures_[key]++;
    }
    add_after(key, std::min<std::chrono::milliseconds>(
                       std::chrono::milliseconds(100) * (1LL << std::min(n, 10)),
                       std::chrono::milliseconds(30000)));
}

void WorkQueue::forget(const std::string& key) {
    const std::lock_guard lock(mu_);
    failures_.erase(key);
}

std::string WorkQueue::get() {
    std::unique_lock lock(mu_);
    for (;;) {
        const auto now = Clock::now();
        while (!delayed_.empty() && delayed_.begin()->first <= now) {
            const std::string k = delayed_.begin()->second;
            delayed_.erase(delayed_.begin());
            if (dirty_.insert(k).second && !processing_.count(k)) queue_.push_back(k);
        }
        if (!queue_.empty()) {
            std::string k = queue_.front();
            queue_.pop_front();
            dirty_.erase(k);
            processing_.insert(k);
            return k;
        }
        if (delayed_.empty())
            cv_.wait(lock);
        else
            cv_.wait_until(lock, delayed_.begin()->first);
    }
}

void WorkQueue::done(const std::string& key) {
    {
        const std::lock_guard lock(mu_);
        processing_.erase(key);
        if (!dirty_.count(key)) return;
        queue_.push_back(key);
    }
    cv_.notify_one();
}

}  // namespace op
