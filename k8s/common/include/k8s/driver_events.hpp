// SPDX-License-Identifier: Apache-2.0
#pragma once

// The driver's events for the device plugin and the DRA plugin: a thread blocked in libefml's
// EfmlGetEvent (one wait of at most `wait` at a time, so stopping takes no longer than that) that
// hands each event to the daemon's poll loop through an eventfd. Without EfmlGetEvent (no libefml,
// or a library without the call) it retries now and then and the periodic health pass alone
// decides. When the driver goes away (EfmlGetEvent fails at once) it closes the library and opens
// it again with backoff (1 s doubling to 30 s), never spinning; once it is back the daemon is told
// to check every card, since events of the gap are lost.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "inject/discover.hpp"
#include "inject/efml.hpp"
#include "inject/fs.hpp"

namespace k8s {

class EventWatcher {
public:
    /// One thing for the daemon: an event, or nullopt when the library was opened again after
    /// a failure (check every card).
    using Note = std::optional<inject::efml::DriverEvent>;

    /// Starts the thread. An error only when the eventfd cannot be made.
    [[nodiscard]] static inject::Result<std::unique_ptr<EventWatcher>> start(
        inject::discover::Options opts,
        std::chrono::milliseconds wait = std::chrono::milliseconds(1000));
    ~EventWatcher();
    EventWatcher(const EventWatcher&) = delete;
    EventWatcher& operator=(const EventWatcher&) = delete;

    /// Readable while notes wait.
    [[nodiscard]] int fd() const noexcept { return fd_.get(); }
    /// The waiting notes, oldest first.
    [[nodiscard]] std::vector<Note> take();

private:
    EventWatcher(inject::discover::Options opts, std::chrono::milliseconds wait,
                 inject::fs::UniqueFd fd);
    void run(const std::stop_token& stop);
    void push(Note n);
    bool sleep(const std::stop_token& stop, std::chrono::milliseconds d);

    inject::discover::Options opts_;
    std::chrono::milliseconds wait_;
    inject::fs::UniqueFd fd_;
    std::mutex mu_;
    std::condition_variable_any cv_;
    std::deque<Note> notes_;
    std::jthread thread_;  ///< last: stopped and joined first
};

}  // namespace k8s
