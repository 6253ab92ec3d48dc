#pragma once
// One parser for the daemons' duration flags (--health-interval, --sleep-interval,
// --collect-interval), so "1m30s" means the same to all of them and every error reads alike.

#include <chrono>
#include <string>
#include <string_view>

#include "inject/result.hpp"

namespace k8s {

/// A duration as Go's time.ParseDuration writes the common ones: one or more `<n><unit>` parts
/// with units h, m, s and ms ("1m30s", "500ms", "24h"), or a bare whole number of seconds ("5").
/// The total must lie in [min, max]. Errors are InvalidInput and read
/// `<flag> '<text>': want a duration from <min> to <max>, such as 90s or 1m30s`.
[[nodiscard]] inject::Result<std::chrono::milliseconds> parse_duration(
    std::string_view flag, std::string_view text, std::chrono::milliseconds min,
    std::chrono::milliseconds max);

/// A duration written the way parse_duration reads it, in the largest unit that divides it
/// evenly: 86400000 ms -> "24h", 90000 -> "90s", 100 -> "100ms".
[[nodiscard]] std::string format_duration(std::chrono::milliseconds d);

}  // namespace k8s
