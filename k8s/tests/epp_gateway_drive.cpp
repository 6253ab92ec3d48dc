// SPDX-License-Identifier: Apache-2.0
#include "epp_gateway_drive.hpp"

#include <atomic>
#include <cmath>
#include <thread>

#include "epp_gateway_http.hpp"
#include "epp_gateway_stats.hpp"

namespace epp_gateway {
namespace {

using Clock = std::chrono::steady_clock;

// What the driver's stand-in model server answers (a completion's shape, small).
constexpr std::string_view kAnswer =
    R"({"id":"cmpl-drive","object":"text_completion","choices":[{"index":0,"text":"ok"}],)"
    R"("usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}})";

class Discard final : public ResponseSink {
public:
    bool headers(int, const Headers&) override { return true; }
    bool body(std::string_view) override { return true; }
};

// One stream from request headers to the echoed end of the response; the status the client
// would have got.
int one_request(const DriveConfig& config, extproc::ExternalProcessor::StubInterface& stub,
                Stats& stats) {
    HttpRequest r{"POST",
                  "/v1/completions",
                  "epp-gateway",
                  {{"content-type", "application/json"},
                   {"content-length", std::to_string(config.body.size())}},
                  config.body,
                  config.subset,
                  ""};
    Exchange exchange(stub, config.stream);
    const auto routing = exchange.route(r);
    if (routing.status != 0) {
        stats.record(routing.status, std::nullopt);
        return routing.status;
    }
    const auto endpoints = split_list(routing.destination);
    Discard sink;
    const bool ok = exchange.respond_headers(200, {{"content-type", "application/json"}},
                                             endpoints.front(), sink) &&
                    exchange.respond_body(kAnswer);
    const auto broken = exchange.finish();
    const int status = ok && broken.empty() ? 200 : 502;
    stats.record(status, routing.decision);
    return status;
}

}  // namespace

nlohmann::json drive(const DriveConfig& config, extproc::ExternalProcessor::StubInterface& stub) {
    Stats stats;
    std::atomic<int> next{0};
    std::atomic<std::int64_t> late_ns_max{0};
    const auto start = Clock::now();
    const auto interval = std::chrono::duration<double>(1.0 / config.rate);
    std::vector<std::thread> workers;
    for (int w = 0; w < config.workers; ++w) {
        workers.emplace_back([&] {
            for (int i = next++; i < config.requests; i = next++) {
                const auto due = start + std::chrono::duration_cast<Clock::duration>(interval * i);
                std::this_thread::sleep_until(due);
                const auto late = (Clock::now() - due).count();
                for (auto m = late_ns_max.load(); late > m;)
                    if (late_ns_max.compare_exchange_weak(m, late)) break;
                one_request(config, stub, stats);
            }
        });
    }
    for (auto& t : workers) t.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    auto out = stats.json();
    out["rate"] = config.rate;
    out["seconds"] = std::round(seconds * 1000.0) / 1000.0;
    out["achieved_rate"] = std::round(config.requests / seconds * 10.0) / 10.0;
    out["late_ms_max"] = std::round(static_cast<double>(late_ns_max.load()) / 1e3) / 1e3;
    return out;
}

}  // namespace epp_gateway
