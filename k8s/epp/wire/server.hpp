// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// enflame-epp's gRPC side: the ExternalProcessor service (one epp::Stream per Process call,
/// on the ext_proc port, plaintext or TLS) and the grpc.health.v1 service on a port of its own
/// (plaintext, as kubelet's gRPC probes and Envoy's health checks speak it). docs/epp.md.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "epp/request.hpp"
#include "epp/wire/stream.hpp"
#include "inject/result.hpp"

namespace prometheus {
class Registry;
}

namespace epp {

/// A PEM certificate (chain) and its private key.
struct TlsPem {
    std::string cert, key;
};

struct ServerOptions {
    std::string host = "0.0.0.0";  ///< where both ports listen
    int grpc_port = 9002;          ///< ext_proc; 0: the kernel picks (grpc_port() says which)
    int health_port = 9003;        ///< grpc.health.v1; 0: the kernel picks
    std::optional<TlsPem> tls;     ///< nullopt: plaintext ext_proc
    /// With `tls`: the folder its pair was read from (--cert-path), whose tls.key and tls.crt
    /// are then read again every `cert_reload` (grpc's file watcher: a Secret's volume swaps
    /// both at once); empty: the pair in `tls` is served as it is.
    std::string cert_dir;
    std::chrono::seconds cert_reload{10};
    StreamOptions stream;
};

/// The health service names: "" and "liveness" are SERVING while the process runs;
/// "readiness" and the ext_proc service once set_ready(true).
inline constexpr const char* kExtProcService = "envoy.service.ext_proc.v3.ExternalProcessor";

class Server {
public:
    /// Listens on both ports and serves. Io names the port that could not be bound.
    /// `picker` and `metrics` must outlive the server; its series (enflame_epp_requests_total,
    /// enflame_epp_stream_errors_total) go on `metrics`.
    [[nodiscard]] static inject::Result<std::unique_ptr<Server>> start(
        const ServerOptions& o, Picker& picker, prometheus::Registry& metrics);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// Readiness: the endpoint source has synced and the scheduler has endpoints.
    void set_ready(bool ready);
    /// Stops taking new streams, lets open ones run for up to `grace`, then cancels the rest
    /// and returns once every handler has; health says NOT_SERVING from the start of it.
    void shutdown(std::chrono::milliseconds grace);

    [[nodiscard]] int grpc_port() const;
    [[nodiscard]] int health_port() const;

    struct State;

private:
    explicit Server(std::unique_ptr<State> s);
    std::unique_ptr<State> s_;
};

}  // namespace epp
