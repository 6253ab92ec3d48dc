// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// A reader of the Prometheus text exposition format (version 0.0.4), enough for the gauges
/// and counters model servers and gcu-exporter write. Debian ships no C++ parser of it
/// (prometheus-cpp only serializes).

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace epp {

/// One sample line: `name{label="value",...} value [timestamp]`.
struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

/// The samples of `text` in order. Comment lines (# HELP, # TYPE) are skipped; a malformed
/// line is skipped too and counted in `*bad` when given, so one odd series never hides the
/// rest of a scrape.
[[nodiscard]] std::vector<Sample> parse_prometheus_text(std::string_view text, int* bad = nullptr);

}  // namespace epp
