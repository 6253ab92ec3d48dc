// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The few text helpers every part of the project needs, in one place: trimming and splitting.

#include <string>
#include <string_view>
#include <vector>

namespace inject::text {

/// ASCII blanks: space, tab, carriage return, newline.
inline constexpr std::string_view kBlanks = " \t\r\n";

/// `s` without the characters of `chars` at either end.
[[nodiscard]] constexpr std::string_view trim(std::string_view s,
                                              std::string_view chars = kBlanks) noexcept {
    const auto b = s.find_first_not_of(chars);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

/// `s` without the characters of `chars` at its end (a file's trailing newline).
[[nodiscard]] constexpr std::string_view trim_end(std::string_view s,
                                                  std::string_view chars = kBlanks) noexcept {
    const auto e = s.find_last_not_of(chars);
    return e == std::string_view::npos ? std::string_view{} : s.substr(0, e + 1);
}

/// The parts of `s` between each `sep`: "a,,b" -> {"a", "", "b"}; "" -> {""}.
[[nodiscard]] inline std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    for (;;) {
        const auto at = s.find(sep);
        out.emplace_back(s.substr(0, at));
        if (at == std::string_view::npos) return out;
        s.remove_prefix(at + 1);
    }
}

}  // namespace inject::text
