// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What epp-gateway measures: the EPP's decision latency per routed request and the statuses
/// its clients got.

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace epp_gateway {

class Stats {
public:
    /// One request's status and, when it was routed, its decision latency.
    void record(int status, std::optional<std::chrono::nanoseconds> decision);
    /// {"requests": N, "status": {"200": n, ...}, "decision_ms": {"count", "p50", "p90",
    /// "p99", "max"}} (decision_ms null when nothing was routed).
    [[nodiscard]] nlohmann::json json() const;

private:
    mutable std::mutex mu_;
    std::vector<double> decisions_ms_;
    std::map<int, std::uint64_t> statuses_;
};

}  // namespace epp_gateway
