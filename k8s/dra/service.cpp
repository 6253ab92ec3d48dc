// SPDX-License-Identifier: Apache-2.0
#include "dra/service.hpp"

#include "inject/log.hpp"

namespace dra {

namespace {

// The request's claims; both API versions have the same Claim message.
template <class Req>
std::vector<ClaimRef> refs(const Req& req) {
    std::vector<ClaimRef> out;
    for (const auto& c : req.claims()) out.push_back({c.namespace_(), c.name(), c.uid()});
    return out;
}

// kubelet's deadline (45 s) and its cancellation, as the driver checks them before committing.
CallLimits limits(grpc::ServerContext* ctx) {
    CallLimits l;
    if (!ctx) return l;
    const auto deadline = ctx->deadline();
    const auto now = std::chrono::system_clock::now();
    // No deadline is gpr_inf_future: a time far past anything reachable.
    if (deadline < now + std::chrono::hours(24 * 365))
        l.deadline =
            std::chrono::steady_clock::now() +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline - now);
    l.cancelled = [ctx] { return ctx->IsCancelled(); };
    return l;
}

template <class Req, class Resp>
grpc::Status prepare(Driver& d, grpc::ServerContext* ctx, const Req& req, Resp* out) {
    for (auto& [uid, answer] : d.prepare(refs(req), limits(ctx))) {
        auto& r = (*out->mutable_claims())[uid];
        r.set_error(answer.error);
        for (const auto& dev : answer.devices) {
            auto* o = r.add_devices();
            for (const auto& n : dev.requests) o->add_request_names(n);
            o->set_pool_name(dev.pool);
            o->set_device_name(dev.device);
            for (const auto& id : dev.cdi_ids) o->add_cdi_device_ids(id);
        }
    }
    return grpc::Status::OK;
}

template <class Req, class Resp>
grpc::Status unprepare(Driver& d, const Req& req, Resp* out) {
    for (auto& [uid, err] : d.unprepare(refs(req))) (*out->mutable_claims())[uid].set_error(err);
    return grpc::Status::OK;
}

}  // namespace

pluginregistration::PluginInfo plugin_info(const std::string& driver, const std::string& endpoint) {
    pluginregistration::PluginInfo i;
    i.set_type("DRAPlugin");
    i.set_name(driver);
    i.set_endpoint(endpoint);
    i.add_supported_versions("v1.DRAPlugin");
    i.add_supported_versions("v1beta1.DRAPlugin");
    return i;
}

grpc::Status Registration::GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                                   pluginregistration::PluginInfo* out) {
    *out = info_;
    return grpc::Status::OK;
}

grpc::Status Registration::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus* st,
    pluginregistration::RegistrationStatusResponse*) {
    registered_ = st->plugin_registered();
    if (st->plugin_registered()) {
        inject::log::info("kubelet registered {} (endpoint {})", info_.name(), info_.endpoint());
        if (on_registered_) on_registered_();
    } else {
        spdlog::error("kubelet did not register {}: {}", info_.name(), st->error());
    }
    return grpc::Status::OK;
}

grpc::Status DraV1::NodePrepareResources(grpc::ServerContext* ctx,
                                         const drav1::NodePrepareResourcesRequest* req,
                                         drav1::NodePrepareResourcesResponse* out) {
    return prepare(d_, ctx, *req, out);
}
grpc::Status DraV1::NodeUnprepareResources(grpc::ServerContext*,
                                           const drav1::NodeUnprepareResourcesRequest* req,
                                           drav1::NodeUnprepareResourcesResponse* out) {
    return unprepare(d_, *req, out);
}
grpc::Status DraV1beta1::NodePrepareResources(grpc::ServerContext* ctx,
                                              const drav1beta1::NodePrepareResourcesRequest* req,
                                              drav1beta1::NodePrepareResourcesResponse* out) {
    return prepare(d_, ctx, *req, out);
}
grpc::Status DraV1beta1::NodeUnprepareResources(
    grpc::ServerContext*, const drav1beta1::NodeUnprepareResourcesRequest* req,
    drav1beta1::NodeUnprepareResourcesResponse* out) {
    return unprepare(d_, *req, out);
}

}  // namespace dra
