// SPDX-License-Identifier: Apache-2.0
// enflame-ctk: the operator's command line. Commands live one group per file and register
// themselves; this file parses global flags, sets up logging (stderr only: stdout carries
// command output such as a CDI spec), and turns errors into exit codes.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <utility>
#include <vector>

#include "context.hpp"
#include "inject/config_path.hpp"
#include "inject/version.hpp"

namespace ctk {
namespace {

std::vector<std::pair<int, RegisterFn>>& registry() {
    static std::vector<std::pair<int, RegisterFn>> r;
    return r;
}

}  // namespace

Registrar::Registrar(int order, RegisterFn fn) {
    registry().emplace_back(order, fn);
}

inject::Result<inject::config::Config> Context::config() {
    if (!cfg_) {
        INJECT_TRY(auto c, inject::config::load_file(config_path, !config_path_given));
        cfg_ = std::move(c);
    }
    return *cfg_;
}

int report(const inject::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
}

}  // namespace ctk

int main(int argc, char** argv) try {
    ctk::Context ctx;
    {
        auto [path, given] = inject::config::config_path_from_env(
            std::getenv(std::string(inject::config::kPathEnv).c_str()));
        ctx.config_path = std::move(path);
        ctx.config_path_given = given;
    }
    CLI::App app{"enflame-ctk: set up containers for Enflame GCU accelerators", "enflame-ctk"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("enflame-ctk ") + inject::kVersion + " (" +
                                          inject::kGitRevision + ")");
    app.add_option_function<std::string>(
        "--config",
        [&ctx](const std::string& p) {
            ctx.config_path = p;
            ctx.config_path_given = true;
        },
        "configuration file (default: $ENFLAME_CTK_CONFIG or "
        "/etc/enflame-container-runtime/config.toml)");
    app.add_flag("-d,--debug", ctx.debug, "log debug detail on stderr");

    auto& cmds = ctk::registry();
    std::stable_sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (auto& [order, fn] : cmds) fn(app, ctx);

    auto logger = spdlog::stderr_logger_st("enflame-ctk");
    logger->set_pattern("%l: %v");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::warn);
    app.parse_complete_callback([&ctx] {
        if (ctx.debug) spdlog::set_level(spdlog::level::debug);
    });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const ctk::Exit& e) {
        return e.code;
    }
    return 0;
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 2;
}
