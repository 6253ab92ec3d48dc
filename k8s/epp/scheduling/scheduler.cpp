// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/scheduler.hpp"

#include <CLI/CLI.hpp>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "epp/scheduling/config.hpp"
#include "epp/scheduling/datastore.hpp"
#include "epp/scheduling/fair_queue.hpp"
#include "epp/scheduling/pipeline.hpp"
#include "epp/scheduling/prefix_index.hpp"
#include "epp/scheduling/sched_metrics.hpp"
#include "epp/scheduling/scraper.hpp"
#include "k8s/duration.hpp"

namespace epp {
namespace {

// What decide() left for served() and finished().
struct InFlight {
    std::vector<uint64_t> hashes;
    std::string primary;
    std::string prefiller;  // P/D: the prefill endpoint, if one was picked
    uint64_t round = 0;     // the scrape round it was let through in
    Clock::time_point since;
};

std::mt19937_64& thread_rng() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return rng;
}

bool in_subset(const std::string& address, const std::vector<std::string>& subset) {
    auto colon = address.rfind(':');
    std::string ip = colon == std::string::npos ? address : address.substr(0, colon);
    for (const auto& s : subset)
        if (s == address || s == ip) return true;
    return false;
}

SchedulerConfig read_config(const SchedulingOptions& o) {
    SchedulerConfig c = o.config_file.empty() ? default_config() : load_config(o.config_file);
    if (!o.picker.empty())
        for (auto& p : c.profiles) p.picker.type = o.picker;
    return c;
}

}  // namespace

struct Scheduler::State {
    State(SchedulingOptions o, prometheus::Registry& r)
        : opts(std::move(o)),
          cfg(read_config(opts)),
          staleness(cfg.saturation.staleness.value_or(opts.staleness)),
          rewrites(std::make_shared<const RewriteTable>(std::vector<ModelRewrite>{},
                                                        cfg.model_rewrites)),
          ds(cfg.default_engine),
          prefix(cfg.prefix.lru_capacity),
          metrics(r),
          queue(cfg.flow.max_requests, cfg.flow.ttl, [this] { return take(); }),
          scraper(
              ds, {opts.refresh, opts.scrape_timeout, opts.gcu_refresh},
              {[this](const std::string& src, const std::string&) { metrics.scrape_error(src); },
               [this] { on_round(); }}) {
        for (const auto& p : cfg.profiles) profiles[p.name] = std::make_unique<Profile>(p, cfg);
        primary = profiles.at(cfg.profiles.front().name).get();
        if (cfg.pd.enabled) {
            decode = profiles.at(cfg.pd.decode_profile).get();
            prefill = profiles.at(cfg.pd.prefill_profile).get();
            primary = decode;
        }
    }

    std::vector<Candidate> candidates(const std::vector<Endpoint>& snap, const Request* r) const {
        const auto now = Clock::now();
        std::vector<Candidate> out;
        out.reserve(snap.size());
        for (const auto& e : snap) {
            if (r && r->subset && !in_subset(e.target.address, *r->subset)) continue;
            Candidate c;
            c.endpoint = &e;
            c.stale = !e.metrics || now - e.scraped > staleness;
            if (e.gcu && now - e.gcu_scraped <= 3 * opts.gcu_refresh) c.gcu = e.gcu;
            out.push_back(c);
        }
        return out;
    }

    double pool_saturation(const std::vector<Endpoint>& snap) const {
        if (snap.empty()) return 1.0;
        double sum = 0;
        for (const auto& c : candidates(snap, nullptr))
            sum += endpoint_saturation(c, cfg.saturation);
        return sum / static_cast<double>(snap.size());
    }

    // Under the queue's lock: may one more request go? Requests let through since the last
    // full scrape round are not in the metrics yet; each is counted as one queued request
    // until that round ends or it finishes.
    bool take() {
        auto snap = ds.snapshot();
        if (snap.empty()) return true;  // decide() answers 503 at once
        std::lock_guard l(mu);
        double n = static_cast<double>(snap.size());
        double estimate = pool_saturation(snap) + unseen / (cfg.saturation.queue_threshold * n);
        if (estimate >= 1) return false;
        ++unseen;
        return true;
    }

    void on_round() {
        auto snap = ds.snapshot();
        {
            std::lock_guard l(mu);
            unseen = 0;
            ++round;
            expire(Clock::now());
        }
        metrics.pool_saturation.Set(pool_saturation(snap));
        if (cfg.prefix_auto_tune) {
            for (const auto& e : snap) {
                if (!e.metrics || !e.metrics->num_gpu_blocks || !e.metrics->block_size) continue;
                auto blocks = static_cast<size_t>(*e.metrics->num_gpu_blocks *
                                                  *e.metrics->block_size / cfg.prefix.block_tokens);
                auto& applied = capacity[e.target.address];
                if (applied == blocks || blocks == 0) continue;
                applied = blocks;
                prefix.set_capacity(e.target.address, blocks);
            }
        }
        metrics.prefix_size.Set(static_cast<double>(prefix.size()));
        queue.pump();
    }

    Decision schedule(const Request& r, const std::string& model);

    // Under mu: the requests each endpoint is serving for us (active-request-scorer).
    void count(const std::string& endpoint, bool up) {
        if (endpoint.empty()) return;
        auto it = active.find(endpoint);
        if (up) {
            ++active[endpoint];
        } else if (it != active.end() && --it->second == 0) {
            active.erase(it);
        }
    }
    void release(const InFlight& f) {
        count(f.primary, false);
        count(f.prefiller, false);
    }
    // Under mu: requests whose end was never seen stop counting after the timeout.
    void expire(Clock::time_point now) {
        if (now - last_expiry < std::chrono::seconds(1)) return;
        last_expiry = now;
        for (auto it = in_flight.begin(); it != in_flight.end();) {
            if (now - it->second.since < cfg.active_request_timeout) {
                ++it;
                continue;
            }
            release(it->second);
            it = in_flight.erase(it);
        }
    }

    SchedulingOptions opts;
    SchedulerConfig cfg;
    std::chrono::milliseconds staleness;
    std::mutex cluster_mu;  // cluster_priorities, rewrites
    std::map<std::string, int> cluster_priorities;
    std::shared_ptr<const RewriteTable> rewrites;  // the cluster's and the file's
    Datastore ds;
    PrefixIndex prefix;
    SchedulerMetrics metrics;
    std::map<std::string, std::unique_ptr<Profile>> profiles;
    Profile* primary = nullptr;
    Profile* decode = nullptr;
    Profile* prefill = nullptr;
    std::mutex mu;  // unseen, round, in_flight, active
    double unseen = 0;
    uint64_t round = 0;
    std::unordered_map<std::string, InFlight> in_flight;
    std::unordered_map<std::string, size_t> active;  // endpoint -> its requests in in_flight
    Clock::time_point last_expiry;
    std::map<std::string, size_t> capacity;  // scrape thread only
    FairQueue queue;
    Scraper scraper;
};

Decision Scheduler::State::schedule(const Request& r, const std::string& model) {
    const auto snap = ds.snapshot();
    auto cands = candidates(snap, &r);
    if (cands.empty())
        return {503,
                r.subset ? "no endpoint of the subset hint is known" : "no ready endpoint",
                {},
                {}};
    const std::string text = prefix_text(r.body);
    auto hashes = block_hashes(text, model, cfg.prefix);
    auto hits = prefix.match(hashes);
    for (auto& c : cands)
        if (auto it = hits.find(c.endpoint->target.address); it != hits.end())
            c.prefix_blocks = it->second;
    {
        std::lock_guard l(mu);
        for (auto& c : cands)
            if (auto it = active.find(c.endpoint->target.address); it != active.end())
                c.active = it->second;
    }
    RequestFacts facts{model, hashes.size()};
    auto& rng = thread_rng();
    auto picked = primary->run(cands, facts, rng);
    if (picked.empty())
        return {503, "no endpoint passed profile '" + primary->name() + "'", {}, {}};
    Decision d;
    for (const auto* e : picked) d.endpoints.push_back(e->target.address);
    const std::string& first = d.endpoints.front();
    size_t matched = hits.count(first) ? hits[first] : 0;
    if (!hashes.empty())
        metrics.prefix_hit_ratio.Observe(static_cast<double>(matched) /
                                         static_cast<double>(hashes.size()));
    std::string prefiller;
    if (prefill && cfg.pd.non_cached_tokens > 0) {
        // prefix-based-pd-decider: tokens by upstream's 4 characters each.
        auto prompt_tokens =
            static_cast<int64_t>(text.size() / static_cast<size_t>(cfg.prefix.chars_per_token));
        auto cached = static_cast<int64_t>(matched) * cfg.prefix.block_tokens;
        if (prompt_tokens - cached >= cfg.pd.non_cached_tokens) {
            auto pf = prefill->run(cands, facts, rng);
            if (!pf.empty()) {
                prefiller = pf.front()->target.address;
                d.headers.emplace_back("x-prefiller-host-port", prefiller);
                prefix.add(pf.front()->target.address, hashes);
            }
        }
    }
    prefix.add(first, hashes);
    metrics.picked(first);
    std::lock_guard l(mu);
    if (auto old = in_flight.find(r.id); old != in_flight.end()) release(old->second);
    count(first, true);
    count(prefiller, true);
    in_flight[r.id] = InFlight{std::move(hashes), first, std::move(prefiller), round, Clock::now()};
    return d;
}

void add_scheduling_flags(CLI::App& app, SchedulingOptions& o) {
    auto duration = [&app](const char* flag, std::chrono::milliseconds& out, const char* help,
                           std::chrono::milliseconds lo, std::chrono::milliseconds hi) {
        app.add_option_function<std::string>(
               flag,
               [&out, flag, lo, hi](const std::string& v) {
                   auto d = k8s::parse_duration(flag, v, lo, hi);
                   if (!d) throw CLI::ValidationError(d.error().message());
                   out = *d;
               },
               help)
            ->default_str(k8s::format_duration(out));
    };
    using std::chrono::milliseconds;
    app.add_option("--config-file", o.config_file,
                   "EndpointPickerConfig YAML (plugins, scheduling profiles, objectives, "
                   "flowControl); default: queue 2, kv-cache 2, prefix-cache 3, gcu-memory 1, "
                   "active-request 1");
    duration("--refresh-metrics-interval", o.refresh, "model-server metrics scrape interval",
             milliseconds(5), milliseconds(60000));
    duration("--metrics-staleness-threshold", o.staleness,
             "metrics older than this count as saturated and are filtered", milliseconds(10),
             milliseconds(3600000));
    duration("--scrape-timeout", o.scrape_timeout, "timeout of one metrics GET", milliseconds(10),
             milliseconds(60000));
    duration("--gcu-refresh-interval", o.gcu_refresh, "gcu-exporter scrape interval",
             milliseconds(100), milliseconds(3600000));
    app.add_option("--picker", o.picker, "overrides the config's picker in every profile")
        ->check(CLI::IsMember({"max-score-picker", "random-picker", "round-robin-picker"}));
}

Scheduler::Scheduler(SchedulingOptions o, prometheus::Registry& metrics)
    : s_(std::make_unique<State>(std::move(o), metrics)) {}

Scheduler::~Scheduler() {
    stop();
}

void Scheduler::set_targets(std::vector<Target> targets) {
    auto held = s_->ds.set_targets(std::move(targets));
    s_->prefix.retain(held);
    s_->queue.pump();
}

void Scheduler::start() {
    s_->scraper.start();
}

void Scheduler::stop() {
    s_->scraper.stop();
    s_->queue.stop();
}

void Scheduler::set_objectives(std::map<std::string, int> priorities) {
    const std::lock_guard l(s_->cluster_mu);
    s_->cluster_priorities = std::move(priorities);
}

void Scheduler::set_model_rewrites(std::vector<ModelRewrite> objects) {
    auto table = std::make_shared<const RewriteTable>(std::move(objects), s_->cfg.model_rewrites);
    const std::lock_guard l(s_->cluster_mu);
    s_->rewrites = std::move(table);
}

std::string Scheduler::target_model(const Request& r) {
    if (r.model.empty()) return r.model;
    std::shared_ptr<const RewriteTable> table;
    {
        const std::lock_guard l(s_->cluster_mu);
        table = s_->rewrites;
    }
    if (const auto m = table->match(r.model)) {
        const std::string& target = pick_target(*m->rule, thread_rng());
        s_->metrics.rewritten(m->rewrite->name, r.model, target);
        return target;
    }
    return r.model_rewrite.empty() ? r.model : r.model_rewrite;
}

int Scheduler::priority_of(const std::string& objective) const {
    {
        const std::lock_guard l(s_->cluster_mu);
        if (auto it = s_->cluster_priorities.find(objective); it != s_->cluster_priorities.end())
            return it->second;
    }
    const auto& file = s_->cfg.priorities;
    const auto it = file.find(objective);
    return it == file.end() ? 0 : it->second;
}

bool Scheduler::ready() const {
    return s_->ds.size() > 0;
}

Decision Scheduler::decide(const Request& r) {
    return *admit(r, true);
}

std::optional<Decision> Scheduler::try_decide(const Request& r) {
    return admit(r, false);
}

std::optional<Decision> Scheduler::admit(const Request& r, bool may_wait) {
    auto& s = *s_;
    const int priority = priority_of(r.objective);
    const bool empty = s.ds.size() == 0;
    const bool shed = !empty && priority < 0 && s.pool_saturation(s.ds.snapshot()) >= 1;
    // Whether it may go now, before the model is drawn: a try that must wait draws nothing.
    std::optional<FairQueue::Outcome> outcome;
    if (!empty && !shed) outcome = s.queue.try_enter();
    if (!empty && !shed && !outcome && !may_wait) return std::nullopt;
    // upstream's order: the model rewrite, then the objective's priority, admission, scheduling
    const std::string model = target_model(r);
    auto answer = [&s, &r, &model](Decision d) {
        s.metrics.outcome(d.status);
        if (model != r.model) d.model = model;
        return d;
    };
    if (empty) return answer({503, "no ready endpoint", {}, {}});
    if (shed)
        return answer({429,
                       "the pool is saturated and objective '" + r.objective + "' is sheddable",
                       {},
                       {}});
    if (!outcome) {
        s.metrics.queue_size.Increment();
        outcome = s.queue.enter(r.id, r.fairness_id, priority);
        s.metrics.queue_size.Decrement();
    }
    switch (*outcome) {
        case FairQueue::Outcome::Full:
            return answer({429, "the request queue is full", {}, {}});
        case FairQueue::Outcome::Expired:
            return answer({503,
                           "waited " + k8s::format_duration(s.cfg.flow.ttl) +
                               " in the request queue for a free endpoint",
                           {},
                           {}});
        case FairQueue::Outcome::Cancelled:
            return answer({503, "the request was cancelled", {}, {}});
        case FairQueue::Outcome::Dispatched:
            break;
    }
    const auto t0 = Clock::now();
    Decision d = s.schedule(r, model);
    s.metrics.duration.Observe(std::chrono::duration<double>(Clock::now() - t0).count());
    return answer(std::move(d));
}

void Scheduler::served(const Request& r, const std::string& endpoint) {
    std::vector<uint64_t> hashes;
    {
        std::lock_guard l(s_->mu);
        auto it = s_->in_flight.find(r.id);
        if (it == s_->in_flight.end() || it->second.primary == endpoint) return;
        s_->count(it->second.primary, false);  // the gateway went down the fallback list
        s_->count(endpoint, true);
        it->second.primary = endpoint;
        hashes = it->second.hashes;
    }
    s_->prefix.add(endpoint, hashes);
}

void Scheduler::finished(const Request& r) {
    s_->queue.cancel(r.id);
    {
        std::lock_guard l(s_->mu);
        if (auto it = s_->in_flight.find(r.id); it != s_->in_flight.end()) {
            if (it->second.round == s_->round && s_->unseen > 0) --s_->unseen;
            s_->release(it->second);
            s_->in_flight.erase(it);
        }
    }
    s_->queue.pump();
}

}  // namespace epp
