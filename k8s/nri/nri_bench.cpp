// SPDX-License-Identifier: Apache-2.0
// nri-bench: create, start and remove of a container through CRI runtimes, timed per call, in
// interleaved rounds (bench/nri.sh; a report, not a test). Each variant is a CRI socket, a
// runtime handler and what the container asks for:
//
//   nri-bench --image IMG --log-dir D [--cgroup-parent P] [--rounds N] [--warmup W]
//             --variant LABEL,SOCKET,HANDLER,ASK...   (ASK: env:K=V or ann:K=V, ';'-separated)
//
// One pod per variant (made first, removed last); every round runs each variant once in a
// fresh random order: CreateContainer, StartContainer of `/bin/true`, wait until it exited
// (not timed), RemoveContainer. Prints one JSON line per variant: the median, p25 and p75 of
// each call in ms.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "k8s/socket.hpp"
#include "proto/cri_v1.grpc.pb.h"

namespace {

namespace cri = ::runtime::v1;
using Clock = std::chrono::steady_clock;

struct Variant {
    std::string label, socket, handler;
    std::vector<std::pair<std::string, std::string>> env, ann;
    std::unique_ptr<cri::RuntimeService::Stub> stub;
    cri::PodSandboxConfig pod;
    std::string pod_id;
    std::vector<double> create, start, remove;
};

void check(const grpc::Status& s, const std::string& call) {
    if (!s.ok()) throw std::runtime_error(call + ": " + k8s::status_text(s));
}

template <typename Req, typename Resp, typename Fn>
double timed(Fn fn, const Req& req, Resp& resp, const std::string& call) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    const auto t0 = Clock::now();
    check(fn(&ctx, req, &resp), call);
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double pct(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

void round(Variant& v, int n, const std::string& image, bool keep) {
    cri::CreateContainerRequest cr;
    cr.set_pod_sandbox_id(v.pod_id);
    *cr.mutable_sandbox_config() = v.pod;
    auto* cfg = cr.mutable_config();
    cfg->mutable_metadata()->set_name("b" + std::to_string(n));
    cfg->mutable_image()->set_image(image);
    cfg->add_command("/bin/true");
    for (const auto& [k, val] : v.env) {
        auto* e = cfg->add_envs();
        e->set_key(k);
        e->set_value(val);
    }
    for (const auto& [k, val] : v.ann) (*cfg->mutable_annotations())[k] = val;
    cri::CreateContainerResponse created;
    auto* s = v.stub.get();
    const double c =
        timed([s](auto* ctx, auto& q, auto* r) { return s->CreateContainer(ctx, q, r); }, cr,
              created, v.label + ": CreateContainer");
    cri::StartContainerRequest sr;
    sr.set_container_id(created.container_id());
    cri::StartContainerResponse sresp;
    const double st =
        timed([s](auto* ctx, auto& q, auto* r) { return s->StartContainer(ctx, q, r); }, sr, sresp,
              v.label + ": StartContainer");
    for (int i = 0; i < 2000; ++i) {
        grpc::ClientContext ctx;
        cri::ContainerStatusRequest q;
        q.set_container_id(created.container_id());
        cri::ContainerStatusResponse r;
        check(s->ContainerStatus(&ctx, q, &r), v.label + ": ContainerStatus");
        if (r.status().state() == cri::CONTAINER_EXITED) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    cri::RemoveContainerRequest rr;
    rr.set_container_id(created.container_id());
    cri::RemoveContainerResponse rresp;
    const double rm =
        timed([s](auto* ctx, auto& q, auto* r) { return s->RemoveContainer(ctx, q, r); }, rr, rresp,
              v.label + ": RemoveContainer");
    if (keep) {
        v.create.push_back(c);
        v.start.push_back(st);
        v.remove.push_back(rm);
    }
}

void remove_pod(Variant& v) {
    if (v.pod_id.empty()) return;
    grpc::ClientContext c1, c2;
    cri::StopPodSandboxRequest sr;
    sr.set_pod_sandbox_id(v.pod_id);
    cri::StopPodSandboxResponse sresp;
    (void)v.stub->StopPodSandbox(&c1, sr, &sresp);
    cri::RemovePodSandboxRequest rr;
    rr.set_pod_sandbox_id(v.pod_id);
    cri::RemovePodSandboxResponse rresp;
    (void)v.stub->RemovePodSandbox(&c2, rr, &rresp);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"nri-bench: interleaved create/start/remove timings through CRI runtimes"};
    std::string image, log_dir, cgroup_parent;
    std::vector<std::string> specs;
    int rounds = 100, warmup = 5;
    app.add_option("--image", image)->required();
    app.add_option("--log-dir", log_dir)->required();
    app.add_option("--cgroup-parent", cgroup_parent);
    app.add_option("--rounds", rounds);
    app.add_option("--warmup", warmup);
    app.add_option("--variant", specs, "LABEL,SOCKET,HANDLER,ASK")->required();
    CLI11_PARSE(app, argc, argv);
    std::vector<Variant> vs;
    try {
        for (const auto& spec : specs) {
            Variant v;
            std::stringstream in(spec);
            std::string ask;
            std::getline(in, v.label, ',');
            std::getline(in, v.socket, ',');
            std::getline(in, v.handler, ',');
            std::getline(in, ask);
            std::stringstream asks(ask);
            for (std::string a; std::getline(asks, a, ';');) {
                if (a.empty()) continue;
                const auto colon = a.find(':'), eq = a.find('=', colon);
                if (colon == std::string::npos || eq == std::string::npos)
                    throw std::runtime_error("--variant " + spec + ": bad ASK '" + a + "'");
                auto kv = std::make_pair(a.substr(colon + 1, eq - colon - 1), a.substr(eq + 1));
                (a.starts_with("env:") ? v.env : v.ann).push_back(kv);
            }
            auto ch = k8s::dial_unix(v.socket, std::chrono::milliseconds(5000));
            if (!ch) throw std::runtime_error(ch.error().what());
            v.stub = cri::RuntimeService::NewStub(*ch);
            v.pod.mutable_metadata()->set_name("bench-" + v.label);
            v.pod.mutable_metadata()->set_namespace_("default");
            v.pod.mutable_metadata()->set_uid("bench-" + v.label + "-" +
                                              std::to_string(::getpid()));
            v.pod.set_log_directory(log_dir);
            v.pod.mutable_linux()->set_cgroup_parent(cgroup_parent);
            v.pod.mutable_linux()
                ->mutable_security_context()
                ->mutable_namespace_options()
                ->set_network(cri::NODE);
            cri::RunPodSandboxRequest rp;
            *rp.mutable_config() = v.pod;
            rp.set_runtime_handler(v.handler);
            cri::RunPodSandboxResponse pod;
            auto* s = v.stub.get();
            timed([s](auto* ctx, auto& q, auto* r) { return s->RunPodSandbox(ctx, q, r); }, rp, pod,
                  v.label + ": RunPodSandbox");
            v.pod_id = pod.pod_sandbox_id();
            vs.push_back(std::move(v));
        }
        std::mt19937 rng(std::random_device{}());
        std::vector<std::size_t> order(vs.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        for (int n = 0; n < warmup + rounds; ++n) {
            std::shuffle(order.begin(), order.end(), rng);
            for (auto i : order) round(vs[i], n, image, n >= warmup);
        }
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        for (auto& v : vs) remove_pod(v);
        return 1;
    }
    for (auto& v : vs) {
        remove_pod(v);
        std::cout << "{\"variant\":\"" << v.label << "\",\"rounds\":" << v.create.size();
        for (const auto& [name, xs] :
             {std::pair{"create", &v.create}, {"start", &v.start}, {"remove", &v.remove}})
            std::cout << ",\"" << name << "\":[" << pct(*xs, 0.5) << "," << pct(*xs, 0.25) << ","
                      << pct(*xs, 0.75) << "]";
        std::cout << "}\n";
    }
    return 0;
}
