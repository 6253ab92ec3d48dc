// SPDX-License-Identifier: Apache-2.0
#include "epp/wire/server.hpp"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <netdb.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "envoy/service/ext_proc/v3/external_processor.grpc.pb.h"
#include "epp/wire/completion.hpp"
#include "epp/wire/health.hpp"
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
                           "(it ended the stream before the request was answered), plaintext "
                           "(ext_proc asked on the health port while TLS is on)")
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

// Threads that wait in Picker::decide() for a request's turn (fair queuing under saturation),
// so the queue's thread never blocks; shutdown waits for them.
class Waiters {
public:
    void run(std::function<void()> f) {
        {
            const std::lock_guard l(mu_);
            ++running_;
        }
        std::thread([this, f = std::move(f)] {
            f();
            const std::lock_guard l(mu_);
            if (--running_ == 0) idle_.notify_all();
        }).detach();
    }
    void wait_idle() {
        std::unique_lock l(mu_);
        idle_.wait(l, [this] { return running_ == 0; });
    }

private:
    std::mutex mu_;
    std::condition_variable idle_;
    int running_ = 0;
};

// What every ext_proc call shares.
struct Shared {
    Shared(Picker& p, StreamOptions o, WireMetrics& m, bool over_tls)
        : picker(p), options(o), metrics(m), tls(over_tls) {}

    ext_proc::ExternalProcessor::AsyncService service;
    grpc::ServerCompletionQueue* queue = nullptr;
    Picker& picker;
    StreamOptions options;
    WireMetrics& metrics;
    bool tls;  ///< ext_proc is TLS: a plaintext stream (the health port) is refused
    Waiters waiters;
    std::atomic<bool> refusing{false};  ///< shutting down: a new stream is refused at once
    std::atomic<bool> draining{false};  ///< the queue is shutting down: start no operation
    std::mutex open_mu;
    std::condition_variable none_open;
    int open = 0;  ///< streams taken and not yet ended (under open_mu)

    void opened() {
        const std::lock_guard l(open_mu);
        ++open;
    }
    void closed() {
        const std::lock_guard l(open_mu);
        if (--open == 0) none_open.notify_all();
    }
    /// Waits until no stream is open, or `grace` passed.
    void wait_closed(std::chrono::milliseconds grace) {
        std::unique_lock l(open_mu);
        none_open.wait_for(l, grace, [this] { return open == 0; });
    }
};

// One Process stream. Its operations complete on the server's queue thread, one at a time (a
// read, or the answers' writes one after another, then the next read), so the call is its own
// tag. Each message is fed to the Stream on that thread; a request that must wait its turn
// waits on a Waiters thread instead.
class Call final : public Tag {
public:
    explicit Call(Shared& sh) : sh_(sh), stream_(sh.picker, sh.options), io_(&ctx_) {
        sh_.service.RequestProcess(&ctx_, &io_, sh_.queue, sh_.queue, this);
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    ~Call() {
        if (counted_) sh_.closed();
    }

    void proceed(bool ok) override {
        const State was = state_;
        if (was == State::Finishing || (!ok && was == State::Accepting) || (!ok && sh_.draining)) {
            if (was != State::Accepting) stream_.close();
            delete this;
            return;
        }
        switch (was) {
            case State::Accepting:
                new Call(sh_);
                if (sh_.refusing) {  // the health service still answers while open ones end
                    state_ = State::Finishing;
                    io_.Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down"), this);
                    return;
                }
                counted_ = true;
                sh_.opened();
                if (sh_.tls && !over_tls()) {
                    sh_.metrics.error("plaintext");
                    state_ = State::Finishing;
                    io_.Finish(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                            "ext_proc is served over TLS on --grpc-port only"),
                               this);
                    return;
                }
                read();
                return;
            case State::Reading:
                if (ok)
                    take_message();
                else  // the gateway half-closed or cancelled the stream
                    finish(grpc::Status::OK, true);
                return;
            case State::Writing:
                if (ok) {
                    write_next();
                } else {
                    sh_.metrics.error("write");
                    finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the gateway went away"),
                           false);
                }
                return;
            case State::Finishing:
                return;
        }
    }

private:
    enum class State { Accepting, Reading, Writing, Finishing };

    void take_message() {
        out_.clear();
        next_ = 0;
        if (auto r = stream_.feed(in_, out_); !r) {
            inject::log::warn("ext_proc stream from {}: {}", ctx_.peer(), r.error().what());
            sh_.metrics.error("protocol");
            finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, r.error().what()), false);
            return;
        }
        if (!stream_.waiting()) {
            write_next();
            return;
        }
        // No operation is outstanding while it waits, so nothing else touches the call.
        sh_.waiters.run([this] {
            stream_.resume(out_);
            write_next();
        });
    }
    bool over_tls() const {
        const auto kind =
            ctx_.auth_context()->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
        return !kind.empty() && kind.front() != "insecure";
    }
    void read() {
        state_ = State::Reading;
        io_.Read(&in_, this);
    }
    void write_next() {
        if (next_ < out_.size()) {
            state_ = State::Writing;
            io_.Write(out_[next_++], this);
        } else {
            read();
        }
    }
    void finish(const grpc::Status& status, bool read_ended) {
        if (const auto s = stream_.status()) {
            sh_.metrics.request(*s);
            inject::log::debug("request {} model '{}': {}", stream_.request().id,
                               stream_.request().model, *s);
        } else if (read_ended) {
            sh_.metrics.error("cancelled");
        }
        stream_.close();
        state_ = State::Finishing;
        io_.Finish(status, this);
    }

    Shared& sh_;
    Stream stream_;
    grpc::ServerContext ctx_;
    grpc::ServerAsyncReaderWriter<ext_proc::ProcessingResponse, ext_proc::ProcessingRequest> io_;
    ext_proc::ProcessingRequest in_;
    std::vector<ext_proc::ProcessingResponse> out_;
    std::size_t next_ = 0;
    State state_ = State::Accepting;
    bool counted_ = false;  ///< in Shared::open
};

// Whether a listening socket could be bound to host:port now (SO_REUSEADDR, as grpc binds).
bool can_bind(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
    bool ok = false;
    if (const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0); fd >= 0) {
        const int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        ok = bind(fd, found->ai_addr, found->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(found);
    return ok;
}

}  // namespace

struct Server::State {
    State(Picker& picker, const ServerOptions& o, prometheus::Registry& r)
        : metrics(r), ext(picker, o.stream, metrics, o.tls.has_value()) {}
    ~State() { stop(std::chrono::milliseconds(0)); }

    // Idempotent, and right for a server that never started: the queue is shut down and
    // drained either way (grpc requires that before a queue is destroyed).
    void stop(std::chrono::milliseconds grace) {
        std::call_once(shut, [this, grace] {
            if (server) {
                // New streams are refused and open ones have `grace` to end while health
                // answers NOT_SERVING (grpc's Shutdown would take no call at all, probes
                // included); then the rest are cancelled.
                health->set("readiness", false);
                health->set(kExtProcService, false);
                ext.refusing = true;
                ext.wait_closed(grace);
                server->Shutdown(std::chrono::system_clock::now());
            }
            ext.waiters.wait_idle();
            ext.draining = true;
            // A server that never started holds nothing on the queue, and grpc destroys the
            // queue itself (its Shutdown() would complain of the server that never was).
            if (!server) return;
            queue->Shutdown();
            if (poller.joinable())
                poller.join();
            else
                serve_queue(*queue);
        });
    }

    WireMetrics metrics;
    Shared ext;
    std::unique_ptr<HealthService> health;
    std::unique_ptr<grpc::Server> server;
    std::unique_ptr<grpc::ServerCompletionQueue> queue;
    std::thread poller;
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
    // One server on both ports, one completion queue, one thread (docs/epp.md, "Threads"):
    // every thread that waits on a gRPC queue also reads sockets for the others (grpc 1.51's
    // epoll engine has one poller set per process), so a second server, or grpc++'s default
    // health service on its callback threads, kept taking ext_proc's messages and handing
    // them across threads. Health is then also on the ext_proc port, where Envoy's ext_proc
    // cluster health check asks; ext_proc on the health port is refused while TLS is on.
    grpc::EnableDefaultHealthCheckService(false);
    grpc::ServerBuilder b;
    // grpc++ binds with SO_REUSEPORT unless told not to: a second EPP on the same port would
    // start and take half the streams instead of failing.
    b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    b.AddListeningPort(address(o.grpc_port), creds, &s->grpc_port);
    b.AddListeningPort(address(o.health_port), grpc::InsecureServerCredentials(), &s->health_port);
    b.RegisterService(&s->ext.service);
    s->health = std::make_unique<HealthService>(b);
    s->queue = b.AddCompletionQueue();
    s->ext.queue = s->queue.get();
    s->server = b.BuildAndStart();
    if (!s->server || s->grpc_port == 0 || s->health_port == 0) {
        // grpc says only that the server did not start: name the port that cannot be bound.
        const bool health =
            (o.grpc_port == 0 || can_bind(o.host, o.grpc_port)) && !can_bind(o.host, o.health_port);
        const int port = health ? o.health_port : o.grpc_port;
        return inject::fail(Errc::Io, std::string(health ? "--grpc-health-port " : "--grpc-port ") +
                                          std::to_string(port) + ": cannot listen on " +
                                          address(port));
    }
    s->health->set("", true);
    s->health->set("liveness", true);
    s->health->set("readiness", false);
    s->health->set(kExtProcService, false);
    new Call(s->ext);
    s->health->start(*s->queue);
    s->poller = std::thread([&q = *s->queue] { serve_queue(q); });
    inject::log::info("ext_proc on {} ({}), health on {}", address(s->grpc_port),
                      o.tls ? "TLS" : "plaintext", address(s->health_port));
    return std::unique_ptr<Server>(new Server(std::move(s)));
}

void Server::set_ready(bool ready) {
    s_->health->set("readiness", ready);
    s_->health->set(kExtProcService, ready);
}

void Server::shutdown(std::chrono::milliseconds grace) {
    s_->stop(grace);
}

int Server::grpc_port() const {
    return s_->grpc_port;
}
int Server::health_port() const {
    return s_->health_port;
}

}  // namespace epp
