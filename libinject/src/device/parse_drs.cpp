// SPDX-License-Identifier: Apache-2.0
// DRS (hard partitions of a card), read the way Enflame's own device plugin (gcushare 3.6.5)
// reads efsmi: `efsmi -i <card> --drs --list-profile` and `efsmi -i <card> --drs
// --list-instance` print tables whose rows are the lines holding a profile name
// (`\b\d+g\.\d+gb\b`); everything else (headers, borders, notes) is ignored. A row is split on
// blanks once the `|` column borders are blanked out. Formats: docs/efsmi-model.md.
#include <algorithm>
#include <cctype>

#include "device/text_util.hpp"
#include "inject/discover.hpp"

namespace inject::discover {
namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/// `\d+g\.\d+gb` as a whole token: "1g.11gb", "12g.96gb".
bool is_profile_name(std::string_view t) {
    std::size_t i = 0;
    auto digits = [&] {
        const std::size_t start = i;
        while (i < t.size() && is_digit(t[i])) ++i;
        return i > start;
    };
    auto lit = [&](std::string_view s) {
        if (t.substr(i, s.size()) != s) return false;
        i += s.size();
        return true;
    };
    return digits() && lit("g.") && digits() && lit("gb") && i == t.size();
}

bool is_id_text(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

/// The blank-separated tokens of a line, `|` counting as a blank.
std::vector<std::string_view> tokens(std::string_view line) {
    std::vector<std::string_view> out;
    auto sep = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '|'; };
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && sep(line[i])) ++i;
        const std::size_t start = i;
        while (i < line.size() && !sep(line[i])) ++i;
        if (i > start) out.push_back(line.substr(start, i - start));
    }
    return out;
}

std::string joined(const std::vector<std::string_view>& t, std::size_t from) {
    std::string out;
    for (std::size_t i = from; i < t.size(); ++i) {
        out += i == from ? "" : " ";
        out += t[i];
    }
    return out;
}

Result<void> bad(std::string why) {
    return fail(Errc::InvalidInput, std::move(why));
}

/// Calls `row(tokens)` for each table row (a line with a profile-name token); a row's error
/// becomes "<src>: line N: <why> in '<row>'".
template <typename F>
Result<void> for_each_row(std::string_view src, std::string_view text, F&& row) {
    std::size_t lineno = 0;
    for (std::string_view line : detail::lines(text)) {
        ++lineno;
        auto t = tokens(line);
        if (std::none_of(t.begin(), t.end(), is_profile_name)) continue;
        if (auto r = row(t); !r)
            return fail(Errc::InvalidInput, std::string(src) + ": line " + std::to_string(lineno) +
                                                ": " + r.error().what() + " in " +
                                                detail::quote(joined(t, 0)));
    }
    return ok();
}

/// A row's card index: a number, and the card asked for when `card` is set.
Result<std::uint32_t> row_card(std::string_view text, std::optional<std::uint32_t> card) {
    auto idx = detail::parse_u32(text);
    if (!idx) return fail(Errc::InvalidInput, "bad card index " + detail::quote(text));
    if (card && *idx != *card)
        return fail(Errc::InvalidInput, "a row of card " + std::to_string(*idx) +
                                            " in the answer for card " + std::to_string(*card));
    return *idx;
}

}  // namespace

Result<std::vector<device::DrsProfile>> parse_efsmi_drs_profiles(
    std::string_view text, std::optional<std::uint32_t> card) {
    constexpr std::string_view kSrc = "efsmi --drs --list-profile";
    std::vector<device::DrsProfile> out;
    auto r = for_each_row(kSrc, text, [&](const std::vector<std::string_view>& t) -> Result<void> {
        // card-index profile-name profile-id instance-count memory sip; the memory may be
        // "10744MiB", "10744 MiB" or a bare number of MiB.
        if (t.size() != 6 && t.size() != 7)
            return bad("want 6 columns, not " + std::to_string(t.size()));
        if (auto c = row_card(t[0], card); !c) return fail(std::move(c).error());
        if (!is_profile_name(t[1])) return bad("bad profile name " + detail::quote(t[1]));
        auto id = detail::parse_u32(t[2]);
        auto max = detail::parse_u32(t[3]);
        auto sips = detail::parse_u32(t.back());
        std::string mem_text(t[4]);
        if (t.size() == 7) mem_text += " " + std::string(t[5]);
        std::optional<std::uint64_t> mem;
        if (auto mib = detail::parse_u32(mem_text)) {
            mem = std::uint64_t{*mib} << 20;
        } else if (auto m = parse_memory(mem_text)) {
            mem = *m;
        }
        if (!id) return bad("bad profile id " + detail::quote(t[2]));
        if (!max || *max == 0) return bad("bad instance count " + detail::quote(t[3]));
        if (!mem) return bad("bad memory " + detail::quote(mem_text));
        if (!sips) return bad("bad SIP count " + detail::quote(t.back()));
        device::DrsProfile p{std::string(t[1]), *id, *max, *mem};
        p.sips = *sips;
        // Every card of a product offers the same profiles: keep each one once.
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
        return ok();
    });
    if (!r) return fail(std::move(r).error());
    return out;
}

Result<std::vector<device::DrsInstance>> parse_efsmi_drs_instances(
    std::string_view text, std::optional<std::uint32_t> card) {
    constexpr std::string_view kSrc = "efsmi --drs --list-instance";
    std::vector<device::DrsInstance> out;
    auto r = for_each_row(kSrc, text, [&](const std::vector<std::string_view>& t) -> Result<void> {
        // card-index profile-name profile-id instance-id placement (placement: the rest), or
        // the older card-index profile-name instance-id uuid.
        if (t.size() < 4) return bad("want 4 or 5 columns, not " + std::to_string(t.size()));
        auto parent = row_card(t[0], card);
        if (!parent) return fail(std::move(parent).error());
        if (!is_profile_name(t[1])) return bad("bad profile name " + detail::quote(t[1]));
        device::DrsInstance in{*parent, 0, std::string(t[1]), {}};
        const bool with_uuid = t.size() == 4;
        auto id = detail::parse_u32(t[with_uuid ? 2 : 3]);
        if (!id) return bad("bad instance id " + detail::quote(t[with_uuid ? 2 : 3]));
        in.instance_id = *id;
        if (with_uuid) {
            if (!is_id_text(t[3])) return bad("bad uuid " + detail::quote(t[3]));
            in.uuid = t[3];
        } else {
            auto pid = detail::parse_u32(t[2]);
            if (!pid) return bad("bad profile id " + detail::quote(t[2]));
            in.profile_id = *pid;
            in.placement = joined(t, 4);
        }
        const bool dup = std::any_of(out.begin(), out.end(), [&](const device::DrsInstance& o) {
            return o.parent_index == in.parent_index && o.instance_id == in.instance_id;
        });
        if (dup) return bad("instance " + std::to_string(in.instance_id) + " listed twice");
        out.push_back(std::move(in));
        return ok();
    });
    if (!r) return fail(std::move(r).error());
    return out;
}

}  // namespace inject::discover
