// SPDX-License-Identifier: Apache-2.0
#include "device-plugin/service.hpp"

#include <google/protobuf/util/message_differencer.h>

#include <chrono>

#include "inject/log.hpp"
#include "k8s/nri_lock.hpp"

namespace device_plugin {

void State::update(Settings s, Inventory inv) {
    {
        const std::lock_guard lock(mu_);
        settings_ = std::move(s);
        inv_ = std::move(inv);
        ++generation_;
    }
    cv_.notify_all();
}

std::uint64_t State::next_epoch() {
    std::uint64_t e = 0;
    {
        const std::lock_guard lock(mu_);
        e = ++epoch_;
    }
    cv_.notify_all();
    return e;
}

void State::set_allocator(Allocator a) {
    const std::lock_guard lock(mu_);
    allocator_ = std::move(a);
}

State::Allocator State::allocator() const {
    const std::lock_guard lock(mu_);
    return allocator_;
}

void State::set_preferrer(Preferrer p) {
    const std::lock_guard lock(mu_);
    preferrer_ = std::move(p);
}

State::Preferrer State::preferrer() const {
    const std::lock_guard lock(mu_);
    return preferrer_;
}

Settings State::settings() const {
    const std::lock_guard lock(mu_);
    return settings_;
}

std::size_t State::waiting() const {
    const std::lock_guard lock(mu_);
    return waiting_;
}

Inventory State::inventory() const {
    const std::lock_guard lock(mu_);
    return inv_;
}

std::optional<std::string> nri_missing(const std::string& lock,
                                       const v1beta1::AllocateRequest& req) {
    if (lock.empty()) return std::nullopt;
    auto held = k8s::nri_lock_held(lock);
    if (held && *held) return std::nullopt;
    std::string ids;
    for (const auto& c : req.container_requests()) {
        for (const auto& id : c.devices_ids()) ids += (ids.empty() ? "" : ",") + id;
    }
    if (!held)
        return "cannot tell whether enflame-nri-plugin runs on this node (" + held.error().what() +
               "): cannot inject " + ids;
    return "enflame-nri-plugin is not running on this node: cannot inject " + ids;
}

v1beta1::DevicePluginOptions plugin_options() {
    v1beta1::DevicePluginOptions o;
    o.set_pre_start_required(false);
    o.set_get_preferred_allocation_available(true);
    return o;
}

grpc::Status Service::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                             v1beta1::DevicePluginOptions* out) {
    *out = plugin_options();
    return grpc::Status::OK;
}

grpc::Status Service::ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                                   grpc::ServerWriter<v1beta1::ListAndWatchResponse>* w) {
    std::unique_lock lock(state_->mu_);
    std::uint64_t seen = state_->generation_;
    v1beta1::ListAndWatchResponse last = list_response(state_->inv_);
    lock.unlock();
    if (!w->Write(last)) return grpc::Status::OK;
    inject::log::info("ListAndWatch: sent {} devices", last.devices_size());
    lock.lock();
    for (;;) {
        // Woken by an update or a new epoch; the timeout only notices a client that went away.
        ++state_->waiting_;
        state_->cv_.wait_for(lock, cancel_check_, [&] {
            return state_->generation_ != seen || state_->epoch_ != epoch_;
        });
        --state_->waiting_;
        if (state_->epoch_ != epoch_ || ctx->IsCancelled()) return grpc::Status::OK;
        if (state_->generation_ == seen) continue;
        seen = state_->generation_;
        auto now = list_response(state_->inv_);
        if (google::protobuf::util::MessageDifferencer::Equals(now, last)) continue;
        lock.unlock();
        if (!w->Write(now)) return grpc::Status::OK;
        inject::log::info("ListAndWatch: sent {} devices after a change", now.devices_size());
        last = std::move(now);
        lock.lock();
    }
}

grpc::Status Service::GetPreferredAllocation(grpc::ServerContext*,
                                             const v1beta1::PreferredAllocationRequest* req,
                                             v1beta1::PreferredAllocationResponse* out) {
    const Inventory inv = state_->inventory();
    if (const auto hook = state_->preferrer()) return hook(inv, *req, out);
    for (const auto& c : req->container_requests()) {
        if (c.allocation_size() < 0)
            return {grpc::StatusCode::INVALID_ARGUMENT,
                    "allocation_size " + std::to_string(c.allocation_size()) + " is negative"};
        const std::vector<std::string> avail(c.available_deviceids().begin(),
                                             c.available_deviceids().end());
        const std::vector<std::string> must(c.must_include_deviceids().begin(),
                                            c.must_include_deviceids().end());
        auto ids = preferred(inv, avail, must, static_cast<std::size_t>(c.allocation_size()));
        auto* r = out->add_container_responses();
        for (auto& id : ids) r->add_deviceids(std::move(id));
    }
    return grpc::Status::OK;
}

grpc::Status Service::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                               v1beta1::AllocateResponse* out) {
    const Inventory inv = state_->inventory();
    const Settings s = state_->settings();
    if (auto why = nri_missing(s.require_nri_lock, *req)) {
        inject::log::warn("Allocate refused: {}", *why);
        return {grpc::StatusCode::FAILED_PRECONDITION, *why};
    }
    if (const auto hook = state_->allocator()) return hook(inv, s, *req, out);
    for (const auto& c : req->container_requests()) {
        const std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
        auto r = allocate(inv, s, ids);
        if (!r) {
            inject::log::warn("Allocate refused: {}", r.error().what());
            const auto code = r.error().code() == inject::Errc::NotFound
                                  ? grpc::StatusCode::NOT_FOUND
                                  : grpc::StatusCode::INVALID_ARGUMENT;
            return {code, r.error().what()};
        }
        *out->add_container_responses() = std::move(*r);
    }
    return grpc::Status::OK;
}

grpc::Status Service::PreStartContainer(grpc::ServerContext*,
                                        const v1beta1::PreStartContainerRequest*,
                                        v1beta1::PreStartContainerResponse*) {
    return grpc::Status::OK;
}

}  // namespace device_plugin
