// SPDX-License-Identifier: Apache-2.0
#pragma once

// What every enflame-ctk command shares: global flags, the configuration (loaded on first
// use, so commands that do not need it never read it), and command registration.

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "inject/config.hpp"
#include "inject/result.hpp"

namespace ctk {

class Context {
public:
    /// --config, else ENFLAME_CTK_CONFIG, else the default path.
    std::string config_path;
    bool config_path_given = false;
    bool debug = false;

    /// The configuration; a missing default file gives the defaults, a missing explicit one
    /// is an error.
    inject::Result<inject::config::Config> config();

private:
    std::optional<inject::config::Config> cfg_;
};

/// Prints "error: <what>" on stderr and returns the exit code for it.
int report(const inject::Error& e);

/// A command group adds its subcommands to the app. `order` sorts the help output.
using RegisterFn = void (*)(CLI::App& app, Context& ctx);
struct Registrar {
    Registrar(int order, RegisterFn fn);
};

/// Sets the command's exit code from a callback. CLI11 callbacks return void; commands throw
/// this to leave with a code (caught in main).
struct Exit {
    int code;
};

}  // namespace ctk
