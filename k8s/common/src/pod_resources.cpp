// SPDX-License-Identifier: Apache-2.0
#include "k8s/pod_resources.hpp"

#include <unistd.h>

#include "k8s/proto/podresources_v1.grpc.pb.h"
#include "k8s/socket.hpp"

namespace k8s {

inject::Result<v1::ListPodResourcesResponse> PodResourcesClient::list() {
    if (::access(socket_.c_str(), F_OK) != 0) {
        channel_.reset();
        return inject::fail(inject::sys_error("pod-resources socket '" + socket_ + "'"));
    }
    // The channel is kept: gRPC reconnects it to a kubelet that restarted on the same path
    // (exporter_attribution_test: AKubeletRestartBetweenPassesIsFollowedInTheSamePass). After
    // a failure it is dropped and dialled afresh next time.
    if (!channel_) {
        auto ch = dial_unix(socket_, timeout_);
        if (!ch) return inject::fail(std::move(ch).error());
        channel_ = std::move(*ch);
    }
    auto stub = v1::PodResourcesLister::NewStub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
    v1::ListPodResourcesResponse resp;
    const auto st = stub->List(&ctx, v1::ListPodResourcesRequest{}, &resp);
    if (!st.ok()) {
        channel_.reset();
        return inject::fail(inject::Errc::Io,
                            "pod-resources socket '" + socket_ + "': List: " + status_text(st));
    }
    return resp;
}

}  // namespace k8s
