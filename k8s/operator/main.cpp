// SPDX-License-Identifier: Apache-2.0
// enflame-gpu-operator: one GpuResource (enflame.com/v1) deploys and keeps the Enflame stack
// as deployments/ describes it (controller.hpp). This file parses flags and hands over;
// `--render SPEC` prints what the operator would apply for a spec file and exits.
#include <sys/random.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "inject/log.hpp"
#include "k8s/apiserver.hpp"
#include "k8s/daemon_cli.hpp"
#include "k8s/lease.hpp"
#include "operator/controller.hpp"
#include "operator/render.hpp"

namespace {

int print_render(const std::string& manifests, const std::string& spec_file,
                 const gpu_operator::Served& served) {
    gpu_operator::Json spec = gpu_operator::Json::object();
    if (spec_file != "-default") {
        std::ifstream in(spec_file);
        if (!in)
            return k8s::exit_error(inject::Error(inject::Errc::NotFound,
                                                 "--render '" + spec_file + "': cannot open it"));
        std::stringstream ss;
        ss << in.rdbuf();
        auto docs = gpu_operator::parse_yaml_stream(ss.str(), spec_file);
        if (!docs) return k8s::exit_error(docs.error());
        if (!docs->empty()) spec = (*docs)[0].value("spec", gpu_operator::Json::object());
    }
    auto objs = gpu_operator::render(manifests, spec, served);
    if (!objs) return k8s::exit_error(objs.error());
    for (const auto& o : *objs) std::cout << o.obj.dump() << "\n";
    return 0;
}

std::string hostname() {
    char buf[256] = {};
    ::gethostname(buf, sizeof buf - 1);
    return buf;
}

// "_" and 16 random hex digits: this process's part of its Lease identity, as client-go's
// hostname_uuid. With the pod name alone a container restarted in the same pod took the Lease
// back at once as its own, and two hostNetwork replicas on one node shared one identity.
std::string process_suffix() {
    unsigned char b[8] = {};
    if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b))
        return "_" + std::to_string(::getpid());
    std::string s = "_";
    for (const unsigned char c : b) gpu_operator::append_hex(s, c);
    return s;
}

}  // namespace

int main(int argc, char** argv) try {
    gpu_operator::Options o;
    std::string kubeconfig, log_level = "info", render_spec, dra = "v1";
    k8s::LeaderOptions lo{"enflame-operator", "enflame-gpu-operator", hostname()};
    bool leader_elect = false;
    CLI::App app{"enflame-gpu-operator: deploy and keep the Enflame GCU stack from one GpuResource",
                 "enflame-gpu-operator"};
    std::string unused_config;
    bool unused_given = false;
    k8s::add_common_flags(app, "enflame-gpu-operator", unused_config, unused_given);
    app.add_option("--manifests", o.manifests, "the deployments/ kustomize tree the image ships")
        ->envname("OPERATOR_MANIFESTS")
        ->capture_default_str();
    app.add_option("--kubeconfig", kubeconfig,
                   "kubeconfig file (default: in-cluster service account)")
        ->envname("KUBECONFIG");
    app.add_flag("--leader-elect", leader_elect,
                 "hold a coordination.k8s.io Lease before reconciling")
        ->envname("LEADER_ELECT");
    app.add_option("--namespace", lo.ns, "the Lease's namespace (the operator's)")
        ->envname("POD_NAMESPACE")
        ->capture_default_str();
    app.add_option("--lease-name", lo.name, "the Lease's name")->capture_default_str();
    app.add_option("--identity", lo.identity,
                   "this replica's name in the Lease (its pod's); \"_\" and a random suffix per "
                   "process are added")
        ->envname("POD_NAME");
    app.add_option(
        "--render", render_spec,
        "print the objects for the GpuResource in this file (-default: an empty spec), one "
        "JSON a line, and exit");
    app.add_option("--dra-version", dra, "with --render: resource.k8s.io version (v1 or v1beta1)")
        ->check(CLI::IsMember({"v1", "v1beta1"}));
    bool prometheus_operator = false;
    app.add_flag("--prometheus-operator", prometheus_operator,
                 "with --render: the server serves monitoring.coreos.com/v1 ServiceMonitor, "
                 "PodMonitor and PrometheusRule");
    k8s::add_log_level_flag(app, log_level);
    if (auto code = k8s::parse_and_log(app, argc, argv, "enflame-gpu-operator", log_level))
        return *code;
    if (!render_spec.empty()) {
        gpu_operator::Served served{dra, {}};
        if (prometheus_operator)
            served.monitoring.insert(gpu_operator::kMonitoringKinds.begin(),
                                     gpu_operator::kMonitoringKinds.end());
        return print_render(o.manifests, render_spec, served);
    }

    // SIGTERM and SIGINT go to one thread of their own (blocked here, before any thread starts):
    // give the Lease up if it is ours, then exit. As PID 1 of its container the operator would
    // otherwise ignore SIGTERM and wait for the kubelet's SIGKILL, and the other replica for
    // the lease's 15 s.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    auto cfg =
        kubeconfig.empty() ? k8s::api::in_cluster_config() : k8s::api::load_kubeconfig(kubeconfig);
    if (!cfg) return k8s::exit_error(cfg.error());
    auto client = k8s::api::Client::create(*cfg);
    if (!client) return k8s::exit_error(client.error());
    if (leader_elect) lo.identity += process_suffix();
    std::thread([stop_signals, cl = client->get(), lo, leader_elect] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        inject::log::info("{}: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        if (leader_elect)
            if (auto r = k8s::release(*cl, lo); !r)
                inject::log::warn("leader election: releasing: {}", r.error().what());
        std::_Exit(0);
    }).detach();
    if (leader_elect) {
        if (auto r = k8s::lead(**client, lo); !r) return k8s::exit_error(r.error());
    }
    gpu_operator::Controller c(**client, o);
    auto r = c.run();
    if (!r) return k8s::exit_error(r.error());
    return 0;
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
