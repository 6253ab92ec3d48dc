// SPDX-License-Identifier: Apache-2.0
#include "epp/wire/health.hpp"

#include <optional>

#include "epp/wire/completion.hpp"

namespace epp {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// One Check: the status from the table, or NOT_FOUND for a service never set (as grpc++'s
// default service answers).
class CheckCall final : public Tag {
public:
    CheckCall(HealthService& h, grpc::ServerCompletionQueue& q) : h_(h), q_(q), responder_(&ctx_) {
        h_.service_.RequestCheck(&ctx_, &request_, &responder_, &q_, &q_, this);
    }

    void proceed(bool ok) override {
        if (!ok || answered_) {
            delete this;
            return;
        }
        new CheckCall(h_, q_);
        answered_ = true;
        HealthCheckResponse response;
        {
            const std::lock_guard l(h_.mu_);
            const auto it = h_.statuses_.find(request_.service());
            if (it == h_.statuses_.end()) {
                responder_.FinishWithError(
                    grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service"), this);
                return;
            }
            response.set_status(it->second);
        }
        responder_.Finish(response, grpc::Status::OK, this);
    }

private:
    HealthService& h_;
    grpc::ServerCompletionQueue& q_;
    grpc::ServerContext ctx_;
    HealthCheckRequest request_;
    grpc::ServerAsyncResponseWriter<HealthCheckResponse> responder_;
    bool answered_ = false;
};

// One Watch: the status now, then each change, until the client leaves (grpc tells that with
// the done tag; the call is deleted once that came and no write is outstanding).
class HealthService::WatchCall final : public Tag {
public:
    WatchCall(HealthService& h, grpc::ServerCompletionQueue& q) : h_(h), q_(q), writer_(&ctx_) {
        ctx_.AsyncNotifyWhenDone(&done_);
        h_.service_.RequestWatch(&ctx_, &request_, &writer_, &q_, &q_, this);
    }

    // The accept, then each write.
    void proceed(bool ok) override {
        std::unique_lock l(h_.mu_);
        if (!accepted_) {
            if (!ok) {  // shutting down: the call never started, so no done tag comes
                l.unlock();
                delete this;
                return;
            }
            accepted_ = true;
            new WatchCall(h_, q_);
            h_.watchers_.insert(this);
        } else {
            writing_ = false;
        }
        if (ended_) {
            l.unlock();
            delete this;
            return;
        }
        if (ok) send_locked();
    }

    // Under the service's lock: write the status if it differs from the last one sent.
    void send_locked() {
        if (writing_ || ended_) return;
        const Status now = h_.status_locked(request_.service());
        if (sent_ && *sent_ == now) return;
        sent_ = now;
        HealthCheckResponse response;
        response.set_status(now);
        writing_ = true;
        writer_.Write(response, this);
    }

private:
    struct Done final : Tag {
        explicit Done(WatchCall& c) : call(c) {}
        void proceed(bool) override { call.ended(); }
        WatchCall& call;
    };

    void ended() {
        std::unique_lock l(h_.mu_);
        ended_ = true;
        h_.watchers_.erase(this);
        if (writing_) return;  // deleted when the write comes back
        l.unlock();
        delete this;
    }

    HealthService& h_;
    grpc::ServerCompletionQueue& q_;
    grpc::ServerContext ctx_;
    HealthCheckRequest request_;
    grpc::ServerAsyncWriter<HealthCheckResponse> writer_;
    Done done_{*this};
    bool accepted_ = false, writing_ = false, ended_ = false;
    std::optional<Status> sent_;
};

HealthService::HealthService(grpc::ServerBuilder& b) {
    b.RegisterService(&service_);
}

void HealthService::start(grpc::ServerCompletionQueue& queue) {
    new CheckCall(*this, queue);
    new WatchCall(*this, queue);
}

void HealthService::set(const std::string& service, bool serving) {
    const std::lock_guard l(mu_);
    statuses_[service] = serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
    for (auto* w : watchers_) w->send_locked();
}

HealthService::Status HealthService::status_locked(const std::string& service) const {
    const auto it = statuses_.find(service);
    return it == statuses_.end() ? HealthCheckResponse::SERVICE_UNKNOWN : it->second;
}

}  // namespace epp
