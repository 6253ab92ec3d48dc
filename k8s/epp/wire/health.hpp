// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// grpc.health.v1 (Check and Watch) on the async API, on the EPP's one gRPC server (both
/// ports). It replaces grpc++'s default health service, which runs on grpc's callback threads:
/// those read ext_proc's sockets too and handed its messages across threads (docs/epp.md,
/// "Threads").

#include <grpcpp/server_builder.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"

namespace epp {

class HealthService {
public:
    using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;

    /// Registers the service on `b`; start() once the server is built.
    explicit HealthService(grpc::ServerBuilder& b);
    HealthService(const HealthService&) = delete;
    HealthService& operator=(const HealthService&) = delete;

    /// Takes calls on `queue` (the server's, read by serve_queue).
    void start(grpc::ServerCompletionQueue& queue);
    /// A service's status; Check of a name never set is NOT_FOUND, Watch sees SERVICE_UNKNOWN.
    void set(const std::string& service, bool serving);

    class WatchCall;

private:
    friend class CheckCall;
    friend class WatchCall;
    [[nodiscard]] Status status_locked(const std::string& service) const;

    grpc::health::v1::Health::AsyncService service_;
    mutable std::mutex mu_;
    std::map<std::string, Status> statuses_;
    std::set<WatchCall*> watchers_;
};

}  // namespace epp
