// SPDX-License-Identifier: Apache-2.0
// DRS (hard partitions of a card): `efsmi -L` lists cards and their instances,
// `efsmi --drs --list-profile` the profiles each card offers. Formats: docs/efsmi-model.md.
#include "device/card_fields.hpp"
#include "device/text_util.hpp"

#include <algorithm>
#include <cctype>

namespace inject::discover {
namespace {

struct Entry {
    std::uint32_t id = 0;
    std::string name, uuid;
};

bool is_name_text(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

// "<id>: <name> (UUID: <uuid>)", the rest of a "GCU ..." or "DRS ..." line.
std::optional<Entry> parse_entry(std::string_view rest) {
    const auto colon = rest.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto id = detail::parse_u32(detail::trim(rest.substr(0, colon)));
    rest = detail::trim(rest.substr(colon + 1));
    const auto open = rest.find("(UUID:");
    if (!id || open == std::string_view::npos || rest.back() != ')') return std::nullopt;
    Entry e;
    e.id = *id;
    e.name = detail::trim(rest.substr(0, open));
    e.uuid = detail::trim(rest.substr(open + 6, rest.size() - open - 7));
    if (!is_name_text(e.name) || !is_name_text(e.uuid)) return std::nullopt;
    return e;
}

}  // namespace

Result<std::vector<device::DrsInstance>> parse_efsmi_drs_list(std::string_view text) {
    constexpr std::string_view kSrc = "efsmi -L";
    std::vector<device::DrsInstance> out;
    std::optional<std::uint32_t> parent;
    std::size_t lineno = 0;
    for (std::string_view line : detail::lines(text)) {
        ++lineno;
        const std::string_view t = detail::trim(line);
        if (t.empty()) continue;
        auto bad = [&](const std::string& why) {
            return fail(Errc::InvalidInput,
                        std::string(kSrc) + ": line " + std::to_string(lineno) + ": " + why);
        };
        if (t.starts_with("GCU ")) {
            auto e = parse_entry(t.substr(4));
            if (!e) return bad("bad card line " + detail::quote(t));
            parent = e->id;
        } else if (t.starts_with("DRS ")) {
            auto e = parse_entry(t.substr(4));
            if (!e) return bad("bad DRS line " + detail::quote(t));
            if (!parent) return bad("DRS instance before any GCU line");
            out.push_back({*parent, e->id, e->name, e->uuid});
        } else {
            return bad("unexpected text " + detail::quote(t));
        }
    }
    return out;
}

Result<std::vector<device::DrsProfile>> parse_efsmi_drs_profiles(std::string_view text) {
    constexpr std::string_view kSrc = "efsmi --drs --list-profile";
    std::vector<device::DrsProfile> out;
    bool in_card = false;
    std::size_t lineno = 0;
    for (std::string_view line : detail::lines(text)) {
        ++lineno;
        const std::string_view t = detail::trim(line);
        if (t.empty()) continue;
        auto bad = [&](const std::string& why) {
            return fail(Errc::InvalidInput,
                        std::string(kSrc) + ": line " + std::to_string(lineno) + ": " + why);
        };
        if (t.starts_with("DEV ID")) {
            if (!detail::parse_u32(detail::trim(t.substr(6)))) return bad("bad card line " + detail::quote(t));
            in_card = true;
            continue;
        }
        if (!in_card) return bad("unexpected text " + detail::quote(t) + " before the first DEV ID");
        if (t == "DRS not supported") continue;
        // "Profile ID 0 : 1g.11gb : Max Instances 4 : Memory 10744 MiB"
        std::vector<std::string_view> parts;
        for (std::string_view rest = t;;) {
            const auto c = rest.find(':');
            parts.push_back(detail::trim(rest.substr(0, c)));
            if (c == std::string_view::npos) break;
            rest.remove_prefix(c + 1);
        }
        if (parts.size() != 4 || !parts[0].starts_with("Profile ID") ||
            !parts[2].starts_with("Max Instances") || !parts[3].starts_with("Memory"))
            return bad("bad profile line " + detail::quote(t));
        auto id = detail::parse_u32(detail::trim(parts[0].substr(10)));
        auto max = detail::parse_u32(detail::trim(parts[2].substr(13)));
        auto mem = parse_memory(parts[3].substr(6));
        if (!id || !max || !mem || !is_name_text(parts[1])) return bad("bad profile line " + detail::quote(t));
        device::DrsProfile p{std::string(parts[1]), *id, *max, *mem};
        // Every card of a product offers the same profiles: keep each one once.
        const bool known = std::any_of(out.begin(), out.end(), [&](const device::DrsProfile& q) {
            return q.name == p.name && q.id == p.id && q.max_instances == p.max_instances &&
                   q.memory_bytes == p.memory_bytes;
        });
        if (!known) out.push_back(std::move(p));
    }
    return out;
}

}  // namespace inject::discover
