// SPDX-License-Identifier: Apache-2.0
// fake-pod-resources: kubelet's pod-resources API (v1 List), for the exporter's tests
// (docs/kubelet-wire.md, pod attribution).
//
//   fake-pod-resources --socket S --response F
//       Serves /v1.PodResourcesLister/List on the unix socket S (mode 0600, as kubelet's). Every
//       call answers with F, the JSON form of ListPodResourcesResponse (proto field names, e.g.
//       {"pod_resources": [{"name": .., "namespace": .., "containers": [{"name": ..,
//       "devices": [{"resource_name": .., "device_ids": [..]}], "dynamic_resources": [..]}]}]}),
//       read again on each call so a test can change the answer while the exporter runs. A file
//       that does not parse is an INTERNAL error naming it. Each call is counted on stderr
//       ("list N"). Runs until SIGTERM/SIGINT.
#include <google/protobuf/util/json_util.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <fstream>
#include <iostream>
#include <sstream>

#include "k8s/daemon_setup.hpp"
#include "k8s/proto/podresources_v1.grpc.pb.h"
#include "k8s/socket.hpp"

namespace {

class Lister final : public v1::PodResourcesLister::Service {
public:
    explicit Lister(std::string file) : file_(std::move(file)) {}

    grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                      v1::ListPodResourcesResponse* out) override {
        std::cerr << "list " << ++calls_ << std::endl;
        std::ifstream in(file_);
        if (!in) return {grpc::StatusCode::INTERNAL, "cannot read " + file_};
        std::stringstream text;
        text << in.rdbuf();
        const auto st = google::protobuf::util::JsonStringToMessage(text.str(), out);
        if (!st.ok()) return {grpc::StatusCode::INTERNAL, file_ + ": " + std::string(st.message())};
        return grpc::Status::OK;
    }

private:
    std::string file_;
    std::atomic<int> calls_{0};
};

}  // namespace

int main(int argc, char** argv) try {
    std::string socket, response;
    CLI::App app{"fake-pod-resources: kubelet's pod-resources List, answered from a JSON file",
                 "fake-pod-resources"};
    app.add_option("--socket", socket, "the unix socket to serve on")->required();
    app.add_option("--response", response, "the JSON ListPodResourcesResponse to answer with")
        ->required();
    CLI11_PARSE(app, argc, argv);

    const sigset_t set = k8s::block_stop_signals();
    Lister lister(response);
    auto s = k8s::serve_unix(socket, {&lister});
    if (!s) {
        std::cerr << "error: " << s.error().what() << "\n";
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    k8s::stop_unix(*s, std::chrono::milliseconds(200));
    return 0;
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
