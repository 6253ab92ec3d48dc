// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Where the EPP's endpoints come from: a fixed list (--endpoints, no Kubernetes) or an
/// inference.networking.k8s.io/v1 InferencePool and the pods it selects, kept current by
/// informers (docs/epp-pool.md). Either way the datastore gets the whole set of Targets each
/// time it changes.
///
/// main.cpp:
///   epp::PoolOptions pool;
///   epp::add_pool_flags(app, pool);
///   ... parse ...
///   auto source = epp::EndpointSource::create(pool);   // a bad flag: one line, exit 1
///   (*source)->start([&](std::vector<epp::Target> t) { datastore.set(std::move(t)); },
///                    [&](std::map<std::string, int> p) { scheduler.set_objectives(p); },
///                    [&](std::vector<epp::ModelRewrite> r) { scheduler.set_model_rewrites(r); });
///   ... readiness = (*source)->synced() ...
///   (*source)->stop();

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "epp/scheduling/model_rewrite.hpp"
#include "epp/target.hpp"
#include "inject/result.hpp"

namespace CLI {
class App;
}

namespace epp {

/// The endpoint flags, as parsed.
struct PoolOptions {
    /// "host:port[@namespace/pod],..." (standalone); exactly one of this and pool_name.
    std::string endpoints;
    /// The enflame-gcu-exporter metrics URL every endpoint gets (standalone, or to override
    /// finding the exporter on each pod's node in Kubernetes mode).
    std::string gcu_exporter;
    std::string pool_name;                   ///< the InferencePool to follow
    std::string pool_namespace = "default";  ///< its namespace, and its pods'
    std::string kubeconfig;                  ///< empty: the in-cluster service account
    /// Where the enflame-gcu-exporter pods run and their labels: the exporter on a pod's node
    /// gives its gcu_metrics_url. An empty selector finds none (no pod list in that namespace).
    std::string exporter_namespace = "enflame-system";
    std::string exporter_selector = "app.kubernetes.io/name=enflame-gcu-exporter";
};

/// Adds --endpoints, --gcu-exporter, --pool-name, --pool-namespace, --kubeconfig,
/// --gcu-exporter-namespace and --gcu-exporter-selector to `app`, writing into `o`.
void add_pool_flags(CLI::App& app, PoolOptions& o);

/// The endpoints of a standalone run: `list` parsed, each with `gcu_exporter` as its
/// gcu_metrics_url. InvalidInput names the first bad entry and why:
///   "--endpoints entry '10.0.0.1': want host:port[@namespace/pod]"
[[nodiscard]] inject::Result<std::vector<Target>> parse_endpoints(const std::string& list,
                                                                  const std::string& gcu_exporter);

/// Objective name -> priority, from the cluster's InferenceObjectives for the pool.
using ObjectivesHandler = std::function<void(std::map<std::string, int>)>;
/// The cluster's valid InferenceModelRewrites for the pool, oldest first.
using RewritesHandler = std::function<void(std::vector<ModelRewrite>)>;

/// Hands the current endpoints to a callback each time they change.
class EndpointSource {
public:
    /// Checks the flags (exactly one of --endpoints and --pool-name; each entry, URL and
    /// name well formed) and, in Kubernetes mode, loads the API client's config. Errors are
    /// InvalidInput (or the kubeconfig's error) naming the flag and the reason.
    [[nodiscard]] static inject::Result<std::unique_ptr<EndpointSource>> create(PoolOptions o);
    virtual ~EndpointSource() = default;

    /// Starts following; `on_change` gets the whole set (sorted by pod, then address) at once
    /// in standalone mode, or from the source's own thread in Kubernetes mode: after the first
    /// sync and within a second of each change, one call at a time, never with an unchanged set.
    /// `on_objectives` (may be empty) gets the InferenceObjectives' priorities for the pool the
    /// same way, from the same thread, and `on_rewrites` (may be empty) its
    /// InferenceModelRewrites; never in standalone mode, nor while the cluster does not serve
    /// the kind (no CRD) or refuses the list.
    virtual void start(std::function<void(std::vector<Target>)> on_change,
                       ObjectivesHandler on_objectives, RewritesHandler on_rewrites) = 0;
    /// Stops the threads (returns within about a second); no call to on_change after it.
    virtual void stop() = 0;
    /// Standalone: always. Kubernetes: the pool and its pods have been listed (the pool
    /// exists); what the readiness check reports.
    [[nodiscard]] virtual bool synced() const = 0;

protected:
    EndpointSource() = default;
};

}  // namespace epp
