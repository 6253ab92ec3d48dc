// SPDX-License-Identifier: Apache-2.0
#include "dra/claims.hpp"

#include <algorithm>
#include <charconv>

namespace dra {

using inject::Errc;
using inject::fail;

namespace {

// A decimal uint32 without sign or leading zeros ("0" is fine).
std::optional<std::uint32_t> parse_number(std::string_view s) {
    if (s.empty() || (s.size() > 1 && s.front() == '0')) return std::nullopt;
    std::uint32_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
}

// A DRS profile name as a device name spells it: "<n>g-<m>gb" (1g.11gb -> 1g-11gb).
bool is_profile_label(std::string_view s) {
    const auto g = s.find("g-");
    if (g == std::string_view::npos || !s.ends_with("gb")) return false;
    const auto digits = [](std::string_view d) {
        return !d.empty() &&
               std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    return s.size() > g + 4 && digits(s.substr(0, g)) && digits(s.substr(g + 2, s.size() - g - 4));
}

// Errors about one claim: "claim 'ns/c': <field>: <what>".
class ClaimErrors {
public:
    explicit ClaimErrors(const ClaimRef& ref) : prefix_("claim '" + ref.text() + "': ") {}
    [[nodiscard]] inject::Unexpected field(const std::string& field,
                                           const std::string& what) const {
        return fail(Errc::InvalidInput, prefix_ + field + ": " + what);
    }
    [[nodiscard]] inject::Unexpected other(Errc code, const std::string& what) const {
        return fail(code, prefix_ + what);
    }

private:
    std::string prefix_;
};

// obj[key] as a string, or an error naming `where`.key.
inject::Result<std::string> string_field(const Json& obj, const char* key, const std::string& where,
                                         const ClaimErrors& err) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return err.field(where + "." + key, "missing");
    if (!it->is_string())
        return err.field(where + "." + key, "want a string, got " + std::string(it->type_name()));
    if (it->get_ref<const std::string&>().empty()) return err.field(where + "." + key, "empty");
    return it->get<std::string>();
}

// obj[key] as an object or array (`kind`), or an error naming `where`.key; `missing` says why
// a missing one matters.
inject::Result<const Json*> node_field(const Json& obj, const char* key, Json::value_t kind,
                                       const std::string& where, const ClaimErrors& err,
                                       const std::string& missing = "missing") {
    const auto it = obj.find(key);
    const std::string name = where.empty() ? key : where + "." + key;
    if (it == obj.end() || it->is_null()) return err.field(name, missing);
    if (it->type() != kind)
        return err.field(name, std::string("want ") +
                                   (kind == Json::value_t::object ? "an object" : "a list") +
                                   ", got " + it->type_name());
    return &*it;
}

// Does a config's `requests` list cover the result's request? Empty = every request; a v1
// subrequest "req/sub" is covered by "req".
bool covers(const Json& requests, const std::string& request) {
    if (requests.empty()) return true;
    return std::any_of(requests.begin(), requests.end(), [&](const Json& r) {
        if (!r.is_string()) return false;
        const auto& s = r.get_ref<const std::string&>();
        return s == request ||
               (request.size() > s.size() && request.starts_with(s) && request[s.size()] == '/');
    });
}

inject::Result<void> check_configs(const Json& devices, const std::vector<Allocated>& ours,
                                   std::string_view driver, const ClaimErrors& err) {
    const auto it = devices.find("config");
    if (it == devices.end() || it->is_null()) return inject::ok();
    const std::string base = "status.allocation.devices.config";
    if (!it->is_array()) return err.field(base, std::string("want a list, got ") + it->type_name());
    for (std::size_t i = 0; i < it->size(); ++i) {
        const Json& c = (*it)[i];
        const std::string where = base + "[" + std::to_string(i) + "]";
        if (!c.is_object())
            return err.field(where, std::string("want an object, got ") + c.type_name());
        const auto op = c.find("opaque");
        if (op == c.end() || op->is_null()) continue;  // not an opaque config: not ours to judge
        if (!op->is_object()) return err.field(where + ".opaque", "want an object");
        INJECT_TRY(const auto to, string_field(*op, "driver", where + ".opaque", err));
        if (to != driver) continue;
        Json requests = Json::array();
        if (const auto r = c.find("requests"); r != c.end() && !r->is_null()) {
            if (!r->is_array()) return err.field(where + ".requests", "want a list");
            requests = *r;
        }
        std::vector<DeviceName> targets;
        for (const auto& a : ours) {
            if (covers(requests, a.request)) {
                INJECT_TRY(auto n, parse_device_name(a.device));
                targets.push_back(n);
            }
        }
        const auto params = op->find("parameters");
        if (params == op->end() || params->is_null())
            return err.field(where + ".opaque.parameters", "missing");
        if (auto ok = validate_opaque(*params, targets); !ok)
            return err.field(where + ".opaque.parameters", ok.error().message());
    }
    return inject::ok();
}

}  // namespace

std::string DeviceName::str() const {
    std::string s = "gcu-" + std::to_string(index);
    if (drs_instance) s += "-drs-" + std::to_string(*drs_instance);
    if (placement) s += "-" + placement->profile + "-" + std::to_string(placement->k);
    return s;
}

inject::Result<DeviceName> parse_device_name(std::string_view name) {
    const auto bad = [&] {
        return fail(Errc::InvalidInput,
                    "device '" + std::string(name) +
                        "' is not one of ours: want gcu-<index>, "
                        "gcu-<index>-drs-<instance> or gcu-<index>-<profile>-<k>");
    };
    if (!name.starts_with("gcu-")) return bad();
    std::string_view rest = name.substr(4);
    DeviceName out;
    const auto dash = rest.find('-');
    const auto index = parse_number(rest.substr(0, dash));
    if (!index) return bad();
    out.index = *index;
    if (dash == std::string_view::npos) return out;
    rest = rest.substr(dash + 1);
    if (rest.starts_with("drs-")) {
        const auto inst = parse_number(rest.substr(4));
        if (!inst) return bad();
        out.drs_instance = *inst;
        return out;
    }
    const auto last = rest.rfind('-');
    const auto k =
        last == std::string_view::npos ? std::nullopt : parse_number(rest.substr(last + 1));
    if (!k || !is_profile_label(rest.substr(0, last))) return bad();
    out.placement = Placement{std::string(rest.substr(0, last)), *k};
    return out;
}

inject::Result<void> validate_opaque(const Json& parameters,
                                     const std::vector<DeviceName>& targets) {
    if (!parameters.is_object())
        return fail(Errc::InvalidInput,
                    std::string("want an object, got ") + parameters.type_name());
    const auto str = [&](const char* key) -> std::string {
        const auto it = parameters.find(key);
        return it != parameters.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string api = str("apiVersion");
    const std::string kind = str("kind");
    if (api != kConfigApiVersion)
        return fail(Errc::InvalidInput,
                    "apiVersion '" + api + "': want " + std::string(kConfigApiVersion));
    if (kind != "GcuConfig" && kind != "DrsConfig")
        return fail(Errc::InvalidInput, "kind '" + kind + "': want GcuConfig or DrsConfig");
    for (const auto& [key, value] : parameters.items()) {
        if (key != "apiVersion" && key != "kind")
            return fail(Errc::InvalidInput, "unknown field '" + key + "' in " + kind);
    }
    const bool want_drs = kind == "DrsConfig";
    for (const auto& t : targets) {
        if (t.is_drs() != want_drs)
            return fail(Errc::InvalidInput, kind + " does not apply to device '" + t.str() + "' (" +
                                                (want_drs ? "a whole card: use GcuConfig"
                                                          : "a DRS instance: use DrsConfig") +
                                                ")");
    }
    return inject::ok();
}

inject::Result<std::vector<Allocated>> allocated_devices(const Json& claim, const ClaimRef& ref,
                                                         std::string_view driver) {
    const ClaimErrors err(ref);
    if (!claim.is_object())
        return err.other(Errc::InvalidInput,
                         std::string("want an object, got ") + claim.type_name());
    INJECT_TRY(const Json* meta, node_field(claim, "metadata", Json::value_t::object, "", err));
    INJECT_TRY(const auto uid, string_field(*meta, "uid", "metadata", err));
    if (uid != ref.uid)
        return err.other(Errc::Conflict, "metadata.uid is '" + uid + "', kubelet asked for '" +
                                             ref.uid +
                                             "' (the claim was deleted and created again)");
    const auto status = claim.find("status");
    if (status == claim.end() || !status->is_object())
        return err.field("status.allocation", "missing (the claim is not allocated)");
    INJECT_TRY(const Json* alloc, node_field(*status, "allocation", Json::value_t::object, "status",
                                             err, "missing (the claim is not allocated)"));
    INJECT_TRY(const Json* devices,
               node_field(*alloc, "devices", Json::value_t::object, "status.allocation", err));
    INJECT_TRY(const Json* results, node_field(*devices, "results", Json::value_t::array,
                                               "status.allocation.devices", err));
    std::vector<Allocated> out;
    for (std::size_t i = 0; i < results->size(); ++i) {
        const Json& r = (*results)[i];
        const std::string where = "status.allocation.devices.results[" + std::to_string(i) + "]";
        if (!r.is_object())
            return err.field(where, std::string("want an object, got ") + r.type_name());
        INJECT_TRY(const auto drv, string_field(r, "driver", where, err));
        if (drv != driver) continue;
        Allocated a;
        INJECT_TRY(a.request, string_field(r, "request", where, err));
        INJECT_TRY(a.pool, string_field(r, "pool", where, err));
        INJECT_TRY(a.device, string_field(r, "device", where, err));
        if (auto n = parse_device_name(a.device); !n)
            return err.field(where + ".device", n.error().message());
        out.push_back(std::move(a));
    }
    if (out.empty())
        return err.other(
            Errc::InvalidInput,
            "status.allocation.devices.results: no device of driver '" + std::string(driver) + "'");
    INJECT_TRY_VOID(check_configs(*devices, out, driver, err));
    return out;
}

inject::Result<void> check_pool(const std::vector<Allocated>& results, const ClaimRef& ref,
                                std::string_view node) {
    const ClaimErrors err(ref);
    if (node.empty())
        return err.other(Errc::InvalidInput, "this plugin has no node name: not prepared");
    for (const auto& a : results)
        if (a.pool != node)
            return err.other(Errc::Conflict,
                             "device '" + a.device + "' is allocated from pool '" + a.pool +
                                 "', not this node's ('" + std::string(node) +
                                 "'): allocated for another node, not prepared here");
    return inject::ok();
}

}  // namespace dra
