// SPDX-License-Identifier: Apache-2.0
// epp-gateway: the gateway stand-in the enflame-epp tests and bench drive the EPP with. It does
// what Envoy's ext_proc filter and an ORIGINAL_DST cluster routing by the
// x-gateway-destination-endpoint header do (k8s/tests/FAKES.md; tests/README.md says what it
// cannot show).
//
//   epp-gateway --listen 127.0.0.1:PORT --epp HOST:PORT [--epp-tls] [--mode full-duplex|buffered]
//               [--no-protocol-config] [--chunk BYTES] [--subset LIST] [--stats FILE]
//               [--port-file FILE]
//       An HTTP listener; one Process stream per request; runs until SIGTERM/SIGINT, then
//       writes --stats.
//   epp-gateway --drive N --rate R --body FILE --epp HOST:PORT [...]
//       N streams at R per second straight to the EPP, no model server; JSON on stdout.
//   epp-gateway --health-check --epp HOST:PORT [--service NAME] [--epp-tls]
//       One grpc.health.v1 Check; prints the status; exit 0 only when SERVING.
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "epp_gateway_drive.hpp"
#include "epp_gateway_http.hpp"
#include "grpc/health/v1/health.grpc.pb.h"
#include "k8s/daemon_cli.hpp"
#include "k8s/daemon_setup.hpp"

namespace {

using namespace epp_gateway;

struct Flags {
    std::string listen, epp, mode = "full-duplex", stats, port_file, body_file, service;
    std::string log_level = "info";
    std::optional<std::string> subset;
    bool tls = false, health = false, no_protocol_config = false;
    std::size_t chunk = 16 * 1024;
    int timeout_ms = 120'000, threads = 32, drive = 0;
    double rate = 100;
};

std::shared_ptr<grpc::Channel> channel(const Flags& f) {
    if (!f.tls) return grpc::CreateChannel(f.epp, grpc::InsecureChannelCredentials());
    // As GIE's test Envoy: TLS, the EPP's self-signed certificate taken unverified.
    grpc::experimental::TlsChannelCredentialsOptions o;
    o.set_verify_server_certs(false);
    o.set_check_call_host(false);
    o.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
    return grpc::CreateChannel(f.epp, grpc::experimental::TlsCredentials(o));
}

int health_check(const Flags& f) {
    auto stub = grpc::health::v1::Health::NewStub(channel(f));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(f.timeout_ms));
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(f.service);
    grpc::health::v1::HealthCheckResponse resp;
    const auto s = stub->Check(&ctx, req, &resp);
    if (!s.ok()) {
        std::cerr << "error: health check of " << f.epp << " service '" << f.service
                  << "': " << s.error_code() << " " << s.error_message() << "\n";
        return 2;
    }
    std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status()) << "\n";
    return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

StreamOptions stream_options(const Flags& f) {
    StreamOptions o;
    o.mode = f.mode == "buffered" ? Mode::Buffered : Mode::FullDuplex;
    o.chunk = f.chunk;
    o.timeout = std::chrono::milliseconds(f.timeout_ms);
    o.protocol_config = !f.no_protocol_config;
    return o;
}

std::optional<std::vector<std::string>> subset(const Flags& f) {
    if (!f.subset) return std::nullopt;
    return split_list(*f.subset);
}

int run_drive(const Flags& f) {
    std::ifstream in(f.body_file, std::ios::binary);
    if (!in) {
        std::cerr << "error: --body '" << f.body_file << "': cannot read it\n";
        return 1;
    }
    std::ostringstream body;
    body << in.rdbuf();
    DriveConfig d{f.drive, f.rate, body.str(), stream_options(f), subset(f)};
    const auto ch = channel(f);
    auto stub = extproc::ExternalProcessor::NewStub(ch);
    std::cout << drive(d, *stub).dump() << "\n";
    return 0;
}

int run_gateway(const Flags& f) {
    const auto stop = k8s::block_stop_signals();  // before any thread starts
    Stats stats;
    auto stub = extproc::ExternalProcessor::NewStub(channel(f));
    GatewayConfig c{f.listen, stream_options(f), subset(f), f.threads};
    std::string error;
    auto gateway = Gateway::start(c, *stub, stats, error);
    if (!gateway) {
        std::cerr << "error: " << error << "\n";
        return 1;
    }
    const int port = gateway->port();
    if (!f.port_file.empty()) {
        std::ofstream(f.port_file + ".new") << port << "\n";
        std::rename((f.port_file + ".new").c_str(), f.port_file.c_str());
    }
    spdlog::info("listening on port {}, EPP {} ({}, {})", port, f.epp, f.tls ? "TLS" : "plaintext",
                 f.mode);
    int sig = 0;
    sigwait(&stop, &sig);
    gateway.reset();  // finishes the requests in flight
    if (!f.stats.empty()) {
        std::ofstream out(f.stats + ".new");
        out << stats.json().dump(2) << "\n";
        out.close();
        std::rename((f.stats + ".new").c_str(), f.stats.c_str());
    }
    spdlog::info("stopped by signal {}", sig);
    return 0;
}

}  // namespace

int main(int argc, char** argv) try {
    Flags f;
    CLI::App app{
        "epp-gateway: Envoy's ext_proc filter and ORIGINAL_DST cluster, played for the "
        "enflame-epp tests (k8s/tests/FAKES.md)"};
    app.add_option("--epp", f.epp, "the EPP's ext_proc (or, with --health-check, health) address")
        ->required();
    app.add_flag("--epp-tls", f.tls, "TLS to the EPP, its certificate taken unverified");
    app.add_option("--listen", f.listen, "ip:port for HTTP clients (port 0: the kernel picks)");
    app.add_option("--port-file", f.port_file, "write the listening port here");
    app.add_option("--mode", f.mode, "body mode: full-duplex (FULL_DUPLEX_STREAMED) or buffered")
        ->check(CLI::IsMember({"full-duplex", "buffered"}));
    app.add_flag("--no-protocol-config", f.no_protocol_config,
                 "send no protocol_config (as Envoy before 1.35): the EPP must know the mode");
    app.add_option("--chunk", f.chunk, "request body chunk size in bytes (full-duplex)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
    app.add_option("--subset", f.subset,
                   "subset hint 'ip:port,...' ('' an empty list) for requests without an "
                   "x-test-subset header");
    app.add_option("--timeout", f.timeout_ms, "deadline of one Process stream, ms")
        ->check(CLI::PositiveNumber);
    app.add_option("--threads", f.threads, "HTTP worker threads")->check(CLI::Range(1, 1024));
    app.add_option("--stats", f.stats, "on SIGTERM write decision latency and statuses (JSON)");
    app.add_option("--drive", f.drive, "bench: N streams straight to the EPP, no HTTP listener")
        ->check(CLI::PositiveNumber);
    app.add_option("--rate", f.rate, "bench: streams started per second")
        ->check(CLI::PositiveNumber);
    app.add_option("--body", f.body_file, "bench: the request body file");
    app.add_flag("--health-check", f.health, "one gRPC health Check of --epp, then exit");
    app.add_option("--service", f.service, "health: the service name asked (default '')");
    app.add_option("--log-level", f.log_level, "debug, info, warn or error");
    if (auto rc = k8s::parse_and_log(app, argc, argv, "epp-gateway", f.log_level)) return *rc;
    if (f.health) return health_check(f);
    if (f.drive > 0) {
        if (f.body_file.empty()) {
            std::cerr << "error: --drive needs --body FILE\n";
            return 1;
        }
        return run_drive(f);
    }
    if (f.listen.empty()) {
        std::cerr << "error: --listen, --drive or --health-check is needed (see --help)\n";
        return 1;
    }
    return run_gateway(f);
} catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
}
