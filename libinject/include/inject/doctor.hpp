// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// `enflame-ctk doctor`'s checks: why a container would not get its card on this host. Each
/// check is a line with a status, what was seen and the command that fixes it. They live in
/// the library (not in the command) so a Kubernetes readiness probe can run the same ones.
/// Every host lookup goes through the configuration's driver-root and dev-root; runtime
/// config files and sockets are taken from Options (callers pass the defaults or test paths).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/config.hpp"
#include "inject/device.hpp"
#include "inject/result.hpp"

namespace inject::doctor {

enum class Status { Ok, Warn, Fail };

/// "ok", "warn", "fail".
[[nodiscard]] std::string_view status_name(Status s) noexcept;

/// One line of the report.
struct Check {
    std::string
        name;  ///< "driver.module", "device.gcu0", "cdi.spec", "runtime.docker", "config.mode"
    Status status = Status::Ok;
    std::string seen;  ///< what was found, quoting paths and values
    std::string fix;   ///< the command or step that fixes it; empty when ok
};

/// A container engine to look at.
struct Engine {
    std::string name;    ///< "docker", "containerd", "crio", "podman"
    std::string binary;  ///< looked up on Options::path ("docker", "containerd", ...)
    std::vector<std::string> version_args{"--version"};
    std::string config;  ///< its config file; empty = none to check
    std::string socket;  ///< its daemon's socket; empty = daemonless
};

/// The engines and the files they use by default.
[[nodiscard]] std::vector<Engine> default_engines();

/// Everything the checks need; the library reads no environment and picks no file itself.
struct Options {
    config::Config cfg;                 ///< the effective configuration (flags applied)
    std::string config_text;            ///< the config file's text ("" when none was read)
    std::optional<Error> config_error;  ///< why the config file could not be used (defaults then)
    /// Keys set by a command-line flag: {"driver-root", "--driver-root"}.
    std::vector<std::pair<std::string, std::string>> flag_overrides;
    std::vector<std::string> path;  ///< folders searched for engine binaries (PATH)
    std::vector<Engine> engines = default_engines();
    std::chrono::milliseconds timeout{1000};  ///< per engine --version run and socket connect
};

/// The toolkit's configuration: one line per key, its value and where it came from.
[[nodiscard]] std::vector<Check> check_config(const Options& opts);

/// The driver: module version, efsmi, which discovery backend answers and why the others did
/// not, libefml calls missing. `host` receives what discovery found (nullopt when nothing did).
[[nodiscard]] std::vector<Check> check_driver(const Options& opts,
                                              std::optional<device::Host>& host);

/// Device nodes: each card sysfs lists has its /dev/<prefix>N with sysfs's major:minor, and
/// /dev/<prefix>ctl exists; permissions let a non-root container user open them.
[[nodiscard]] std::vector<Check> check_devices(const Options& opts);

/// CDI: every spec in the spec dirs valid, no name claimed twice, and our kind's specs match
/// the host now (`host` from check_driver; without it only the cheap checks run).
[[nodiscard]] std::vector<Check> check_cdi(const Options& opts,
                                           const std::optional<device::Host>& host);

/// Each engine: installed, version, wired to our runtime or CDI-enabled, config parses,
/// daemon reachable (a socket connect with a short timeout, nothing sent).
[[nodiscard]] std::vector<Check> check_runtimes(const Options& opts);

/// All of the above, in that order (config, driver, devices, cdi, runtimes).
[[nodiscard]] std::vector<Check> run_all(const Options& opts);

/// 0 when every check is ok, 1 when the worst is a warning, 2 when any failed.
[[nodiscard]] int exit_code(const std::vector<Check>& checks) noexcept;

}  // namespace inject::doctor
