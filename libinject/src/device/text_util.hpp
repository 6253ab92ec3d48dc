// SPDX-License-Identifier: Apache-2.0
#pragma once
// Small text helpers for the efsmi parsers. Internal to libinject/src/device.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/text.hpp"

namespace inject::discover::detail {

using inject::text::trim;

/// Splits on '\n' (a trailing '\r' stays; callers trim). No empty last line for a final '\n'.
inline std::vector<std::string_view> lines(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        if (nl == std::string_view::npos) {
            out.push_back(text);
            break;
        }
        out.push_back(text.substr(0, nl));
        text.remove_prefix(nl + 1);
    }
    return out;
}

/// A decimal uint32, the whole string.
inline std::optional<std::uint32_t> parse_u32(std::string_view s) {
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
}

/// Quotes text from a tool's output for an error message: control and non-ASCII bytes become
/// '?' (garbage output must not put invalid UTF-8 or escapes on a terminal), and
/// long text is cut at 60 bytes, so garbage output still gives a readable one-line error.
inline std::string quote(std::string_view s) {
    constexpr std::size_t kMax = 60;
    std::string out = "'";
    for (std::size_t i = 0; i < s.size() && i < kMax; ++i) {
        const auto u = static_cast<unsigned char>(s[i]);
        out += (u < 0x20 || u >= 0x7f) ? '?' : s[i];
    }
    if (s.size() > kMax) out += "...";
    out += "'";
    return out;
}

}  // namespace inject::discover::detail
