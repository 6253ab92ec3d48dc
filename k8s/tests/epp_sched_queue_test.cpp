// SPDX-License-Identifier: Apache-2.0
// The fair queue: round-robin between tenants, strict priority between bands, bounded size
// and wait. Real threads wait in it; capacity is handed out one request at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "epp/scheduling/fair_queue.hpp"

namespace {

using namespace std::chrono_literals;
using Outcome = epp::FairQueue::Outcome;

// Hands the queue `tokens` dispatches; records who went, in order.
struct Gate {
    std::atomic<int> tokens{0};
    bool take() {
        if (tokens <= 0) return false;
        --tokens;
        return true;
    }
};

struct Waiters {
    std::mutex mu;
    std::vector<std::string> went;  // flow of each dispatched request, in dispatch order
    std::vector<std::thread> threads;
    ~Waiters() {
        for (auto& t : threads) t.join();
    }
    void enter(epp::FairQueue& q, const std::string& id, const std::string& flow, int prio) {
        threads.emplace_back([&q, this, id, flow, prio] {
            if (q.enter(id, flow, prio) == Outcome::Dispatched) {
                std::lock_guard l(mu);
                went.push_back(flow);
            }
        });
    }
    size_t count() {
        std::lock_guard l(mu);
        return went.size();
    }
};

void wait_for(const std::function<bool()>& done) {
    for (int i = 0; i < 2000 && !done(); ++i) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(done());
}

// One dispatch at a time, so the order of `went` is the queue's order.
void release_one_by_one(epp::FairQueue& q, Gate& g, Waiters& w, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        size_t before = w.count();
        g.tokens = 1;
        q.pump();
        wait_for([&] { return w.count() == before + 1; });
    }
}

TEST(FairQueue, AFloodingTenantDoesNotStarveAnother) {
    Gate g;
    epp::FairQueue q(100, 10s, [&] { return g.take(); });
    Waiters w;
    for (int i = 0; i < 10; ++i) w.enter(q, "a" + std::to_string(i), "flood", 0);
    wait_for([&] { return q.size() == 10; });
    w.enter(q, "b0", "quiet", 0);
    w.enter(q, "b1", "quiet", 0);
    wait_for([&] { return q.size() == 12; });
    release_one_by_one(q, g, w, 12);
    // The quiet tenant's two requests go within the first four, not after the flood's ten.
    const std::vector<std::string> first4(w.went.begin(), w.went.begin() + 4);
    EXPECT_EQ(std::count(first4.begin(), first4.end(), "quiet"), 2)
        << ::testing::PrintToString(w.went);
}

TEST(FairQueue, HigherPriorityBandGoesFirst) {
    Gate g;
    epp::FairQueue q(100, 10s, [&] { return g.take(); });
    Waiters w;
    for (int i = 0; i < 3; ++i) w.enter(q, "low" + std::to_string(i), "low", 0);
    wait_for([&] { return q.size() == 3; });
    w.enter(q, "high", "high", 5);
    wait_for([&] { return q.size() == 4; });
    release_one_by_one(q, g, w, 4);
    EXPECT_EQ(w.went.front(), "high");
}

TEST(FairQueue, FullQueueRefusesAndLongWaitExpires) {
    Gate g;
    epp::FairQueue q(2, 150ms, [&] { return g.take(); });
    Waiters w;
    w.enter(q, "1", "f", 0);
    w.enter(q, "2", "f", 0);
    wait_for([&] { return q.size() == 2; });
    EXPECT_EQ(q.enter("3", "f", 0), Outcome::Full);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(q.enter("4", "g", 0), Outcome::Full);
    wait_for([&] { return q.size() == 0; });  // both expire after 150 ms
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 100ms);
    EXPECT_EQ(w.count(), 0u);
}

TEST(FairQueue, NoWaitWhenEmptyAndCapacityFree) {
    Gate g;
    g.tokens = 1;
    epp::FairQueue q(10, 10s, [&] { return g.take(); });
    EXPECT_EQ(q.enter("1", "f", 0), Outcome::Dispatched);
}

TEST(FairQueue, TryEnterAnswersWithoutWaitingOrSaysItWouldWait) {
    Gate g;
    epp::FairQueue q(1, 10s, [&] { return g.take(); });
    EXPECT_EQ(q.try_enter(), std::nullopt);  // no capacity: it would wait
    g.tokens = 1;
    EXPECT_EQ(q.try_enter(), Outcome::Dispatched);
    EXPECT_EQ(g.tokens, 0);  // the capacity was taken
    Waiters w;
    w.enter(q, "1", "f", 0);
    wait_for([&] { return q.size() == 1; });
    EXPECT_EQ(q.try_enter(), Outcome::Full);
    g.tokens = 1;
    q.pump();  // the waiter goes first
    wait_for([&] { return w.count() == 1; });
    EXPECT_EQ(q.try_enter(), std::nullopt);
    q.stop();
    EXPECT_EQ(q.try_enter(), Outcome::Cancelled);
}

TEST(FairQueue, CancelAndStopEndWaits) {
    Gate g;
    epp::FairQueue q(10, 10s, [&] { return g.take(); });
    std::atomic<int> cancelled{0};
    std::vector<std::thread> t;
    for (int i = 0; i < 3; ++i)
        t.emplace_back([&, i] {
            if (q.enter(std::to_string(i), "f", 0) == Outcome::Cancelled) ++cancelled;
        });
    wait_for([&] { return q.size() == 3; });
    q.cancel("1");
    wait_for([&] { return cancelled == 1 && q.size() == 2; });
    q.stop();
    for (auto& x : t) x.join();
    EXPECT_EQ(cancelled, 3);
    EXPECT_EQ(q.enter("9", "f", 0), Outcome::Cancelled);
}

}  // namespace
