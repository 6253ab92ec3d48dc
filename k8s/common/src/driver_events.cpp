// SPDX-License-Identifier: Apache-2.0
#include "k8s/driver_events.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "inject/log.hpp"

namespace k8s {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kFirstBackoff{1000};
constexpr milliseconds kMaxBackoff{30000};

}  // namespace

inject::Result<std::unique_ptr<EventWatcher>> EventWatcher::start(inject::discover::Options opts,
                                                                  milliseconds wait) {
    inject::fs::UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!fd.valid()) return inject::fail(inject::sys_error("eventfd for driver events"));
    opts.with_drs = false;  // events need the library only
    std::unique_ptr<EventWatcher> w(new EventWatcher(std::move(opts), wait, std::move(fd)));
    w->thread_ = std::jthread([p = w.get()](const std::stop_token& stop) { p->run(stop); });
    return w;
}

EventWatcher::EventWatcher(inject::discover::Options opts, milliseconds wait,
                           inject::fs::UniqueFd fd)
    : opts_(std::move(opts)), wait_(wait), fd_(std::move(fd)) {}

EventWatcher::~EventWatcher() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
}

std::vector<EventWatcher::Note> EventWatcher::take() {
    std::uint64_t n = 0;
    (void)!::read(fd_.get(), &n, sizeof n);  // resets the counter; EAGAIN when nothing waits
    const std::lock_guard lock(mu_);
    std::vector<Note> out(notes_.begin(), notes_.end());
    notes_.clear();
    return out;
}

void EventWatcher::push(Note n) {
    {
        const std::lock_guard lock(mu_);
        notes_.push_back(std::move(n));
    }
    const std::uint64_t one = 1;
    (void)!::write(fd_.get(), &one, sizeof one);
}

// Sleeps `d` unless stopped first; false when stopped.
bool EventWatcher::sleep(const std::stop_token& stop, milliseconds d) {
    std::unique_lock lock(mu_);
    return !cv_.wait_for(lock, stop, d, [] { return false; });
}

void EventWatcher::run(const std::stop_token& stop) {
    milliseconds backoff = kFirstBackoff;
    std::string problem;  // the last reason we could not watch, logged once per change
    bool lost = false;    // the library was lost after watching: recheck when back
    auto retry = [&](const std::string& why) {
        if (why != problem) {
            inject::log::warn(
                "health: no driver events ({}); periodic checks only, trying again with backoff",
                why);
            problem = why;
        }
        const bool go_on = sleep(stop, backoff);
        backoff = std::min(kMaxBackoff, backoff * 2);
        return go_on;
    };
    while (!stop.stop_requested()) {
        auto lib = inject::efml::Library::open(opts_);
        if (!lib) {
            if (!retry(lib.error().what())) return;
            continue;
        }
        if (!(*lib)->has_events()) {
            const std::string why = (*lib)->path() + " has no EfmlGetEvent";
            lib->reset();
            if (!retry(why)) return;
            continue;
        }
        inject::log::info("health: watching driver events from {}", (*lib)->path());
        problem.clear();
        backoff = kFirstBackoff;
        if (lost) push(std::nullopt);
        lost = false;
        while (!stop.stop_requested()) {
            const auto t0 = Clock::now();
            if (auto ev = (*lib)->wait_event(static_cast<int>(wait_.count()))) {
                push(std::move(*ev));
                continue;
            }
            // A timeout takes the whole wait; a call failing at once means the driver is in
            // trouble: let the library go and open it again later, never spin on it.
            if (Clock::now() - t0 >= wait_ / 2) continue;
            auto n = (*lib)->count();
            const std::string why =
                "EfmlGetEvent failed" + (n ? std::string() : ": " + std::string(n.error().what()));
            lost = true;
            lib->reset();
            if (!retry(why)) return;
            break;
        }
    }
}

}  // namespace k8s
