// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// epp-gateway --drive: the EPP's own latency, without a model server. Opens Process streams
/// at a fixed rate (open loop: a stream starts on its schedule whether or not earlier ones
/// finished) and plays the upstream itself; one thread drives every stream from one completion
/// queue (grpc's async client API).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "epp_gateway_exchange.hpp"

namespace epp_gateway {

struct DriveConfig {
    int requests = 0;
    double rate = 0;   ///< streams started per second
    std::string body;  ///< the request body every stream sends
    StreamOptions stream;
    std::optional<std::vector<std::string>> subset;
};

/// Runs the streams; the Stats JSON plus "rate" (asked), "achieved_rate", "seconds" and
/// "late_ms_max" (the latest a stream started after its schedule: the driver's own lag).
nlohmann::json drive(const DriveConfig& config, extproc::ExternalProcessor::StubInterface& stub);

}  // namespace epp_gateway
