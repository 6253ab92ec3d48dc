// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/fair_queue.hpp"

#include <algorithm>

namespace epp {

std::optional<FairQueue::Outcome> FairQueue::try_enter() {
    const std::lock_guard l(mu_);
    return at_once_locked();
}

std::optional<FairQueue::Outcome> FairQueue::at_once_locked() {
    if (stopped_) return Outcome::Cancelled;
    if (size_ == 0 && take_()) return Outcome::Dispatched;
    if (size_ >= max_) return Outcome::Full;
    return std::nullopt;
}

FairQueue::Outcome FairQueue::enter(const std::string& id, const std::string& flow, int priority) {
    std::unique_lock l(mu_);
    if (const auto now = at_once_locked()) return *now;
    auto w = std::make_shared<Waiter>(Waiter{id, priority, flow});
    Band& b = bands_[priority];
    auto& q = b.flows[flow];
    if (q.empty()) b.turn.push_back(flow);
    q.push_back(w);
    ++size_;
    pump_locked();
    const auto deadline = std::chrono::steady_clock::now() + ttl_;
    while (!w->done) {
        if (cv_.wait_until(l, deadline) == std::cv_status::timeout && !w->done) {
            remove_locked(w);
            return Outcome::Expired;
        }
    }
    return w->outcome;
}

void FairQueue::pump() {
    std::lock_guard l(mu_);
    pump_locked();
}

void FairQueue::pump_locked() {
    bool woke = false;
    while (size_ > 0 && !stopped_) {
        auto band = bands_.begin();  // bands with no waiter are erased, so this one has some
        if (!take_()) break;
        Band& b = band->second;
        std::string flow = b.turn.front();
        b.turn.pop_front();
        auto& q = b.flows[flow];
        auto w = q.front();
        q.pop_front();
        if (q.empty())
            b.flows.erase(flow);
        else
            b.turn.push_back(flow);
        if (b.turn.empty()) bands_.erase(band);
        --size_;
        w->done = true;
        w->outcome = Outcome::Dispatched;
        woke = true;
    }
    if (woke) cv_.notify_all();
}

void FairQueue::remove_locked(const std::shared_ptr<Waiter>& w) {
    auto band = bands_.find(w->priority);
    if (band == bands_.end()) return;
    Band& b = band->second;
    auto f = b.flows.find(w->flow);
    if (f == b.flows.end()) return;
    auto it = std::find(f->second.begin(), f->second.end(), w);
    if (it == f->second.end()) return;
    f->second.erase(it);
    --size_;
    if (f->second.empty()) {
        b.flows.erase(f);
        std::erase(b.turn, w->flow);
    }
    if (b.turn.empty()) bands_.erase(band);
}

void FairQueue::cancel(const std::string& id) {
    std::lock_guard l(mu_);
    for (auto& [p, b] : bands_)
        for (auto& [f, q] : b.flows)
            for (auto& w : q)
                if (w->id == id) {
                    w->done = true;
                    w->outcome = Outcome::Cancelled;
                    auto keep = w;
                    remove_locked(keep);
                    cv_.notify_all();
                    return;
                }
}

void FairQueue::stop() {
    std::lock_guard l(mu_);
    stopped_ = true;
    for (auto& [p, b] : bands_)
        for (auto& [f, q] : b.flows)
            for (auto& w : q) w->done = true, w->outcome = Outcome::Cancelled;
    bands_.clear();
    size_ = 0;
    cv_.notify_all();
}

size_t FairQueue::size() const {
    std::lock_guard l(mu_);
    return size_;
}

}  // namespace epp
