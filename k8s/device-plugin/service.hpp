// SPDX-License-Identifier: Apache-2.0
#pragma once

// The gRPC face of the plugin: kubelet's DevicePlugin service over a shared, lock-protected
// state that the daemon's loop updates (health, SIGHUP). Every serve (after a kubelet restart)
// gets a fresh service object on the same state; ending an epoch ends that service's
// ListAndWatch streams.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "device-plugin/plugin.hpp"
#include "k8s/proto/deviceplugin_v1beta1.grpc.pb.h"

namespace device_plugin {

/// What the daemon's loop and the gRPC threads share.
class State {
public:
    State(Settings s, Inventory inv) : settings_(std::move(s)), inv_(std::move(inv)) {}

    /// Replaces the inventory and settings; ListAndWatch streams send the new list if it
    /// differs from what they sent.
    void update(Settings s, Inventory inv);
    /// Starts a new epoch: streams of older epochs end.
    std::uint64_t next_epoch();

    /// Allocate's answer when set (HAMi mode): given this state's inventory and settings.
    using Allocator =
        std::function<grpc::Status(const Inventory&, const Settings&,
                                   const v1beta1::AllocateRequest&, v1beta1::AllocateResponse*)>;
    void set_allocator(Allocator a);
    [[nodiscard]] Allocator allocator() const;
    /// GetPreferredAllocation's answer when set (HAMi mode: the cards HAMi chose).
    using Preferrer =
        std::function<grpc::Status(const Inventory&, const v1beta1::PreferredAllocationRequest&,
                                   v1beta1::PreferredAllocationResponse*)>;
    void set_preferrer(Preferrer p);
    [[nodiscard]] Preferrer preferrer() const;

    [[nodiscard]] Settings settings() const;
    [[nodiscard]] Inventory inventory() const;
    /// How many ListAndWatch streams are blocked waiting for a change (a seam for tests, which
    /// must know a stream waits before they check what wakes it).
    [[nodiscard]] std::size_t waiting() const;

private:
    friend class Service;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    Settings settings_;
    Inventory inv_;
    std::uint64_t generation_ = 0;
    std::uint64_t epoch_ = 0;
    std::size_t waiting_ = 0;
    Allocator allocator_;
    Preferrer preferrer_;
};

/// kubelet's DevicePlugin service for one epoch of `state`.
class Service final : public v1beta1::DevicePlugin::Service {
public:
    /// `cancel_check`: how often a ListAndWatch stream with nothing to send looks whether its
    /// client went away (a cancelled call wakes nobody).
    explicit Service(std::shared_ptr<State> state,
                     std::chrono::milliseconds cancel_check = std::chrono::seconds(2))
        : state_(std::move(state)), epoch_(state_->next_epoch()), cancel_check_(cancel_check) {}

    grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                        v1beta1::DevicePluginOptions* out) override;
    grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                              grpc::ServerWriter<v1beta1::ListAndWatchResponse>* w) override;
    grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                        const v1beta1::PreferredAllocationRequest* req,
                                        v1beta1::PreferredAllocationResponse* out) override;
    grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                          v1beta1::AllocateResponse* out) override;
    grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                   v1beta1::PreStartContainerResponse*) override;

private:
    std::shared_ptr<State> state_;
    std::uint64_t epoch_;
    std::chrono::milliseconds cancel_check_;
};

/// With `lock` set (--require-nri), why Allocate must refuse `req`: enflame-nri-plugin does not
/// hold `lock` (or it cannot be checked), so the env we answer would reach no one who turns it
/// into a card and the container would start without it. One line naming the device IDs.
/// nullopt: answer (the plugin runs, or `lock` is empty).
[[nodiscard]] std::optional<std::string> nri_missing(const std::string& lock,
                                                     const v1beta1::AllocateRequest& req);

/// The options we register with (and GetDevicePluginOptions answers).
[[nodiscard]] v1beta1::DevicePluginOptions plugin_options();

}  // namespace device_plugin
