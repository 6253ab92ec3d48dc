// SPDX-License-Identifier: Apache-2.0
#pragma once

// The gRPC faces of the plugin: the plugin watcher's Registration service (on
// <plugins-registry>/gcu.enflame.com-reg.sock) and kubelet's DRAPlugin service in both API
// versions (on <plugins-dir>/gcu.enflame.com/dra.sock), over one Driver.

#include <atomic>
#include <functional>
#include <string>

#include "dra/driver.hpp"
#include "k8s/proto/dra_v1.grpc.pb.h"
#include "k8s/proto/dra_v1beta1.grpc.pb.h"
#include "k8s/proto/pluginregistration.grpc.pb.h"

namespace dra {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

/// What GetInfo answers: type DRAPlugin, our name, the absolute path of dra.sock, and the
/// versions we serve, v1 first (kubelet takes the first it knows).
[[nodiscard]] pluginregistration::PluginInfo plugin_info(const std::string& driver,
                                                         const std::string& endpoint);

/// The plugin watcher's side of the registration. `on_registered` runs (on a gRPC thread) each
/// time kubelet reports it registered us: a kubelet that restarted registers existing
/// sockets again, and has deleted the node's ResourceSlices.
class Registration final : public pluginregistration::Registration::Service {
public:
    explicit Registration(pluginregistration::PluginInfo info,
                          std::function<void()> on_registered = {})
        : info_(std::move(info)), on_registered_(std::move(on_registered)) {}
    grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                         pluginregistration::PluginInfo* out) override;
    grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                          const pluginregistration::RegistrationStatus* st,
                                          pluginregistration::RegistrationStatusResponse*) override;
    [[nodiscard]] bool registered() const { return registered_.load(); }

private:
    pluginregistration::PluginInfo info_;
    std::function<void()> on_registered_;
    std::atomic<bool> registered_{false};
};

/// DRAPlugin, dra/v1.
class DraV1 final : public drav1::DRAPlugin::Service {
public:
    explicit DraV1(Driver& d) : d_(d) {}
    grpc::Status NodePrepareResources(grpc::ServerContext*,
                                      const drav1::NodePrepareResourcesRequest* req,
                                      drav1::NodePrepareResourcesResponse* out) override;
    grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                        const drav1::NodeUnprepareResourcesRequest* req,
                                        drav1::NodeUnprepareResourcesResponse* out) override;

private:
    Driver& d_;
};

/// DRAPlugin, dra/v1beta1 (kubelet 1.32-1.33): the same messages without share_id.
class DraV1beta1 final : public drav1beta1::DRAPlugin::Service {
public:
    explicit DraV1beta1(Driver& d) : d_(d) {}
    grpc::Status NodePrepareResources(grpc::ServerContext*,
                                      const drav1beta1::NodePrepareResourcesRequest* req,
                                      drav1beta1::NodePrepareResourcesResponse* out) override;
    grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                        const drav1beta1::NodeUnprepareResourcesRequest* req,
                                        drav1beta1::NodeUnprepareResourcesResponse* out) override;

private:
    Driver& d_;
};

}  // namespace dra
