// SPDX-License-Identifier: Apache-2.0
// fake-cri: kubelet's container start through the CRI, for tests (a CRI client, not a runtime):
//
//   fake-cri run --socket S --image IMG --log-dir D [--cgroup-parent P] [--cdi-device ID]...
//                [--env K=V]... [--annotation K=V]... [--pod-annotation K=V]...
//                [--runtime-handler H] [--timeout-ms N] [--delete-when FILE]
//                -- CMD...
//
// What kubelet does for a pod with one container that was given DRA devices: RunPodSandbox (host
// network, so no CNI is needed; sandbox logs in D), CreateContainer with the image, the command and
// the CDI devices in ContainerConfig.CDI_devices (the field kubelet 1.28+ fills from the DRA
// plugin's cdi_device_ids and from a device plugin's cdi_devices) and the envs a device plugin's
// Allocate gave, the pod's RuntimeClass handler in RunPodSandbox, StartContainer, then
// ContainerStatus until it exited. Prints the container's output (its CRI log in D, the stream/tag
// prefix stripped) on stdout, removes the sandbox (and with it the container) and exits with the
// container's exit code; a CRI error is "error: <call>: CODE: message" on stderr and exit 125. With
// --delete-when FILE, the container runs until FILE exists; then the pod is deleted as kubelet
// deletes one (StopContainer, StopPodSandbox, RemovePodSandbox; retried as kubelet retries, 15
// times a second apart), each call's failure an error line, and the exit code is 0 once all three
// succeeded.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "k8s/socket.hpp"
#include "proto/cri_v1.grpc.pb.h"

namespace {

namespace cri = ::runtime::v1;
using Clock = std::chrono::steady_clock;

int error(const std::string& call, const grpc::Status& s) {
    std::cerr << "error: " << call << ": " << s.error_code() << ": " << s.error_message() << "\n";
    return 125;
}

// A CRI log line is "<RFC3339 time> <stdout|stderr> <P|F> <text>": the text.
std::string log_text(const std::string& path) {
    std::ifstream in(path);
    std::string line, out;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string time, stream, tag;
        fields >> time >> stream >> tag;
        const auto start = time.size() + stream.size() + tag.size() + 3;
        out +=
            (start <= line.size() ? line.substr(start) : std::string()) + (tag == "P" ? "" : "\n");
    }
    return out;
}

struct Options {
    std::string socket, image, log_dir, cgroup_parent, runtime_handler;
    std::vector<std::string> cdi, envs, annotations, pod_annotations, command;
    int timeout_ms = 60000;
    std::string delete_when;
};

/// "K=V" entries into a CRI annotation map.
void add_annotations(google::protobuf::Map<std::string, std::string>& to,
                     const std::vector<std::string>& kvs) {
    for (const auto& kv : kvs)
        to[kv.substr(0, kv.find('='))] =
            kv.find('=') == std::string::npos ? "" : kv.substr(kv.find('=') + 1);
}

cri::PodSandboxConfig sandbox_config(const Options& o) {
    cri::PodSandboxConfig c;
    c.mutable_metadata()->set_name("fake-cri-pod");
    c.mutable_metadata()->set_namespace_("default");
    c.mutable_metadata()->set_uid("fake-cri-" + std::to_string(::getpid()));
    c.set_log_directory(o.log_dir);
    c.mutable_linux()->set_cgroup_parent(o.cgroup_parent);
    c.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(
        cri::NODE);
    add_annotations(*c.mutable_annotations(),
                    o.pod_annotations);  // the pod's own metadata.annotations
    return c;
}

int run(const Options& o) {
    auto ch = k8s::dial_unix(o.socket, std::chrono::milliseconds(5000));
    if (!ch) {
        std::cerr << "error: " << ch.error().what() << "\n";
        return 125;
    }
    auto stub = cri::RuntimeService::NewStub(*ch);
    const auto deadline = [](grpc::ClientContext& ctx) {
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    };
    cri::RunPodSandboxRequest rp;
    *rp.mutable_config() = sandbox_config(o);
    rp.set_runtime_handler(o.runtime_handler);
    cri::RunPodSandboxResponse pod;
    {
        grpc::ClientContext ctx;
        deadline(ctx);
        if (auto s = stub->RunPodSandbox(&ctx, rp, &pod); !s.ok()) return error("RunPodSandbox", s);
    }
    const auto remove_pod = [&] {
        bool all_ok = true;
        for (const bool stop : {true, false}) {
            grpc::ClientContext ctx;
            deadline(ctx);
            cri::StopPodSandboxRequest sr;
            cri::RemovePodSandboxRequest rr;
            sr.set_pod_sandbox_id(pod.pod_sandbox_id());
            rr.set_pod_sandbox_id(pod.pod_sandbox_id());
            cri::StopPodSandboxResponse sresp;
            cri::RemovePodSandboxResponse rresp;
            const auto s = stop ? stub->StopPodSandbox(&ctx, sr, &sresp)
                                : stub->RemovePodSandbox(&ctx, rr, &rresp);
            if (!s.ok()) {
                error(stop ? "StopPodSandbox" : "RemovePodSandbox", s);
                all_ok = false;
            }
        }
        return all_ok;
    };
    cri::CreateContainerRequest cr;
    cr.set_pod_sandbox_id(pod.pod_sandbox_id());
    *cr.mutable_sandbox_config() = rp.config();
    auto* cfg = cr.mutable_config();
    cfg->mutable_metadata()->set_name("c");
    cfg->mutable_image()->set_image(o.image);
    for (const auto& a : o.command) cfg->add_command(a);
    const std::string log =
        "c-" + std::to_string(::getpid()) + ".log";  // fresh even in a reused folder
    cfg->set_log_path(log);
    for (const auto& d : o.cdi) cfg->add_cdi_devices()->set_name(d);
    for (const auto& kv : o.envs) {
        auto* e = cfg->add_envs();
        e->set_key(kv.substr(0, kv.find('=')));
        e->set_value(kv.find('=') == std::string::npos ? "" : kv.substr(kv.find('=') + 1));
    }
    add_annotations(*cfg->mutable_annotations(), o.annotations);
    cri::CreateContainerResponse created;
    {
        grpc::ClientContext ctx;
        deadline(ctx);
        if (auto s = stub->CreateContainer(&ctx, cr, &created); !s.ok()) {
            remove_pod();
            return error("CreateContainer", s);
        }
    }
    {
        grpc::ClientContext ctx;
        deadline(ctx);
        cri::StartContainerRequest sr;
        sr.set_container_id(created.container_id());
        cri::StartContainerResponse sresp;
        if (auto s = stub->StartContainer(&ctx, sr, &sresp); !s.ok()) {
            remove_pod();
            return error("StartContainer", s);
        }
    }
    if (!o.delete_when.empty()) {
        const auto until = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
        while (::access(o.delete_when.c_str(), F_OK) != 0 && Clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        // kubelet retries a pod's deletion until it succeeds: 15 tries a second apart here, each
        // on a new connection (the runtime may have restarted meanwhile)
        for (int attempt = 1;; ++attempt) {
            auto again = k8s::dial_unix(o.socket, std::chrono::milliseconds(5000));
            if (again) {
                stub = cri::RuntimeService::NewStub(*again);
                grpc::ClientContext ctx;
                deadline(ctx);
                cri::StopContainerRequest sr;
                sr.set_container_id(created.container_id());
                sr.set_timeout(2);
                cri::StopContainerResponse sresp;
                const auto s = stub->StopContainer(&ctx, sr, &sresp);
                if (!s.ok()) error("StopContainer", s);
                if (s.ok() && remove_pod()) return 0;
            } else {
                std::cerr << "error: " << again.error().what() << "\n";
            }
            if (attempt == 15) return 125;
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
    }
    const auto until = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
    cri::ContainerStatusResponse st;
    for (;;) {
        grpc::ClientContext ctx;
        deadline(ctx);
        cri::ContainerStatusRequest sr;
        sr.set_container_id(created.container_id());
        if (auto s = stub->ContainerStatus(&ctx, sr, &st); !s.ok()) {
            remove_pod();
            return error("ContainerStatus", s);
        }
        if (st.status().state() == cri::CONTAINER_EXITED) break;
        if (Clock::now() > until) {
            remove_pod();
            std::cerr << "error: the container did not exit within " << o.timeout_ms << " ms\n";
            return 125;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::cout << log_text(o.log_dir + "/" + log) << std::flush;
    remove_pod();
    return st.status().exit_code();
}

}  // namespace

int main(int argc, char** argv) try {
    CLI::App app{"fake-cri: start a container through a CRI runtime as kubelet does, for tests"};
    Options o;
    app.require_subcommand(1);
    auto* r = app.add_subcommand("run", "run one container in a fresh pod and print its output");
    r->add_option("--socket", o.socket, "the runtime's CRI socket")->required();
    r->add_option("--image", o.image)->required();
    r->add_option("--log-dir", o.log_dir, "the pod's log folder (absolute)")->required();
    r->add_option("--cdi-device", o.cdi, "a CDI device name (repeatable)");
    r->add_option("--env", o.envs, "an env K=V of the container (repeatable)");
    r->add_option(
        "--annotation", o.annotations,
        "an annotation K=V of the container, where kubelet puts a device plugin's (repeatable)");
    r->add_option("--pod-annotation", o.pod_annotations,
                  "an annotation K=V of the pod (its metadata.annotations, which its owner writes; "
                  "repeatable)");
    r->add_option("--runtime-handler", o.runtime_handler,
                  "the pod's RuntimeClass handler (default: the runtime's default)");
    r->add_option("--cgroup-parent", o.cgroup_parent, "the pod's cgroup parent (cgroupfs: a path)");
    r->add_option("--timeout-ms", o.timeout_ms);
    r->add_option("--delete-when", o.delete_when,
                  "run until this file exists, then delete the pod as kubelet does");
    // Everything after "--" is the container's command, flags and all: split off before CLI11.
    int n = 1;
    while (n < argc && std::string(argv[n]) != "--") ++n;
    for (int i = n + 1; i < argc; ++i) o.command.emplace_back(argv[i]);
    CLI11_PARSE(app, n, argv);
    if (o.command.empty()) {
        std::cerr << "error: run: no command (after --)\n";
        return 125;
    }
    return run(o);
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 125;
}
