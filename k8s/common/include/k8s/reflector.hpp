// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// client-go's cache machinery over api::Client, the one copy every daemon uses: a reflector
/// (list, then watch from the list's resourceVersion with bookmarks; after the server's timeout
/// or a dropped stream, watch again from the last resourceVersion seen; 410 Gone, or too many
/// failed watches in a row, list again) and an informer (a reflector feeding a cache of objects
/// by kind/namespace/name, with a handler called for each change). docs/kubernetes.md has the
/// policy and why.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "k8s/apiserver.hpp"

namespace k8s {

using Json = nlohmann::json;

/// "Kind/namespace/name" of an object (the namespace empty for a cluster-scoped one).
[[nodiscard]] std::string object_key(const Json& obj);

/// One backoff policy: `initial`, doubled at each failure up to `max`, back to `initial` after
/// a success.
class Backoff {
public:
    Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max);
    /// The wait after this failure; the next one is twice as long (at most `max`).
    [[nodiscard]] std::chrono::milliseconds next();
    void reset() { cur_ = initial_; }

private:
    std::chrono::milliseconds initial_, max_, cur_;
};

struct ReflectorOptions {
    std::string name;        ///< the start of its log lines ("informer DaemonSet")
    std::string collection;  ///< the REST collection ("/apis/apps/v1/namespaces/ns/daemonsets")
    std::string label_selector, field_selector;  ///< empty: left out
    /// Each watch asks the server to end it after a time picked in this range (client-go's
    /// 5 to 10 minutes), so that watches of many clients do not end together.
    int min_timeout_seconds = 300, max_timeout_seconds = 600;
    std::chrono::milliseconds backoff{500}, max_backoff{5000};
    /// Failed watches in a row (a dropped connection, a 5xx, a 429, a stream that ended at once)
    /// before the reflector lists again.
    int max_watch_failures = 8;
    /// A collection that answered 404 (a kind not served yet) is listed again after this, or
    /// at kick().
    std::chrono::milliseconds not_served_retry{300000};
};

/// What a reflector hands on, from its thread.
struct ReflectorHandlers {
    /// After each list: every object in it; `relist` is false for the first list only.
    std::function<void(std::vector<Json> items, bool relist)> listed;
    /// Each ADDED, MODIFIED and DELETED event (a bookmark only moves the resourceVersion).
    std::function<void(const api::WatchEvent& ev)> event;
};

class Reflector {
public:
    Reflector(api::Client& client, ReflectorOptions o, ReflectorHandlers h);
    /// Lists and watches until stop() (run it on a thread of its own).
    void run();
    /// run() returns within a second.
    void stop();
    /// List now, not after the wait a failed list is in (its collection is served again).
    void kick();

private:
    /// Watches from `rv` again and again until the cache must be listed again; says why (a 410,
    /// too many failures), or returns empty once stopped.
    [[nodiscard]] std::string watch_until_relist(std::string rv, Backoff& backoff);
    /// Sleeps `d`, or less when stopped or kicked; false when stopped.
    bool wait(std::chrono::milliseconds d);

    api::Client& client_;
    ReflectorOptions o_;
    ReflectorHandlers h_;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    bool kicked_ = false;  ///< under mu_
};

/// One kind's objects as the server last told us, kept current by a reflector.
class Informer {
public:
    /// `api_version` and `kind` are set on each cached object (list items lack them);
    /// `on_change` is called (from the informer's thread) with each object that changed or was
    /// removed. `o.name` is set to "informer <kind>" when empty.
    Informer(api::Client& client, ReflectorOptions o, std::string api_version, std::string kind,
             std::function<void(const Json&)> on_change);
    void run() { reflector_.run(); }
    void stop() { reflector_.stop(); }
    void kick() { reflector_.kick(); }
    [[nodiscard]] bool synced() const { return synced_.load(); }
    [[nodiscard]] std::optional<Json> get(const std::string& key) const;  ///< by object_key()
    [[nodiscard]] std::vector<Json> items() const;
    /// The caller deleted it: out of the cache now, not when its DELETED event comes (a
    /// reconcile in between would delete it again).
    void erase(const std::string& key);

private:
    void listed(std::vector<Json> items);
    void event(const api::WatchEvent& ev);

    std::string api_version_, kind_;
    std::function<void(const Json&)> on_change_;
    mutable std::mutex mu_;
    std::map<std::string, Json> objs_;
    std::atomic<bool> synced_{false};
    Reflector reflector_;
};

}  // namespace k8s
