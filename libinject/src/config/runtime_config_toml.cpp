// SPDX-License-Identifier: Apache-2.0
// containerd and CRI-O configs (TOML) and the toolkit's own config.toml key setter. The one
// adapter between toml++ and this part of the library: toml++ exceptions end here.
#include <fnmatch.h>
#include <toml++/toml.h>

#include <algorithm>
#include <sstream>

#include "inject/config.hpp"
#include "runtime_config_internal.hpp"

namespace inject::runtime_config {
namespace {

constexpr std::string_view kRuncV2 = "io.containerd.runc.v2";
/// Marks the `imports` line we created, so unconfigure removes the line and not just our entry.
constexpr std::string_view kImportMark = "  # added by enflame-ctk";
constexpr std::string_view kDropInHeader =
    "# Written by `enflame-ctk runtime configure`; `enflame-ctk runtime unconfigure` removes it.\n";

Error toml_error(std::string_view source, const toml::parse_error& e) {
    std::string why(e.description());
    if (!why.empty() && why[0] >= 'A' && why[0] <= 'Z')
        why[0] = static_cast<char>(why[0] - 'A' + 'a');
    return Error(Errc::InvalidInput, std::string(source) + ": line " +
                                         std::to_string(e.source().begin.line) + ": " + why);
}

Result<toml::table> parse_toml(std::string_view text, std::string_view source) {
    try {
        return toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        return fail(toml_error(source, e));
    }
}

std::string to_text(const toml::table& t) {
    std::ostringstream o;
    // Basic strings and flat tables: what containerd's and CRI-O's own samples look like.
    constexpr auto kFlags =
        toml::format_flags::allow_multi_line_strings | toml::format_flags::allow_unicode_strings |
        toml::format_flags::allow_binary_integers | toml::format_flags::allow_octal_integers |
        toml::format_flags::allow_hexadecimal_integers;
    o << toml::toml_formatter(t, kFlags);
    std::string s = o.str();
    if (!s.empty() && s.back() != '\n') s += '\n';
    return s;
}

std::string line_of(std::string_view source, const toml::node& n) {
    return std::string(source) + ": line " + std::to_string(n.source().begin.line);
}

/// The sub-table `key` of `parent`, created if missing; an error if `key` holds a value.
Result<toml::table*> child(toml::table& parent, std::string_view key, std::string_view source,
                           std::string_view dotted) {
    if (auto* n = parent.get(key)) {
        if (auto* t = n->as_table()) return t;
        return fail(Errc::InvalidInput,
                    line_of(source, *n) + ": '" + std::string(dotted) + "' must be a table");
    }
    auto [it, inserted] = parent.insert(key, toml::table{});
    (void)inserted;
    return it->second.as_table();
}

/// Walks (and creates) a chain of tables.
Result<toml::table*> walk(toml::table& root, const std::vector<std::string>& path,
                          std::string_view source) {
    toml::table* t = &root;
    std::string dotted;
    for (const auto& k : path) {
        dotted += (dotted.empty() ? "" : ".") + k;
        INJECT_TRY(t, child(*t, k, source, dotted));
    }
    return t;
}

/// The table at `path` if every step exists and is a table.
template <typename Table>
Table* find(Table& root, const std::vector<std::string>& path) {
    Table* t = &root;
    for (const auto& k : path) {
        auto* n = t->get(k);
        t = n != nullptr ? n->as_table() : nullptr;
        if (t == nullptr) return nullptr;
    }
    return t;
}

/// Erases `key` from the table at `path`, then every table on the path left empty.
void erase_and_prune(toml::table& root, const std::vector<std::string>& path,
                     std::string_view key) {
    auto* t = find(root, path);
    if (t == nullptr) return;
    t->erase(key);
    for (std::size_t n = path.size(); n > 0; --n) {
        std::vector<std::string> parent(path.begin(),
                                        path.begin() + static_cast<std::ptrdiff_t>(n - 1));
        auto* p = find(root, parent);
        auto* c = find(root, std::vector<std::string>(
                                 path.begin(), path.begin() + static_cast<std::ptrdiff_t>(n)));
        if (p == nullptr || c == nullptr || !c->empty()) break;
        p->erase(path[n - 1]);
    }
}

toml::array strings(const std::vector<std::string>& v) {
    toml::array a;
    for (const auto& s : v) a.push_back(s);
    return a;
}

// ---- containerd -------------------------------------------------------------------------

/// The CRI plugin table's path for a config version.
std::vector<std::string> cri_plugin(int version) {
    switch (version) {
        case 1:
            return {"plugins", "cri"};
        case 2:
            return {"plugins", "io.containerd.grpc.v1.cri"};
        default:
            return {"plugins", "io.containerd.cri.v1.runtime"};
    }
}

/// The NRI plugin table's path: version 1 names plugins by their bare id.
std::vector<std::string> nri_plugin(int version) {
    if (version == 1) return {"plugins", "nri"};
    return {"plugins", "io.containerd.nri.v1.nri"};
}

/// Puts `key` of the table at `path` back to its value in `original`, or erases it (and the
/// tables left empty) when the original had none: undoes an insert_or_assign of ours.
void restore_or_erase(toml::table& root, const toml::table* original,
                      const std::vector<std::string>& path, std::string_view key) {
    const auto* ot = original != nullptr ? find(*original, path) : nullptr;
    const auto* od = ot != nullptr ? ot->get(key) : nullptr;
    auto* t = find(root, path);
    if (od != nullptr && t != nullptr)
        t->insert_or_assign(key, *od);
    else
        erase_and_prune(root, path, key);
}

Result<int> version_of(const toml::table& t, std::string_view source) {
    const auto* v = t.get("version");
    if (v == nullptr) return 1;
    auto n = v->value<std::int64_t>();
    if (!v->is_integer() || !n || *n < 1 || *n > 3)
        return fail(Errc::Unsupported, line_of(source, *v) + ": containerd config version '" +
                                           (n ? std::to_string(*n) : std::string("?")) +
                                           "' is not 1, 2 or 3");
    return static_cast<int>(*n);
}

/// containerd's built-in runc entry.
toml::table runc_default() {
    return toml::table{{"runtime_type", std::string(kRuncV2)}};
}

/// The CRI plugin at `plugin` uses runc by default (no default_runtime_name, or "runc").
bool default_is_runc(toml::table& root, std::vector<std::string> plugin) {
    plugin.push_back("containerd");
    const auto* ctd = find(root, plugin);
    const auto* d = ctd != nullptr ? ctd->get("default_runtime_name") : nullptr;
    return d == nullptr || d->value<std::string>() == "runc";
}

Result<void> containerd_add(toml::table& root, int version, const Options& o,
                            std::string_view src) {
    auto plugin = cri_plugin(version);
    auto runtimes = plugin;
    runtimes.insert(runtimes.end(), {"containerd", "runtimes"});
    INJECT_TRY(auto* rts, walk(root, runtimes, src));
    // containerd decodes a `runtimes` table into a new map, which drops its built-in runc: with
    // only ours there (a config, or a drop-in, whose CRI table named no runc), CRI would find
    // no runtime for its default `runc` and refuse to start. Put containerd's own entry there.
    if (!rts->contains("runc") && o.runtime_name != "runc" && default_is_runc(root, plugin))
        rts->insert("runc", runc_default());
    // Start from runc's entry so settings such as SystemdCgroup carry over to ours.
    toml::table entry;
    if (auto* runc = rts->get_as<toml::table>("runc"); runc != nullptr && o.runtime_name != "runc")
        entry = *runc;
    if (auto* ours = rts->get_as<toml::table>(o.runtime_name)) entry = *ours;
    entry.insert_or_assign("runtime_type", std::string(kRuncV2));
    INJECT_TRY(auto* opts, child(entry, "options", src, "options"));
    opts->insert_or_assign("BinaryName", o.runtime_path);
    rts->insert_or_assign(o.runtime_name, std::move(entry));
    if (o.set_as_default) {
        auto c = plugin;
        c.push_back("containerd");
        INJECT_TRY(auto* ctd, walk(root, c, src));
        ctd->insert_or_assign("default_runtime_name", o.runtime_name);
    }
    if (o.cdi_enabled) {
        INJECT_TRY(auto* p, walk(root, plugin, src));
        p->insert_or_assign("enable_cdi", true);
        p->insert_or_assign("cdi_spec_dirs", strings(o.cdi_spec_dirs));
    }
    if (o.nri_enabled) {
        // external plugins need connections; the other keys keep containerd's defaults
        INJECT_TRY(auto* nri, walk(root, nri_plugin(version), src));
        nri->insert_or_assign("disable", false);
        nri->insert_or_assign("disable_connections", false);
        nri->insert_or_assign("socket_path", o.nri_socket);
    }
    return ok();
}

/// Removes `key` from the table at `path` when it names our runtime, or puts back the value
/// `original` had there (--set-as-default replaced the user's choice).
void restore_default(toml::table& root, const toml::table* original,
                     const std::vector<std::string>& path, std::string_view key, const Options& o) {
    auto* t = find(root, path);
    if (t == nullptr) return;
    auto* d = t->get(key);
    if (d == nullptr || d->value<std::string>() != o.runtime_name) return;
    if (original != nullptr) {
        const auto* ot = find(*original, path);
        const auto* od = ot != nullptr ? ot->get(key) : nullptr;
        if (od != nullptr && od->value<std::string>() != o.runtime_name) {
            t->insert_or_assign(key, *od);
            return;
        }
    }
    erase_and_prune(root, path, key);
}

void containerd_remove(toml::table& root, int version, const Options& o,
                       const toml::table* original) {
    auto plugin = cri_plugin(version);
    auto runtimes = plugin;
    runtimes.insert(runtimes.end(), {"containerd", "runtimes"});
    erase_and_prune(root, runtimes, o.runtime_name);
    // the runc entry containerd_add() put back, unless the original had it
    if (auto* rts = find(root, runtimes); rts != nullptr && o.runtime_name != "runc") {
        const auto* ours = rts->get_as<toml::table>("runc");
        const auto* orts = original != nullptr ? find(*original, runtimes) : nullptr;
        if (ours != nullptr && *ours == runc_default() &&
            (orts == nullptr || !orts->contains("runc")))
            erase_and_prune(root, runtimes, "runc");
    }
    auto ctd = plugin;
    ctd.push_back("containerd");
    restore_default(root, original, ctd, "default_runtime_name", o);
    if (o.cdi_enabled) {
        erase_and_prune(root, plugin, "enable_cdi");
        erase_and_prune(root, plugin, "cdi_spec_dirs");
    }
    if (o.nri_enabled)
        for (const char* key : {"disable", "disable_connections", "socket_path"})
            restore_or_erase(root, original, nri_plugin(version), key);
}

// ---- CRI-O ------------------------------------------------------------------------------

Result<void> crio_add(toml::table& root, const Options& o, std::string_view src) {
    INJECT_TRY(auto* rts, walk(root, {"crio", "runtime", "runtimes"}, src));
    toml::table entry;
    if (auto* ours = rts->get_as<toml::table>(o.runtime_name)) entry = *ours;
    entry.insert_or_assign("runtime_path", o.runtime_path);
    entry.insert_or_assign("runtime_type", "oci");
    entry.insert_or_assign("monitor_path", o.monitor_path);
    rts->insert_or_assign(o.runtime_name, std::move(entry));
    if (o.set_as_default) {
        INJECT_TRY(auto* rt, walk(root, {"crio", "runtime"}, src));
        rt->insert_or_assign("default_runtime", o.runtime_name);
    }
    if (o.nri_enabled) {
        INJECT_TRY(auto* nri, walk(root, {"crio", "nri"}, src));
        nri->insert_or_assign("enable_nri", true);
        nri->insert_or_assign("nri_listen", o.nri_socket);
    }
    return ok();
}

void crio_remove(toml::table& root, const Options& o, const toml::table* original) {
    erase_and_prune(root, {"crio", "runtime", "runtimes"}, o.runtime_name);
    restore_default(root, original, {"crio", "runtime"}, "default_runtime", o);
    if (o.nri_enabled)
        for (const char* key : {"enable_nri", "nri_listen"})
            restore_or_erase(root, original, {"crio", "nri"}, key);
}

// ---- text edits of single lines -----------------------------------------------------------

std::vector<std::string> split_lines(std::string_view text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        auto nl = text.find('\n', start);
        if (nl == std::string_view::npos) nl = text.size() - 1;
        lines.emplace_back(text.substr(start, nl - start + 1));
        start = nl + 1;
    }
    return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += l;
    return out;
}

/// The offset of the last ']' outside strings and comments in `line`, or npos.
std::size_t closing_bracket(std::string_view line) {
    std::size_t pos = std::string_view::npos;
    char quote = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
        char c = line[i];
        if (quote != 0) {
            if (c == '\\' && quote == '"')
                ++i;
            else if (c == quote)
                quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '#') {
            break;
        } else if (c == ']') {
            pos = i;
        }
    }
    return pos;
}

/// A TOML basic string ("..."), the form containerd's and CRI-O's samples use.
std::string quoted(std::string_view s) {
    std::ostringstream o;
    o << toml::toml_formatter(toml::value<std::string>(std::string(s)), toml::format_flags::none);
    return o.str();
}

bool imports_contain(const toml::table& t, std::string_view path) {
    const auto* arr = t.get_as<toml::array>("imports");
    if (arr == nullptr) return false;
    return std::any_of(arr->begin(), arr->end(),
                       [&](const toml::node& n) { return n.value<std::string>() == path; });
}

/// An `imports` entry that is a glob matching `path` (containerd 2.x ships
/// `imports = ["/etc/containerd/conf.d/*.toml"]`): nothing to add then.
bool imports_cover(const toml::table& t, std::string_view path) {
    const auto* arr = t.get_as<toml::array>("imports");
    if (arr == nullptr) return false;
    const std::string p(path);
    return std::any_of(arr->begin(), arr->end(), [&](const toml::node& n) {
        auto pattern = n.value<std::string>();
        return pattern && ::fnmatch(pattern->c_str(), p.c_str(), FNM_PATHNAME) == 0;
    });
}

Result<std::string> checked_import_edit(std::string out, std::string_view path, bool want,
                                        std::string_view source, std::uint32_t line) {
    auto t = parse_toml(out, source);
    if (!t || imports_contain(*t, path) != want)
        return fail(Errc::Unsupported, std::string(source) + ": line " + std::to_string(line) +
                                           ": cannot edit 'imports' here; " +
                                           (want ? "add " : "remove ") + quoted(path) + " by hand");
    return out;
}

}  // namespace

// ---- public entry points ------------------------------------------------------------------

Result<int> containerd_version(std::string_view text, std::string_view source) {
    INJECT_TRY(auto t, parse_toml(text, source));
    return version_of(t, source);
}

namespace detail {

Result<std::string> toml_configure(Engine e, std::string_view text, const Options& o,
                                   std::string_view source) {
    INJECT_TRY(auto root, parse_toml(text, source));
    if (e == Engine::Containerd) {
        if (root.empty()) root.insert("version", 2);
        INJECT_TRY(int version, version_of(root, source));
        INJECT_TRY_VOID(containerd_add(root, version, o, source));
    } else {
        INJECT_TRY_VOID(crio_add(root, o, source));
    }
    return to_text(root);
}

Result<std::string> toml_unconfigure(Engine e, std::string_view text, const Options& o,
                                     std::string_view source,
                                     std::optional<std::string_view> original) {
    INJECT_TRY(auto root, parse_toml(text, source));
    std::optional<toml::table> orig;
    if (original) {
        if (auto parsed = parse_toml(*original, "backup")) orig = std::move(*parsed);
    }
    const toml::table* op = orig ? &*orig : nullptr;
    if (e == Engine::Containerd) {
        INJECT_TRY(int version, version_of(root, source));
        containerd_remove(root, version, o, op);
    } else {
        crio_remove(root, o, op);
    }
    if (orig && *orig == root) return std::string(*original);
    if (text == to_text(root)) return std::string(text);
    return to_text(root);
}

Result<std::string> toml_drop_in(Engine e, std::string_view main_text, const Options& o,
                                 std::string_view main_source) {
    toml::table drop;
    if (e == Engine::Crio) {
        INJECT_TRY_VOID(crio_add(drop, o, "drop-in"));
        return std::string(kDropInHeader) + to_text(drop);
    }
    INJECT_TRY(auto main, parse_toml(main_text, main_source));
    int version = 2;
    if (!main.empty()) {
        INJECT_TRY(version, version_of(main, main_source));
    }
    if (version == 1)
        return fail(Errc::Unsupported,
                    std::string(main_source) +
                        ": containerd config version 1 does not merge drop-ins; use --no-drop-in "
                        "or migrate it with 'containerd config migrate'");
    drop.insert("version", version);
    // containerd replaces a whole plugin table from an import: copy the main config's tables
    // we add to, so none of their other settings is lost
    auto plugins_copied = std::vector<std::vector<std::string>>{cri_plugin(version)};
    if (o.nri_enabled) plugins_copied.push_back(nri_plugin(version));
    for (const auto& plugin : plugins_copied) {
        if (auto* t = find(main, plugin)) {
            INJECT_TRY(auto* plugins, walk(drop, {"plugins"}, "drop-in"));
            plugins->insert(plugin[1], *t);
        }
    }
    INJECT_TRY_VOID(containerd_add(drop, version, o, "drop-in"));
    return std::string(kDropInHeader) + to_text(drop);
}

}  // namespace detail

Result<std::string> add_import(std::string_view text, std::string_view path,
                               std::string_view source) {
    INJECT_TRY(auto root, parse_toml(text, source));
    if (imports_contain(root, path) || imports_cover(root, path)) return std::string(text);
    auto lines = split_lines(text);
    if (const auto* imp = root.get("imports")) {
        const auto* arr = imp->as_array();
        if (arr == nullptr)
            return fail(Errc::InvalidInput, line_of(source, *imp) + ": 'imports' must be an array");
        auto end_line = imp->source().end.line;
        if (end_line == 0 || end_line > lines.size())
            return fail(Errc::Internal, line_of(source, *imp) + ": no end position for 'imports'");
        auto& line = lines[end_line - 1];
        auto pos = closing_bracket(line);
        // Skip back over blanks (and earlier lines) to see if an element precedes the bracket.
        std::string before = join_lines({lines.begin(), lines.begin() + end_line - 1}) +
                             line.substr(0, pos == std::string::npos ? 0 : pos);
        auto last = before.find_last_not_of(" \t\r\n");
        bool need_comma = last != std::string::npos && before[last] != '[' && before[last] != ',';
        if (pos != std::string::npos) line.insert(pos, (need_comma ? ", " : "") + quoted(path));
        return checked_import_edit(join_lines(lines), path, true, source, imp->source().begin.line);
    }
    std::string new_line = "imports = [" + quoted(path) + "]" + std::string(kImportMark) + "\n";
    std::size_t at = 0;
    if (const auto* v = root.get("version")) at = v->source().begin.line;
    if (at > lines.size()) at = lines.size();
    if (at > 0 && !lines[at - 1].empty() && lines[at - 1].back() != '\n') lines[at - 1] += '\n';
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), new_line);
    return checked_import_edit(join_lines(lines), path, true, source,
                               static_cast<std::uint32_t>(at + 1));
}

Result<std::string> remove_import(std::string_view text, std::string_view path,
                                  std::string_view source) {
    INJECT_TRY(auto root, parse_toml(text, source));
    if (!imports_contain(root, path)) return std::string(text);
    const auto* imp = root.get("imports");
    auto lines = split_lines(text);
    auto first = imp->source().begin.line;
    auto last = imp->source().end.line;
    if (first == 0 || last > lines.size() || last < first)
        return fail(Errc::Internal, line_of(source, *imp) + ": no position for 'imports'");
    std::string whole = "imports = [" + quoted(path) + "]" + std::string(kImportMark);
    if (first == last && lines[first - 1].substr(0, whole.size()) == whole &&
        lines[first - 1].find_first_not_of(" \t\r\n", whole.size()) == std::string::npos) {
        lines.erase(lines.begin() + first - 1);
        return checked_import_edit(join_lines(lines), path, false, source, first);
    }
    std::string q = quoted(path);
    for (auto i = first; i <= last; ++i) {
        auto& l = lines[i - 1];
        for (const std::string& pat : {", " + q, q + ", ", "," + q, q + ",", q}) {
            if (auto p = l.find(pat); p != std::string::npos) {
                l.erase(p, pat.size());
                return checked_import_edit(join_lines(lines), path, false, source, first);
            }
        }
    }
    return checked_import_edit(std::string(text), path, false, source, first);
}

// ---- enflame-ctk config --set -------------------------------------------------------------

namespace {

/// The TOML text of a --set value: TOML if it parses as a value, else a string.
std::string value_text(std::string_view value) {
    std::string probe = "v = " + std::string(value);
    try {
        auto t = toml::parse(probe);
        if (t.size() == 1 && t.contains("v")) return std::string(value);
    } catch (const toml::parse_error&) {
    }
    return quoted(value);
}

constexpr std::string_view kSections[] = {"enflame-container-runtime", "enflame-container-cli"};

}  // namespace

Result<std::string> set_config_key(std::string_view text, std::string_view key,
                                   std::string_view value, std::string_view source) {
    INJECT_TRY(auto root, parse_toml(text, source));
    std::string section;
    std::string name(key);
    if (auto dot = key.rfind('.'); dot != std::string_view::npos) {
        section = std::string(key.substr(0, dot));
        name = std::string(key.substr(dot + 1));
    } else {
        // A bare name: the section that has it among the defaults.
        auto defaults = toml::parse(inject::config::to_toml(inject::config::Config{}));
        for (auto s : kSections)
            if (auto* t = defaults.get_as<toml::table>(s); t != nullptr && t->contains(name))
                section = std::string(s);
        if (section.empty()) return fail(Errc::InvalidInput, "unknown key '" + name + "'");
    }
    if (std::find(std::begin(kSections), std::end(kSections), section) == std::end(kSections))
        return fail(Errc::InvalidInput,
                    "unknown table [" + section + "] in key '" + std::string(key) + "'");
    if (name.empty() ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_") != std::string::npos)
        return fail(Errc::InvalidInput, "unknown key '" + name + "' in [" + section + "]");

    std::string new_line = name + " = " + value_text(value) + "\n";
    auto lines = split_lines(text);
    if (!lines.empty() && lines.back().back() != '\n') lines.back() += '\n';
    auto* tbl = root.get_as<toml::table>(section);
    if (tbl != nullptr && tbl->is_inline())
        return fail(Errc::Unsupported, line_of(source, *tbl) + ": [" + section +
                                           "] is an inline table; edit it by hand");
    if (const auto* n = tbl != nullptr ? tbl->get(name) : nullptr; n != nullptr) {
        auto b = n->source().begin.line;
        auto e = n->source().end.line;
        if (b == 0 || e > lines.size())
            return fail(Errc::Internal, line_of(source, *n) + ": no position for '" + name + "'");
        auto& first = lines[b - 1];
        std::string indent = first.substr(0, first.find_first_not_of(" \t"));
        lines.erase(lines.begin() + b - 1, lines.begin() + e);
        lines.insert(lines.begin() + b - 1, indent + new_line);
    } else if (tbl != nullptr && tbl->source().begin.line > 0) {
        lines.insert(lines.begin() + tbl->source().begin.line, new_line);
    } else {
        if (!lines.empty()) lines.emplace_back("\n");
        lines.push_back("[" + section + "]\n");
        lines.push_back(new_line);
    }
    std::string out = join_lines(lines);
    INJECT_TRY_VOID(inject::config::parse(out, source));
    return out;
}

}  // namespace inject::runtime_config
