// SPDX-License-Identifier: Apache-2.0
// `efsmi -q` text: banner lines ("----"), then per card a `DEV ID <n>` line followed by section
// names and `Key : value` lines. Indentation and the padding before ':' vary between driver
// versions, so neither is relied on; what is checked is that every line is one of those kinds
// and that each card has the keys we need (a truncated block is an error, never a card with
// holes).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "device/card_fields.hpp"
#include "device/text_util.hpp"

namespace inject::discover {
namespace {

bool is_section_name(std::string_view t) {
    return std::all_of(t.begin(), t.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '(' || c == ')' ||
               c == '/' || c == '_' || c == '-' || c == '.';
    });
}

}  // namespace

Result<std::vector<RawCard>> parse_efsmi_text(std::string_view text, std::string_view source) {
    const std::string src(source);
    auto at = [&](std::size_t line, const std::string& msg) {
        return fail(Errc::InvalidInput, src + ": line " + std::to_string(line) + ": " + msg);
    };
    if (detail::trim(text).empty()) return fail(Errc::InvalidInput, src + ": empty output");

    std::vector<RawCard> cards;
    std::set<std::uint32_t> seen;
    std::optional<detail::CardFields> cur;
    std::size_t cur_line = 0;
    std::uint32_t cur_index = 0;
    auto finish = [&]() -> Result<void> {
        if (!cur) return ok();
        auto card = std::move(*cur).finish();
        cur.reset();
        if (!card)
            return at(cur_line,
                      "DEV ID " + std::to_string(cur_index) + ": " + card.error().message());
        cards.push_back(std::move(*card));
        return ok();
    };

    std::size_t lineno = 0, last_line = 0;
    bool last_was_section = false;
    std::string_view last_section;
    for (std::string_view line : detail::lines(text)) {
        ++lineno;
        const std::string_view t = detail::trim(line);
        if (t.empty() || t.starts_with("---")) continue;
        last_was_section = false;
        if (t.starts_with("DEV ID")) {
            INJECT_TRY_VOID(finish());
            auto idx = detail::parse_u32(detail::trim(t.substr(6)));
            if (!idx) return at(lineno, "bad card line " + detail::quote(t));
            if (!seen.insert(*idx).second)
                return at(lineno, "duplicate DEV ID " + std::to_string(*idx));
            cur.emplace(*idx);
            cur_line = lineno;
            cur_index = *idx;
            continue;
        }
        if (!cur)
            return at(lineno, "unexpected text " + detail::quote(t) + " before the first DEV ID");
        const auto colon = t.find(':');
        if (colon == std::string_view::npos) {
            if (!is_section_name(t)) return at(lineno, "unexpected text " + detail::quote(t));
            last_was_section = true;
            last_section = t;
            last_line = lineno;
            continue;  // a section name ("Device Mem Info"): the keys are unique without it
        }
        const std::string_view key = detail::trim(t.substr(0, colon));
        if (key.empty()) return at(lineno, "unexpected text " + detail::quote(t));
        if (auto r = cur->set(key, detail::trim(t.substr(colon + 1))); !r)
            return at(lineno, r.error().message());
    }
    // Output cut short (a killed or crashed efsmi, a full pipe) shows as a last line without its
    // newline, or a block ending in a section name with nothing under it.
    if (text.back() != '\n') return at(lineno, "output ends in the middle of a line (truncated?)");
    if (cur && last_was_section)
        return at(last_line, "output ends after " + detail::quote(last_section) + " (truncated?)");
    INJECT_TRY_VOID(finish());
    return cards;
}

}  // namespace inject::discover
