// SPDX-License-Identifier: Apache-2.0
#include "k8s/reflector.hpp"

#include <algorithm>
#include <random>
#include <thread>

#include "inject/log.hpp"

namespace k8s {

using inject::Errc;

namespace {

using api::str;

std::string rv_of(const Json& obj) {
    return str(obj.is_object() ? obj.value("metadata", Json::object()) : Json::object(),
               "resourceVersion");
}

}  // namespace

std::string object_key(const Json& obj) {
    const Json md = obj.is_object() ? obj.value("metadata", Json::object()) : Json::object();
    return str(obj, "kind") + "/" + str(md, "namespace") + "/" + str(md, "name");
}

// --- Backoff ---------------------------------------------------------------------------------

Backoff::Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
    : initial_(initial), max_(std::max(initial, max)), cur_(initial) {}

std::chrono::milliseconds Backoff::next() {
    const auto d = cur_;
    cur_ = std::min(cur_ * 2, max_);
    return d;
}

// --- Reflector -------------------------------------------------------------------------------

Reflector::Reflector(api::Client& client, ReflectorOptions o, ReflectorHandlers h)
    : client_(client), o_(std::move(o)), h_(std::move(h)) {}

void Reflector::stop() {
    {
        const std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
}

void Reflector::kick() {
    {
        const std::lock_guard lock(mu_);
        kicked_ = true;
    }
    cv_.notify_all();
}

bool Reflector::wait(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [this] { return stop_.load() || kicked_; });
    kicked_ = false;
    return !stop_;
}

void Reflector::run() {
    Backoff backoff(o_.backoff, o_.max_backoff);
    bool relist = false;
    for (std::string reason; !stop_;) {
        // one line per relist, naming why (the first list has no reason)
        if (!reason.empty()) inject::log::info("{}: relisting: {}", o_.name, reason);
        reason.clear();  // a list that fails says so itself, below
        auto list = client_.list(o_.collection, o_.label_selector, o_.field_selector);
        if (!list) {
            // a kind the server does not serve (yet): look again later, quietly
            const bool not_served = list.error().code() == Errc::NotFound;
            const auto d = not_served ? o_.not_served_retry : backoff.next();
            if (not_served)
                inject::log::debug("{}: {}", o_.name, list.error().what());
            else
                inject::log::warn("{}: {} (retrying in {} ms)", o_.name, list.error().what(),
                                  d.count());
            if (!wait(d)) return;
            continue;
        }
        backoff.reset();
        std::vector<Json> items;
        for (auto& o : (*list)["items"]) items.push_back(std::move(o));
        h_.listed(std::move(items), relist);
        relist = true;
        reason = watch_until_relist(rv_of(*list), backoff);
    }
}

std::string Reflector::watch_until_relist(std::string rv, Backoff& backoff) {
    static thread_local std::mt19937 rng{std::random_device{}()};
    for (int failures = 0; !stop_;) {
        api::WatchOptions w;
        w.label_selector = o_.label_selector;
        w.field_selector = o_.field_selector;
        w.resource_version = rv;
        w.timeout_seconds = std::uniform_int_distribution<int>(
            o_.min_timeout_seconds, std::max(o_.min_timeout_seconds, o_.max_timeout_seconds))(rng);
        const std::string from = rv;
        bool got_event = false;
        std::string expired, error;
        const auto began = std::chrono::steady_clock::now();
        auto r = client_.watch(
            o_.collection, w,
            [&](const api::WatchEvent& ev) {
                if (ev.type == "ERROR") {
                    const std::string msg = str(ev.object, "message");
                    (api::gone(ev) ? expired : error) = msg.empty() ? ev.object.dump() : msg;
                    return false;
                }
                got_event = true;
                if (const std::string v = rv_of(ev.object); !v.empty()) rv = v;
                if (ev.type != "BOOKMARK") h_.event(ev);
                return true;
            },
            stop_);
        if (stop_) return {};
        if (!expired.empty())
            return "the watch from resourceVersion " + from + " answered 410 Gone: " + expired;
        if (!r && api::gone(r.error()))
            return "the watch from resourceVersion " + from + " answered " + r.error().what();
        // A stream that worked (an event, or the server's timeout) resets the count; one that
        // ended at once with nothing in it counts as a failure (no busy loop).
        const bool worked =
            got_event || std::chrono::steady_clock::now() - began > std::chrono::seconds(1);
        if (r && error.empty() && worked) {
            failures = 0;
            backoff.reset();
            continue;
        }
        const inject::Error e = !r ? r.error()
                                : !error.empty()
                                    ? inject::Error(Errc::Io, "an ERROR event: " + error)
                                    : inject::Error(Errc::Io, "the stream ended at once");
        // a dropped connection or 5xx (Io), a 429 while the server fills its watch cache
        // (InvalidInput): watch again; anything else, or too many: list
        if ((e.code() != Errc::Io && e.code() != Errc::InvalidInput) ||
            ++failures > o_.max_watch_failures)
            return "the watch from resourceVersion " + from + " failed: " + e.what();
        const auto d = backoff.next();
        inject::log::warn("{}: watch from resourceVersion {}: {} (again in {} ms)", o_.name, from,
                          e.what(), d.count());
        if (!wait(d)) return {};
    }
    return {};
}

// --- Informer --------------------------------------------------------------------------------

Informer::Informer(api::Client& client, ReflectorOptions o, std::string api_version,
                   std::string kind, std::function<void(const Json&)> on_change)
    : api_version_(std::move(api_version)),
      kind_(std::move(kind)),
      on_change_(std::move(on_change)),
      reflector_(
          client,
          [&] {
              if (o.name.empty()) o.name = "informer " + kind_;
              return std::move(o);
          }(),
          ReflectorHandlers{[this](std::vector<Json> items, bool) { listed(std::move(items)); },
                            [this](const api::WatchEvent& ev) { event(ev); }}) {}

std::optional<Json> Informer::get(const std::string& key) const {
    const std::lock_guard lock(mu_);
    const auto it = objs_.find(key);
    if (it == objs_.end()) return std::nullopt;
    return it->second;
}

std::vector<Json> Informer::items() const {
    const std::lock_guard lock(mu_);
    std::vector<Json> out;
    for (const auto& [_, o] : objs_) out.push_back(o);
    return out;
}

void Informer::erase(const std::string& key) {
    const std::lock_guard lock(mu_);
    objs_.erase(key);
}

void Informer::listed(std::vector<Json> items) {
    std::map<std::string, Json> fresh;
    for (auto& o : items) {
        o["kind"] = kind_;
        o["apiVersion"] = api_version_;
        const std::string key = object_key(o);  // json's operator= takes its argument by value:
        fresh[key] = std::move(o);              // o is moved from before the left side runs
    }
    std::vector<Json> changed;
    {
        const std::lock_guard lock(mu_);
        for (const auto& [k, o] : objs_)
            if (!fresh.count(k)) changed.push_back(o);  // removed while we did not watch
        for (const auto& [k, o] : fresh)
            if (!objs_.count(k) || rv_of(objs_[k]) != rv_of(o)) changed.push_back(o);
        objs_ = std::move(fresh);
    }
    synced_ = true;
    for (const auto& o : changed) on_change_(o);
}

void Informer::event(const api::WatchEvent& ev) {
    Json o = ev.object;
    o["kind"] = kind_;
    o["apiVersion"] = api_version_;
    {
        const std::lock_guard lock(mu_);
        if (ev.type == "DELETED")
            objs_.erase(object_key(o));
        else
            objs_[object_key(o)] = o;
    }
    on_change_(o);
}

}  // namespace k8s
