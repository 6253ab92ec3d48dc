// SPDX-License-Identifier: Apache-2.0
// Docker's daemon.json. The one adapter between nlohmann/json and this part of the library:
// its exceptions end here. ordered_json keeps the user's key order.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "runtime_config_internal.hpp"

namespace inject::runtime_config::detail {
namespace {

using Json = nlohmann::ordered_json;

Result<Json> parse_json(std::string_view text, std::string_view source) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return Json::object();
    try {
        Json j = Json::parse(text);
        if (!j.is_object())
            return fail(Errc::InvalidInput,
                        std::string(source) + ": line 1: the top level must be an object");
        return j;
    } catch (const Json::parse_error& e) {
        auto upto = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
        auto line =
            std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(upto), '\n') + 1;
        // nlohmann's text: "[json.exception.parse_error.101] parse error at line 3, column 5:
        // <why>"
        std::string why = e.what();
        if (auto p = why.find("column "); p != std::string::npos) {
            if (auto c = why.find(": ", p); c != std::string::npos) why = why.substr(c + 2);
        }
        return fail(Errc::InvalidInput,
                    std::string(source) + ": line " + std::to_string(line) + ": " + why);
    }
}

/// The indent the file uses (spaces before its first indented line); 4 if none.
int indent_of(std::string_view text) {
    for (auto nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', nl + 1)) {
        auto first = text.find_first_not_of(' ', nl + 1);
        if (first == std::string_view::npos) break;
        if (first > nl + 1 && text[first] != '\n') return static_cast<int>(first - nl - 1);
    }
    return 4;
}

std::string dump(const Json& j, std::string_view like) {
    return j.dump(indent_of(like)) + "\n";
}

Result<Json*> object_member(Json& parent, const std::string& key, std::string_view source) {
    if (!parent.contains(key)) parent[key] = Json::object();
    auto& m = parent[key];
    if (!m.is_object())
        return fail(Errc::InvalidInput, std::string(source) + ": '" + key + "' must be an object");
    return &m;
}

void erase_if_empty(Json& parent, const std::string& key) {
    if (parent.contains(key) && parent[key].is_object() && parent[key].empty()) parent.erase(key);
}

}  // namespace

Result<std::string> json_configure(std::string_view text, const Options& o,
                                   std::string_view source) {
    try {
        INJECT_TRY(auto j, parse_json(text, source));
        INJECT_TRY(auto* runtimes, object_member(j, "runtimes", source));
        INJECT_TRY(auto* entry, object_member(*runtimes, o.runtime_name, source));
        (*entry)["path"] = o.runtime_path;
        if (o.set_as_default) j["default-runtime"] = o.runtime_name;
        if (o.cdi_enabled) {
            INJECT_TRY(auto* features, object_member(j, "features", source));
            (*features)["cdi"] = true;
        }
        return dump(j, text);
    } catch (const Json::exception& e) {
        return fail(Errc::Internal, std::string(source) + ": " + e.what());
    }
}

Result<std::string> json_unconfigure(std::string_view text, const Options& o,
                                     std::string_view source,
                                     std::optional<std::string_view> original) {
    try {
        INJECT_TRY(auto j, parse_json(text, source));
        if (j.contains("runtimes") && j["runtimes"].is_object()) {
            j["runtimes"].erase(o.runtime_name);
            erase_if_empty(j, "runtimes");
        }
        std::optional<Json> orig;
        if (original) {
            if (auto parsed = parse_json(*original, "backup")) orig = std::move(*parsed);
        }
        if (j.contains("default-runtime") && j["default-runtime"] == o.runtime_name) {
            // --set-as-default replaced the user's choice: put it back where it was.
            if (orig && orig->contains("default-runtime") &&
                (*orig)["default-runtime"] != o.runtime_name)
                j["default-runtime"] = (*orig)["default-runtime"];
            else
                j.erase("default-runtime");
        }
        if (o.cdi_enabled && j.contains("features") && j["features"].is_object()) {
            j["features"].erase("cdi");
            erase_if_empty(j, "features");
        }
        if (orig && *orig == j) return std::string(*original);
        std::string out = dump(j, text);
        auto again = parse_json(text, source);
        if (again && *again == j) return std::string(text);  // nothing of ours: no byte changes
        return out;
    } catch (const Json::exception& e) {
        return fail(Errc::Internal, std::string(source) + ": " + e.what());
    }
}

}  // namespace inject::runtime_config::detail
