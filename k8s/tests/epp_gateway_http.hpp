// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// epp-gateway's HTTP side: the listener clients send OpenAI API requests to (civetweb), and
/// the forward to the endpoint the EPP picked (libcurl), as an ORIGINAL_DST cluster routing by
/// the x-gateway-destination-endpoint header does.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "epp_gateway_exchange.hpp"
#include "epp_gateway_stats.hpp"

struct mg_context;
struct mg_connection;

namespace epp_gateway {

struct GatewayConfig {
    std::string listen;  ///< "ip:port"; port 0 lets the kernel pick (see port())
    StreamOptions stream;
    /// --subset: the hint sent with every request that has no x-test-subset header.
    std::optional<std::vector<std::string>> subset;
    int threads = 32;
};

/// "a, b,c" as a list ("" is an empty list).
std::vector<std::string> split_list(const std::string& s);

class Gateway {
public:
    /// Listening once it returns; nullptr and `error` set when it cannot listen.
    static std::unique_ptr<Gateway> start(const GatewayConfig& config,
                                          extproc::ExternalProcessor::StubInterface& stub,
                                          Stats& stats, std::string& error);
    ~Gateway();
    Gateway(const Gateway&) = delete;
    Gateway& operator=(const Gateway&) = delete;

    [[nodiscard]] int port() const;

private:
    Gateway(const GatewayConfig& config, extproc::ExternalProcessor::StubInterface& stub,
            Stats& stats)
        : config_(config), stub_(stub), stats_(stats) {}
    static int handle(mg_connection* conn, void* self);
    int serve(mg_connection* conn);

    GatewayConfig config_;
    extproc::ExternalProcessor::StubInterface& stub_;
    Stats& stats_;
    mg_context* ctx_ = nullptr;
};

}  // namespace epp_gateway
