// SPDX-License-Identifier: Apache-2.0
// fake-kubelet: the kubelet side of the device plugin API, for tests (tests/README.md: what it
// models).
//
//   fake-kubelet serve --dir D --events F
//       Serves Registration on D/kubelet.sock like kubelet: checks the request, answers, then
//       (as kubelet does, after answering) dials D/<endpoint>, calls GetDevicePluginOptions and
//       holds ListAndWatch open. Each event is one JSON line appended to F: "register",
//       "options", "list" (every ListAndWatch message), "stream-end" (all but "register" with
//       the "resource" they belong to). A second registration of
//       a resource cancels the first's stream. At start it removes every socket in D, as
//       kubelet does (a restart deletes the plugins' sockets). Runs until SIGTERM/SIGINT.
//   fake-kubelet allocate  --socket S --ids a,b [--repeat N]
//   fake-kubelet preferred --socket S --available a,b,c [--must a] --size N
//   fake-kubelet options   --socket S
//   fake-kubelet prestart  --socket S --ids a,b
//   fake-kubelet list      --socket S          (the first ListAndWatch message)
//       One call to the plugin on socket S, the answer as JSON on stdout; a gRPC error is
//       "error: CODE: message" on stderr and exit 1. --repeat N measures Allocate (kubelet
//       side) and prints "allocate: n=N median_us=.. p90_us=.. max_us=.." on stderr.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "inject/text.hpp"
#include "k8s/proto/deviceplugin_v1beta1.grpc.pb.h"
#include "k8s/socket.hpp"
#include "proto_json.hpp"

namespace {

using k8s_test::to_json;

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

class Events {
public:
    explicit Events(const std::string& path)
        : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
    void emit(const std::string& event, const std::string& body, const std::string& resource = "") {
        const std::string line =
            "{\"event\":\"" + event + "\"," +
            (resource.empty() ? "" : "\"resource\":" + quoted(resource) + ",") +
            "\"data\":" + body + "}\n";
        const std::lock_guard lock(mu_);
        (void)!::write(fd_, line.data(), line.size());
    }

private:
    std::mutex mu_;
    int fd_;
};

class Kubelet final : public v1beta1::Registration::Service {
public:
    Kubelet(std::string dir, Events& ev) : dir_(std::move(dir)), ev_(ev) {}

    grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                          v1beta1::Empty*) override {
        ev_.emit("register", to_json(*req));
        // What kubelet checks before it accepts (pkg/kubelet/cm/devicemanager).
        if (req->version() != "v1beta1")
            return {grpc::StatusCode::UNKNOWN, "invalid version " + req->version()};
        if (req->resource_name().find('/') == std::string::npos ||
            req->resource_name().starts_with("kubernetes.io/"))
            return {grpc::StatusCode::UNKNOWN, "invalid resource name " + req->resource_name()};
        if (req->endpoint().find('/') != std::string::npos)
            return {grpc::StatusCode::UNKNOWN, "endpoint must be a basename"};
        std::thread(&Kubelet::dial_back, this, *req).detach();
        return grpc::Status::OK;
    }

private:
    // std::thread hands us its own copy of the request, alive for the whole call.
    void dial_back(const v1beta1::RegisterRequest& req) {
        auto ch = k8s::dial_unix(dir_ + "/" + req.endpoint(), std::chrono::milliseconds(5000));
        if (!ch) {
            ev_.emit("dial-failed", quoted(ch.error().what()));
            return;
        }
        auto stub = v1beta1::DevicePlugin::NewStub(*ch);
        {
            grpc::ClientContext ctx;
            v1beta1::Empty e;
            v1beta1::DevicePluginOptions o;
            const auto st = stub->GetDevicePluginOptions(&ctx, e, &o);
            if (!st.ok()) {
                ev_.emit("options-failed", quoted(k8s::status_text(st)));
                return;
            }
            ev_.emit("options", to_json(o), req.resource_name());
        }
        auto ctx = std::make_shared<grpc::ClientContext>();
        {
            const std::lock_guard lock(mu_);
            if (auto it = streams_.find(req.resource_name()); it != streams_.end())
                it->second->TryCancel();
            streams_[req.resource_name()] = ctx;
        }
        v1beta1::Empty e;
        auto reader = stub->ListAndWatch(ctx.get(), e);
        v1beta1::ListAndWatchResponse r;
        while (reader->Read(&r)) ev_.emit("list", to_json(r), req.resource_name());
        ev_.emit("stream-end", quoted(k8s::status_text(reader->Finish())), req.resource_name());
    }

    std::string dir_;
    Events& ev_;
    std::mutex mu_;
    std::map<std::string, std::shared_ptr<grpc::ClientContext>> streams_;
};

int serve(const std::string& dir, const std::string& events) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    Events ev(events);
    // As kubelet's device manager does at every start: every socket in the folder is removed
    // (the plugins' too: their signal to serve and register again); other files stay.
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (e.is_socket(ec)) std::filesystem::remove(e.path(), ec);
    Kubelet k(dir, ev);
    auto path = k8s::socket_path(dir, "kubelet.sock");
    if (!path) {
        std::cerr << "error: " << path.error().what() << "\n";
        return 1;
    }
    auto s = k8s::serve_unix(*path, {&k});
    if (!s) {
        std::cerr << "error: " << s.error().what() << "\n";
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    s->server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    std::_Exit(0);  // dial-back threads may still hold streams: nothing to join
}

/// The comma-separated parts of `s`; none for "".
std::vector<std::string> split(const std::string& s) {
    return s.empty() ? std::vector<std::string>{} : inject::text::split(s, ',');
}

int finish(const grpc::Status& st, const google::protobuf::Message& m) {
    if (!st.ok()) {
        std::cerr << "error: " << k8s::status_text(st) << "\n";
        return 1;
    }
    std::cout << to_json(m) << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) try {
    CLI::App app{"fake-kubelet: kubelet's side of the device plugin API, for tests"};
    app.require_subcommand(1);
    std::string dir, events, socket, ids, available, must;
    int size = 0, repeat = 1;
    auto* srv = app.add_subcommand("serve", "serve kubelet.sock in --dir");
    srv->add_option("--dir", dir)->required();
    srv->add_option("--events", events)->required();
    for (const char* name : {"allocate", "preferred", "options", "list", "prestart"}) {
        auto* c = app.add_subcommand(name);
        c->add_option("--socket", socket)->required();
        if (std::string(name) == "prestart") c->add_option("--ids", ids)->required();
        if (std::string(name) == "allocate") {
            c->add_option("--ids", ids)->required();
            c->add_option("--repeat", repeat);
        }
        if (std::string(name) == "preferred") {
            c->add_option("--available", available)->required();
            c->add_option("--must", must);
            c->add_option("--size", size)->required();
        }
    }
    CLI11_PARSE(app, argc, argv);
    if (srv->parsed()) return serve(dir, events);

    auto ch = k8s::dial_unix(socket, std::chrono::milliseconds(5000));
    if (!ch) {
        std::cerr << "error: " << ch.error().what() << "\n";
        return 1;
    }
    auto stub = v1beta1::DevicePlugin::NewStub(*ch);
    const std::string cmd = app.get_subcommands().front()->get_name();
    if (cmd == "allocate") {
        // kubelet sends exactly one container per call: all IDs go into that one.
        v1beta1::AllocateRequest req;
        auto* one = req.add_container_requests();
        for (auto& id : split(ids)) one->add_devices_ids(id);
        std::vector<double> us;
        v1beta1::AllocateResponse resp;
        grpc::Status st;
        for (int i = 0; i < std::max(1, repeat); ++i) {
            grpc::ClientContext ctx;
            resp.Clear();
            const auto t0 = std::chrono::steady_clock::now();
            st = stub->Allocate(&ctx, req, &resp);
            us.push_back(
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                    .count());
            if (!st.ok()) break;
        }
        if (repeat > 1 && st.ok()) {
            std::sort(us.begin(), us.end());
            std::cerr << "allocate: n=" << us.size() << " median_us=" << us[us.size() / 2]
                      << " p90_us=" << us[us.size() * 9 / 10] << " max_us=" << us.back() << "\n";
        }
        return finish(
            st, resp.container_responses_size() == 1
                    ? static_cast<const google::protobuf::Message&>(resp.container_responses(0))
                    : resp);
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (cmd == "preferred") {
        v1beta1::PreferredAllocationRequest req;
        auto* c = req.add_container_requests();
        for (auto& id : split(available)) c->add_available_deviceids(id);
        for (auto& id : split(must)) c->add_must_include_deviceids(id);
        c->set_allocation_size(size);
        v1beta1::PreferredAllocationResponse resp;
        const auto st = stub->GetPreferredAllocation(&ctx, req, &resp);
        if (!st.ok()) return finish(st, resp);
        std::string out;
        for (const auto& id : resp.container_responses(0).deviceids())
            out += (out.empty() ? "" : ",") + id;
        std::cout << out << "\n";
        return 0;
    }
    if (cmd == "prestart") {
        // what kubelet calls before a container starts when the options ask for it
        v1beta1::PreStartContainerRequest req;
        for (auto& id : split(ids)) req.add_devices_ids(id);
        v1beta1::PreStartContainerResponse resp;
        return finish(stub->PreStartContainer(&ctx, req, &resp), resp);
    }
    if (cmd == "options") {
        v1beta1::Empty e;
        v1beta1::DevicePluginOptions o;
        return finish(stub->GetDevicePluginOptions(&ctx, e, &o), o);
    }
    v1beta1::Empty e;
    auto reader = stub->ListAndWatch(&ctx, e);
    v1beta1::ListAndWatchResponse r;
    if (!reader->Read(&r)) return finish(reader->Finish(), r);
    std::cout << to_json(r) << "\n";
    ctx.TryCancel();
    return 0;
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
