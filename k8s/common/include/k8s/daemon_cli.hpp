// SPDX-License-Identifier: Apache-2.0
#pragma once

// What every daemon's main.cpp of the Kubernetes plane does the same way: the toolkit config
// flag (docs/requests.md, the config file), --version, and the stderr logger. Header-only: the
// daemons link CLI11 and spdlog themselves; k8s_common does not need them.

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "inject/config.hpp"
#include "inject/config_path.hpp"
#include "inject/result.hpp"
#include "inject/version.hpp"

namespace k8s {

/// Adds --version and --config to `app`. `path` / `given` start from ENFLAME_CTK_CONFIG (or the
/// default path) and --config overrides them; a named file that is missing is an error later.
inline void add_common_flags(CLI::App& app, const std::string& name, std::string& path,
                             bool& given) {
    auto [p, g] = inject::config::config_path_from_env(
        std::getenv(std::string(inject::config::kPathEnv).c_str()));
    path = std::move(p);
    given = g;
    app.set_version_flag("--version", name + " " + std::string(inject::kVersion) + " (" +
                                          inject::kGitRevision + ")");
    app.add_option_function<std::string>(
        "--config", [&path, &given](const std::string& v) { path = v, given = true; },
        "toolkit configuration (default: $ENFLAME_CTK_CONFIG or "
        "/etc/enflame-container-runtime/config.toml)");
}

/// The daemon's logger: synchronous, on stderr, flushed on every line, at `level`
/// (debug, info, warn, error or off). InvalidInput names a bad level.
inline inject::Result<void> setup_logging(const std::string& name, const std::string& level) {
    auto logger = spdlog::stderr_logger_mt(name);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l: %v");
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    const auto l = spdlog::level::from_str(level);
    if (l == spdlog::level::off && level != "off")
        return inject::fail(inject::Errc::InvalidInput,
                            "--log-level '" + level + "': want debug, info, warn or error");
    spdlog::set_level(l);
    return inject::ok();
}

/// --log-level (or $LOG_LEVEL): debug, info, warn or error; parse_and_log() applies it.
inline void add_log_level_flag(CLI::App& app, std::string& level) {
    app.add_option("--log-level", level, "debug, info, warn or error")
        ->envname("LOG_LEVEL")
        ->capture_default_str();
}

/// Prints "error: <e>" on stderr; returns 1, the exit code for a bad flag or configuration.
inline int exit_error(const inject::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
}

/// Parses argv (a bad flag is one "error: ... (see --help)" line) and sets up the logger at
/// `log_level`, which the parse may have set. An exit code when the daemon must stop here
/// (--help, --version, a bad flag or level), nothing when it goes on.
inline std::optional<int> parse_and_log(CLI::App& app, int argc, char** argv,
                                        const std::string& name, const std::string& log_level) {
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return "error: " + std::string(e.what()) + " (see --help)\n";
    });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (auto r = setup_logging(name, log_level); !r) return exit_error(r.error());
    return std::nullopt;
}

}  // namespace k8s
