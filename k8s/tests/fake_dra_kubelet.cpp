// SPDX-License-Identifier: Apache-2.0
// fake-dra-kubelet: kubelet's side of DRA, for tests (docs/kubelet-wire.md: DRA, the fakes).
//
//   fake-dra-kubelet register --registry D --name gcu.enflame.com [--kubelet-minor 34] [--wait-ms
//   N]
//       What kubelet's plugin watcher does with D/<name>-reg.sock: waits for it (up to
//       --wait-ms), dials it, calls GetInfo, checks the answer as kubelet does (type DRAPlugin,
//       the name, an absolute endpoint that is a socket, a supported version the kubelet of
//       --kubelet-minor knows, in its order of preference), then NotifyRegistrationStatus
//       (registered, or not with the reason). Prints {"info":..,"version":..} as JSON; a
//       refusal is "error: ..." on stderr and exit 1.
//   fake-dra-kubelet prepare   --socket S --version v1|v1beta1 --claim ns/name/uid... [--repeat N]
//   fake-dra-kubelet unprepare --socket S --version v1|v1beta1 --claim ns/name/uid...
//       [--timeout-ms N] (the call's deadline, kubelet's 45 s by default)
//       One NodePrepareResources / NodeUnprepareResources call with the claims, the answer as
//       JSON on stdout; a gRPC error is "error: CODE: message" on stderr and exit 1. --repeat N
//       measures the call (kubelet side) and prints "prepare: n=N median_us=.. p90_us=..
//       max_us=.." on stderr; with --unprepare-between each prepare is followed by an untimed
//       unprepare, so every timed prepare fetches the claim and writes its spec afresh.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "inject/text.hpp"
#include "k8s/proto/dra_v1.grpc.pb.h"
#include "k8s/proto/dra_v1beta1.grpc.pb.h"
#include "k8s/proto/pluginregistration.grpc.pb.h"
#include "k8s/socket.hpp"
#include "proto_json.hpp"

namespace {

using k8s_test::to_json;

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

int error(const std::string& what) {
    std::cerr << "error: " << what << "\n";
    return 1;
}

/// The parts of `s` between each `sep`; none for "".
std::vector<std::string> split(const std::string& s, char sep) {
    return s.empty() ? std::vector<std::string>{} : inject::text::split(s, sep);
}

bool is_socket(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

int do_register(const std::string& registry, const std::string& name, const std::string& known,
                int wait_ms) {
    const std::string path = registry + "/" + name + "-reg.sock";
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (!is_socket(path) && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto ch = k8s::dial_unix(path, std::chrono::milliseconds(std::max(wait_ms, 1000)));
    if (!ch) return error(ch.error().what());
    auto stub = pluginregistration::Registration::NewStub(*ch);
    pluginregistration::PluginInfo info;
    {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        const auto st = stub->GetInfo(&ctx, pluginregistration::InfoRequest{}, &info);
        if (!st.ok()) return error("GetInfo: " + k8s::status_text(st));
    }
    // What kubelet's plugin watcher and DRA handler check (pkg/kubelet/pluginmanager,
    // pkg/kubelet/cm/dra/plugin).
    std::string why, chosen;
    if (info.type() != "DRAPlugin")
        why = "unknown plugin type '" + info.type() + "'";
    else if (info.name() != name)
        why = "plugin name '" + info.name() + "' does not match its socket";
    else if (info.endpoint().empty() || info.endpoint().front() != '/')
        why = "endpoint '" + info.endpoint() + "' is not absolute";
    else if (!is_socket(info.endpoint()))
        why = "endpoint '" + info.endpoint() + "' is not a socket";
    if (why.empty()) {
        // The plugin lists its services in its own preference; kubelet takes the first it knows.
        const auto kubelet_knows = split(known, ',');
        for (const auto& v : info.supported_versions()) {
            const auto service = v.substr(0, v.find('.'));
            if (v.ends_with(".DRAPlugin") && std::find(kubelet_knows.begin(), kubelet_knows.end(),
                                                       service) != kubelet_knows.end()) {
                chosen = service;
                break;
            }
        }
        if (chosen.empty())
            why = "none of the supported versions is one kubelet knows (" + known + ")";
    }
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(why.empty());
    status.set_error(why);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    pluginregistration::RegistrationStatusResponse resp;
    const auto st = stub->NotifyRegistrationStatus(&ctx, status, &resp);
    if (!st.ok()) return error("NotifyRegistrationStatus: " + k8s::status_text(st));
    if (!why.empty()) return error(why);
    std::cout << "{\"info\":" << to_json(info) << ",\"version\":\"" << chosen << "\"}\n";
    return 0;
}

template <class Claim>
bool fill(const std::vector<std::string>& claims, google::protobuf::RepeatedPtrField<Claim>* out) {
    for (const auto& c : claims) {
        const auto parts = split(c, '/');
        if (parts.size() != 3) return false;
        auto* m = out->Add();
        m->set_namespace_(parts[0]);
        m->set_name(parts[1]);
        m->set_uid(parts[2]);
    }
    return true;
}

// One call per repeat; the last answer printed, timings on stderr.
template <class Stub, class PrepReq, class PrepResp, class UnprepReq, class UnprepResp>
int call(Stub& stub, bool prepare, const std::vector<std::string>& claims, int repeat, bool cycle,
         int timeout_ms) {
    PrepReq preq;
    UnprepReq ureq;
    if (!fill(claims, preq.mutable_claims()) || !fill(claims, ureq.mutable_claims()))
        return error("--claim wants namespace/name/uid");
    PrepResp presp;
    UnprepResp uresp;
    grpc::Status st;
    std::vector<double> us;
    for (int i = 0; i < std::max(1, repeat); ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
        const auto t0 = std::chrono::steady_clock::now();
        st = prepare ? stub.NodePrepareResources(&ctx, preq, &presp)
                     : stub.NodeUnprepareResources(&ctx, ureq, &uresp);
        us.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
        if (!st.ok()) return error(k8s::status_text(st));
        if (prepare && cycle && i + 1 < std::max(1, repeat)) {
            grpc::ClientContext uctx;
            if (const auto u = stub.NodeUnprepareResources(&uctx, ureq, &uresp); !u.ok())
                return error("unprepare between: " + k8s::status_text(u));
        }
    }
    if (repeat > 1) {
        std::sort(us.begin(), us.end());
        std::cerr << (prepare ? "prepare" : "unprepare") << ": n=" << us.size()
                  << " median_us=" << us[us.size() / 2] << " p90_us=" << us[us.size() * 9 / 10]
                  << " max_us=" << us.back() << "\n";
    }
    std::cout << (prepare ? to_json(presp) : to_json(uresp)) << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) try {
    CLI::App app{
        "fake-dra-kubelet: kubelet's side of DRA (plugin watcher, NodePrepare/NodeUnprepare), for "
        "tests"};
    app.require_subcommand(1);
    std::string registry, name = "gcu.enflame.com", known = "v1,v1beta1", socket, version = "v1";
    std::vector<std::string> claims;
    int wait_ms = 5000, repeat = 1, timeout_ms = 45000;
    bool cycle = false;
    auto* reg = app.add_subcommand("register", "register the plugin whose socket is in --registry");
    reg->add_option("--registry", registry)->required();
    reg->add_option("--name", name);
    int kubelet_minor = 34;
    reg->add_option(
        "--kubelet-minor", kubelet_minor,
        "the kubelet played (1.N): 1.34+ knows DRAPlugin v1 and v1beta1, 1.32-1.33 v1beta1, "
        "1.31 v1alpha4");
    reg->add_option("--wait-ms", wait_ms, "how long to wait for the registration socket");
    for (const char* cmd : {"prepare", "unprepare"}) {
        auto* c = app.add_subcommand(cmd);
        c->add_option("--socket", socket)->required();
        c->add_option("--version", version)->check(CLI::IsMember({"v1", "v1beta1"}));
        c->add_option("--claim", claims, "namespace/name/uid (repeatable)")->required();
        c->add_option("--repeat", repeat);
        c->add_option("--timeout-ms", timeout_ms, "the call's deadline (kubelet's: 45 s)");
        if (std::string(cmd) == "prepare") c->add_flag("--unprepare-between", cycle);
    }
    CLI11_PARSE(app, argc, argv);
    // What each kubelet's DRA plugin manager knows (upstream pkg/kubelet/cm/dra: v1 services
    // from 1.34, v1beta1 from 1.32, v1alpha4 in 1.31), in its order of preference.
    if (reg->parsed()) {
        known = kubelet_minor >= 34 ? "v1,v1beta1" : kubelet_minor >= 32 ? "v1beta1" : "v1alpha4";
        return do_register(registry, name, known, wait_ms);
    }

    auto ch = k8s::dial_unix(socket, std::chrono::milliseconds(5000));
    if (!ch) return error(ch.error().what());
    const bool prepare = app.get_subcommands().front()->get_name() == "prepare";
    if (version == "v1") {
        auto stub = drav1::DRAPlugin::NewStub(*ch);
        return call<drav1::DRAPlugin::Stub, drav1::NodePrepareResourcesRequest,
                    drav1::NodePrepareResourcesResponse, drav1::NodeUnprepareResourcesRequest,
                    drav1::NodeUnprepareResourcesResponse>(*stub, prepare, claims, repeat, cycle,
                                                           timeout_ms);
    }
    auto stub = drav1beta1::DRAPlugin::NewStub(*ch);
    return call<drav1beta1::DRAPlugin::Stub, drav1beta1::NodePrepareResourcesRequest,
                drav1beta1::NodePrepareResourcesResponse, drav1beta1::NodeUnprepareResourcesRequest,
                drav1beta1::NodeUnprepareResourcesResponse>(*stub, prepare, claims, repeat, cycle,
                                                            timeout_ms);
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
