// SPDX-License-Identifier: Apache-2.0
// enflame-gcu-exporter: Prometheus metrics of Enflame GCUs, attributed to pods
// (docs/kubelet-wire.md, metrics). This file parses flags, sets up logging and signals, and wires
// the collector (collector.cpp) to the HTTP server (http.cpp).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdlib>
#include <iostream>

#include "exporter/collector.hpp"
#include "exporter/http.hpp"
#include "exporter/source.hpp"
#include "inject/config.hpp"
#include "inject/discover.hpp"
#include "inject/log.hpp"
#include "k8s/daemon_cli.hpp"
#include "k8s/daemon_setup.hpp"
#include "k8s/duration.hpp"

namespace {

std::string hostname() {
    std::array<char, 256> buf{};
    if (::gethostname(buf.data(), buf.size() - 1) != 0) return "";
    return buf.data();
}

}  // namespace

int main(int argc, char** argv) try {
    std::string config_path;
    bool config_given = false;
    std::string listen = ":9400";
    std::string interval = "15s";
    std::string pod_resources = "/var/lib/kubelet/pod-resources/kubelet.sock";
    std::string host = hostname();
    std::string log_level = "info";

    CLI::App app{"enflame-gcu-exporter: Prometheus metrics of Enflame GCUs, attributed to pods",
                 "enflame-gcu-exporter"};
    k8s::add_common_flags(app, "enflame-gcu-exporter", config_path, config_given);
    app.add_option("--web.listen-address", listen,
                   "where to serve /metrics and /healthz: [ip]:port")
        ->envname("LISTEN_ADDRESS")
        ->capture_default_str();
    app.add_option("--collect-interval", interval, "time between collections (e.g. 15s, 500ms)")
        ->envname("COLLECT_INTERVAL")
        ->capture_default_str();
    app.add_option("--pod-resources-socket", pod_resources,
                   "kubelet's pod-resources socket (empty: no pod attribution)")
        ->envname("POD_RESOURCES_SOCKET")
        ->capture_default_str();
    app.add_option("--hostname", host, "the host label (default: NODE_NAME, else this host's name)")
        ->envname("NODE_NAME");
    k8s::add_log_level_flag(app, log_level);
    // --help and --version exit 0; any bad flag exits 1 (not CLI11's own codes).
    if (auto code = k8s::parse_and_log(app, argc, argv, "enflame-gcu-exporter", log_level))
        return *code == 0 ? 0 : 1;

    auto iv = k8s::parse_duration("--collect-interval", interval, std::chrono::milliseconds(100),
                                  std::chrono::hours(24));
    if (!iv) return k8s::exit_error(iv.error());
    if (auto ports = exporter::listening_ports(listen); !ports)
        return k8s::exit_error(ports.error());
    auto cfg = inject::config::load_file(config_path, !config_given);
    if (!cfg) return k8s::exit_error(cfg.error());

    // Signals are taken by sigwait below; every thread started from here on inherits the mask.
    const sigset_t stop_signals = k8s::block_stop_signals();
    (void)signal(SIGPIPE, SIG_IGN);  // a scraper hanging up mid-answer

    exporter::CollectorOptions o;
    o.host = host;
    o.pod_resources_socket = pod_resources;
    o.interval = *iv;
    o.pod_resources_timeout = std::min(*iv, std::chrono::milliseconds(5000));
    exporter::Collector collector(exporter::make_efml_source(inject::discover::options_from(*cfg)),
                                  o);
    auto server = exporter::HttpServer::start(listen, collector);
    if (!server) return k8s::exit_error(server.error());
    if (pod_resources.empty())
        inject::log::info("pod attribution off: --pod-resources-socket is empty");
    collector.collect();
    collector.start();
    inject::log::info("serving /metrics and /healthz on {} (collecting every {} ms)", listen,
                      iv->count());

    int sig = 0;
    sigwait(&stop_signals, &sig);
    inject::log::info("signal {}: stopping", sig);
    server->reset();
    collector.stop();
    return 0;
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
