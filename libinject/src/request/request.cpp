// SPDX-License-Identifier: Apache-2.0
// What a container asks for: ENFLAME_VISIBLE_DEVICES, ENFLAME_DRIVER_CAPABILITIES and
// cdi.k8s.io/* annotations (docs/requests.md). Pure parsing; select() matches a request
// against discovered cards.
#include "inject/request.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "inject/text.hpp"

namespace inject::request {
namespace {

constexpr std::string_view kCdiAnnotationPrefix = "cdi.k8s.io/";
/// A range wider than this is a typo, not a request ("0-4000000000").
constexpr std::uint32_t kMaxRange = 1024;

std::string quote(std::string_view s) {
    return "'" + std::string(s) + "'";
}

std::string_view trim(std::string_view s) {
    return text::trim(s, " \t");
}

std::vector<std::string_view> split_commas(std::string_view s) {
    std::vector<std::string_view> out;
    for (;;) {
        auto comma = s.find(',');
        out.push_back(trim(s.substr(0, comma)));
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
    }
    return out;
}

bool is_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_alnum(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// A decimal card number; nullopt when out of range.
std::optional<std::uint32_t> to_index(std::string_view s) {
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}

/// UUIDs as efsmi prints them: "TR6Y46010302", "GCU-U53000080105", RFC 4122 for DRS.
/// Letters, digits and inner dashes, at least 8 characters.
bool looks_like_uuid(std::string_view s) {
    if (s.size() < 8 || s.front() == '-' || s.back() == '-') return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '-'; });
}

/// One part of a CDI name: starts and ends with a letter or digit; `extra` lists the other
/// characters allowed inside (CDI spec: vendor "._-", class "_-", name "._-:").
bool cdi_part_ok(std::string_view s, std::string_view extra) {
    if (s.empty() || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
    return std::all_of(s.begin(), s.end(), [&](char c) {
        return is_alnum(c) || extra.find(c) != std::string_view::npos;
    });
}

/// "<card>:<profile>:<instance-id>", the name every DRS instance has ("0:1g.11gb:1").
bool looks_like_drs_name(std::string_view s) {
    const auto a = s.find(':');
    const auto b = s.rfind(':');
    if (a == std::string_view::npos || a == b) return false;
    const std::string_view profile = s.substr(a + 1, b - a - 1);
    return is_digits(s.substr(0, a)) && is_digits(s.substr(b + 1)) && cdi_part_ok(profile, "._-");
}

}  // namespace

bool is_qualified_cdi_name(std::string_view name) {
    auto slash = name.find('/');
    auto eq = name.find('=');
    if (slash == std::string_view::npos || eq == std::string_view::npos || eq < slash) return false;
    return cdi_part_ok(name.substr(0, slash), "._-") &&
           cdi_part_ok(name.substr(slash + 1, eq - slash - 1), "_-") &&
           cdi_part_ok(name.substr(eq + 1), "._-:");
}

namespace {

struct Parser {
    Request& req;
    std::string_view src;
    std::set<std::string, std::less<>> seen;  // entries as written, and "#<index>"
    std::set<std::string, std::less<>> cdi_seen;

    Unexpected bad(std::string_view entry, std::string_view why) const {
        return fail(Errc::InvalidInput,
                    std::string(src) + ": bad entry " + quote(entry) + ": " + std::string(why));
    }
    Unexpected duplicate(std::string_view entry) const {
        return fail(Errc::InvalidInput, std::string(src) + ": duplicate entry " + quote(entry));
    }

    Result<void> add_index(std::string_view entry, std::uint32_t index, Selector::Kind kind) {
        if (!seen.insert("#" + std::to_string(index)).second) return duplicate(entry);
        req.selectors.push_back(Selector{kind, std::string(entry), index});
        return ok();
    }

    Result<void> add_range(std::string_view entry, std::size_t dash) {
        auto lo = to_index(entry.substr(0, dash));
        auto hi = to_index(entry.substr(dash + 1));
        if (!lo || !hi) return bad(entry, "number out of range");
        if (*lo > *hi) return bad(entry, "range end is before its start");
        if (*hi - *lo >= kMaxRange)
            return bad(entry, "range spans more than " + std::to_string(kMaxRange) + " cards");
        for (std::uint32_t i = *lo; i <= *hi; ++i) {
            if (!seen.insert("#" + std::to_string(i)).second) return duplicate(entry);
            req.selectors.push_back(Selector{Selector::Kind::Index, std::string(entry), i});
        }
        return ok();
    }

    Result<void> add_named(std::string_view entry, Selector::Kind kind) {
        if (!seen.insert(std::string(entry)).second) return duplicate(entry);
        req.selectors.push_back(Selector{kind, std::string(entry), 0});
        return ok();
    }

    Result<void> add_cdi(std::string_view entry) {
        if (!cdi_seen.insert(std::string(entry)).second) return duplicate(entry);
        req.cdi_names.emplace_back(entry);
        return ok();
    }

    Result<void> entry(std::string_view e) {
        if (e.empty())
            return fail(Errc::InvalidInput, std::string(src) + ": empty entry in the list");
        if (e == "all" || e == "none" || e == "void")
            return bad(e, "cannot be combined with other entries");
        if (is_digits(e)) {
            auto idx = to_index(e);
            if (!idx) return bad(e, "number out of range");
            return add_index(e, *idx, Selector::Kind::Index);
        }
        if (auto dash = e.find('-'); dash != std::string_view::npos && dash > 0 &&
                                     is_digits(e.substr(0, dash)) && is_digits(e.substr(dash + 1)))
            return add_range(e, dash);
        if (e.find('/') != std::string_view::npos || e.find('=') != std::string_view::npos) {
            if (!is_qualified_cdi_name(e))
                return bad(e, "not a fully qualified CDI name (vendor.com/class=name)");
            return add_cdi(e);
        }
        if (e.starts_with("GCU-") && is_digits(e.substr(4))) {
            auto idx = to_index(e.substr(4));
            if (!idx) return bad(e, "number out of range");
            return add_index(e, *idx, Selector::Kind::GcuName);
        }
        if (e.starts_with("DRS-")) {
            if (!looks_like_uuid(e.substr(4))) return bad(e, "not a DRS-<uuid>");
            return add_named(e, Selector::Kind::Drs);
        }
        if (looks_like_drs_name(e)) return add_named(e, Selector::Kind::Drs);
        if (looks_like_uuid(e)) return add_named(e, Selector::Kind::Uuid);
        return bad(e, "not an index, range, GCU-n, UUID, DRS-uuid or card:profile:id");
    }
};

Result<void> parse_visible(std::string_view value, Request& req) {
    std::string_view v = trim(value);
    if (v.empty() || v == "void") return ok();
    if (v == "none") {
        req.mode = Request::Mode::NoCards;
        return ok();
    }
    if (v == "all") {
        req.mode = Request::Mode::All;
        return ok();
    }
    Parser p{req, kVisibleDevicesEnv, {}, {}};
    for (auto e : split_commas(v)) INJECT_TRY_VOID(p.entry(e));
    if (!req.selectors.empty()) req.mode = Request::Mode::List;
    return ok();
}

Result<unsigned> parse_capabilities(std::string_view value) {
    std::string_view v = trim(value);
    if (v.empty()) return static_cast<unsigned>(kUtility | kCompute);
    unsigned caps = 0;
    std::set<std::string_view> seen;
    for (auto e : split_commas(v)) {
        unsigned bit = 0;
        if (e == "utility")
            bit = kUtility;
        else if (e == "compute")
            bit = kCompute;
        else if (e == "all")
            bit = kAllCapabilities;
        else if (e.empty())
            return fail(Errc::InvalidInput,
                        std::string(kDriverCapabilitiesEnv) + ": empty entry in the list");
        else
            return fail(Errc::InvalidInput, std::string(kDriverCapabilitiesEnv) +
                                                ": unknown capability " + quote(e) +
                                                " (expected utility, compute or all)");
        if (!seen.insert(e).second)
            return fail(Errc::InvalidInput,
                        std::string(kDriverCapabilitiesEnv) + ": duplicate entry " + quote(e));
        caps |= bit;
    }
    return caps;
}

/// The value of `key` in a "K=V" env list; the last one wins, as for getenv after execve.
const std::string* env_value(const std::vector<std::string>& env, std::string_view key) {
    const std::string* found = nullptr;
    for (const auto& kv : env)
        if (kv.size() > key.size() && kv[key.size()] == '=' && kv.starts_with(key))
            found = &kv;
        else if (kv == key)
            found = nullptr;  // "KEY" without '=' is not a value
    return found;
}

}  // namespace

Result<Request> parse(const std::vector<std::string>& env,
                      const std::map<std::string, std::string>& annotations) {
    Request req;
    std::vector<std::string> sources;
    if (const auto* kv = env_value(env, kVisibleDevicesEnv)) {
        INJECT_TRY_VOID(
            parse_visible(std::string_view(*kv).substr(kVisibleDevicesEnv.size() + 1), req));
        if (!req.empty()) sources.emplace_back(kVisibleDevicesEnv);
    }
    if (const auto* kv = env_value(env, kDriverCapabilitiesEnv)) {
        INJECT_TRY(
            req.capabilities,
            parse_capabilities(std::string_view(*kv).substr(kDriverCapabilitiesEnv.size() + 1)));
    }
    // Each annotation is checked on its own; the same device named by the env and an annotation
    // (a device plugin and the image agreeing) is taken once.
    for (const auto& [key, value] : annotations) {
        if (!key.starts_with(kCdiAnnotationPrefix)) continue;
        Request ann;
        Parser p{ann, key, {}, {}};
        for (auto e : split_commas(value)) {
            if (e.empty()) return fail(Errc::InvalidInput, key + ": empty entry in the list");
            if (!is_qualified_cdi_name(e))
                return p.bad(e, "not a fully qualified CDI name (vendor.com/class=name)");
            INJECT_TRY_VOID(p.add_cdi(e));
        }
        for (auto& n : ann.cdi_names)
            if (std::find(req.cdi_names.begin(), req.cdi_names.end(), n) == req.cdi_names.end())
                req.cdi_names.push_back(std::move(n));
        sources.push_back(key);
    }
    for (std::size_t i = 0; i < sources.size(); ++i) req.source += (i ? ", " : "") + sources[i];
    return req;
}

Result<Selection> select(const Request& req, const device::Host& host) {
    Selection sel;
    const auto src = std::string(kVisibleDevicesEnv);
    auto card_list = [&] {
        std::string s;
        for (const auto& d : host.devices) s += (s.empty() ? "" : ",") + std::to_string(d.index);
        return host.devices.empty() ? std::string("the host has no cards")
                                    : "the host has cards " + s;
    };
    switch (req.mode) {
        case Request::Mode::None:
        case Request::Mode::NoCards:
            return sel;
        case Request::Mode::All:
            for (const auto& d : host.devices) sel.card_indices.push_back(d.index);
            break;
        case Request::Mode::List:
            for (const auto& s : req.selectors) {
                const device::Device* hit = nullptr;
                const device::DrsInstance* drs = nullptr;
                for (const auto& d : host.devices) {
                    if (s.kind == Selector::Kind::Index || s.kind == Selector::Kind::GcuName) {
                        if (d.index == s.index) hit = &d;
                    } else if (s.kind == Selector::Kind::Uuid) {
                        if (d.uuid == s.text) hit = &d;
                    } else if (s.kind == Selector::Kind::Drs) {
                        for (const auto& in : d.drs_instances)
                            if (device::drs_address(in) == s.text ||
                                device::drs_name(in) == s.text) {
                                hit = &d;
                                drs = &in;
                            }
                    }
                    if (hit != nullptr) break;
                }
                if (hit == nullptr) {
                    std::string what =
                        s.kind == Selector::Kind::Index || s.kind == Selector::Kind::GcuName
                            ? "no card with index " + std::to_string(s.index) + " (" + card_list() +
                                  ")"
                        : s.kind == Selector::Kind::Drs ? std::string("no such DRS instance")
                                                        : std::string("no card with this uuid");
                    return fail(Errc::NotFound,
                                src + ": unknown device " + quote(s.text) + ": " + what);
                }
                sel.card_indices.push_back(hit->index);
                if (drs != nullptr) sel.drs_instances.push_back(*drs);
            }
            break;
    }
    std::sort(sel.card_indices.begin(), sel.card_indices.end());
    sel.card_indices.erase(std::unique(sel.card_indices.begin(), sel.card_indices.end()),
                           sel.card_indices.end());
    return sel;
}

}  // namespace inject::request
