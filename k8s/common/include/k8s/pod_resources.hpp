// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// A client of kubelet's pod-resources API (v1 List; docs/kubelet-wire.md): which pods'
/// containers hold which devices. The exporter attributes cards with it, the DRS manager finds
/// the pods that hold DRS instances.

#include <grpcpp/channel.h>

#include <chrono>
#include <memory>
#include <string>

#include "inject/result.hpp"
#include "k8s/proto/podresources_v1.pb.h"

namespace k8s {

/// kubelet's default socket.
inline constexpr const char* kPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

/// kubelet's pod-resources socket. The channel is kept between calls (a new one per call
/// costs more CPU than the whole rest of an exporter collection) and dropped after a failure,
/// so a kubelet that restarted is dialled afresh.
class PodResourcesClient {
public:
    PodResourcesClient(std::string socket, std::chrono::milliseconds timeout)
        : socket_(std::move(socket)), timeout_(timeout) {}
    /// One List call, connected and answered within the timeout. Errors name the socket; a
    /// missing socket is NotFound.
    [[nodiscard]] inject::Result<v1::ListPodResourcesResponse> list();
    [[nodiscard]] const std::string& socket() const noexcept { return socket_; }

private:
    std::string socket_;
    std::chrono::milliseconds timeout_;
    std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace k8s
