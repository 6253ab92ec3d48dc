// SPDX-License-Identifier: Apache-2.0
// The Scheduler as the ext_proc stream uses it, scraping fake model servers on real loopback
// sockets: subset hints, prefix-aware picking, the picker override, P/D, admission, metrics.
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "epp/scheduling/scheduler.hpp"
#include "epp_sched_fake_server.hpp"

namespace {

using namespace std::chrono_literals;
using epp_test::FakeServer;

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string t = (std::filesystem::temp_directory_path() / "epp-sched-XXXXXX").string();
        path = mkdtemp(t.data());
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path / name) << text;
        return (path / name).string();
    }
};

// n idle vLLM servers and a scheduler scraping them every 20 ms.
struct Pool {
    std::vector<std::unique_ptr<FakeServer>> servers;
    prometheus::Registry registry;
    std::unique_ptr<epp::Scheduler> sched;

    explicit Pool(size_t n, epp::SchedulingOptions o = {},
                  std::vector<std::map<std::string, std::string>> labels = {}) {
        o.refresh = 20ms;
        std::vector<epp::Target> targets;
        for (size_t i = 0; i < n; ++i) {
            servers.push_back(std::make_unique<FakeServer>());
            servers[i]->set("/metrics", epp_test::vllm_metrics(0, 0.1));
            epp::Target t;
            t.address = servers[i]->address();
            t.metrics_url = servers[i]->url("/metrics");
            if (i < labels.size()) t.labels = labels[i];
            targets.push_back(t);
        }
        sched = std::make_unique<epp::Scheduler>(o, registry);
        sched->set_targets(targets);
        sched->start();
    }
    ~Pool() {
        sched->stop();
        epp_test::stop_all(servers);
    }
    [[nodiscard]] std::string metrics_text() const {
        return prometheus::TextSerializer().Serialize(registry.Collect());
    }
};

epp::Request chat(const std::string& id, const std::string& conversation, int turns) {
    epp::Request r;
    r.id = id;
    r.model = "tiny";
    nlohmann::json messages = nlohmann::json::array();
    messages.push_back({{"role", "system"}, {"content", "You answer about " + conversation}});
    for (int i = 0; i < turns; ++i) {
        messages.push_back(
            {{"role", "user"},
             {"content", conversation + " question " + std::to_string(i) + std::string(80, 'q')}});
        messages.push_back({{"role", "assistant"}, {"content", std::string(90, 'a')}});
    }
    r.body = {{"model", "tiny"}, {"messages", messages}};
    return r;
}

epp::Decision route(epp::Scheduler& s, const epp::Request& r) {
    auto d = s.decide(r);
    if (d.status == 200) s.served(r, d.endpoints.front());
    s.finished(r);
    return d;
}

TEST(Scheduler, NoEndpointIs503AndNotReady) {
    prometheus::Registry reg;
    epp::Scheduler s({}, reg);
    EXPECT_FALSE(s.ready());
    auto d = s.decide(chat("1", "x", 1));
    EXPECT_EQ(d.status, 503);
    EXPECT_EQ(d.message, "no ready endpoint");
    s.finished(chat("1", "x", 1));
}

// A loaded machine can delay a scrape past the 200 ms staleness, which filters that endpoint:
// tests about other things give the metrics longer.
epp::SchedulingOptions patient() {
    epp::SchedulingOptions o;
    o.staleness = std::chrono::seconds(10);
    return o;
}

TEST(Scheduler, SubsetHintLimitsTheCandidates) {
    Pool p(3, patient());
    ASSERT_TRUE(p.sched->ready());
    const std::string b = p.servers[1]->address();
    for (int i = 0; i < 10; ++i) {
        auto r = chat(std::to_string(i), "subset" + std::to_string(i), 1);
        r.subset = std::vector<std::string>{b};
        auto d = route(*p.sched, r);
        ASSERT_EQ(d.status, 200) << d.message;
        EXPECT_EQ(d.endpoints, std::vector<std::string>{b});
    }
    auto r = chat("ip", "x", 1);
    r.subset = std::vector<std::string>{"127.0.0.1"};  // an IP matches every port on it
    EXPECT_EQ(route(*p.sched, r).endpoints.size(), 3u);
    r.subset = std::vector<std::string>{};
    EXPECT_EQ(route(*p.sched, r).status, 503);
    r.subset = std::vector<std::string>{"10.9.9.9:8000"};
    auto d = route(*p.sched, r);
    EXPECT_EQ(d.status, 503);
    EXPECT_EQ(d.message, "no endpoint of the subset hint is known");
}

TEST(Scheduler, EachConversationStaysOnOneServer) {
    Pool p(4, patient());
    std::map<std::string, int> used;
    for (int c = 0; c < 8; ++c) {
        const std::string conv = "conversation " + std::to_string(c);
        std::string first;
        for (int turn = 1; turn <= 5; ++turn) {
            auto d = route(*p.sched, chat(conv + "/" + std::to_string(turn), conv, turn));
            ASSERT_EQ(d.status, 200) << d.message;
            ASSERT_EQ(d.endpoints.size(), 3u);  // the primary and two fallbacks
            if (turn == 1) first = d.endpoints.front();
            EXPECT_EQ(d.endpoints.front(), first) << conv << " turn " << turn;
        }
        ++used[first];
    }
    EXPECT_GT(used.size(), 1u);  // new conversations are not all sent to one server
    EXPECT_NE(p.metrics_text().find("enflame_epp_picks_total{endpoint=\"127.0.0.1:"),
              std::string::npos);
}

// active-request-scorer alone: what the EPP itself has in flight decides, between scrapes.
epp::SchedulingOptions active_only(const TempDir& dir, const std::string& timeout) {
    epp::SchedulingOptions o = patient();
    o.config_file = dir.write(
        "active.yaml",
        "plugins: [{type: active-request-scorer, parameters: {requestTimeout: " + timeout +
            "}}]\nschedulingProfiles: [{name: a, plugins: [{pluginRef: "
            "active-request-scorer}]}]\n");
    return o;
}

TEST(Scheduler, ActiveRequestsSpreadABurstAndFollowTheServedEndpoint) {
    TempDir dir;
    Pool p(4, active_only(dir, "2m"));
    std::map<std::string, int> per;
    std::vector<epp::Request> open;
    for (int i = 0; i < 8; ++i) {  // a burst: none finished, no scrape shows them
        open.push_back(chat(std::to_string(i), "burst " + std::to_string(i), 1));
        auto d = p.sched->decide(open.back());
        ASSERT_EQ(d.status, 200) << d.message;
        ++per[d.endpoints.front()];
    }
    ASSERT_EQ(per.size(), 4u);
    for (const auto& [e, n] : per) EXPECT_EQ(n, 2) << e;
    for (const auto& r : open) p.sched->finished(r);
    // The gateway went to a fallback: the count moves with it.
    const std::string a = p.servers[0]->address();
    auto r = chat("moved", "moved", 1);
    auto d = p.sched->decide(r);
    ASSERT_EQ(d.status, 200);
    const std::string other = d.endpoints.front() == a ? p.servers[1]->address() : a;
    p.sched->served(r, other);
    for (int i = 0; i < 12; ++i) {
        auto d2 = route(*p.sched, chat("x" + std::to_string(i), "x" + std::to_string(i), 1));
        EXPECT_NE(d2.endpoints.front(), other) << i;
    }
    p.sched->finished(r);
}

TEST(Scheduler, ARequestWhoseEndIsNeverSeenStopsCountingAfterTheTimeout) {
    TempDir dir;
    Pool p(4, active_only(dir, "1s"));
    auto lost = chat("lost", "lost", 1);
    auto d = p.sched->decide(lost);  // never finished
    ASSERT_EQ(d.status, 200);
    const std::string busy = d.endpoints.front();
    for (int i = 0; i < 40; ++i)
        EXPECT_NE(route(*p.sched, chat("a" + std::to_string(i), "a", 1)).endpoints.front(), busy);
    std::this_thread::sleep_for(2500ms);  // the timeout, and the next once-a-second sweep
    int to_busy = 0;
    for (int i = 0; i < 40; ++i)
        to_busy += route(*p.sched, chat("b" + std::to_string(i), "b", 1)).endpoints.front() == busy;
    EXPECT_GT(to_busy, 0);
    p.sched->finished(lost);
}

TEST(Scheduler, PickerFlagOverridesTheConfig) {
    epp::SchedulingOptions o = patient();
    o.picker = "round-robin-picker";
    Pool p(3, o);
    std::vector<std::string> sorted;
    for (const auto& s : p.servers) sorted.push_back(s->address());
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> got;
    for (int i = 0; i < 6; ++i)
        got.push_back(route(*p.sched, chat(std::to_string(i), "same", 3)).endpoints.front());
    // The same conversation every time, yet it goes round: the picker ignores the prefix.
    auto at = std::find(sorted.begin(), sorted.end(), got[0]) - sorted.begin();
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], sorted[(static_cast<size_t>(at) + i) % 3]) << i;
}

TEST(Scheduler, PrefillDecodeHeaderForLongUncachedPrompts) {
    TempDir dir;
    epp::SchedulingOptions o = patient();
    o.config_file = std::string(K8S_TESTS_DIR) + "/../../examples/epp/pd-config.yaml";
    Pool p(2, o, {{}, {{"llm-d.ai/role", "prefill"}}});
    const std::string decode = p.servers[0]->address(), prefill = p.servers[1]->address();
    auto r = chat("long", "pd", 2);  // about 500 characters: over 16 uncached tokens
    auto d = route(*p.sched, r);
    ASSERT_EQ(d.status, 200) << d.message;
    EXPECT_EQ(d.endpoints.front(), decode);
    EXPECT_EQ(
        d.headers,
        (std::vector<std::pair<std::string, std::string>>{{"x-prefiller-host-port", prefill}}));
    // The same prompt again is cached on the decode server: no remote prefill.
    r.id = "again";
    d = route(*p.sched, r);
    EXPECT_EQ(d.endpoints.front(), decode);
    EXPECT_TRUE(d.headers.empty());
    // A prompt shorter than one block is never disaggregated.
    epp::Request s;
    s.id = "short";
    s.model = "tiny";
    s.body = {{"model", "tiny"}, {"prompt", "hi"}};
    d = route(*p.sched, s);
    EXPECT_EQ(d.endpoints.front(), decode);
    EXPECT_TRUE(d.headers.empty());
}

TEST(Scheduler, SaturatedPoolShedsSheddableAndQueuesTheRest) {
    TempDir dir;
    epp::SchedulingOptions o;
    o.config_file = dir.write("c.yaml",
                              "objectives: [{name: batch, priority: -1}]\n"
                              "flowControl: {defaultRequestTTL: 400ms}\n");
    Pool p(2, o);
    for (auto& s : p.servers) s->set("/metrics", epp_test::vllm_metrics(10, 0.5));
    std::this_thread::sleep_for(100ms);  // a few scrapes: saturation (10/5 + 10/5) / 2 = 2
    auto batch = chat("b", "x", 1);
    batch.objective = "batch";
    auto t0 = std::chrono::steady_clock::now();
    auto d = route(*p.sched, batch);
    EXPECT_EQ(d.status, 429);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms);  // at once
    d = route(*p.sched, chat("late", "x", 1));
    EXPECT_EQ(d.status, 503);
    EXPECT_EQ(d.message, "waited 400ms in the request queue for a free endpoint");
    // A waiting request goes once the servers' queues drain.
    epp::Decision waited;
    std::thread t([&] { waited = route(*p.sched, chat("w", "x", 1)); });
    std::this_thread::sleep_for(100ms);
    for (auto& s : p.servers) s->set("/metrics", epp_test::vllm_metrics(0, 0.1));
    t.join();
    EXPECT_EQ(waited.status, 200) << waited.message;
    const auto text = p.metrics_text();
    EXPECT_NE(text.find("enflame_epp_scheduler_outcomes_total{status=\"429\"} 1"),
              std::string::npos);
    EXPECT_NE(text.find("enflame_epp_pool_saturation"), std::string::npos);
}

TEST(Scheduler, TryDecideAnswersAtOnceOrSaysTheRequestWouldWait) {
    TempDir dir;
    epp::SchedulingOptions o;
    o.config_file = dir.write("c.yaml", "objectives: [{name: batch, priority: -1}]\n");
    Pool p(2, o);
    std::this_thread::sleep_for(100ms);
    auto idle = p.sched->try_decide(chat("a", "x", 1));
    ASSERT_TRUE(idle);
    EXPECT_EQ(idle->status, 200) << idle->message;
    p.sched->finished(chat("a", "x", 1));
    for (auto& s : p.servers) s->set("/metrics", epp_test::vllm_metrics(10, 0.5));
    std::this_thread::sleep_for(100ms);  // saturated
    EXPECT_FALSE(p.sched->try_decide(chat("b", "x", 1)).has_value());
    auto batch = chat("c", "x", 1);
    batch.objective = "batch";
    const auto shed = p.sched->try_decide(batch);  // refusing needs no wait
    ASSERT_TRUE(shed);
    EXPECT_EQ(shed->status, 429);
    // A request that would wait is not counted until decide() answers it.
    EXPECT_EQ(p.metrics_text().find("enflame_epp_scheduler_outcomes_total{status=\"503\"}"),
              std::string::npos);
}

TEST(Scheduler, ClusterObjectivesWinOverTheConfigFile) {
    TempDir dir;
    epp::SchedulingOptions o;
    o.config_file = dir.write("c.yaml",
                              "objectives: [{name: batch, priority: -1}, {name: chat, "
                              "priority: 10}]\n"
                              "flowControl: {defaultRequestTTL: 200ms}\n");
    Pool p(1, o);
    p.sched->set_objectives({{"batch", 5}, {"bulk", -2}});
    const std::map<std::string, int> want = {
        {"batch", 5}, {"bulk", -2}, {"chat", 10}, {"unknown", 0}, {"", 0}};
    for (const auto& [name, priority] : want)
        EXPECT_EQ(p.sched->priority_of(name), priority) << name;
    // saturated: the cluster's batch=5 queues (503 after the TTL), its bulk=-2 is shed
    for (auto& s : p.servers) s->set("/metrics", epp_test::vllm_metrics(10, 0.5));
    std::this_thread::sleep_for(100ms);
    auto r = chat("b", "x", 1);
    r.objective = "batch";
    EXPECT_EQ(route(*p.sched, r).status, 503);
    r.objective = "bulk";
    EXPECT_EQ(route(*p.sched, r).status, 429);
    // the objects gone: the file's priorities again
    p.sched->set_objectives({});
    EXPECT_EQ(p.sched->priority_of("batch"), -1);
    EXPECT_EQ(p.sched->priority_of("bulk"), 0);
}

// The line of series `name` (labels included) on /metrics, "" when absent.
std::string series(const Pool& p, const std::string& name) {
    const auto text = p.metrics_text();
    const auto at = text.find("\n" + name + " ");
    return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

TEST(Scheduler, AModelRewriteComesFirstAndTheScheduleSeesTheTargetModel) {
    TempDir dir;
    epp::SchedulingOptions o = patient();
    o.config_file = dir.write("c.yaml",
                              "modelRewrites: [{name: to-b, rules: [{matches: [{model: {value: "
                              "tiny}}], targets: [{modelRewrite: b}]}]}]\n");
    Pool p(4, o);
    // the file's rule sends tiny to b; a rule beats the request's header
    auto r = chat("1", "conversation", 2);
    r.model_rewrite = "forced";
    auto d = route(*p.sched, r);
    ASSERT_EQ(d.status, 200) << d.message;
    EXPECT_EQ(d.model, "b");
    // the prefix index took the prompt as b's: the same prompt asked for b finds all of it
    auto as_b = chat("2", "conversation", 2);
    as_b.model = "b";
    d = route(*p.sched, as_b);
    EXPECT_EQ(d.model, "") << "no rule for b, no header: unchanged";
    EXPECT_EQ(series(p, "enflame_epp_prefix_indexer_hit_ratio_sum"),
              "enflame_epp_prefix_indexer_hit_ratio_sum 1");
    // no rule: the header decides
    as_b.model_rewrite = "forced";
    EXPECT_EQ(route(*p.sched, as_b).model, "forced");
    // the cluster's object replaces the file's rewrite of its name; gone, the file's again
    p.sched->set_model_rewrites({{"to-b", "2026-01-01T00:00:00Z", {{{"tiny"}, {{"c", 0}}}}}});
    EXPECT_EQ(route(*p.sched, chat("3", "x", 1)).model, "c");
    p.sched->set_model_rewrites({});
    EXPECT_EQ(route(*p.sched, chat("4", "x", 1)).model, "b");
    const std::string counted =
        "enflame_epp_model_rewrite_decisions_total{model_name=\"tiny\",model_rewrite_name=\"to-b\","
        "target_model=";
    EXPECT_EQ(series(p, counted + "\"b\"}"), counted + "\"b\"} 2");
    EXPECT_EQ(series(p, counted + "\"c\"}"), counted + "\"c\"} 1");
    // a request without a body has no model to rewrite
    epp::Request get;
    get.id = "get";
    get.model_rewrite = "forced";
    EXPECT_EQ(route(*p.sched, get).model, "");
}

TEST(Scheduler, FinishedRequestsFreeTheirPlaceBeforeTheNextScrape) {
    // 2 idle endpoints let 2 x 5 requests through per scrape round (each counts as queued
    // until the metrics show it); one that finished no longer counts. With a round every
    // 500 ms, 50 requests one after the other would take 2 s if they did.
    epp::SchedulingOptions o;
    Pool p(2, o);
    p.sched->stop();
    o.refresh = 500ms;
    prometheus::Registry reg;
    epp::Scheduler s(o, reg);
    std::vector<epp::Target> targets;
    for (const auto& server : p.servers)
        targets.push_back({server->address(), server->url("/metrics"), "", "", "", "", {}});
    s.set_targets(targets);
    s.start();
    std::this_thread::sleep_for(100ms);  // the first round
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 50; ++i) {
        auto d = route(s, chat(std::to_string(i), "c" + std::to_string(i), 1));
        ASSERT_EQ(d.status, 200) << d.message;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 400ms);
    s.stop();
}

TEST(Scheduler, FullKvCacheFromLlamaSlotsAndLowGcuMemoryAreAvoided) {
    auto gcu_server = std::make_unique<FakeServer>();
    FakeServer& gcu = *gcu_server;
    gcu.set("/metrics",
            R"(enflame_gcu_memory_used_bytes{minor_number="0",pod_name="p2",pod_namespace="ns"} 98
enflame_gcu_memory_total_bytes{minor_number="0",pod_name="p2",pod_namespace="ns"} 100
)");
    std::vector<std::unique_ptr<FakeServer>> servers;
    std::vector<epp::Target> targets;
    const std::string idle_slots = R"([{"id":0,"n_ctx":1000,"is_processing":false}])";
    const std::string full_slots =
        R"([{"id":0,"n_ctx":1000,"is_processing":true,"n_prompt_tokens":900,"next_token":[{"n_decoded":10}]}])";
    for (int i = 0; i < 3; ++i) {
        servers.push_back(std::make_unique<FakeServer>());
        servers[i]->set("/metrics",
                        "llamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n");
        servers[i]->set("/slots", i == 0 ? full_slots : idle_slots);
        epp::Target t;
        t.address = servers[i]->address();
        t.metrics_url = servers[i]->url("/metrics");
        t.gcu_metrics_url = gcu.url("/metrics");
        t.pod = "p" + std::to_string(i);
        t.ns = "ns";
        targets.push_back(t);
    }
    prometheus::Registry reg;
    epp::SchedulingOptions o;
    o.refresh = 20ms;
    o.gcu_refresh = 100ms;
    epp::Scheduler s(o, reg);
    s.set_targets(targets);
    const auto t0 = std::chrono::steady_clock::now();
    s.start();
    std::this_thread::sleep_for(250ms);
    // Server 0's slots are 91% full (> 0.8): filtered; server 2's pod has 2% GCU memory free
    // (< 5%): filtered. Only server 1 is left.
    for (int i = 0; i < 10; ++i) {
        auto d = route(s, chat(std::to_string(i), "conv" + std::to_string(i), 1));
        ASSERT_EQ(d.status, 200) << d.message;
        EXPECT_EQ(d.endpoints.front(), servers[1]->address());
    }
    s.stop();
    EXPECT_GT(servers[0]->hits("/slots"), 2);
    // One gcu-exporter URL for three targets: scraped once per gcu tick, not three times.
    const auto ticks = (std::chrono::steady_clock::now() - t0) / 100ms + 1;
    EXPECT_LE(gcu.hits("/metrics"), ticks);
    EXPECT_GE(gcu.hits("/metrics"), 2);
    servers.push_back(std::move(gcu_server));
    epp_test::stop_all(servers);
}

TEST(Scheduler, ScrapeErrorsAreCounted) {
    prometheus::Registry reg;
    epp::SchedulingOptions o;
    o.refresh = 20ms;
    epp::Scheduler s(o, reg);
    FakeServer wrong;  // answers 404 on /metrics
    epp::Target t;
    t.address = wrong.address();
    t.metrics_url = wrong.url("/metrics");
    s.set_targets({t});
    s.start();
    std::this_thread::sleep_for(100ms);
    s.stop();
    auto text = prometheus::TextSerializer().Serialize(reg.Collect());
    EXPECT_NE(text.find("enflame_epp_scrape_errors_total{endpoint=\"" + wrong.address() + "\"}"),
              std::string::npos)
        << text;
}

TEST(Scheduler, BadConfigFileThrowsOneLine) {
    TempDir dir;
    epp::SchedulingOptions o;
    o.config_file = dir.write("bad.yaml", "plugins: [{type: nope}]\n");
    prometheus::Registry reg;
    try {
        epp::Scheduler s(o, reg);
        ADD_FAILURE();
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  o.config_file + ": plugins[0].type: unknown plugin type 'nope'");
    }
}

}  // namespace
