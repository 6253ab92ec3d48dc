// SPDX-License-Identifier: Apache-2.0
// CDI spec reading. yaml-cpp and nlohmann/json exceptions end in this file: both parsers feed
// one small document tree, and one strict decoder turns that tree into a Spec. Strictness
// follows the reference (sigs.k8s.io/yaml + encoding/json with unknown fields refused): a plain
// YAML scalar that reads as a number is not a string (`name: 0` must be quoted), and an unknown
// field is an error. Writing: spec_write.cpp.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "inject/cdi_io.hpp"
#include "inject/fs.hpp"
#include "tree.hpp"

namespace inject::cdi {
namespace {

using detail::Node;
using detail::resolve_plain;

std::string_view kind_name(Node::Kind k) {
    switch (k) {
        case Node::Kind::Null:
            return "null";
        case Node::Kind::String:
            return "a string";
        case Node::Kind::Number:
            return "a number";
        case Node::Kind::Bool:
            return "a boolean";
        case Node::Kind::Seq:
            return "a list";
        case Node::Kind::Map:
            return "a mapping";
    }
    return "?";
}

// YAML 1.1 / 1.2 plain scalar resolution, close to what go-yaml does before sigs.k8s.io/yaml
// turns the document into JSON. Hand-written: the shim parses specs on every container start.
bool is_one_of(std::string_view s, std::initializer_list<std::string_view> words) {
    return std::find(words.begin(), words.end(), s) != words.end();
}

bool all_of_chars(std::string_view s, std::string_view allowed) {
    return !s.empty() && s.find_first_not_of(allowed) == std::string_view::npos &&
           s.find_first_not_of('_') != std::string_view::npos;
}

bool is_yaml_number(std::string_view s) {
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
    if (is_one_of(s, {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"})) return true;
    if (s.size() > 2 && s[0] == '0') {
        if (s[1] == 'x') return all_of_chars(s.substr(2), "0123456789abcdefABCDEF_");
        if (s[1] == 'o') return all_of_chars(s.substr(2), "01234567_");
        if (s[1] == 'b') return all_of_chars(s.substr(2), "01_");
    }
    std::string_view mant = s, exp;
    if (auto e = s.find_first_of("eE"); e != std::string_view::npos) {
        mant = s.substr(0, e);
        exp = s.substr(e + 1);
        if (!exp.empty() && (exp[0] == '-' || exp[0] == '+')) exp.remove_prefix(1);
        if (exp.empty() || exp.find_first_not_of("0123456789") != std::string_view::npos)
            return false;
    }
    if (mant.empty() || mant.find_first_not_of("0123456789_.") != std::string_view::npos)
        return false;
    if (std::count(mant.begin(), mant.end(), '.') > 1) return false;
    return mant.find_first_of("0123456789") != std::string_view::npos;
}

Node::Kind resolve_plain_impl(std::string_view s) {
    // Most scalars of a spec are paths, names and keys: they start with neither a digit, sign,
    // '.' or '_' (numbers) nor the first letter of a null/bool word, or are longer than every
    // such word (5 chars), and are strings. The word lists and the number grammar below are for
    // the rest; they took a quarter of the shim's spec parsing before this shortcut.
    bool number_start = true;
    if (!s.empty()) {
        const char c = s.front();
        number_start = (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == '_';
        if (!number_start &&
            (s.size() > 5 || std::string_view("~nNtTfFyYoO").find(c) == std::string_view::npos))
            return Node::Kind::String;
    }
    if (s.empty() || is_one_of(s, {"~", "null", "Null", "NULL"})) return Node::Kind::Null;
    if (is_one_of(
            s, {"true", "True", "TRUE", "false", "False", "FALSE", "yes", "Yes", "YES", "no", "No",
                "NO",   "on",   "On",   "ON",    "off",   "Off",   "OFF", "y",   "Y",   "n",  "N"}))
        return Node::Kind::Bool;
    // A number starts with a digit, a sign, '.' or '_' (is_yaml_number() refuses anything else).
    if (number_start && is_yaml_number(s)) return Node::Kind::Number;
    return Node::Kind::String;
}

// CDI specs nest 6 levels deep; a limit keeps a hostile file from exhausting the stack.
constexpr int kMaxDepth = 64;

Unexpected too_deep(std::string_view source) {
    return fail(Errc::InvalidInput, std::string(source) + ": nested deeper than " +
                                        std::to_string(kMaxDepth) + " levels");
}

Result<Node> from_yaml(const YAML::Node& y, std::string_view source, int depth = 0) {
    if (depth > kMaxDepth) return too_deep(source);
    Node n;
    n.line = y.Mark().line >= 0 ? y.Mark().line + 1 : 0;
    switch (y.Type()) {
        case YAML::NodeType::Undefined:
        case YAML::NodeType::Null:
            n.kind = Node::Kind::Null;
            return n;
        case YAML::NodeType::Scalar:
            n.text = y.Scalar();
            // "!" = quoted or block scalar, "?" = plain; an explicit !!str tag is a string too.
            if (y.Tag() == "?")
                n.kind = resolve_plain(n.text);
            else if (y.Tag() == "tag:yaml.org,2002:int" || y.Tag() == "tag:yaml.org,2002:float")
                n.kind = Node::Kind::Number;
            else
                n.kind = Node::Kind::String;
            return n;
        case YAML::NodeType::Sequence:
            n.kind = Node::Kind::Seq;
            for (const auto& item : y) {
                INJECT_TRY(Node c, from_yaml(item, source, depth + 1));
                n.items.push_back(std::move(c));
            }
            return n;
        case YAML::NodeType::Map:
            n.kind = Node::Kind::Map;
            for (const auto& kv : y) {
                const int kline = kv.first.Mark().line + 1;
                if (!kv.first.IsScalar())
                    return fail(Errc::InvalidInput, std::string(source) + ": line " +
                                                        std::to_string(kline) +
                                                        ": a key must be a string");
                std::string key = kv.first.Scalar();
                for (const auto& f : n.fields)
                    if (f.first == key)
                        return fail(Errc::InvalidInput, std::string(source) + ": line " +
                                                            std::to_string(kline) +
                                                            ": duplicate field '" + key + "'");
                INJECT_TRY(Node c, from_yaml(kv.second, source, depth + 1));
                if (c.line == 0) c.line = kline;
                n.fields.emplace_back(std::move(key), std::move(c));
            }
            return n;
    }
    return n;
}

Result<Node> from_json(const nlohmann::json& j, std::string_view source, int depth = 0) {
    if (depth > kMaxDepth) return too_deep(source);
    Node n;
    switch (j.type()) {
        case nlohmann::json::value_t::null:
        case nlohmann::json::value_t::discarded:
            n.kind = Node::Kind::Null;
            break;
        case nlohmann::json::value_t::string:
            n.kind = Node::Kind::String;
            n.text = j.get<std::string>();
            break;
        case nlohmann::json::value_t::boolean:
            n.kind = Node::Kind::Bool;
            n.text = j.get<bool>() ? "true" : "false";
            break;
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
        case nlohmann::json::value_t::number_float:
            n.kind = Node::Kind::Number;
            n.text = j.dump();
            break;
        case nlohmann::json::value_t::array:
            n.kind = Node::Kind::Seq;
            for (const auto& item : j) {
                INJECT_TRY(Node c, from_json(item, source, depth + 1));
                n.items.push_back(std::move(c));
            }
            break;
        case nlohmann::json::value_t::object:
            n.kind = Node::Kind::Map;
            for (const auto& [k, v] : j.items()) {
                INJECT_TRY(Node c, from_json(v, source, depth + 1));
                n.fields.emplace_back(k, std::move(c));
            }
            break;
        case nlohmann::json::value_t::binary:
            n.kind = Node::Kind::Null;
            break;
    }
    return n;
}

// ---------------------------------------------------------------------------------------------
// The strict decoder.

// Where a node sits in the spec ("devices[2].containerEdits.mounts[0]"), kept as a chain of
// stack frames and written out only for an error message: building the string for every field
// of every device was a fifth of a create's spec reading.
struct Path {
    const Path* parent = nullptr;  // nullptr: the top of the document
    std::string_view key;          // a field's name
    std::size_t index = 0;         // an item's index
    bool is_item = false;

    Path field(std::string_view k) const { return Path{this, k, 0, false}; }
    Path item(std::size_t i) const { return Path{this, {}, i, true}; }

    std::string str() const {
        if (parent == nullptr) return {};
        std::string out = parent->str();
        if (is_item) return out + "[" + std::to_string(index) + "]";
        return out.empty() ? std::string(key) : out + "." + std::string(key);
    }
};

// Decodes the tree into a Spec, moving its strings out (the tree is dropped afterwards).
class Decoder {
public:
    explicit Decoder(std::string_view source) : source_(source) {}

    Unexpected error(const Node& n, const Path& path, const std::string& what) const {
        std::string msg(source_);
        if (n.line > 0) msg += ": line " + std::to_string(n.line);
        if (const auto p = path.str(); !p.empty()) msg += ": " + p;
        return fail(Errc::InvalidInput, msg + ": " + what);
    }
    Unexpected type_error(const Node& n, const Path& path, std::string_view want) const {
        return error(n, path,
                     "want " + std::string(want) + ", got " + std::string(kind_name(n.kind)) +
                         (n.kind == Node::Kind::Number || n.kind == Node::Kind::Bool
                              ? " (quote it to make it a string)"
                              : ""));
    }

    Result<std::string> str(Node& n, const Path& path) const {
        if (n.kind == Node::Kind::Null) return std::string();
        if (n.kind != Node::Kind::String) return type_error(n, path, "a string");
        return std::move(n.text);
    }

    Result<std::vector<std::string>> strs(Node& n, const Path& path) const {
        std::vector<std::string> out;
        if (n.kind == Node::Kind::Null) return out;
        if (n.kind != Node::Kind::Seq) return type_error(n, path, "a list of strings");
        out.reserve(n.items.size());
        for (std::size_t i = 0; i < n.items.size(); ++i) {
            INJECT_TRY(auto s, str(n.items[i], path.item(i)));
            out.push_back(std::move(s));
        }
        return out;
    }

    Result<std::map<std::string, std::string>> str_map(Node& n, const Path& path) const {
        std::map<std::string, std::string> out;
        if (n.kind == Node::Kind::Null) return out;
        if (n.kind != Node::Kind::Map) return type_error(n, path, "a mapping of strings");
        for (auto& [k, v] : n.fields) {
            INJECT_TRY(auto s, str(v, path.field(k)));
            out[k] = std::move(s);
        }
        return out;
    }

    Result<std::int64_t> integer(const Node& n, const Path& path, std::int64_t lo,
                                 std::int64_t hi) const {
        if (n.kind != Node::Kind::Number) return type_error(n, path, "an integer");
        std::string t = n.text;
        t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
        bool neg = false;
        std::size_t pos = 0;
        if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
            neg = t[0] == '-';
            pos = 1;
        }
        int base = 10;
        if (t.compare(pos, 2, "0x") == 0) {
            base = 16;
            pos += 2;
        } else if (t.compare(pos, 2, "0o") == 0) {
            base = 8;
            pos += 2;
        } else if (t.compare(pos, 2, "0b") == 0) {
            base = 2;
            pos += 2;
        } else if (n.line > 0 && t.size() > pos + 1 && t[pos] == '0') {
            base = 8;
            pos += 1;
        }  // YAML 1.1 octal
        std::uint64_t v = 0;
        const char* b = t.data() + pos;
        const char* e = t.data() + t.size();
        auto [p, ec] = std::from_chars(b, e, v, base);
        if (ec != std::errc() || p != e || b == e)
            return error(n, path, "'" + n.text + "' is not an integer");
        const auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        if (v > max) return error(n, path, "'" + n.text + "' is out of range");
        const std::int64_t sv = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
        if (sv < lo || sv > hi) return error(n, path, "'" + n.text + "' is out of range");
        return sv;
    }

    template <typename T>
    Result<std::optional<T>> opt_int(const Node& n, const Path& path) const {
        if (n.kind == Node::Kind::Null) return std::optional<T>();
        INJECT_TRY(auto v,
                   integer(n, path, static_cast<std::int64_t>(std::numeric_limits<T>::min()),
                           static_cast<std::int64_t>(std::numeric_limits<T>::max())));
        return std::optional<T>(static_cast<T>(v));
    }

    // Walks a mapping, handing each known field to `fn(key, node, path)`; unknown fields fail.
    template <typename Fn>
    Result<void> fields(Node& n, const Path& path, std::initializer_list<std::string_view> known,
                        Fn&& fn) const {
        if (n.kind == Node::Kind::Null) return ok();
        if (n.kind != Node::Kind::Map) return type_error(n, path, "a mapping");
        for (auto& [k, v] : n.fields) {
            if (std::find(known.begin(), known.end(), k) == known.end())
                return error(v, path, "unknown field '" + k + "'");
            INJECT_TRY_VOID(fn(k, v, path.field(k)));
        }
        return ok();
    }

    Result<DeviceNode> device_node(Node& n, const Path& path) const {
        DeviceNode d;
        INJECT_TRY_VOID(fields(
            n, path,
            {"path", "hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"},
            [&](const std::string& k, Node& v, const Path& p) -> Result<void> {
                if (k == "path") {
                    INJECT_TRY(d.path, str(v, p));
                } else if (k == "hostPath") {
                    INJECT_TRY(d.host_path, str(v, p));
                } else if (k == "type") {
                    INJECT_TRY(d.type, str(v, p));
                } else if (k == "major") {
                    INJECT_TRY(d.major, opt_int<std::int64_t>(v, p));
                } else if (k == "minor") {
                    INJECT_TRY(d.minor, opt_int<std::int64_t>(v, p));
                } else if (k == "fileMode") {
                    INJECT_TRY(d.file_mode, opt_int<std::uint32_t>(v, p));
                } else if (k == "permissions") {
                    INJECT_TRY(d.permissions, str(v, p));
                } else if (k == "uid") {
                    INJECT_TRY(d.uid, opt_int<std::uint32_t>(v, p));
                } else {
                    INJECT_TRY(d.gid, opt_int<std::uint32_t>(v, p));
                }
                return ok();
            }));
        return d;
    }

    Result<Mount> mount(Node& n, const Path& path) const {
        Mount m;
        INJECT_TRY_VOID(fields(n, path, {"hostPath", "containerPath", "type", "options"},
                               [&](const std::string& k, Node& v, const Path& p) -> Result<void> {
                                   if (k == "hostPath") {
                                       INJECT_TRY(m.host_path, str(v, p));
                                   } else if (k == "containerPath") {
                                       INJECT_TRY(m.container_path, str(v, p));
                                   } else if (k == "type") {
                                       INJECT_TRY(m.type, str(v, p));
                                   } else {
                                       INJECT_TRY(m.options, strs(v, p));
                                   }
                                   return ok();
                               }));
        return m;
    }

    Result<Hook> hook(Node& n, const Path& path) const {
        Hook h;
        INJECT_TRY_VOID(fields(n, path, {"hookName", "path", "args", "env", "timeout"},
                               [&](const std::string& k, Node& v, const Path& p) -> Result<void> {
                                   if (k == "hookName") {
                                       INJECT_TRY(h.hook_name, str(v, p));
                                   } else if (k == "path") {
                                       INJECT_TRY(h.path, str(v, p));
                                   } else if (k == "args") {
                                       INJECT_TRY(h.args, strs(v, p));
                                   } else if (k == "env") {
                                       INJECT_TRY(h.env, strs(v, p));
                                   } else {
                                       INJECT_TRY(h.timeout, opt_int<int>(v, p));
                                   }
                                   return ok();
                               }));
        return h;
    }

    template <typename T, typename Fn>
    Result<std::vector<T>> list(Node& n, const Path& path, Fn&& item) const {
        std::vector<T> out;
        if (n.kind == Node::Kind::Null) return out;
        if (n.kind != Node::Kind::Seq) return type_error(n, path, "a list");
        out.reserve(n.items.size());
        for (std::size_t i = 0; i < n.items.size(); ++i) {
            INJECT_TRY(T v, item(n.items[i], path.item(i)));
            out.push_back(std::move(v));
        }
        return out;
    }

    Result<ContainerEdits> edits(Node& n, const Path& path) const {
        ContainerEdits e;
        INJECT_TRY_VOID(fields(
            n, path, {"env", "deviceNodes", "hooks", "mounts", "additionalGids"},
            [&](const std::string& k, Node& v, const Path& p) -> Result<void> {
                if (k == "env") {
                    INJECT_TRY(e.env, strs(v, p));
                } else if (k == "deviceNodes") {
                    INJECT_TRY(e.device_nodes, list<DeviceNode>(v, p, [&](Node& x, const Path& xp) {
                                   return device_node(x, xp);
                               }));
                } else if (k == "hooks") {
                    INJECT_TRY(e.hooks, list<Hook>(v, p, [&](Node& x, const Path& xp) {
                                   return hook(x, xp);
                               }));
                } else if (k == "mounts") {
                    INJECT_TRY(e.mounts, list<Mount>(v, p, [&](Node& x, const Path& xp) {
                                   return mount(x, xp);
                               }));
                } else {
                    INJECT_TRY(
                        e.additional_gids,
                        list<std::uint32_t>(
                            v, p, [&](Node& x, const Path& xp) -> Result<std::uint32_t> {
                                INJECT_TRY(
                                    auto g,
                                    integer(x, xp, 0, std::numeric_limits<std::uint32_t>::max()));
                                return static_cast<std::uint32_t>(g);
                            }));
                }
                return ok();
            }));
        return e;
    }

    Result<Device> device(Node& n, const Path& path) const {
        Device d;
        INJECT_TRY_VOID(fields(n, path, {"name", "annotations", "containerEdits"},
                               [&](const std::string& k, Node& v, const Path& p) -> Result<void> {
                                   if (k == "name") {
                                       INJECT_TRY(d.name, str(v, p));
                                   } else if (k == "annotations") {
                                       INJECT_TRY(d.annotations, str_map(v, p));
                                   } else {
                                       INJECT_TRY(d.edits, edits(v, p));
                                   }
                                   return ok();
                               }));
        return d;
    }

    Result<Spec> spec(Node& n) const {
        const Path top;
        if (n.kind != Node::Kind::Map) return type_error(n, top, "a mapping at the top");
        Spec s;
        INJECT_TRY_VOID(
            fields(n, top, {"cdiVersion", "kind", "annotations", "devices", "containerEdits"},
                   [&](const std::string& k, Node& v, const Path& p) -> Result<void> {
                       if (k == "cdiVersion") {
                           INJECT_TRY(s.version, str(v, p));
                       } else if (k == "kind") {
                           INJECT_TRY(s.kind, str(v, p));
                       } else if (k == "annotations") {
                           INJECT_TRY(s.annotations, str_map(v, p));
                       } else if (k == "devices") {
                           INJECT_TRY(s.devices, list<Device>(v, p, [&](Node& x, const Path& xp) {
                                          return device(x, xp);
                                      }));
                       } else {
                           INJECT_TRY(s.edits, edits(v, p));
                       }
                       return ok();
                   }));
        return s;
    }

private:
    std::string_view source_;
};

}  // namespace

Node::Kind detail::resolve_plain(std::string_view s) {
    return resolve_plain_impl(s);
}

Result<Node> detail::parse_yaml_tree(std::string_view text, std::string_view source) {
    try {
        YAML::Node y = YAML::Load(std::string(text));
        return from_yaml(y, source);
    } catch (const YAML::Exception& e) {
        return fail(Errc::InvalidInput, std::string(source) + ": line " +
                                            std::to_string(e.mark.line + 1) + ", column " +
                                            std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
}

Result<Spec> parse_spec(std::string_view text, std::string_view source) {
    Node root;
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && text[first] == '{') {
        try {
            INJECT_TRY(root, from_json(nlohmann::json::parse(text), source));
        } catch (const nlohmann::json::parse_error& e) {
            // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
            std::string what = e.what();
            if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
            return fail(Errc::InvalidInput,
                        std::string(source) + ": byte " + std::to_string(e.byte) + ": " + what);
        } catch (const nlohmann::json::exception& e) {
            return fail(Errc::InvalidInput, std::string(source) + ": " + e.what());
        }
    } else if (auto fast = detail::parse_simple_yaml(text)) {
        root = std::move(*fast);
    } else {
        INJECT_TRY(root, detail::parse_yaml_tree(text, source));
    }
    if (root.kind == Node::Kind::Null)
        return fail(Errc::InvalidInput, std::string(source) + ": empty spec");
    return Decoder(source).spec(root);
}

Result<Spec> load_spec(const std::string& path) {
    auto text = fs::read_file(path, 4u << 20);
    if (!text) return fail(std::move(text).error().context("reading CDI spec '" + path + "'"));
    return parse_spec(*text, path);
}

}  // namespace inject::cdi
