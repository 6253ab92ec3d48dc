// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/datastore.hpp"

namespace epp {

Roles roles_of(const Target& t) {
    auto it = t.labels.find(kRoleLabel);
    if (it == t.labels.end()) return {true, false};
    const std::string& r = it->second;
    Roles out{false, false};
    out.decode =
        r == "decode" || r == "prefill-decode" || r == "both" || r == "encode-prefill-decode";
    out.prefill = r == "prefill" || r == "encode-prefill" || r == "prefill-decode" || r == "both" ||
                  r == "encode-prefill-decode";
    return out;
}

std::set<std::string> Datastore::set_targets(std::vector<Target> targets) {
    std::lock_guard l(mu_);
    std::map<std::string, Endpoint> next;
    for (auto& t : targets) {
        Endpoint e;
        if (auto old = endpoints_.find(t.address); old != endpoints_.end()) e = old->second;
        e.roles = roles_of(t);
        auto label = t.labels.find(kEngineLabel);
        std::optional<Engine> named =
            label != t.labels.end() ? engine_from_name(label->second) : default_engine_;
        if (named) e.engine = *named;
        std::string address = t.address;
        e.target = std::move(t);
        next[address] = std::move(e);
    }
    endpoints_ = std::move(next);
    std::set<std::string> held;
    for (const auto& [a, e] : endpoints_) held.insert(a);
    std::erase_if(slots_kv_, [&](const auto& kv) { return !held.count(kv.first); });
    return held;
}

std::vector<Endpoint> Datastore::snapshot() const {
    std::lock_guard l(mu_);
    std::vector<Endpoint> out;
    out.reserve(endpoints_.size());
    for (const auto& [a, e] : endpoints_) out.push_back(e);
    return out;
}

size_t Datastore::size() const {
    std::lock_guard l(mu_);
    return endpoints_.size();
}

std::string Datastore::put_metrics(const std::string& address, std::string_view text,
                                   Clock::time_point at) {
    auto samples = parse_prometheus_text(text);
    Engine engine;
    {
        std::lock_guard l(mu_);
        auto it = endpoints_.find(address);
        if (it == endpoints_.end()) return "endpoint gone";
        engine = it->second.engine;
    }
    if (engine == Engine::Unknown) engine = detect_engine(samples);
    std::string why;
    auto m = read_server_metrics(engine, samples, &why);
    std::lock_guard l(mu_);
    auto it = endpoints_.find(address);
    if (it == endpoints_.end()) return "endpoint gone";
    if (!m) return why;
    if (engine == Engine::LlamaCpp) {
        auto kv = slots_kv_.find(address);
        if (kv != slots_kv_.end()) m->kv = kv->second;
    }
    it->second.engine = engine;
    it->second.metrics = std::move(m);
    it->second.scraped = at;
    return {};
}

std::string Datastore::put_slots(const std::string& address, std::string_view json) {
    std::string why;
    auto kv = llamacpp_kv_from_slots(json, &why);
    if (!kv) return why;
    std::lock_guard l(mu_);
    if (!endpoints_.count(address)) return "endpoint gone";
    slots_kv_[address] = *kv;
    return {};
}

std::string Datastore::put_gcu(const std::string& url, std::string_view text,
                               Clock::time_point at) {
    int bad = 0;
    auto memory = read_gcu_memory(parse_prometheus_text(text, &bad));
    std::lock_guard l(mu_);
    for (auto& [a, e] : endpoints_) {
        if (e.target.gcu_metrics_url != url) continue;
        auto it = memory.find({e.target.ns, e.target.pod});
        if (it == memory.end()) {
            e.gcu.reset();
            continue;
        }
        e.gcu = it->second;
        e.gcu_scraped = at;
    }
    return {};
}

}  // namespace epp
