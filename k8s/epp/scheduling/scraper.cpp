// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/scraper.hpp"

#include <curl/curl.h>

#include <map>
#include <set>
#include <utility>

namespace epp {
namespace {

enum class Kind { Metrics, Slots, Gcu };

struct Transfer {
    Kind kind;
    std::string key;  // endpoint address, or the gcu URL
    std::string body;
};

size_t on_data(char* p, size_t size, size_t n, void* user) {
    static_cast<Transfer*>(user)->body.append(p, size * n);
    return size * n;
}

}  // namespace

std::string slots_url(const std::string& metrics_url) {
    auto scheme = metrics_url.find("://");
    auto path = metrics_url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return (path == std::string::npos ? metrics_url : metrics_url.substr(0, path)) + "/slots";
}

Scraper::Scraper(Datastore& ds, ScrapeTimes times, ScrapeHooks hooks)
    : ds_(ds), times_(times), hooks_(std::move(hooks)) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    multi_ = curl_multi_init();
}

Scraper::~Scraper() {
    stop();
    curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

void Scraper::start() {
    if (running_.exchange(true)) return;
    thread_ = std::thread([this] { loop(); });
}

void Scraper::stop() {
    if (!running_.exchange(false)) return;
    curl_multi_wakeup(static_cast<CURLM*>(multi_));
    if (thread_.joinable()) thread_.join();
}

void Scraper::loop() {
    auto* m = static_cast<CURLM*>(multi_);
    std::map<CURL*, Transfer> live;
    std::set<std::pair<Kind, std::string>> busy;
    size_t round_left = 0;  // metrics GETs of the current round still running
    auto begin = [&](Kind kind, const std::string& key, const std::string& url) {
        if (url.empty() || !busy.insert({kind, key}).second) return;
        CURL* h = curl_easy_init();
        auto& t = live[h] = Transfer{kind, key, {}};
        curl_easy_setopt(h, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(times_.timeout.count()));
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);  // upstream's insecureSkipVerify default
        curl_multi_add_handle(m, h);
        if (kind == Kind::Metrics) ++round_left;
    };
    auto next = Clock::now();
    auto next_gcu = next;
    while (running_) {
        auto now = Clock::now();
        if (now >= next) {
            round_left = 0;
            std::set<std::string> gcu_urls;
            for (const auto& e : ds_.snapshot()) {
                begin(Kind::Metrics, e.target.address, e.target.metrics_url);
                if (e.engine == Engine::LlamaCpp)
                    begin(Kind::Slots, e.target.address, slots_url(e.target.metrics_url));
                if (!e.target.gcu_metrics_url.empty()) gcu_urls.insert(e.target.gcu_metrics_url);
            }
            if (now >= next_gcu) {
                for (const auto& u : gcu_urls) begin(Kind::Gcu, u, u);
                next_gcu = now + times_.gcu_refresh;
            }
            next = std::max(next + times_.refresh, now);
        }
        int running = 0;
        curl_multi_perform(m, &running);
        int left = 0;
        while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
            if (msg->msg != CURLMSG_DONE) continue;
            CURL* h = msg->easy_handle;
            long code = 0;
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
            Transfer t = std::move(live[h]);
            live.erase(h);
            busy.erase({t.kind, t.key});
            std::string why;
            if (msg->data.result != CURLE_OK)
                why = curl_easy_strerror(msg->data.result);
            else if (code != 200)
                why = "HTTP " + std::to_string(code);
            curl_multi_remove_handle(m, h);
            curl_easy_cleanup(h);
            auto at = Clock::now();
            if (why.empty()) {
                if (t.kind == Kind::Metrics)
                    why = ds_.put_metrics(t.key, t.body, at);
                else if (t.kind == Kind::Slots)
                    why = ds_.put_slots(t.key, t.body);
                else
                    why = ds_.put_gcu(t.key, t.body, at);
            }
            if (!why.empty() && why != "endpoint gone" && hooks_.error) hooks_.error(t.key, why);
            if (t.kind == Kind::Metrics && round_left > 0 && --round_left == 0 && hooks_.round_done)
                hooks_.round_done();
        }
        auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
        int ms = static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 1000));
        curl_multi_poll(m, nullptr, 0, ms, nullptr);
    }
    for (auto& [h, t] : live) {
        curl_multi_remove_handle(m, h);
        curl_easy_cleanup(h);
    }
}

}  // namespace epp
