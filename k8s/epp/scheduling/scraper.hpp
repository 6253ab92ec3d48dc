// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The scrape loop: one thread, one libcurl multi handle for every transfer. Each refresh
/// tick it GETs each endpoint's metrics (and a llama.cpp server's /slots) unless the last
/// GET is still running; each gcu tick it GETs every distinct gcu-exporter URL once.

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "epp/scheduling/datastore.hpp"

namespace epp {

struct ScrapeTimes {
    std::chrono::milliseconds refresh{50};
    std::chrono::milliseconds timeout{1000};
    std::chrono::milliseconds gcu_refresh{1000};
};

/// What the loop reports back.
struct ScrapeHooks {
    /// A failed GET or an unreadable answer; `source` is the endpoint address or gcu URL.
    std::function<void(const std::string& source, const std::string& why)> error;
    /// Every metrics GET started at one tick has ended: the datastore is as fresh as it gets.
    std::function<void()> round_done;
};

/// `url` with its path replaced by "/slots" (llama.cpp's slot table beside its /metrics).
[[nodiscard]] std::string slots_url(const std::string& metrics_url);

class Scraper {
public:
    Scraper(Datastore& ds, ScrapeTimes times, ScrapeHooks hooks);
    ~Scraper();
    Scraper(const Scraper&) = delete;
    Scraper& operator=(const Scraper&) = delete;
    void start();
    void stop();

private:
    void loop();
    Datastore& ds_;
    ScrapeTimes times_;
    ScrapeHooks hooks_;
    std::atomic<bool> running_{false};
    void* multi_ = nullptr;  // CURLM*, kept out of the header
    std::thread thread_;
};

}  // namespace epp
