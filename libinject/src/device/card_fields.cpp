// SPDX-License-Identifier: Apache-2.0
#include "device/card_fields.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>

#include "device/text_util.hpp"

namespace inject::discover {
namespace {

bool is_printable(std::string_view s) {
    // Bytes >= 0x80 are allowed (UTF-8 product names); control characters are not.
    return std::none_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
}

bool is_id_text(std::string_view s) {
    // UUIDs end up in CDI device names and env values: keep them to a safe alphabet.
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

std::optional<std::uint32_t> parse_hex(std::string_view s, std::uint32_t max) {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v > max) return std::nullopt;
    return v;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

Error bad_value(std::string_view key, std::string_view value) {
    return Error(Errc::InvalidInput,
                 "bad value " + detail::quote(value) + " for '" + std::string(key) + "'");
}

}  // namespace

namespace detail {

Result<void> CardFields::set(std::string_view key, std::string_view value) {
    auto dup = [&](bool& seen) -> Result<void> {
        if (seen) return fail(Errc::InvalidInput, "duplicate '" + std::string(key) + "'");
        seen = true;
        return ok();
    };
    auto hex_field = [&](std::optional<std::uint32_t>& slot, std::uint32_t max) -> Result<void> {
        if (slot) return fail(Errc::InvalidInput, "duplicate '" + std::string(key) + "'");
        slot = parse_hex(value, max);
        if (!slot) return fail(bad_value(key, value));
        return ok();
    };
    if (key == "Ver") {
        INJECT_TRY_VOID(dup(have_driver_));
        if (value.empty() || !is_printable(value)) return fail(bad_value(key, value));
        card_.driver_version = value;
    } else if (key == "Dev Name") {
        INJECT_TRY_VOID(dup(have_name_));
        if (value.empty() || !is_printable(value)) return fail(bad_value(key, value));
        card_.product = value;
    } else if (key == "Dev UUID") {
        INJECT_TRY_VOID(dup(have_uuid_));
        if (!is_id_text(value)) return fail(bad_value(key, value));
        card_.uuid = value;
    } else if (key == "Dev SN") {
        INJECT_TRY_VOID(dup(have_serial_));
        if (!is_printable(value)) return fail(bad_value(key, value));
        card_.serial = value;
    } else if (key == "Health") {
        if (card_.healthy) return fail(Errc::InvalidInput, "duplicate '" + std::string(key) + "'");
        const std::string v = lower(value);
        if (v == "true")
            card_.healthy = true;
        else if (v == "false")
            card_.healthy = false;
        else
            return fail(bad_value(key, value));
    } else if (key == "Device ID") {
        INJECT_TRY_VOID(dup(have_device_id_));
        auto id = parse_hex(value, 0xffff);
        if (!id) return fail(bad_value(key, value));
        char buf[8];
        (void)std::snprintf(buf, sizeof buf, "%04x", *id);
        card_.pci_device_id = buf;
    } else if (key == "Domain") {
        return hex_field(domain_, 0xffff);
    } else if (key == "Bus") {
        return hex_field(bus_, 0xff);
    } else if (key == "Dev") {
        return hex_field(dev_, 0x1f);
    } else if (key == "Func") {
        return hex_field(func_, 0x7);
    } else if (key == "Total Size" || key == "Mem Size") {  // "Mem Size": drivers before 1.4
        if (have_memory_)
            return fail(Errc::InvalidInput, "duplicate memory size ('" + std::string(key) + "')");
        have_memory_ = true;
        auto bytes = parse_memory(value);
        if (!bytes) return fail(bad_value(key, value));
        card_.memory_bytes = *bytes;
    }
    return ok();
}

Result<RawCard> CardFields::finish() && {
    std::string missing;
    auto need = [&](bool have, std::string_view key) {
        if (have) return;
        if (!missing.empty()) missing += ", ";
        missing += "'" + std::string(key) + "'";
    };
    need(have_name_, "Dev Name");
    need(have_uuid_, "Dev UUID");
    need(have_memory_, "Total Size");
    need(domain_.has_value(), "Domain");
    need(bus_.has_value(), "Bus");
    need(dev_.has_value(), "Dev");
    need(func_.has_value(), "Func");
    if (!missing.empty()) return fail(Errc::InvalidInput, "no " + missing);
    char buf[32];
    (void)std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", *domain_, *bus_, *dev_, *func_);
    card_.pci_bus_id = buf;
    return std::move(card_);
}

}  // namespace detail

Result<std::uint64_t> parse_memory(std::string_view text) {
    const std::string_view s = detail::trim(text);
    auto bad = [&](std::string_view why) {
        return fail(Errc::InvalidInput,
                    "bad memory size '" + std::string(text) + "': " + std::string(why));
    };
    std::size_t i = 0;
    std::uint64_t whole = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), whole);
    if (ec == std::errc::result_out_of_range) return bad("too large");
    if (ec != std::errc{}) return bad("no number");
    i = static_cast<std::size_t>(p - s.data());
    // A fraction ("1.5 GiB") is kept to nine digits, exactly, in integer arithmetic.
    std::uint64_t frac = 0, frac_div = 1;
    if (i < s.size() && s[i] == '.') {
        ++i;
        const std::size_t start = i;
        for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
            if (frac_div < 1'000'000'000) {
                frac = frac * 10 + static_cast<std::uint64_t>(s[i] - '0');
                frac_div *= 10;
            }
        }
        if (i == start) return bad("no digits after '.'");
    }
    const std::string unit = lower(detail::trim(s.substr(i)));
    if (unit.empty()) return bad("no unit");
    // efsmi's units are binary whatever their spelling ("MB" on old drivers means MiB).
    struct Unit {
        std::string_view name;
        std::uint64_t mult;
    };
    static constexpr std::array<Unit, 17> kUnits{{
        {"b", 1},
        {"bytes", 1},
        {"k", 1ULL << 10},
        {"kb", 1ULL << 10},
        {"kib", 1ULL << 10},
        {"m", 1ULL << 20},
        {"mb", 1ULL << 20},
        {"mib", 1ULL << 20},
        {"g", 1ULL << 30},
        {"gb", 1ULL << 30},
        {"gib", 1ULL << 30},
        {"t", 1ULL << 40},
        {"tb", 1ULL << 40},
        {"tib", 1ULL << 40},
        {"p", 1ULL << 50},
        {"pb", 1ULL << 50},
        {"pib", 1ULL << 50},
    }};
    const auto* u =
        std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& x) { return x.name == unit; });
    if (u == kUnits.end())
        return bad("unknown unit '" + std::string(detail::trim(s.substr(i))) + "'");
    constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
    if (whole > kMax / u->mult) return bad("too large");
    const std::uint64_t frac_bytes =
        frac * (u->mult / frac_div) + (frac * (u->mult % frac_div)) / frac_div;
    if (whole * u->mult > kMax - frac_bytes) return bad("too large");
    return whole * u->mult + frac_bytes;
}

}  // namespace inject::discover
