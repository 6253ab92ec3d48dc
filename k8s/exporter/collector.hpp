// SPDX-License-Identifier: Apache-2.0
#pragma once

// The collector: every interval, one pass over the cards (source.hpp) and one pod-resources
// List, turned into the exposition text, which a scrape then serves as it is (a scrape never
// reaches the driver or kubelet). Trouble is logged once when it starts and once when it ends,
// never once per pass: the driver gone (the cards' series go, enflame_gcu_count follows), a
// card that cannot be read (its series go), discovery failing (labels from libefml alone),
// kubelet absent (attribution off).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "exporter/attribution.hpp"
#include "exporter/snapshot.hpp"
#include "exporter/source.hpp"

namespace exporter {

struct CollectorOptions {
    std::string host;                  ///< the `host` label
    std::string pod_resources_socket;  ///< empty = no attribution
    std::chrono::milliseconds interval{15000};
    std::chrono::milliseconds pod_resources_timeout{2000};
};

class Collector {
public:
    Collector(std::unique_ptr<Source> source, CollectorOptions opts);
    ~Collector();
    Collector(const Collector&) = delete;
    Collector& operator=(const Collector&) = delete;

    /// One pass: the snapshot it saw (also stored as the current exposition).
    Snapshot collect();
    /// Runs collect() every interval on a thread of its own until stop() or destruction.
    void start();
    void stop();

    /// The exposition of the last pass (shared, never copied per scrape).
    [[nodiscard]] std::shared_ptr<const std::string> text() const;
    /// Time since the last pass ended; nullopt before the first.
    [[nodiscard]] std::optional<std::chrono::milliseconds> since_last() const;
    [[nodiscard]] std::chrono::milliseconds interval() const noexcept { return opts_.interval; }

private:
    std::vector<CardReading> read_cards();
    void attribute_holders(std::vector<CardReading>& cards);

    std::unique_ptr<Source> source_;
    CollectorOptions opts_;
    std::optional<inject::device::Host> host_;  ///< discovery's answer for the current card count
    std::uint32_t discovered_for_ = 0;          ///< the card count host_ was discovered at
    std::map<std::string, std::string> slots_;  ///< PCI slot names, read with each discovery
    std::optional<k8s::PodResourcesClient> kubelet_;  ///< none without a socket
    bool driver_down_ = false, discovery_failed_ = false, kubelet_down_ = false;
    std::vector<std::uint32_t> unreadable_;  ///< cards whose last sample failed

    mutable std::mutex mu_;
    std::shared_ptr<const std::string> text_;
    std::atomic<std::int64_t> last_pass_ns_{0};  ///< steady_clock; 0 = never

    std::mutex stop_mu_;
    std::condition_variable stop_cv_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace exporter
