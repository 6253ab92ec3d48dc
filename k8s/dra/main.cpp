// SPDX-License-Identifier: Apache-2.0
// enflame-dra-plugin: the kubelet side of Enflame's DRA driver, gcu.enflame.com
// (docs/kubelet-wire.md, DRA). This file parses flags (each also readable from an environment
// variable), sets up logging and the API-server client, and hands over to the daemon.
#include <CLI/CLI.hpp>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "dra/daemon.hpp"
#include "dra/publisher.hpp"
#include "inject/log.hpp"
#include "k8s/apiserver.hpp"
#include "k8s/daemon_cli.hpp"

namespace {

// resource.k8s.io's version on the API server, asked until it answers: the plugin starts
// without the API server (a node reboot while the control plane is down too) and serves
// NodeUnprepare and checkpointed claims meanwhile.
class ApiVersion {
public:
    explicit ApiVersion(std::shared_ptr<k8s::api::Client> client) : client_(std::move(client)) {}
    /// The version, asking the server when it is not known yet.
    inject::Result<std::string> get() {
        {
            const std::lock_guard lock(mu_);
            if (!version_.empty()) return version_;
        }
        auto v = client_->resource_api_version();
        if (!v)
            return inject::fail(
                std::move(v).error().context("asking the API server for resource.k8s.io"));
        const std::lock_guard lock(mu_);
        if (version_.empty()) inject::log::info("API server offers resource.k8s.io/{}", *v);
        version_ = *v;
        return version_;
    }

private:
    std::shared_ptr<k8s::api::Client> client_;
    std::mutex mu_;
    std::string version_;
};

// ResourceClaims from the API server, in the resource.k8s.io version it offers.
dra::ClaimSource claims_from(std::shared_ptr<k8s::api::Client> client,
                             std::shared_ptr<ApiVersion> version) {
    return [client = std::move(client), version = std::move(version)](
               const std::string& ns, const std::string& name) -> inject::Result<dra::Json> {
        INJECT_TRY(const auto v, version->get());
        return client->get("/apis/resource.k8s.io/" + v + "/namespaces/" + ns + "/resourceclaims/" +
                           name);
    };
}

// The ResourceSlice publisher beside the sockets: publishes at start, again when kubelet
// restarted (it deletes the node's slices), when the watch sees someone else delete or change
// one of ours, and every `resync`; removes the slices on a clean stop. It starts once the API
// server has told the version (asked again after 1 s, doubling up to 30 s, and at once when kubelet
// registers the plugin).
dra::MakeCompanion publisher_for(std::shared_ptr<k8s::api::Client> client,
                                 std::shared_ptr<ApiVersion> version, dra::SliceOptions opts,
                                 std::chrono::milliseconds resync) {
    return [client = std::move(client), version = std::move(version), opts = std::move(opts),
            resync](dra::Discoverer discover) {
        struct State {
            std::mutex mu;
            std::condition_variable cv;
            bool stopping = false;
            bool ask_now = false;  // kubelet registered us: ask at once, not after the backoff
            std::shared_ptr<dra::Publisher> publisher;
            std::shared_ptr<dra::PublisherLoop> loop;  // set once the version is known
            std::shared_ptr<dra::SliceWatch> watch;    // with the loop
            std::thread waiter;
        };
        auto st = std::make_shared<State>();
        auto start = [st, client, version, opts, resync, discover] {
            st->waiter = std::thread([st, client, version, opts, resync, discover] {
                auto wait = std::chrono::milliseconds(1000);
                for (bool logged = false;;) {
                    auto v = version->get();
                    std::unique_lock lock(st->mu);
                    if (st->stopping) return;
                    if (v) {
                        auto o = opts;
                        o.api_version = *v;
                        st->publisher = std::make_shared<dra::Publisher>(client, o);
                        // The loop logs each publish itself.
                        st->loop =
                            std::make_shared<dra::PublisherLoop>(*st->publisher, discover, resync);
                        st->loop->start();
                        // Someone else deleted or changed one of our slices (kubelet's startup
                        // wipe may land after the publish its registration asked for): publish
                        // again at once.
                        st->watch = std::make_shared<dra::SliceWatch>(
                            client, *st->publisher, [loop = st->loop] { loop->trigger(); },
                            dra::SliceWatch::Options{});
                        st->watch->start();
                        if (logged)
                            inject::log::info("API server reachable: publishing ResourceSlices");
                        return;
                    }
                    if (!logged)
                        spdlog::error(
                            "{}: ResourceSlices not published yet; asking again in the background "
                            "(prepared "
                            "claims and unprepare are served meanwhile)",
                            v.error().what());
                    logged = true;
                    st->cv.wait_for(lock, wait, [&] { return st->stopping || st->ask_now; });
                    if (st->stopping) return;
                    st->ask_now = false;
                    wait = std::min(wait * 2, std::chrono::milliseconds(30000));
                }
            });
        };
        auto trigger = [st] {
            const std::lock_guard lock(st->mu);
            if (st->loop) {
                st->loop->trigger();
            } else {
                st->ask_now = true;
                st->cv.notify_all();
            }
        };
        auto stop = [st] {
            {
                const std::lock_guard lock(st->mu);
                st->stopping = true;
            }
            st->cv.notify_all();
            if (st->waiter.joinable()) st->waiter.join();
            if (st->watch) st->watch->stop();
            if (st->loop) st->loop->stop(true);
        };
        return dra::Companion{start, trigger, stop};
    };
}

}  // namespace

int main(int argc, char** argv) try {
    dra::DaemonOptions o;
    if (const char* n = std::getenv("NODE_NAME")) o.node_name = n;
    std::string kubeconfig, log_level = "info";
    int resync_s = 60;

    CLI::App app{
        "enflame-dra-plugin: prepare Enflame GCUs for DRA ResourceClaims (driver gcu.enflame.com)",
        "enflame-dra-plugin"};
    k8s::add_common_flags(app, "enflame-dra-plugin", o.config_path, o.config_path_given);
    app.add_option("--driver-root", o.driver_root,
                   "where efsmi and libefml are found (default: the config's)")
        ->envname("DRIVER_ROOT");
    app.add_option("--dev-root", o.dev_root, "where dev/gcu* are found (default: the config's)")
        ->envname("DEV_ROOT");
    // The per-claim specs are read by the container engine on the host: their paths are the
    // host's (NVIDIA's DRA driver: --container-driver-root vs --host-driver-root).
    app.add_option("--host-driver-root", o.host_driver_root,
                   "driver-root as the host sees it, for the specs' mount paths (default: the "
                   "config's host-driver-root, else driver-root)")
        ->envname("HOST_DRIVER_ROOT");
    app.add_option("--host-dev-root", o.host_dev_root,
                   "dev-root as the host sees it, for the specs' device paths (default: the "
                   "config's host-dev-root, else dev-root)")
        ->envname("HOST_DEV_ROOT");
    app.add_option("--node-name", o.node_name,
                   "this node's name: our ResourceSlice pool (default: $NODE_NAME)");
    app.add_option("--kubeconfig", kubeconfig,
                   "kubeconfig file (default: in-cluster service account)")
        ->envname("KUBECONFIG");
    app.add_option("--plugins-registry", o.plugins_registry,
                   "kubelet's plugin watcher folder (our -reg.sock)")
        ->envname("PLUGINS_REGISTRY")
        ->capture_default_str();
    app.add_option("--plugins-dir", o.plugins_dir,
                   "kubelet's plugins folder (our gcu.enflame.com/dra.sock and checkpoint)")
        ->envname("PLUGINS_DIR")
        ->capture_default_str();
    app.add_option("--cdi-root", o.cdi_root, "where the per-claim CDI specs are written")
        ->envname("CDI_ROOT")
        ->capture_default_str();
    app.add_option(
           "--ctk-path", o.ctk_path,
           "host path of enflame-ctk, run as the specs' update-ldcache hook (default: no hook)")
        ->envname("CTK_PATH");
    app.add_option("--resync", resync_s,
                   "seconds between ResourceSlice reconciliations (health, DRS instances; also "
                   "republished whenever kubelet registers the plugin)")
        ->envname("RESYNC")
        ->check(CLI::Range(5, 86400))
        ->capture_default_str();
    k8s::add_log_level_flag(app, log_level);
    if (auto stop = k8s::parse_and_log(app, argc, argv, "enflame-dra-plugin", log_level))
        return *stop;
    const auto fail = k8s::exit_error;
    if (o.node_name.empty()) {
        std::cerr << "error: --node-name: missing (set it or NODE_NAME, e.g. from the pod's "
                     "spec.nodeName)\n";
        return 1;
    }
    auto cfg =
        kubeconfig.empty() ? k8s::api::in_cluster_config() : k8s::api::load_kubeconfig(kubeconfig);
    if (!cfg) return fail(cfg.error());
    auto client = k8s::api::Client::create(std::move(*cfg));
    if (!client) return fail(client.error());
    std::shared_ptr<k8s::api::Client> shared(std::move(*client));
    // The version decides the claims' path and the slices' shape. Asked once the sockets
    // serve, and until the server answers: the plugin serves its checkpointed claims without it.
    auto version = std::make_shared<ApiVersion>(shared);
    dra::SliceOptions slices;
    slices.node_name = o.node_name;
    // DRS profiles as partitionable devices where the server takes counters (a prepare makes
    // the instance), else the instances that exist as plain devices. With counters the slices
    // do not change when a prepare makes or removes an instance: the scheduler counts them.
    slices.drs = dra::DrsMode::Auto;
    return dra::run(o, claims_from(shared, version),
                    publisher_for(shared, version, slices, std::chrono::seconds(resync_s)));
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
