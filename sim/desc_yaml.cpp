// SPDX-License-Identifier: Apache-2.0
// The description reader: yaml-cpp in, sim::Host out. Each struct is read through a table
// of (key, setter) pairs, so unknown keys, wrong types and bad values all give one line
// naming the line, the key path and the problem. yaml-cpp exceptions stop here.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <utility>

#include "desc.hpp"
#include "inject/fs.hpp"

namespace sim {

namespace {

using inject::Errc;
using inject::Result;

using Setter = std::function<Result<void>(const YAML::Node&, const std::string&)>;
using Fields = std::vector<std::pair<std::string, Setter>>;
using Check = std::function<std::string(const std::string&)>;  // "" = fine, else the problem

int line_of(const YAML::Node& n) {
    return n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
}

inject::Unexpected bad_at(int line, const std::string& where, const std::string& what) {
    std::string msg = line > 0 ? "line " + std::to_string(line) + ": " : "";
    return inject::fail(Errc::InvalidInput, msg + where + ": " + what);
}

inject::Unexpected bad(const YAML::Node& n, const std::string& where, const std::string& what) {
    return bad_at(line_of(n), where, what);
}

std::string shown(const YAML::Node& n) {
    if (n.IsScalar()) return "'" + n.Scalar() + "'";
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a mapping";
    return "nothing";
}

Result<std::string> scalar(const YAML::Node& n, const std::string& where, const char* want) {
    if (!n.IsScalar()) return bad(n, where, std::string("want ") + want + ", got " + shown(n));
    return n.Scalar();
}

Result<long long> integer(const YAML::Node& n, const std::string& where, long long lo,
                          long long hi) {
    const std::string want = "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
    INJECT_TRY(const std::string s, scalar(n, where, want.c_str()));
    long long v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v < lo || v > hi) {
        return bad(n, where, "want " + want + ", got " + shown(n));
    }
    return v;
}

template <typename T>
Setter int_field(T& out, long long lo, long long hi) {
    return [&out, lo, hi](const YAML::Node& n, const std::string& where) -> Result<void> {
        INJECT_TRY(const long long v, integer(n, where, lo, hi));
        out = static_cast<T>(v);
        return inject::ok();
    };
}

template <typename T>
Setter uint_field(T& out, long long hi = std::numeric_limits<T>::max()) {
    return int_field(out, 0, hi);
}

Setter bool_field(bool& out) {
    return [&out](const YAML::Node& n, const std::string& where) -> Result<void> {
        INJECT_TRY(const std::string s, scalar(n, where, "true or false"));
        static const std::set<std::string> yes{"true", "True", "TRUE", "yes"};
        static const std::set<std::string> no{"false", "False", "FALSE", "no"};
        if (!yes.contains(s) && !no.contains(s)) {
            return bad(n, where, "want true or false, got " + shown(n));
        }
        out = yes.contains(s);
        return inject::ok();
    };
}

Setter str_field(std::string& out, Check check) {
    return [&out, check](const YAML::Node& n, const std::string& where) -> Result<void> {
        INJECT_TRY(std::string s, scalar(n, where, "a string"));
        if (auto problem = check(s); !problem.empty()) return bad(n, where, problem);
        out = std::move(s);
        return inject::ok();
    };
}

// Compiled once per pattern: a 128-card description would otherwise compile each per card.
const std::regex& compiled(const char* re) {
    static std::map<std::string, std::regex> cache;
    auto it = cache.find(re);
    if (it == cache.end()) it = cache.emplace(re, std::regex(re)).first;
    return it->second;
}

Check pattern(const char* re, const std::string& what, const std::string& hint = "") {
    return [&rx = compiled(re), what, hint](const std::string& s) -> std::string {
        if (std::regex_match(s, rx)) return "";
        return "bad " + what + " '" + s + "'" + (hint.empty() ? "" : " (want " + hint + ")");
    };
}

Check product_check() {
    return [](const std::string& s) -> std::string {
        return product_defaults(s) ? ""
                                   : "unknown product '" + s + "' (want " + known_products() + ")";
    };
}

// Reads a mapping through `fields`; returns the keys that were present.
Result<std::set<std::string>> read_map(const YAML::Node& n, const std::string& where,
                                       const Fields& fields) {
    if (!n.IsMap())
        return bad(n, where.empty() ? "description" : where, "want a mapping, got " + shown(n));
    std::set<std::string> seen;
    for (const auto& kv : n) {
        const std::string key = kv.first.Scalar();
        const std::string path = where.empty() ? key : where + "." + key;
        const auto f = std::find_if(fields.begin(), fields.end(),
                                    [&](const auto& e) { return e.first == key; });
        if (f == fields.end()) {
            return bad(kv.first, where.empty() ? "description" : where,
                       "unknown key '" + key + "'");
        }
        if (!seen.insert(key).second) return bad(kv.first, path, "key given twice");
        INJECT_TRY_VOID(f->second(kv.second, path));
    }
    return seen;
}

// Reads a list whose entries `entry(node, path, position)` turns into values.
template <typename T, typename Fn>
Setter list_field(std::vector<T>& out, std::vector<int>* lines, Fn entry) {
    return [&out, lines, entry](const YAML::Node& n, const std::string& where) -> Result<void> {
        if (!n.IsSequence()) return bad(n, where, "want a list, got " + shown(n));
        for (std::size_t i = 0; i < n.size(); ++i) {
            const std::string path = where + "[" + std::to_string(i) + "]";
            INJECT_TRY(T v, entry(n[i], path, i));
            out.push_back(std::move(v));
            if (lines != nullptr) lines->push_back(line_of(n[i]));
        }
        return inject::ok();
    };
}

Result<void> require(const std::set<std::string>& seen, const YAML::Node& n,
                     const std::string& where, const std::vector<std::string>& keys) {
    for (const auto& k : keys) {
        if (!seen.contains(k)) return bad(n, where, "missing key '" + k + "'");
    }
    return inject::ok();
}

std::string card_default_bus(std::uint32_t index) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0000:%02x:00.0", (0x10U + index) & 0xffU);
    return buf;
}

std::string default_uuid(std::uint32_t index) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "TR6Y4601%04u", index);
    return buf;
}

Result<Card> read_card(const YAML::Node& n, const std::string& where, std::size_t pos) {
    Card c;
    const Fields fields{
        {"index", uint_field(c.index, 1023)},
        {"minor", uint_field(c.minor, (1 << 20) - 1)},
        {"product", str_field(c.product, product_check())},
        {"uuid", str_field(c.uuid, pattern("[A-Za-z0-9][A-Za-z0-9-]{0,63}", "uuid"))},
        {"serial", str_field(c.serial, pattern("[\\x21-\\x7e]{1,64}", "serial"))},
        {"bus_id",
         str_field(c.bus_id, pattern("[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\\.[0-7]",
                                     "bus id", "domain:bus:device.function like '0000:17:00.0'"))},
        {"device_id",
         str_field(c.device_id, pattern("[0-9a-fA-F]{4}", "device id", "4 hex digits"))},
        {"memory_mib", int_field(c.memory_mib, 1, 1LL << 40)},
        {"used_mib", uint_field(c.used_mib, 1LL << 40)},
        {"numa_node", int_field(c.numa_node, -1, 1023)},
        {"healthy", bool_field(c.healthy)},
    };
    INJECT_TRY(const auto seen, read_map(n, where, fields));
    if (!seen.contains("index")) c.index = static_cast<std::uint32_t>(pos);
    if (!seen.contains("minor")) c.minor = c.index;
    const auto prod = product_defaults(c.product);
    if (!seen.contains("device_id")) c.device_id = std::string(prod->device_id);
    if (!seen.contains("memory_mib")) c.memory_mib = prod->memory_mib;
    if (!seen.contains("uuid")) c.uuid = default_uuid(c.index);
    if (!seen.contains("serial")) c.serial = "A0A16505" + std::to_string(10676 + c.index);
    if (!seen.contains("bus_id")) c.bus_id = card_default_bus(c.index);
    std::transform(c.bus_id.begin(), c.bus_id.end(), c.bus_id.begin(), ::tolower);
    std::transform(c.device_id.begin(), c.device_id.end(), c.device_id.begin(), ::tolower);
    if (c.used_mib > c.memory_mib) {
        return bad(
            n, where + ".used_mib",
            std::to_string(c.used_mib) + " MiB used of " + std::to_string(c.memory_mib) + " MiB");
    }
    return c;
}

Result<Profile> read_profile(const YAML::Node& n, const std::string& where, std::size_t pos) {
    Profile p;
    p.id = static_cast<std::uint32_t>(pos);
    const Fields fields{
        {"id", uint_field(p.id, 255)},
        {"name", str_field(p.name, pattern("[A-Za-z0-9][A-Za-z0-9._-]{0,31}", "profile name"))},
        {"max_instances", int_field(p.max_instances, 1, 64)},
        {"memory_mib", int_field(p.memory_mib, 1, 1LL << 40)},
        {"product", str_field(p.product, product_check())},
        {"sips", uint_field(p.sips, 1024)},
    };
    INJECT_TRY(const auto seen, read_map(n, where, fields));
    INJECT_TRY_VOID(require(seen, n, where, {"name", "memory_mib"}));
    return p;
}

Result<Instance> read_instance(const YAML::Node& n, const std::string& where, std::size_t) {
    Instance i;
    const Fields fields{
        {"card", uint_field(i.card, 1023)},
        {"instance_id", uint_field(i.instance_id, 255)},
        {"profile", str_field(i.profile, [](const std::string&) { return std::string(); })},
        {"uuid", str_field(i.uuid, pattern("[A-Za-z0-9][A-Za-z0-9-]{0,63}", "uuid"))},
        {"placement", str_field(i.placement, pattern("[0-9]{1,3}:[1-9][0-9]{0,2}", "placement"))},
    };
    INJECT_TRY(const auto seen, read_map(n, where, fields));
    INJECT_TRY_VOID(require(seen, n, where, {"card", "instance_id", "profile", "uuid"}));
    return i;
}

Result<std::string> read_library(const YAML::Node& n, const std::string& where, std::size_t) {
    std::string name;
    const Check check = [](const std::string& s) -> std::string {
        static const std::regex rx("lib[A-Za-z0-9_+-]+\\.so(\\.[0-9]+)*");
        if (!std::regex_match(s, rx))
            return "bad library name '" + s + "' (want lib<name>.so[.<n>...])";
        if (s.starts_with("libefml.")) return "'" + s + "' clashes with the libefml simulator";
        return "";
    };
    INJECT_TRY_VOID(str_field(name, check)(n, where));
    return name;
}

Result<std::string> read_symbol(const YAML::Node& n, const std::string& where, std::size_t) {
    std::string name;
    const Check check = [](const std::string& s) -> std::string {
        const bool known = std::find(std::begin(kEfmlSymbols), std::end(kEfmlSymbols), s) !=
                           std::end(kEfmlSymbols);
        return known ? "" : "unknown libefml symbol '" + s + "'";
    };
    INJECT_TRY_VOID(str_field(name, check)(n, where));
    return name;
}

Setter faults_field(Faults& f) {
    return [&f](const YAML::Node& n, const std::string& where) -> Result<void> {
        const Fields fields{
            {"efsmi_absent", bool_field(f.efsmi_absent)},
            {"efsmi_exit_code", int_field(f.efsmi_exit_code, 0, 255)},
            {"efsmi_sleep_ms", uint_field(f.efsmi_sleep_ms, 600000)},
            {"json_unsupported", bool_field(f.json_unsupported)},
            {"efsmi_output", str_field(f.efsmi_output,
                                       [](const std::string& s) -> std::string {
                                           if (s == "normal" || s == "garbage" || s == "truncated")
                                               return "";
                                           return "unknown output '" + s +
                                                  "' (want normal, garbage or truncated)";
                                       })},
            {"efsmi_flood", bool_field(f.efsmi_flood)},
            {"efsmi_signal", int_field(f.efsmi_signal, 0, 64)},
            {"old_keys", bool_field(f.old_keys)},
            {"efml_absent", bool_field(f.efml_absent)},
            {"efml_missing_symbols", list_field(f.efml_missing_symbols, nullptr, read_symbol)},
            {"efml_init_fails", bool_field(f.efml_init_fails)},
            {"drs_instance_layout", str_field(f.drs_instance_layout,
                                              [](const std::string& s) -> std::string {
                                                  if (s == "uuid" || s == "placement") return "";
                                                  return "unknown layout '" + s +
                                                         "' (want uuid or placement)";
                                              })},
            {"drs_needs_card", bool_field(f.drs_needs_card)},
        };
        INJECT_TRY_VOID(read_map(n, where, fields));
        return inject::ok();
    };
}

Setter drs_field(Host& h, Lines& lines) {
    return [&h, &lines](const YAML::Node& n, const std::string& where) -> Result<void> {
        const Fields fields{
            {"profiles", list_field(h.profiles, &lines.profiles, read_profile)},
            {"instances", list_field(h.instances, &lines.instances, read_instance)},
        };
        INJECT_TRY_VOID(read_map(n, where, fields));
        return inject::ok();
    };
}

Setter control_field(Host& h) {
    return [&h](const YAML::Node& n, const std::string& where) -> Result<void> {
        const Fields fields{
            {"major", int_field(h.control_major, 1, 4095)},
            {"minor", uint_field(h.control_minor, (1 << 20) - 1)},
        };
        INJECT_TRY_VOID(read_map(n, where, fields));
        return inject::ok();
    };
}

Result<Parsed> read_host(const YAML::Node& root) {
    Parsed p;
    Host& h = p.host;
    h.control_major = 0;  // 0 = not given: defaults to major, wherever major appears
    const Fields fields{
        {"driver_version",
         str_field(h.driver_version, pattern("[A-Za-z0-9][A-Za-z0-9._-]{0,63}", "driver version"))},
        {"major", int_field(h.major, 1, 4095)},
        {"control", control_field(h)},
        {"class_dir",
         str_field(h.class_dir, pattern("[a-z][a-z0-9_-]{0,31}", "class folder name"))},
        {"cards", list_field(h.cards, &p.lines.cards, read_card)},
        {"drs", drs_field(h, p.lines)},
        {"runtime_libraries", list_field(h.runtime_libraries, &p.lines.libraries, read_library)},
        {"faults", faults_field(h.faults)},
    };
    INJECT_TRY(const auto seen, read_map(root, "", fields));
    INJECT_TRY_VOID(require(seen, root, "description", {"cards"}));
    if (h.cards.empty()) return bad(root["cards"], "cards", "want at least one card");
    if (h.control_major == 0) h.control_major = h.major;
    return p;
}

}  // namespace

Result<Parsed> parse_description(const std::string& text) {
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        return inject::fail(Errc::InvalidInput,
                            "line " + std::to_string(e.mark.line + 1) + ", column " +
                                std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    return read_host(root);
}

Result<Host> load_description(const std::string& path) {
    const std::string ctx = "description '" + path + "'";
    auto text = inject::fs::read_file(path, 16U << 20);
    if (!text) return inject::fail(std::move(text).error().context(ctx));
    auto parsed = parse_description(*text);
    if (!parsed) return inject::fail(std::move(parsed).error().context(ctx));
    if (auto v = validate(*parsed); !v) return inject::fail(std::move(v).error().context(ctx));
    std::sort(parsed->host.cards.begin(), parsed->host.cards.end(),
              [](const Card& a, const Card& b) { return a.index < b.index; });
    return std::move(parsed->host);
}

}  // namespace sim
