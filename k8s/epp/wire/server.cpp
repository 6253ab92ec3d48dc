// SPDX-License-Identifier: Apache-2.0
#include "epp/wire/server.hpp"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <mutex>
#include <thread>

#include "envoy/service/ext_proc/v3/external_processor.grpc.pb.h"
#include "inject/log.hpp"

namespace epp {
namespace {

using inject::Errc;

// The wire's own series: what each stream ended with.
struct WireMetrics {
    explicit WireMetrics(prometheus::Registry& r)
        : requests(prometheus::BuildCounter()
                       .Name("enflame_epp_requests_total")
                       .Help("Requests the EPP answered, by the HTTP status it gave them (200: "
                             "routed; else the immediate response's)")
                       .Register(r)),
          errors(prometheus::BuildCounter()
                     .Name("enflame_epp_stream_errors_total")
                     .Help("ext_proc streams that ended badly, by reason: protocol (a message "
                           "out of order), write (the gateway went away mid-answer), cancelled "
                           "(it ended the stream before the request was answered)")
                     .Register(r)) {}

    void request(int status) {
        std::lock_guard l(mu);
        requests.Add({{"status", std::to_string(status)}}).Increment();
    }
    void error(const char* reason) {
        std::lock_guard l(mu);
        errors.Add({{"reason", reason}}).Increment();
    }

    std::mutex mu;  // Family::Add is thread-safe; the lock keeps the two updates' order simple
    prometheus::Family<prometheus::Counter>& requests;
    prometheus::Family<prometheus::Counter>& errors;
};

class ExtProcService final : public ext_proc::ExternalProcessor::Service {
public:
    ExtProcService(Picker& picker, StreamOptions options, WireMetrics& metrics)
        : picker_(picker), options_(options), metrics_(metrics) {}

    grpc::Status Process(grpc::ServerContext* ctx,
                         grpc::ServerReaderWriter<ext_proc::ProcessingResponse,
                                                  ext_proc::ProcessingRequest>* io) override {
        Stream stream(picker_, options_);
        ext_proc::ProcessingRequest in;
        std::vector<ext_proc::ProcessingResponse> out;
        grpc::Status result = grpc::Status::OK;
        bool read_all = true;
        while ((read_all = io->Read(&in))) {
            out.clear();
            if (auto r = stream.feed(in, out); !r) {
                inject::log::warn("ext_proc stream from {}: {}", ctx->peer(), r.error().what());
                metrics_.error("protocol");
                result = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, r.error().what());
                break;
            }
            bool written = true;
            for (const auto& o : out)
                if (!(written = io->Write(o))) break;
            if (!written) {
                metrics_.error("write");
                result = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the gateway went away");
                break;
            }
        }
        if (const auto status = stream.status()) {
            metrics_.request(*status);
            inject::log::debug("request {} model '{}': {}", stream.request().id,
                               stream.request().model, *status);
        } else if (read_all == false && result.ok()) {
            metrics_.error("cancelled");
        }
        stream.close();
        return result;
    }

private:
    Picker& picker_;
    StreamOptions options_;
    WireMetrics& metrics_;
};

}  // namespace

struct Server::State {
    State(Picker& picker, const ServerOptions& o, prometheus::Registry& r)
        : metrics(r), service(picker, o.stream, metrics) {}
    WireMetrics metrics;
    ExtProcService service;
    std::unique_ptr<grpc::Server> grpc_server, health_server;
    std::unique_ptr<grpc::ServerCompletionQueue> health_queue;
    std::thread health_poller;
    int grpc_port = 0, health_port = 0;
    std::once_flag shut;
};

Server::Server(std::unique_ptr<State> s) : s_(std::move(s)) {}

Server::~Server() {
    shutdown(std::chrono::milliseconds(0));
}

inject::Result<std::unique_ptr<Server>> Server::start(const ServerOptions& o, Picker& picker,
                                                      prometheus::Registry& metrics) {
    auto s = std::make_unique<State>(picker, o, metrics);
    auto address = [&o](int port) {
        const bool v6 = o.host.find(':') != std::string::npos;
        return (v6 ? "[" + o.host + "]" : o.host) + ":" + std::to_string(port);
    };
    std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
    if (o.tls && !o.cert_dir.empty()) {
        // A renewed certificate (cert-manager, a rotated Secret) is served without a restart.
        auto files = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
            o.cert_dir + "/tls.key", o.cert_dir + "/tls.crt",
            static_cast<unsigned>(o.cert_reload.count()));
        grpc::experimental::TlsServerCredentialsOptions tls(files);
        tls.watch_identity_key_cert_pairs();
        creds = grpc::experimental::TlsServerCredentials(tls);
    } else if (o.tls) {
        grpc::SslServerCredentialsOptions ssl;
        ssl.pem_key_cert_pairs.push_back({o.tls->key, o.tls->cert});
        creds = grpc::SslServerCredentials(ssl);
    }
    // The ext_proc port carries no health service: the default one is enabled only for the
    // health server built after it (the switch is read when a server is built).
    grpc::EnableDefaultHealthCheckService(false);
    grpc::ServerBuilder b;
    // grpc++ binds with SO_REUSEPORT unless told not to: a second EPP on the same port would
    // start and take half the streams instead of failing.
    b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // One completion queue with 4 threads always polling it (grpc++'s default: a queue per
    // core, one poller each, a new thread made when a stream takes the last one): in an
    // interleaved A/B at 500 streams/s (bench/README.md) p99 1.47-1.72 ms against 1.70-1.81,
    // CPU 0.56-0.60 against 0.62-0.66 ms a request.
    b.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
    b.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 4);
    b.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 16);
    b.AddListeningPort(address(o.grpc_port), creds, &s->grpc_port);
    b.RegisterService(&s->service);
    s->grpc_server = b.BuildAndStart();
    if (!s->grpc_server || s->grpc_port == 0)
        return inject::fail(Errc::Io, "--grpc-port " + std::to_string(o.grpc_port) +
                                          ": cannot listen on " + address(o.grpc_port));

    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder hb;
    hb.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    hb.AddListeningPort(address(o.health_port), grpc::InsecureServerCredentials(), &s->health_port);
    // grpc++ 1.51 adds its health service only as the server starts, after checking that
    // something polls the server: this queue, drained by a thread of its own, is that.
    s->health_queue = hb.AddCompletionQueue(true);
    s->health_server = hb.BuildAndStart();
    s->health_poller = std::thread([q = s->health_queue.get()] {
        void* tag = nullptr;
        bool ok = false;
        while (q->Next(&tag, &ok)) {
        }
    });
    grpc::EnableDefaultHealthCheckService(false);
    if (!s->health_server || s->health_port == 0) {
        s->grpc_server->Shutdown();
        if (s->health_server) s->health_server->Shutdown();
        s->health_queue->Shutdown();
        s->health_poller.join();
        return inject::fail(Errc::Io, "--grpc-health-port " + std::to_string(o.health_port) +
                                          ": cannot listen on " + address(o.health_port));
    }
    auto* health = s->health_server->GetHealthCheckService();
    health->SetServingStatus("", true);
    health->SetServingStatus("liveness", true);
    health->SetServingStatus("readiness", false);
    health->SetServingStatus(kExtProcService, false);
    inject::log::info("ext_proc on {} ({}), health on {}", address(s->grpc_port),
                      o.tls ? "TLS" : "plaintext", address(s->health_port));
    return std::unique_ptr<Server>(new Server(std::move(s)));
}

void Server::set_ready(bool ready) {
    auto* health = s_->health_server->GetHealthCheckService();
    health->SetServingStatus("readiness", ready);
    health->SetServingStatus(kExtProcService, ready);
}

void Server::shutdown(std::chrono::milliseconds grace) {
    std::call_once(s_->shut, [this, grace] {
        auto* health = s_->health_server->GetHealthCheckService();
        health->SetServingStatus("readiness", false);
        health->SetServingStatus(kExtProcService, false);
        s_->grpc_server->Shutdown(std::chrono::system_clock::now() + grace);
        s_->health_server->Shutdown(std::chrono::system_clock::now());
        s_->health_queue->Shutdown();
        s_->health_poller.join();
    });
}

int Server::grpc_port() const {
    return s_->grpc_port;
}
int Server::health_port() const {
    return s_->health_port;
}

}  // namespace epp
