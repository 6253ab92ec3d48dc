// SPDX-License-Identifier: Apache-2.0
// enflame-epp's gRPC server (k8s/epp/wire/server.hpp) on loopback ports the kernel picks:
// Process streams over plaintext and TLS, a request waiting its turn off the server's thread,
// the health service on both ports, a cancelled stream, and the drain on shutdown; against a
// Picker that records what it was asked.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "envoy/service/ext_proc/v3/external_processor.grpc.pb.h"
#include "epp/wire/server.hpp"
#include "epp/wire/tls.hpp"
#include "grpc/health/v1/health.grpc.pb.h"

namespace {

using epp::ext_proc::ProcessingRequest;
using epp::ext_proc::ProcessingResponse;
using Health = grpc::health::v1::HealthCheckResponse;
using namespace std::chrono_literals;

// Routes everything to 10.0.0.7:8000, except that a request with x-request-id "wait" waits its
// turn (try_decide says so) until release().
struct RecordingPicker : epp::Picker {
    std::atomic<int> decided{0}, finished_calls{0}, waiting{0};
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;
    std::optional<epp::Decision> try_decide(const epp::Request& r) override {
        if (r.id == "wait") return std::nullopt;
        return decide(r);
    }
    epp::Decision decide(const epp::Request& r) override {
        if (r.id == "wait") {
            ++waiting;
            std::unique_lock l(mu);
            cv.wait(l, [this] { return released; });
        }
        ++decided;
        return {200, "", {"10.0.0.7:8000"}, {}};
    }
    void release() {
        const std::lock_guard l(mu);
        released = true;
        cv.notify_all();
    }
    void served(const epp::Request&, const std::string&) override {}
    void finished(const epp::Request&) override { ++finished_calls; }
};

template <typename F>
bool eventually(F done) {
    for (int i = 0; i < 200; ++i, std::this_thread::sleep_for(10ms))
        if (done()) return true;
    return false;
}

struct Fixture : ::testing::Test {
    RecordingPicker picker;
    prometheus::Registry registry;
    std::unique_ptr<epp::Server> server;

    void start(std::optional<epp::TlsPem> tls = std::nullopt) {
        epp::ServerOptions o;
        o.host = "127.0.0.1";
        o.grpc_port = 0;
        o.health_port = 0;
        o.tls = std::move(tls);
        auto s = epp::Server::start(o, picker, registry);
        ASSERT_TRUE(s) << s.error().what();
        server = std::move(*s);
    }
    std::string grpc_address() const { return "127.0.0.1:" + std::to_string(server->grpc_port()); }
    std::shared_ptr<grpc::Channel> plaintext(const std::string& address) const {
        return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    }
    std::optional<Health::ServingStatus> health(const std::string& service, int port) const {
        auto stub =
            grpc::health::v1::Health::NewStub(plaintext("127.0.0.1:" + std::to_string(port)));
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + 2s);
        grpc::health::v1::HealthCheckRequest req;
        req.set_service(service);
        Health resp;
        if (!stub->Check(&ctx, req, &resp).ok()) return std::nullopt;
        return resp.status();
    }
    std::string metrics() const {
        return prometheus::TextSerializer().Serialize(registry.Collect());
    }
};

ProcessingRequest headers(bool end_of_stream, const std::string& id = "r-1") {
    ProcessingRequest in;
    auto* h = in.mutable_request_headers()->mutable_headers()->add_headers();
    h->set_key("x-request-id");
    h->set_raw_value(id);
    in.mutable_request_headers()->set_end_of_stream(end_of_stream);
    return in;
}

ProcessingRequest body() {
    ProcessingRequest in;
    in.mutable_request_body()->set_body(R"({"model":"tiny"})");
    in.mutable_request_body()->set_end_of_stream(true);
    return in;
}

// One request through a Process stream: its answers' destination header, or the gRPC error.
std::string route_once(const std::shared_ptr<grpc::Channel>& channel) {
    auto stub = epp::ext_proc::ExternalProcessor::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    auto stream = stub->Process(&ctx);
    stream->Write(headers(false));
    stream->Write(body());
    ProcessingResponse out;
    std::string destination;
    if (!stream->Read(&out))  // refused: the server's status
        return "error " + std::to_string(stream->Finish().error_code());
    for (const auto& o : out.request_headers().response().header_mutation().set_headers())
        if (o.header().key() == "x-gateway-destination-endpoint")
            destination = o.header().raw_value();
    stream->WritesDone();
    ctx.TryCancel();
    const auto status = stream->Finish();
    return destination.empty() ? "error " + std::to_string(status.error_code()) : destination;
}

TEST_F(Fixture, RoutesAPlaintextStreamAndCountsIt) {
    start();
    auto channel = plaintext(grpc_address());
    EXPECT_EQ(route_once(channel), "10.0.0.7:8000");
    EXPECT_TRUE(eventually([&] { return picker.finished_calls == 1; }));
    EXPECT_NE(metrics().find("enflame_epp_requests_total{status=\"200\"} 1"), std::string::npos)
        << metrics();
}

TEST_F(Fixture, ARequestWaitingItsTurnHoldsUpNoOtherStream) {
    start();
    auto stub = epp::ext_proc::ExternalProcessor::NewStub(plaintext(grpc_address()));
    grpc::ClientContext ctx;
    auto held = stub->Process(&ctx);
    held->Write(headers(false, "wait"));
    held->Write(body());
    ASSERT_TRUE(eventually([&] { return picker.waiting == 1; }));
    // The server's thread is free: another stream is routed while the first one waits.
    EXPECT_EQ(route_once(plaintext(grpc_address())), "10.0.0.7:8000");
    EXPECT_EQ(picker.decided, 1);
    picker.release();
    ProcessingResponse out;
    ASSERT_TRUE(held->Read(&out));
    ASSERT_EQ(out.request_headers().response().header_mutation().set_headers_size(), 2);
    EXPECT_EQ(
        out.request_headers().response().header_mutation().set_headers(0).header().raw_value(),
        "10.0.0.7:8000");
    ASSERT_TRUE(held->Read(&out));  // the body, re-sent
    EXPECT_TRUE(out.has_request_body());
    held->WritesDone();
    EXPECT_FALSE(held->Read(&out));
    EXPECT_TRUE(held->Finish().ok());
    EXPECT_EQ(picker.decided, 2);
    EXPECT_TRUE(eventually([&] { return picker.finished_calls == 2; }));
}

TEST_F(Fixture, HealthIsOnBothPortsAndReadinessFollowsSetReady) {
    start();
    const int port = server->health_port();
    EXPECT_EQ(health("", port), Health::SERVING);
    EXPECT_EQ(health("liveness", port), Health::SERVING);
    EXPECT_EQ(health("readiness", port), Health::NOT_SERVING);
    EXPECT_EQ(health(epp::kExtProcService, port), Health::NOT_SERVING);
    server->set_ready(true);
    EXPECT_EQ(health("readiness", port), Health::SERVING);
    EXPECT_EQ(health(epp::kExtProcService, port), Health::SERVING);
    // The ext_proc port answers them too: Envoy's ext_proc cluster health check asks there.
    EXPECT_EQ(health(epp::kExtProcService, server->grpc_port()), Health::SERVING);
    // A service never set is NOT_FOUND, as the health protocol says.
    EXPECT_EQ(health("inference-extension", port), std::nullopt);
}

TEST_F(Fixture, HealthWatchSendsTheStatusThenEachChangeUntilTheClientLeaves) {
    start();
    auto stub = grpc::health::v1::Health::NewStub(
        plaintext("127.0.0.1:" + std::to_string(server->health_port())));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    grpc::health::v1::HealthCheckRequest req;
    req.set_service("readiness");
    auto watch = stub->Watch(&ctx, req);
    Health got;
    ASSERT_TRUE(watch->Read(&got));
    EXPECT_EQ(got.status(), Health::NOT_SERVING);
    server->set_ready(true);
    ASSERT_TRUE(watch->Read(&got));
    EXPECT_EQ(got.status(), Health::SERVING);
    std::this_thread::sleep_for(100ms);  // that write done on the server's side too
    server->set_ready(true);             // no change: nothing sent
    server->set_ready(false);
    ASSERT_TRUE(watch->Read(&got));
    EXPECT_EQ(got.status(), Health::NOT_SERVING);
    // A name never set is SERVICE_UNKNOWN to Watch, as the protocol says.
    grpc::ClientContext unknown_ctx;
    unknown_ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    req.set_service("inference-extension");
    auto unknown = stub->Watch(&unknown_ctx, req);
    ASSERT_TRUE(unknown->Read(&got));
    EXPECT_EQ(got.status(), Health::SERVICE_UNKNOWN);
    // The clients leave; the server forgets them (ASan would see a call left behind).
    ctx.TryCancel();
    unknown_ctx.TryCancel();
    (void)watch->Finish();
    (void)unknown->Finish();
    server->set_ready(true);
    EXPECT_EQ(health("readiness", server->health_port()), Health::SERVING);
}

TEST_F(Fixture, TlsPortTakesATlsClientTrustingItsCertificateAndRefusesPlaintext) {
    auto pem = epp::self_signed_certificate();
    ASSERT_TRUE(pem) << pem.error().what();
    start(*pem);
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem->cert;
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("enflame-epp");
    auto tls = grpc::CreateCustomChannel(grpc_address(), grpc::SslCredentials(ssl), args);
    EXPECT_EQ(route_once(tls), "10.0.0.7:8000");
    auto plain = plaintext(grpc_address());
    EXPECT_EQ(route_once(plain), "error 14");
    // The health port is plaintext and shares the server: ext_proc is refused there.
    auto stub = epp::ext_proc::ExternalProcessor::NewStub(
        plaintext("127.0.0.1:" + std::to_string(server->health_port())));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    auto stream = stub->Process(&ctx);
    stream->Write(headers(false));
    ProcessingResponse out;
    EXPECT_FALSE(stream->Read(&out));
    const auto refused = stream->Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(refused.error_message(), "ext_proc is served over TLS on --grpc-port only");
    EXPECT_NE(metrics().find("enflame_epp_stream_errors_total{reason=\"plaintext\"} 1"),
              std::string::npos)
        << metrics();
}

TEST_F(Fixture, CancelledStreamFinishesTheRequestOnce) {
    start();
    auto stub = epp::ext_proc::ExternalProcessor::NewStub(plaintext(grpc_address()));
    grpc::ClientContext ctx;
    auto stream = stub->Process(&ctx);
    stream->Write(headers(false));
    stream->Write(body());
    ProcessingResponse out;
    ASSERT_TRUE(stream->Read(&out));  // routed; the response never comes: the gateway gives up
    ctx.TryCancel();
    (void)stream->Finish();
    EXPECT_TRUE(eventually([&] { return picker.finished_calls == 1; }));
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(picker.finished_calls, 1);
    EXPECT_EQ(picker.decided, 1);
}

TEST_F(Fixture, StreamCancelledBeforeTheDecisionIsCountedAsAnError) {
    start();
    auto stub = epp::ext_proc::ExternalProcessor::NewStub(plaintext(grpc_address()));
    grpc::ClientContext ctx;
    auto stream = stub->Process(&ctx);
    stream->Write(headers(false));  // the body never comes
    std::this_thread::sleep_for(100ms);
    ctx.TryCancel();
    (void)stream->Finish();
    EXPECT_TRUE(eventually([&] {
        return metrics().find("enflame_epp_stream_errors_total{reason=\"cancelled\"} 1") !=
               std::string::npos;
    })) << metrics();
    EXPECT_EQ(picker.decided, 0);
    EXPECT_EQ(picker.finished_calls, 0);
}

TEST_F(Fixture, ShutdownLetsAnOpenStreamFinishWithinTheGraceAndTakesNoNewOne) {
    start();
    auto channel = plaintext(grpc_address());
    auto stub = epp::ext_proc::ExternalProcessor::NewStub(channel);
    grpc::ClientContext ctx;
    auto stream = stub->Process(&ctx);
    ASSERT_TRUE(stream->Write(headers(false)));  // the body is still to come
    std::this_thread::sleep_for(100ms);
    const auto began = std::chrono::steady_clock::now();
    auto done = std::async(std::launch::async, [&] { server->shutdown(5s); });
    std::this_thread::sleep_for(200ms);
    auto late = plaintext(grpc_address());
    EXPECT_EQ(route_once(late), "error 14");
    // Probes still get an answer while the open stream ends.
    EXPECT_EQ(health("readiness", server->health_port()), Health::NOT_SERVING);
    EXPECT_EQ(health("liveness", server->health_port()), Health::SERVING);
    ASSERT_TRUE(stream->Write(body()));
    ProcessingResponse out;
    ASSERT_TRUE(stream->Read(&out));
    EXPECT_TRUE(out.has_request_headers());
    ASSERT_TRUE(stream->Read(&out));  // the body, re-sent
    EXPECT_TRUE(out.has_request_body());
    stream->WritesDone();
    EXPECT_FALSE(stream->Read(&out));
    EXPECT_TRUE(stream->Finish().ok());
    done.wait();
    EXPECT_LT(std::chrono::steady_clock::now() - began, 5s);
    EXPECT_EQ(picker.finished_calls, 1);
}

TEST_F(Fixture, ShutdownCancelsAStreamStillOpenAfterTheGrace) {
    start();
    auto stub = epp::ext_proc::ExternalProcessor::NewStub(plaintext(grpc_address()));
    grpc::ClientContext ctx;
    auto stream = stub->Process(&ctx);
    stream->Write(headers(false));
    stream->Write(body());
    ProcessingResponse out;
    ASSERT_TRUE(stream->Read(&out));  // the route
    ASSERT_TRUE(stream->Read(&out));  // the body; the response never comes
    const auto began = std::chrono::steady_clock::now();
    server->shutdown(300ms);
    EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
    EXPECT_GE(std::chrono::steady_clock::now() - began, 250ms);
    EXPECT_FALSE(stream->Read(&out));
    EXPECT_EQ(picker.finished_calls, 1);
}

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string t = (std::filesystem::temp_directory_path() / "epp-tls.XXXXXX").string();
        path = ::mkdtemp(t.data());
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(path / name) << text;
    }
};

TEST(EppWireTls, ReadsAGivenPairAndNamesWhatIsWrong) {
    auto a = epp::self_signed_certificate();
    auto b = epp::self_signed_certificate();
    ASSERT_TRUE(a && b);
    TempDir d;
    auto err = [&] {
        auto r = epp::read_certificate(d.path.string());
        return r ? std::string("ok") : std::string(r.error().what());
    };
    const std::string crt = d.path.string() + "/tls.crt", key = d.path.string() + "/tls.key";
    EXPECT_EQ(err(), crt + ": cannot read it");
    d.write("tls.crt", a->cert);
    EXPECT_EQ(err(), key + ": cannot read it");
    d.write("tls.key", "junk");
    EXPECT_EQ(err(), key + ": not a PEM private key");
    d.write("tls.key", b->key);
    EXPECT_EQ(err(), key + ": not the key of " + crt);
    d.write("tls.crt", "junk");
    EXPECT_EQ(err(), crt + ": not a PEM certificate");
    d.write("tls.crt", a->cert);
    d.write("tls.key", a->key);
    EXPECT_EQ(err(), "ok");
}

}  // namespace
