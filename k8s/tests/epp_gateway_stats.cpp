// SPDX-License-Identifier: Apache-2.0
#include "epp_gateway_stats.hpp"

#include <algorithm>
#include <cmath>

namespace epp_gateway {
namespace {

// Nearest-rank percentile of a sorted, non-empty sample.
double percentile(const std::vector<double>& sorted, double p) {
    const auto rank =
        static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

double rounded(double ms) {
    return std::round(ms * 1000.0) / 1000.0;
}

}  // namespace

void Stats::record(int status, std::optional<std::chrono::nanoseconds> decision) {
    const std::lock_guard lock(mu_);
    ++statuses_[status];
    if (decision)
        decisions_ms_.push_back(std::chrono::duration<double, std::milli>(*decision).count());
}

nlohmann::json Stats::json() const {
    const std::lock_guard lock(mu_);
    nlohmann::json out{{"requests", 0}, {"status", nlohmann::json::object()}};
    std::uint64_t n = 0;
    for (const auto& [status, count] : statuses_) {
        out["status"][std::to_string(status)] = count;
        n += count;
    }
    out["requests"] = n;
    if (decisions_ms_.empty()) {
        out["decision_ms"] = nullptr;
        return out;
    }
    auto sorted = decisions_ms_;
    std::sort(sorted.begin(), sorted.end());
    out["decision_ms"] = {{"count", sorted.size()},
                          {"p50", rounded(percentile(sorted, 50))},
                          {"p90", rounded(percentile(sorted, 90))},
                          {"p99", rounded(percentile(sorted, 99))},
                          {"max", rounded(sorted.back())}};
    return out;
}

}  // namespace epp_gateway
