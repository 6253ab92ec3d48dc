// SPDX-License-Identifier: Apache-2.0
#include "inject/drs_slices.hpp"

#include <algorithm>
#include <charconv>

namespace inject::drs {
namespace {

/// A whole decimal number filling `text`.
std::optional<std::uint32_t> whole(std::string_view text) {
    std::uint32_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
    return v;
}

}  // namespace

std::optional<std::uint32_t> profile_slices(std::string_view profile) {
    const auto dot = profile.find("g.");
    if (dot == std::string_view::npos || !profile.ends_with("gb")) return std::nullopt;
    const auto g = whole(profile.substr(0, dot));
    if (!g || *g == 0) return std::nullopt;
    return g;
}

std::uint32_t card_slices(const std::vector<device::DrsProfile>& profiles) {
    std::uint32_t best = 0;
    for (const auto& p : profiles)
        if (const auto g = profile_slices(p.name)) best = std::max(best, *g * p.max_instances);
    return best;
}

std::optional<SliceRun> parse_placement(std::string_view text) {
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto first = whole(text.substr(0, colon));
    const auto count = whole(text.substr(colon + 1));
    if (!first || !count || *count == 0) return std::nullopt;
    return SliceRun{*first, *count};
}

std::optional<std::uint32_t> first_fit(std::uint32_t slices, const std::vector<SliceRun>& taken,
                                       std::uint32_t count) {
    if (count == 0) return std::nullopt;
    for (std::uint32_t start = 0; start + count <= slices; start += count) {
        const bool free = std::none_of(taken.begin(), taken.end(), [&](const SliceRun& r) {
            return start < r.first + r.count && r.first < start + count;
        });
        if (free) return start;
    }
    return std::nullopt;
}

}  // namespace inject::drs
