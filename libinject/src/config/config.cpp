// SPDX-License-Identifier: Apache-2.0
// The one adapter between toml++ and the library: toml++ exceptions end here.
#include "inject/config.hpp"

#include <toml++/toml.h>

#include <functional>
#include <map>
#include <utility>

#include "inject/fs.hpp"

namespace inject::config {
namespace {

std::string at_line(std::string_view source, const toml::source_region& r) {
    return std::string(source) + ": line " + std::to_string(r.begin.line);
}

Result<std::string> get_string(const toml::node& n, std::string_view src, std::string_view key) {
    if (auto s = n.value<std::string>(); s && n.is_string()) return *s;
    return fail(Errc::InvalidInput,
                at_line(src, n.source()) + ": key '" + std::string(key) + "' must be a string");
}

Result<std::vector<std::string>> get_strings(const toml::node& n, std::string_view src,
                                             std::string_view key) {
    const auto* arr = n.as_array();
    std::vector<std::string> out;
    if (arr != nullptr) {
        for (const auto& el : *arr) {
            if (!el.is_string()) {
                arr = nullptr;
                break;
            }
            out.push_back(*el.value<std::string>());
        }
    }
    if (arr == nullptr)
        return fail(Errc::InvalidInput, at_line(src, n.source()) + ": key '" + std::string(key) +
                                            "' must be an array of strings");
    return out;
}

Result<bool> get_bool(const toml::node& n, std::string_view src, std::string_view key) {
    if (n.is_boolean()) return *n.value<bool>();
    return fail(Errc::InvalidInput, at_line(src, n.source()) + ": key '" + std::string(key) +
                                        "' must be true or false");
}

using Setter = std::function<Result<void>(const toml::node&, std::string_view, std::string_view)>;

Result<void> apply_table(const toml::table& tbl, std::string_view src, std::string_view section,
                         const std::map<std::string, Setter, std::less<>>& setters) {
    for (const auto& [k, v] : tbl) {
        auto it = setters.find(k.str());
        if (it == setters.end())
            return fail(Errc::InvalidInput, at_line(src, k.source()) + ": unknown key '" +
                                                std::string(k.str()) + "' in [" +
                                                std::string(section) + "]");
        INJECT_TRY_VOID(it->second(v, src, k.str()));
    }
    return ok();
}

Setter str(std::string& field) {
    return [&field](const toml::node& n, std::string_view s, std::string_view k) -> Result<void> {
        INJECT_TRY(field, get_string(n, s, k));
        return ok();
    };
}
Setter strs(std::vector<std::string>& field) {
    return [&field](const toml::node& n, std::string_view s, std::string_view k) -> Result<void> {
        INJECT_TRY(field, get_strings(n, s, k));
        return ok();
    };
}
Setter boolean(bool& field) {
    return [&field](const toml::node& n, std::string_view s, std::string_view k) -> Result<void> {
        INJECT_TRY(field, get_bool(n, s, k));
        return ok();
    };
}

Result<void> check_level(const std::string& level, std::string_view src) {
    static constexpr std::string_view kLevels[] = {"trace", "debug", "info",
                                                   "warn",  "error", "off"};
    for (auto l : kLevels)
        if (level == l) return ok();
    return fail(Errc::InvalidInput, std::string(src) + ": log-level '" + level +
                                        "' is not one of trace, debug, info, warn, error, off");
}

Result<Config> from_table(const toml::table& root, std::string_view src) {
    Config cfg;
    cfg.source = std::string(src);
    std::string mode = std::string(mode_name(cfg.runtime.mode));
    std::int64_t timeout = cfg.cli.efsmi_timeout_ms;
    auto& rt = cfg.runtime;
    auto& cli = cfg.cli;
    const std::map<std::string, Setter, std::less<>> runtime_keys{
        {"mode", str(mode)},
        {"runtimes", strs(rt.runtimes)},
        {"spec-dirs", strs(rt.spec_dirs)},
        {"log-file", str(rt.log_file)},
        {"log-level", str(rt.log_level)},
        {"accept-envvar-when-unprivileged", boolean(rt.accept_envvar_when_unprivileged)},
        {"cdi-kind", str(rt.cdi_kind)},
        {"hook-path", str(rt.hook_path)},
    };
    const std::map<std::string, Setter, std::less<>> cli_keys{
        {"driver-root", str(cli.driver_root)},
        {"dev-root", str(cli.dev_root)},
        {"host-driver-root", str(cli.host_driver_root)},
        {"host-dev-root", str(cli.host_dev_root)},
        {"ldconfig", str(cli.ldconfig)},
        {"device-prefix", str(cli.device_prefix)},
        {"library-search-paths", strs(cli.library_search_paths)},
        {"compute-libraries", strs(cli.compute_libraries)},
        {"efsmi-timeout-ms",
         [&timeout](const toml::node& n, std::string_view s, std::string_view k) -> Result<void> {
             if (!n.is_integer() || *n.value<std::int64_t>() <= 0)
                 return fail(Errc::InvalidInput, at_line(s, n.source()) + ": key '" +
                                                     std::string(k) +
                                                     "' must be a positive integer");
             timeout = *n.value<std::int64_t>();
             return ok();
         }},
    };
    for (const auto& [k, v] : root) {
        const auto* tbl = v.as_table();
        const std::map<std::string, Setter, std::less<>>* keys = nullptr;
        if (k.str() == "enflame-container-runtime")
            keys = &runtime_keys;
        else if (k.str() == "enflame-container-cli")
            keys = &cli_keys;
        if (keys == nullptr || tbl == nullptr)
            return fail(Errc::InvalidInput, at_line(src, k.source()) + ": unknown " +
                                                (tbl ? "table [" : "key '") + std::string(k.str()) +
                                                (tbl ? "]" : "'"));
        INJECT_TRY_VOID(apply_table(*tbl, src, k.str(), *keys));
    }
    if (mode == "auto")
        rt.mode = Mode::Auto;
    else if (mode == "cdi")
        rt.mode = Mode::Cdi;
    else if (mode == "legacy")
        rt.mode = Mode::Legacy;
    else
        return fail(Errc::InvalidInput,
                    std::string(src) + ": mode '" + mode + "' is not one of auto, cdi, legacy");
    INJECT_TRY_VOID(check_level(rt.log_level, src));
    if (cli.device_prefix.empty() || cli.device_prefix.find('/') != std::string::npos)
        return fail(Errc::InvalidInput, std::string(src) + ": device-prefix '" + cli.device_prefix +
                                            "' must be a non-empty file name");
    for (const auto& [key, dir] :
         {std::pair<const char*, const std::string*>{"host-driver-root", &cli.host_driver_root},
          {"host-dev-root", &cli.host_dev_root}}) {
        if (!dir->empty() && dir->front() != '/')
            return fail(Errc::InvalidInput,
                        std::string(src) + ": " + key + " '" + *dir + "' is not an absolute path");
    }
    cli.efsmi_timeout_ms = static_cast<std::uint32_t>(timeout);
    return cfg;
}

}  // namespace

std::string_view mode_name(Mode m) noexcept {
    switch (m) {
        case Mode::Auto:
            return "auto";
        case Mode::Cdi:
            return "cdi";
        case Mode::Legacy:
            return "legacy";
    }
    return "auto";
}

Result<Config> parse(std::string_view toml_text, std::string_view source) {
    try {
        toml::table root = toml::parse(toml_text, source);
        return from_table(root, source);
    } catch (const toml::parse_error& e) {
        return fail(Errc::InvalidInput, std::string(source) + ": line " +
                                            std::to_string(e.source().begin.line) + ": " +
                                            std::string(e.description()));
    }
}

Result<Config> load_file(const std::string& path, bool missing_ok) {
    auto text = fs::read_file(path, 1 << 20);
    if (!text) {
        if (missing_ok && text.error().code() == Errc::NotFound) return Config{};
        return fail(std::move(text).error().context("reading config"));
    }
    return parse(*text, path);
}

}  // namespace inject::config
