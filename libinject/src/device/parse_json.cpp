// SPDX-License-Identifier: Apache-2.0
// `efsmi -q --json-format`: {"devices":[{"id":0,"Device Info":{"Dev Name":"S60",...},...}]}.
// No public sample exists (docs/efsmi-model.md), so this reads tolerantly: sections may nest
// or be flat, values may be strings, numbers or booleans. Values go through the same field
// table as the text parser, so both backends check and name things the same way.
// This file is the nlohmann/json adapter: no json exception leaves it.
#include <nlohmann/json.hpp>
#include <set>

#include "device/card_fields.hpp"
#include "device/text_util.hpp"

namespace inject::discover {
namespace {

using nlohmann::json;

bool is_memory_key(std::string_view key) {
    return key == "Total Size" || key == "Mem Size";
}

// The text form of a JSON scalar as efsmi -q would print it; nullopt for null (unknown).
std::optional<std::string> scalar_text(std::string_view key, const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
    if (v.is_number_unsigned() || v.is_number_integer()) {
        // A bare number for a memory size is in MiB, the unit efsmi prints.
        std::string s = v.dump();
        return is_memory_key(key) ? s + " MiB" : s;
    }
    if (v.is_number()) return v.dump();
    return std::nullopt;
}

Result<void> take_members(detail::CardFields& card, const json& obj) {
    for (const auto& [key, v] : obj.items()) {
        if (v.is_object()) {
            INJECT_TRY_VOID(take_members(card, v));  // a section ("Device Info": {...})
            continue;
        }
        if (key == "id") continue;
        if (v.is_array()) continue;  // nothing we read is a list
        if (auto text = scalar_text(key, v)) INJECT_TRY_VOID(card.set(key, *text));
    }
    return ok();
}

Result<std::uint32_t> device_id(const json& dev, std::size_t pos) {
    auto it = dev.find("id");
    if (it == dev.end()) return static_cast<std::uint32_t>(pos);
    if (it->is_number_unsigned() && it->get<std::uint64_t>() <= UINT32_MAX)
        return static_cast<std::uint32_t>(it->get<std::uint64_t>());
    if (it->is_string())
        if (auto v = detail::parse_u32(it->get<std::string>())) return *v;
    return fail(Errc::InvalidInput, "bad id " + detail::quote(it->dump()));
}

Result<std::vector<RawCard>> parse_devices(const json& doc, const std::string& src) {
    if (!doc.is_object() || !doc.contains("devices") || !doc["devices"].is_array())
        return fail(Errc::InvalidInput, src + ": no 'devices' array");
    std::vector<RawCard> cards;
    std::set<std::uint32_t> seen;
    const json& devs = doc["devices"];
    for (std::size_t i = 0; i < devs.size(); ++i) {
        const std::string where = src + ": devices[" + std::to_string(i) + "]: ";
        const json& dev = devs[i];
        if (!dev.is_object()) return fail(Errc::InvalidInput, where + "not an object");
        auto id = device_id(dev, i);
        if (!id) return fail(Errc::InvalidInput, where + id.error().message());
        if (!seen.insert(*id).second)
            return fail(Errc::InvalidInput, where + "duplicate id " + std::to_string(*id));
        detail::CardFields fields(*id);
        if (auto r = take_members(fields, dev); !r)
            return fail(Errc::InvalidInput, where + r.error().message());
        auto card = std::move(fields).finish();
        if (!card) return fail(Errc::InvalidInput, where + card.error().message());
        cards.push_back(std::move(*card));
    }
    return cards;
}

// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." ->
// "syntax error ...": the byte offset we add says where.
std::string strip_json_prefix(const std::string& what) {
    const auto col = what.find("column ");
    const auto colon = what.find(": ", col == std::string::npos ? 0 : col);
    if (colon == std::string::npos) return what;
    return what.substr(colon + 2);
}

}  // namespace

Result<std::vector<RawCard>> parse_efsmi_json(std::string_view text, std::string_view source) {
    const std::string src(source);
    if (detail::trim(text).empty()) return fail(Errc::InvalidInput, src + ": empty output");
    try {
        const json doc = json::parse(text.begin(), text.end());
        return parse_devices(doc, src);
    } catch (const json::parse_error& e) {
        return fail(Errc::InvalidInput,
                    src + ": byte " + std::to_string(e.byte) + ": " + strip_json_prefix(e.what()));
    } catch (const json::exception& e) {
        return fail(Errc::InvalidInput, src + ": " + strip_json_prefix(e.what()));
    }
}

}  // namespace inject::discover
