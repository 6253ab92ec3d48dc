// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The controller machinery client-go gives Go operators, over k8s/common's API client:
/// informers (list, then watch from the list's resourceVersion with bookmarks; relist on 410),
/// a rate-limited work queue of keys (a key is never processed twice at once), leader election
/// on a coordination.k8s.io Lease, and the GpuResource reconciler.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/apiserver.hpp"
#include "render.hpp"
#include "roll.hpp"
#include "work_queue.hpp"

namespace op {

/// One kind's objects as the server last told us, kept current by a watch.
class Informer {
public:
    /// `collection` is the REST collection ("/apis/apps/v1/daemonsets"); `kind` and
    /// `api_version` are set on each cached object (list items lack them); `on_change` is called
    /// (from the informer's thread) for each object that changed, or was removed.
    /// `field_selector` narrows it further (one CRD by name).
    Informer(k8s::api::Client& client, std::string collection, std::string api_version,
             std::string kind, std::string label_selector,
             std::function<void(const Json&)> on_change, std::string field_selector = {});
    /// List and watch until the process ends (run it on its own thread).
    void run();
    [[nodiscard]] bool synced() const { return synced_.load(); }
    [[nodiscard]] std::optional<Json> get(const std::string& key) const;  ///< by key_of()
    [[nodiscard]] std::vector<Json> items() const;
    /// The caller deleted it: out of the cache now, not when its DELETED event comes (a
    /// reconcile in between would delete it again).
    void erase(const std::string& key);
    /// Its collection is served again: a list now, not after the 5 min a collection that
    /// answered 404 waits.
    void kick();

private:
    [[nodiscard]] inject::Result<std::string> relist();
    /// Watches from `rv`, moving it on with each event, until the server ends the stream;
    /// a 410 Gone is an Errc::Conflict error carrying the server's message.
    [[nodiscard]] inject::Result<void> watch(std::string& rv);
    /// Watches from `rv` again and again, as client-go's reflector does: after the server's
    /// timeout, and after a dropped connection, a 5xx or a 429 (backing off): the API server's
    /// watch cache still holds what happened meanwhile, a new list is not needed. Returns
    /// why the cache must be listed again: a 410 Gone (the server no longer has `rv`: after
    /// its restart, or an etcd compaction that reset its watch cache), or too many failures.
    [[nodiscard]] std::string watch_until_gone(std::string rv);

    k8s::api::Client& client_;
    std::string collection_, api_version_, kind_, selector_, field_selector_;
    std::function<void(const Json&)> on_change_;
    mutable std::mutex mu_;
    std::map<std::string, Json> objs_;
    std::atomic<bool> synced_{false};
    std::mutex wake_mu_;
    std::condition_variable wake_;
    bool kicked_ = false;  ///< under wake_mu_
};

struct LeaderOptions {
    std::string ns, name, identity;
    std::chrono::seconds lease_duration{15}, renew_deadline{10};
    std::chrono::milliseconds retry_period{2000};
};

/// Blocks until this process holds the Lease, then renews it on a thread of its own; if a
/// renewal has not succeeded within renew_deadline the process exits (as client-go's
/// OnStoppedLeading does in most operators): another replica takes over.
[[nodiscard]] inject::Result<void> lead(k8s::api::Client& client, const LeaderOptions& o);

/// Gives the Lease up when `o.identity` holds it (client-go's ReleaseOnCancel: no holder, a
/// duration of 1 s), so the other replica leads at its next try instead of after the lease's
/// 15 s; called when the process is told to stop. False when it was not ours.
[[nodiscard]] inject::Result<bool> release(k8s::api::Client& client, const LeaderOptions& o);

/// The writes one reconcile sent, counted and named for its log line ("0 writes" is the
/// steady state; anything else says what changed).
struct Writes {
    int n = 0;
    std::string what;
    void add(std::string_view w);
};

struct Options {
    std::string manifests = "/usr/share/enflame/manifests";
};

/// The GpuResource controller: informers on GpuResources and on every kind it applies,
/// one worker.
class Controller {
public:
    Controller(k8s::api::Client& client, Options o);
    /// Starts the informers, waits until they synced, then reconciles forever.
    [[nodiscard]] inject::Result<void> run();

private:
    [[nodiscard]] inject::Result<void> reconcile(const std::string& name);
    [[nodiscard]] inject::Result<void> remove_stack(const Json& cr, Writes& writes);
    /// Every object of `kind` the informers hold, in every namespace.
    [[nodiscard]] std::vector<Json> items_of(const std::string& kind) const;
    [[nodiscard]] std::optional<Json> live(const Json& obj) const;
    [[nodiscard]] inject::Result<void> write_status(const Json& cr, Json status, Writes& writes);
    /// Node labels from NFD's (`active` false: remove the ones the operator set).
    [[nodiscard]] inject::Result<void> label_nodes(bool active, Writes& writes);
    /// One step of the ordered roll of the toolkit and the plugins; returns status.upgrade.
    [[nodiscard]] inject::Result<Json> roll(const Json& spec, const std::vector<Object>& objs,
                                            Writes& writes);
    [[nodiscard]] Json stack_status(const Json& cr, const std::vector<Object>& objs,
                                    const std::string& error,
                                    const std::vector<MonitorStatus>& monitors) const;
    void enqueue_all();
    /// Which monitoring.coreos.com/v1 kinds (kMonitoringKinds) the server serves: discovery at
    /// start, then the watch events of their CRDs (Established, v1 served) as they come and go.
    void discover_monitoring();
    void monitoring_crd_changed();
    [[nodiscard]] std::set<std::string> monitoring_served() const;
    /// The informer of each monitoring kind, started the first time the kind is served (never
    /// watched before: a cluster without prometheus-operator has no such collection); when a
    /// kind's CRD is back after it was deleted, its informer lists at once. (A CRD's deletion
    /// deletes its objects first, so the informer saw them go.)
    void watch_monitoring();

    k8s::api::Client& client_;
    Options o_;
    std::string dra_version_ = "v1";
    mutable std::mutex monitoring_mu_;
    std::set<std::string> monitoring_;  ///< kinds served, under monitoring_mu_
    /// one per kind: its CRD by name (<plural>.monitoring.coreos.com), nothing else
    std::vector<std::unique_ptr<Informer>> monitoring_crds_;
    WorkQueue queue_;
    std::unique_ptr<Informer> crs_;
    std::map<std::string, std::unique_ptr<Informer>> owned_;  ///< by informer_id()
    /// the monitoring objects the operator can apply, one per informer_id(): where to watch
    std::map<std::string, Json> monitoring_objs_;
    std::set<std::string> monitoring_watched_;  ///< kinds served at the last watch_monitoring()
    std::unique_ptr<Informer> nodes_;                         ///< every Node (labels, cordons)
    std::unique_ptr<Informer> pods_;                          ///< the rolled DaemonSets' pods
    /// uids of pods the roll deleted, until the cache shows them terminating or gone
    /// (client-go's "expectations": no second node started on a stale cache)
    std::set<std::string> deleting_;
};

}  // namespace op
