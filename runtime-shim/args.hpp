// SPDX-License-Identifier: Apache-2.0
#pragma once
// runc's command line as the shim sees it: global flags, the subcommand, and for create/run
// the bundle. Only a scan: the argv is handed to the low-level runtime unchanged.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shim {

/// What the shim needs from runc's argv.
struct RuncArgs {
    std::string log_path;               ///< --log
    std::string log_format = "text";    ///< --log-format (text | json)
    bool debug = false;                 ///< --debug
    bool version = false;               ///< --version / -v before any subcommand
    std::string command;                ///< the subcommand ("create", "state", ...), empty if none
    std::size_t command_index = 0;      ///< its position in argv
    std::optional<std::string> bundle;  ///< --bundle / -b of create/run (absent = cwd)
    std::string container_id;           ///< the first positional argument after the subcommand

    /// create and run edit the bundle; everything else passes through.
    [[nodiscard]] bool edits_bundle() const { return command == "create" || command == "run"; }
};

/// Scans runc's argv (argv[0] excluded). Accepts --flag value, --flag=value and the Go flag
/// forms -flag / -flag=value. Never fails: what it does not understand is left to the runtime.
[[nodiscard]] RuncArgs scan_args(const std::vector<std::string_view>& args);

}  // namespace shim
