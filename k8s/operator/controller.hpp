// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The GpuResource reconciler, on k8s/common's informers, work queue and Lease.

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
#include "k8s/lease.hpp"
#include "k8s/reflector.hpp"
#include "k8s/work_queue.hpp"
#include "operator/render.hpp"
#include "operator/roll.hpp"

namespace gpu_operator {

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
    std::vector<std::unique_ptr<k8s::Informer>> monitoring_crds_;
    k8s::WorkQueue queue_;
    std::unique_ptr<k8s::Informer> crs_;
    std::map<std::string, std::unique_ptr<k8s::Informer>> owned_;  ///< by informer_id()
    /// the monitoring objects the operator can apply, one per informer_id(): where to watch
    std::map<std::string, Json> monitoring_objs_;
    std::set<std::string> monitoring_watched_;  ///< kinds served at the last watch_monitoring()
    std::unique_ptr<k8s::Informer> nodes_;      ///< every Node (labels, cordons)
    std::unique_ptr<k8s::Informer> pods_;       ///< the rolled DaemonSets' pods
    /// uids of pods the roll deleted, until the cache shows them terminating or gone
    /// (client-go's "expectations": no second node started on a stale cache)
    std::set<std::string> deleting_;
};

}  // namespace gpu_operator
