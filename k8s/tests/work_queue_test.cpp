// SPDX-License-Identifier: Apache-2.0
// The work queue (k8s/work_queue.hpp) against what client-go's rate-limited queue
// guarantees: a key queued many times is handed out once; a key being processed is never
// handed to a second worker, and comes back after done() when it was added meanwhile; the
// per-key backoff doubles up to its cap and restarts after forget(); shut_down() wakes every
// waiter. Real threads where threads matter; a hand-moved clock for the delays.
#include "k8s/work_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using k8s::WorkQueue;
using Clock = WorkQueue::Clock;

/// A clock the test moves by hand.
struct FakeClock {
    Clock::time_point t{};
    std::function<Clock::time_point()> fn() {
        return [this] { return t; };
    }
};

TEST(WorkQueue, AKeyAddedManyTimesWhileQueuedIsHandedOutOnce) {
    WorkQueue q;
    for (int i = 0; i < 100; ++i) q.add("a");
    q.add("b");
    EXPECT_EQ(q.try_get(), "a");
    EXPECT_EQ(q.try_get(), "b");
    EXPECT_EQ(q.try_get(), std::nullopt);
    q.done("a");
    q.done("b");
    EXPECT_EQ(q.try_get(), std::nullopt);  // done() without a new add(): nothing comes back
}

TEST(WorkQueue, AKeyAddedWhileProcessedComesBackAfterDoneOnly) {
    WorkQueue q;
    q.add("a");
    ASSERT_EQ(q.try_get(), "a");
    q.add("a");
    q.add("a");
    EXPECT_EQ(q.try_get(), std::nullopt);  // a second worker would get it here
    q.done("a");
    EXPECT_EQ(q.try_get(), "a");  // once, for both adds
    q.done("a");
    EXPECT_EQ(q.try_get(), std::nullopt);
}

// Two real workers: while worker 1 holds "a", "a" is added again and then "b"; worker 2,
// blocked in get(), is woken and gets "b", never "a" (FIFO: had "a" been queued it came
// first); once worker 1 calls done("a"), worker 2's next get() returns "a".
TEST(WorkQueue, TwoWorkersNeverHoldTheSameKey) {
    WorkQueue q;
    q.add("a");
    std::promise<std::string> w1_got;
    std::promise<void> w1_may_finish;
    std::thread w1([&] {
        auto k = q.get();
        w1_got.set_value(k.value_or(""));
        w1_may_finish.get_future().wait();
        q.done(*k);
    });
    ASSERT_EQ(w1_got.get_future().get(), "a");
    std::promise<std::string> w2_first, w2_second;
    std::thread w2([&] {
        auto k = q.get();
        w2_first.set_value(k.value_or(""));
        q.done(*k);
        auto k2 = q.get();
        w2_second.set_value(k2.value_or(""));
        if (k2) q.done(*k2);
    });
    q.add("a");
    q.add("b");
    auto first = w2_first.get_future();
    ASSERT_EQ(first.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(first.get(), "b");
    auto second = w2_second.get_future();
    // "a" is held by worker 1: worker 2 waits for it
    EXPECT_EQ(second.wait_for(50ms), std::future_status::timeout);
    w1_may_finish.set_value();
    ASSERT_EQ(second.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(second.get(), "a");
    w1.join();
    w2.join();
}

// Many producers and workers: no key is ever held by two workers at once, and no add() is
// lost (each key's last processing saw its last add).
TEST(WorkQueue, UnderLoadNoKeyTwiceAtOnceAndNoAddLost) {
    constexpr int kKeys = 8, kWorkers = 4, kProducers = 2, kAdds = 2000;
    WorkQueue q;
    std::array<std::atomic<int>, kKeys> in_flight{}, added{}, seen{};
    std::atomic<int> overlaps{0};
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; ++w)
        workers.emplace_back([&] {
            for (;;) {
                const auto k = q.get();
                if (!k || k->starts_with("stop")) return;  // not shut_down(): tested below
                const int i = std::stoi(*k);
                if (in_flight[i].fetch_add(1) != 0) ++overlaps;
                const int version = added[i].load();  // what this pass reconciles to
                for (int y = 0; y < 50; ++y) std::this_thread::yield();  // a reconcile's time
                seen[i] = std::max(seen[i].load(), version);
                in_flight[i].fetch_sub(1);
                q.done(*k);
                const std::lock_guard lock(mu);
                cv.notify_all();
            }
        });
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p)
        producers.emplace_back([&, p] {
            for (int n = 0; n < kAdds; ++n) {
                const int i = (n * 7 + p) % kKeys;
                ++added[i];
                q.add(std::to_string(i));
            }
        });
    for (auto& t : producers) t.join();
    {
        std::unique_lock lock(mu);
        const bool caught_up = cv.wait_for(lock, 30s, [&] {
            for (int i = 0; i < kKeys; ++i)
                if (seen[i].load() != added[i].load()) return false;
            return true;
        });
        EXPECT_TRUE(caught_up) << "an add() was lost: a key's last change never processed";
    }
    for (int w = 0; w < kWorkers; ++w) q.add("stop" + std::to_string(w));
    for (auto& t : workers) t.join();
    EXPECT_EQ(overlaps.load(), 0) << "a key was held by two workers at once";
}

TEST(WorkQueue, BackoffDoublesPerKeyUpToItsCapAndRestartsAfterForget) {
    FakeClock clock;
    WorkQueue q(clock.fn());
    // ready_after D: the key is not handed out 1 ms before D, and is at D
    auto ready_after = [&](const std::string& key, std::chrono::milliseconds d) {
        clock.t += d - 1ms;
        EXPECT_EQ(q.try_get(), std::nullopt) << key << " early, before " << d.count() << " ms";
        clock.t += 1ms;
        const auto k = q.try_get();
        EXPECT_EQ(k, key) << "not ready after " << d.count() << " ms";
        if (k) q.done(*k);
    };
    const std::vector<std::chrono::milliseconds> want = {
        100ms, 200ms, 400ms, 800ms, 1600ms, 3200ms, 6400ms, 12800ms, 25600ms, 30s, 30s, 30s};
    for (std::size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE("failure " + std::to_string(i + 1));
        q.add_rate_limited("k");
        EXPECT_EQ(q.requeues("k"), static_cast<int>(i + 1));
        ready_after("k", want[i]);
    }
    // another key has its own count
    q.add_rate_limited("j");
    ready_after("j", 100ms);
    // a success: forget() starts k over
    q.forget("k");
    EXPECT_EQ(q.requeues("k"), 0);
    q.add_rate_limited("k");
    ready_after("k", 100ms);
}

TEST(WorkQueue, AKeyWaitingTwiceIsAddedOnceAtTheEarlierTime) {
    FakeClock clock;
    WorkQueue q(clock.fn());
    for (const auto& [first, second] : {std::pair{5s, 1s}, std::pair{1s, 5s}}) {
        q.add_after("k", first);
        q.add_after("k", second);
        clock.t += 1s;
        ASSERT_EQ(q.try_get(), "k");
        q.done("k");
        clock.t += 5s;
        EXPECT_EQ(q.try_get(), std::nullopt);
    }
}

// A worker blocked on an empty queue is woken by add_after() and gets the key once its time
// has come (the real clock).
TEST(WorkQueue, GetWaitsForADelayedKey) {
    WorkQueue q;
    std::promise<void> waiting;
    auto got = std::async(std::launch::async, [&] {
        waiting.set_value();
        return q.get();
    });
    waiting.get_future().wait();
    const auto t0 = Clock::now();
    q.add_after("d", 50ms);
    ASSERT_EQ(got.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(got.get(), "d");
    EXPECT_GE(Clock::now() - t0, 50ms);
}

TEST(WorkQueue, ShutDownWakesEveryWaiter) {
    WorkQueue q;
    q.add_after("later", 1h);  // one waiter sleeps until then, not forever
    constexpr int kWaiters = 3;
    std::latch started(kWaiters);
    std::vector<std::future<std::optional<std::string>>> waiters;
    for (int i = 0; i < kWaiters; ++i)
        waiters.push_back(std::async(std::launch::async, [&] {
            started.count_down();
            return q.get();
        }));
    started.wait();
    q.shut_down();
    int woken = 0;
    for (auto& w : waiters) woken += w.wait_for(10s) == std::future_status::ready;
    EXPECT_EQ(woken, kWaiters) << "shut_down() left get() callers blocked";
    if (woken < kWaiters)  // release them so the test ends
        for (int i = 0; i < kWaiters; ++i) q.add("unblock" + std::to_string(i));
    for (auto& w : waiters) EXPECT_EQ(w.get(), std::nullopt);
    // after shut_down(): adds are dropped
    q.add("x");
    EXPECT_EQ(q.try_get(), std::nullopt);
}

TEST(WorkQueue, ShutDownStillHandsOutWhatIsQueued) {
    WorkQueue q;
    q.add("x");
    q.shut_down();
    EXPECT_EQ(q.get(), "x");
    q.done("x");
    EXPECT_EQ(q.get(), std::nullopt);
}

}  // namespace
