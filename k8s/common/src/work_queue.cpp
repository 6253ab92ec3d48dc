// SPDX-License-Identifier: Apache-2.0
// The work queue (work_queue.hpp).
#include "k8s/work_queue.hpp"

#include <algorithm>

namespace k8s {

WorkQueue::WorkQueue(std::function<Clock::time_point()> now) : now_(std::move(now)) {}

void WorkQueue::add(const std::string& key) {
    {
        const std::lock_guard lock(mu_);
        if (shutting_down_ || !dirty_.insert(key).second) return;
        if (processing_.count(key)) return;  // done() queues it again
        queue_.push_back(key);
    }
    cv_.notify_one();
}

void WorkQueue::add_after(const std::string& key, std::chrono::milliseconds delay) {
    {
        const std::lock_guard lock(mu_);
        if (shutting_down_) return;
        const auto at = now_() + delay;
        const auto [it, fresh] = delayed_.emplace(key, at);
        if (!fresh) it->second = std::min(it->second, at);
    }
    cv_.notify_all();  // a waiter may sleep until a later time
}

void WorkQueue::add_rate_limited(const std::string& key) {
    int n;
    {
        const std::lock_guard lock(mu_);
        n = failures_[key]++;
    }
    add_after(
        key, std::min<std::chrono::milliseconds>(kBaseDelay * (1LL << std::min(n, 10)), kMaxDelay));
}

void WorkQueue::forget(const std::string& key) {
    const std::lock_guard lock(mu_);
    failures_.erase(key);
}

int WorkQueue::requeues(const std::string& key) {
    const std::lock_guard lock(mu_);
    const auto it = failures_.find(key);
    return it == failures_.end() ? 0 : it->second;
}

std::optional<std::string> WorkQueue::pop_ready() {
    const auto now = now_();
    for (auto it = delayed_.begin(); it != delayed_.end();) {
        if (it->second > now) {
            ++it;
            continue;
        }
        if (dirty_.insert(it->first).second && !processing_.count(it->first))
            queue_.push_back(it->first);
        it = delayed_.erase(it);
    }
    if (queue_.empty()) return std::nullopt;
    std::string k = queue_.front();
    queue_.pop_front();
    dirty_.erase(k);
    processing_.insert(k);
    return k;
}

std::optional<std::string> WorkQueue::try_get() {
    const std::lock_guard lock(mu_);
    return pop_ready();
}

std::optional<std::string> WorkQueue::get() {
    std::unique_lock lock(mu_);
    for (;;) {
        if (auto k = pop_ready()) return k;
        if (shutting_down_) return std::nullopt;
        if (delayed_.empty()) {
            cv_.wait(lock);
            continue;
        }
        auto next = delayed_.begin()->second;
        for (const auto& [_, at] : delayed_) next = std::min(next, at);
        cv_.wait_for(lock, next - now_());
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

void WorkQueue::shut_down() {
    {
        const std::lock_guard lock(mu_);
        shutting_down_ = true;
        delayed_.clear();
    }
    cv_.notify_all();
}

}  // namespace k8s
