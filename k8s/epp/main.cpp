// SPDX-License-Identifier: Apache-2.0
// enflame-epp: the Endpoint Picker of the Gateway API Inference Extension for Enflame GCU model
// servers (docs/epp.md): an Envoy ext_proc server that routes each LLM request to a model
// server by queue, KV cache, prefix cache and free GCU memory. This file parses flags and wires
// the endpoint source (pool/) to the scheduler (scheduling/) and both to the gRPC server and
// /metrics (wire/; k8s::HttpServer).
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <ctime>
#include <iostream>

#include "epp/pool/endpoint_source.hpp"
#include "epp/scheduling/scheduler.hpp"
#include "epp/wire/server.hpp"
#include "epp/wire/tls.hpp"
#include "inject/log.hpp"
#include "k8s/daemon_cli.hpp"
#include "k8s/daemon_setup.hpp"
#include "k8s/duration.hpp"
#include "k8s/http_server.hpp"

int main(int argc, char** argv) try {
    epp::ServerOptions so;
    epp::SchedulingOptions sched_options;
    epp::PoolOptions pool_options;
    bool secure = true;
    std::string cert_path, body_mode = "full-duplex", drain = "30s", log_level = "info";
    std::string cert_reload = "10s";
    int metrics_port = 9090;

    CLI::App app{
        "enflame-epp: an Endpoint Picker for the Gateway API Inference Extension; Envoy asks it "
        "over ext_proc which model server takes each request",
        "enflame-epp"};
    app.set_version_flag("--version", std::string("enflame-epp ") + inject::kVersion + " (" +
                                          inject::kGitRevision + ")");
    app.add_option("--grpc-port", so.grpc_port, "the ext_proc port the gateway calls")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    app.add_option("--grpc-health-port", so.health_port,
                   "the grpc.health.v1 port (plaintext): liveness, readiness")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    app.add_option("--metrics-port", metrics_port, "the port of /metrics (Prometheus text)")
        ->check(CLI::Range(0, 65535))
        ->capture_default_str();
    app.add_flag("--secure-serving", secure,
                 "TLS on the ext_proc port (--secure-serving=false: plaintext)")
        ->capture_default_str();
    app.add_option("--cert-path", cert_path,
                   "a folder with tls.crt and tls.key for the ext_proc port (default: a "
                   "self-signed certificate made at start); read again every "
                   "--cert-reload-interval, so a renewed pair is served without a restart");
    app.add_option("--cert-reload-interval", cert_reload,
                   "how often --cert-path's files are read again")
        ->capture_default_str();
    app.add_option("--body-mode", body_mode,
                   "the gateway's request body mode when its messages do not say it "
                   "(protocol_config): full-duplex or buffered")
        ->check(CLI::IsMember({"full-duplex", "buffered"}))
        ->capture_default_str();
    app.add_option("--drain-timeout", drain,
                   "on SIGTERM, how long open requests may still run before they are cancelled")
        ->capture_default_str();
    epp::add_scheduling_flags(app, sched_options);
    epp::add_pool_flags(app, pool_options);
    k8s::add_log_level_flag(app, log_level);
    if (auto code = k8s::parse_and_log(app, argc, argv, "enflame-epp", log_level))
        return *code == 0 ? 0 : 1;

    auto grace = k8s::parse_duration("--drain-timeout", drain, std::chrono::milliseconds(0),
                                     std::chrono::hours(1));
    if (!grace) return k8s::exit_error(grace.error());
    so.stream.default_mode =
        body_mode == "buffered" ? epp::BodyMode::Buffered : epp::BodyMode::FullDuplex;
    auto reload = k8s::parse_duration("--cert-reload-interval", cert_reload,
                                      std::chrono::seconds(1), std::chrono::hours(24));
    if (!reload) return k8s::exit_error(reload.error());
    so.cert_reload = std::chrono::duration_cast<std::chrono::seconds>(*reload);
    so.cert_dir = cert_path;
    if (!cert_path.empty() && !secure) {
        std::cerr << "error: --cert-path '" << cert_path
                  << "': given with --secure-serving=false\n";
        return 1;
    }
    if (secure) {
        auto pem =
            cert_path.empty() ? epp::self_signed_certificate() : epp::read_certificate(cert_path);
        if (!pem) return k8s::exit_error(pem.error());
        so.tls = std::move(*pem);
    }
    auto source = epp::EndpointSource::create(pool_options);
    if (!source) return k8s::exit_error(source.error());

    // Signals are taken by sigtimedwait below; every thread started from here inherits the mask.
    const sigset_t stop_signals = k8s::block_stop_signals();
    (void)signal(SIGPIPE, SIG_IGN);

    prometheus::Registry registry;
    std::unique_ptr<epp::Scheduler> scheduler;
    try {
        scheduler = std::make_unique<epp::Scheduler>(sched_options, registry);
    } catch (const std::runtime_error& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
    auto metrics = k8s::HttpServer::start(
        std::to_string(metrics_port), "--metrics-port " + std::to_string(metrics_port),
        {{"/metrics", [&registry] {
              return k8s::HttpServer::Reply{
                  200, k8s::kPrometheusTextType,
                  prometheus::TextSerializer().Serialize(registry.Collect())};
          }}});
    if (!metrics) return k8s::exit_error(metrics.error());
    auto server = epp::Server::start(so, *scheduler, registry);
    if (!server) return k8s::exit_error(server.error());
    scheduler->start();
    (*source)->start(
        [&scheduler](std::vector<epp::Target> targets) {
            inject::log::info("{} endpoints", targets.size());
            scheduler->set_targets(std::move(targets));
        },
        [&scheduler](std::map<std::string, int> priorities) {
            scheduler->set_objectives(std::move(priorities));
        },
        [&scheduler](std::vector<epp::ModelRewrite> rewrites) {
            scheduler->set_model_rewrites(std::move(rewrites));
        });
    inject::log::info("/metrics on :{}", (*metrics)->port());

    // Readiness follows the source and the scheduler until a stop signal.
    bool ready = false;
    for (;;) {
        const bool now = (*source)->synced() && scheduler->ready();
        if (now != ready) {
            (*server)->set_ready(now);
            inject::log::info("readiness: {}", now ? "SERVING" : "NOT_SERVING");
            ready = now;
        }
        const timespec tick{0, 200'000'000};
        if (const int sig = sigtimedwait(&stop_signals, nullptr, &tick); sig > 0) {
            inject::log::info("signal {}: draining for up to {} ms", sig, grace->count());
            break;
        }
    }
    (*server)->shutdown(*grace);
    (*source)->stop();
    scheduler->stop();
    server->reset();
    metrics->reset();
    scheduler.reset();
    inject::log::info("stopped");
    return 0;
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
