// SPDX-License-Identifier: Apache-2.0
#include "epp/pool/pool_watch.hpp"

#include "inject/log.hpp"

namespace epp {

using namespace std::chrono_literals;

namespace {

/// How often the loop looks even when no informer said anything: an informer whose first
/// list is empty reports no change, only that it synced.
constexpr auto kLookEvery = 100ms;
/// A pool not listed after this is worth a warning (no CRD, or no RBAC to list it).
constexpr auto kWarnUnlisted = 5s;
/// The pool's kind may be served later (its CRD applied after the EPP started): list again
/// this often until it is.
constexpr std::chrono::milliseconds kNotServedRetry = 1s;

std::string describe(const std::vector<Target>& targets) {
    std::string out =
        std::to_string(targets.size()) + " endpoint" + (targets.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const Target& t = targets[i];
        out += (i == 0 ? ": " : ", ") + t.address + " (" + t.ns + "/" + t.pod;
        out +=
            t.gcu_metrics_url.empty() ? ", no gcu exporter)" : ", gcu " + t.gcu_metrics_url + ")";
    }
    return out;
}

}  // namespace

PoolWatch::Running::~Running() {
    informer->stop();
    if (thread.joinable()) thread.join();
}

PoolWatch::PoolWatch(PoolOptions o, std::unique_ptr<k8s::api::Client> client)
    : o_(std::move(o)), client_(std::move(client)) {}

PoolWatch::~PoolWatch() {
    stop();
}

std::unique_ptr<PoolWatch::Running> PoolWatch::run(k8s::ReflectorOptions o, std::string api_version,
                                                   std::string kind) {
    auto r = std::make_unique<Running>();
    r->informer =
        std::make_unique<k8s::Informer>(*client_, std::move(o), std::move(api_version),
                                        std::move(kind), [this](const k8s::Json&) { poke(); });
    r->thread = std::thread([inf = r->informer.get()] { inf->run(); });
    return r;
}

void PoolWatch::poke() {
    {
        const std::lock_guard lock(mu_);
        dirty_ = true;
    }
    cv_.notify_all();
}

void PoolWatch::run_extra(Extra& e) {
    k8s::ReflectorOptions j;
    j.name = std::string("informer ") + e.kind + " " + o_.pool_namespace;
    j.collection = "/apis/inference.networking.x-k8s.io/v1alpha2/namespaces/" + o_.pool_namespace +
                   "/" + e.plural;
    j.not_served_retry = kNotServedRetry;
    e.running = run(std::move(j), "inference.networking.x-k8s.io/v1alpha2", e.kind);
}

void PoolWatch::start(std::function<void(std::vector<Target>)> on_change,
                      ObjectivesHandler on_objectives, RewritesHandler on_rewrites) {
    on_change_ = std::move(on_change);
    on_objectives_ = std::move(on_objectives);
    on_rewrites_ = std::move(on_rewrites);
    started_ = std::chrono::steady_clock::now();
    k8s::ReflectorOptions p;
    p.name = "informer InferencePool " + o_.pool_namespace + "/" + o_.pool_name;
    p.collection =
        "/apis/inference.networking.k8s.io/v1/namespaces/" + o_.pool_namespace + "/inferencepools";
    p.field_selector = "metadata.name=" + o_.pool_name;
    p.not_served_retry = kNotServedRetry;
    pool_ = run(std::move(p), "inference.networking.k8s.io/v1", "InferencePool");
    if (o_.gcu_exporter.empty() && !o_.exporter_selector.empty()) {
        k8s::ReflectorOptions e;
        e.name = "informer Pod " + o_.exporter_namespace + " (gcu exporters)";
        e.collection = "/api/v1/namespaces/" + o_.exporter_namespace + "/pods";
        e.label_selector = o_.exporter_selector;
        exporters_ = run(std::move(e), "v1", "Pod");
    }
    if (on_objectives_) run_extra(objectives_);
    if (on_rewrites_) run_extra(rewrites_);
    loop_ = std::thread([this] { loop(); });
}

void PoolWatch::stop() {
    {
        const std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (loop_.joinable()) loop_.join();
    // stopped together: each informer's watch notices within a second
    for (auto* r : {&pool_, &pods_, &exporters_, &objectives_.running, &rewrites_.running})
        if (*r) (*r)->informer->stop();
    pool_.reset();
    pods_.reset();
    exporters_.reset();
    objectives_.running.reset();
    rewrites_.running.reset();
    retired_.clear();
}

void PoolWatch::loop() {
    for (;;) {
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, kLookEvery, [this] { return dirty_ || stop_; });
            if (stop_) return;
            dirty_ = false;
        }
        look();
    }
}

bool PoolWatch::first_overdue(bool& told) const {
    if (told || std::chrono::steady_clock::now() - started_ <= kWarnUnlisted) return false;
    told = true;
    return true;
}

bool PoolWatch::changed(Extra& e, const std::string& text) {
    if (e.last && *e.last == text) return false;
    inject::log::info("{}s of InferencePool {}/{}: {}", e.kind, o_.pool_namespace, o_.pool_name,
                      text);
    e.last = text;
    return true;
}

bool PoolWatch::listed(Extra& e) {
    if (!e.running) return false;
    if (e.running->informer->synced()) return true;
    // no CRD (a 404, listed again each second, quietly) or no right to list them
    if (first_overdue(e.told))
        inject::log::info(
            "{}s in {}: not listed (no {}.inference.networking.x-k8s.io CRD, or no right to "
            "list them): {}",
            e.kind, o_.pool_namespace, e.plural, e.without);
    return false;
}

void PoolWatch::look_objectives() {
    if (!listed(objectives_)) return;
    auto priorities = objective_priorities(objectives_.running->informer->items(), o_.pool_name);
    std::string text;
    for (const auto& [name, priority] : priorities)
        text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(priority);
    if (changed(objectives_, text.empty() ? "none" : text)) on_objectives_(std::move(priorities));
}

void PoolWatch::look_rewrites() {
    if (!listed(rewrites_)) return;
    auto found = model_rewrites(rewrites_.running->informer->items(), o_.pool_name);
    std::string text = found.rewrites.empty() ? "" : describe(found.rewrites);
    for (const auto& [name, why] : found.refused)
        text += (text.empty() ? "" : ", ") + name + " left out: " + why;
    if (changed(rewrites_, text.empty() ? "none" : text)) on_rewrites_(std::move(found.rewrites));
}

void PoolWatch::look() {
    look_objectives();
    look_rewrites();
    const std::string pool_name = o_.pool_namespace + "/" + o_.pool_name;
    if (!pool_->informer->synced()) {
        if (first_overdue(warned_unlisted_))
            inject::log::warn(
                "InferencePool {}: not listed yet (is the "
                "inferencepools.inference.networking.k8s.io "
                "CRD installed, and may this account list them in {}?)",
                pool_name, o_.pool_namespace);
        return;
    }
    const auto pool = pool_->informer->get("InferencePool/" + pool_name);
    std::optional<PoolSpec> spec;
    if (pool) {
        if (auto s = pool_spec(*pool); s) {
            spec = std::move(*s);
            bad_pool_.clear();
        } else if (s.error().what() != bad_pool_) {
            bad_pool_ = s.error().what();
            inject::log::warn("{}: no endpoints", bad_pool_);
        }
    }
    if (spec) {
        const std::string selector = label_selector(*spec);
        if (!pods_ || selector != pods_selector_) {
            // the old selector's informer told to stop, joined at stop(): waiting here
            // (up to a second, until its watch notices) would delay the new one's targets
            if (pods_) {
                pods_->informer->stop();
                retired_.push_back(std::move(pods_));
            }
            k8s::ReflectorOptions p;
            p.name = "informer Pod " + o_.pool_namespace;
            p.collection = "/api/v1/namespaces/" + o_.pool_namespace + "/pods";
            p.label_selector = selector;
            pods_ = run(std::move(p), "v1", "Pod");
            pods_selector_ = selector;
            inject::log::info("InferencePool {}: watching the pods labelled {}", pool_name,
                              selector);
        }
    }
    const bool ready = spec && pods_->informer->synced();
    synced_ = ready;
    if (spec && !ready) return;  // its pods not listed yet
    std::vector<Target> targets;
    if (ready) {
        const auto exporters = exporters_ ? exporters_by_node(exporters_->informer->items())
                                          : std::map<std::string, std::string>{};
        targets = pool_targets(*spec, pods_->informer->items(), exporters);
        if (!o_.gcu_exporter.empty())
            for (auto& t : targets) t.gcu_metrics_url = o_.gcu_exporter;
    }
    if (last_ && *last_ == targets) return;
    if (!pool)
        inject::log::info("InferencePool {} not found: 0 endpoints", pool_name);
    else
        inject::log::info("InferencePool {}: {}", pool_name, describe(targets));
    last_ = targets;
    on_change_(std::move(targets));
}

}  // namespace epp
