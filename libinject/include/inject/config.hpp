// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The toolkit's configuration (`/etc/enflame-container-runtime/config.toml`). The library
/// never picks the file: binaries decide the path (ENFLAME_CTK_CONFIG overrides the default)
/// and pass the text or path here. Every key is optional; an unknown key is an error that
/// names the key and its line.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inject/multiarch.hpp"
#include "inject/result.hpp"

namespace inject::config {

/// Where binaries look when ENFLAME_CTK_CONFIG is unset.
inline constexpr std::string_view kDefaultPath = "/etc/enflame-container-runtime/config.toml";
/// The environment variable that overrides kDefaultPath.
inline constexpr std::string_view kPathEnv = "ENFLAME_CTK_CONFIG";

/// How the runtime shim turns a request into edits.
enum class Mode { Auto, Cdi, Legacy };

[[nodiscard]] std::string_view mode_name(Mode m) noexcept;

/// `[enflame-container-runtime]`
struct RuntimeSection {
    Mode mode = Mode::Auto;
    /// Low-level runtime: the first entry found (PATH lookup, or an absolute path).
    std::vector<std::string> runtimes{"runc", "crun"};
    /// CDI spec directories, later ones win on conflicts.
    std::vector<std::string> spec_dirs{"/etc/cdi", "/var/run/cdi"};
    /// Debug log file; empty = none. runc's --log is always honoured in addition.
    std::string log_file;
    std::string log_level = "info";
    /// Honour ENFLAME_VISIBLE_DEVICES from the image env of an unprivileged container.
    bool accept_envvar_when_unprivileged = true;
    /// The CDI kind our devices use.
    std::string cdi_kind = "enflame.com/gpu";
    /// Path of enflame-container-runtime-hook for legacy mode; empty = next to the shim.
    std::string hook_path;
};

/// `[enflame-container-cli]`
struct CliSection {
    /// Where efsmi, libefml, libraries, sys/ are looked up.
    std::string driver_root = "/";
    /// Where dev/gcu* are looked up.
    std::string dev_root = "/";
    /// driver-root as the host sees it, for the paths a CDI spec names (read by the container
    /// engine on the host): a daemon in a pod with the host's / at /host has driver-root
    /// "/host" and host-driver-root "/". Empty = driver-root (the same view).
    std::string host_driver_root;
    /// dev-root as the host sees it (device nodes' hostPath); empty = dev-root.
    std::string host_dev_root;
    /// ldconfig to run for the container; '@' prefix = a host path.
    std::string ldconfig = "@/sbin/ldconfig";
    /// Device nodes are `/dev/<prefix><minor>` and `/dev/<prefix>ctl`.
    std::string device_prefix = "gcu";
    /// Folders (under driver-root) searched for efsmi, libefml and runtime libraries.
    std::vector<std::string> library_search_paths{"/usr/lib",
                                                  "/usr/lib64",
                                                  kMultiarchLibDir,
                                                  "/usr/local/lib",
                                                  "/usr/local/topsrider/lib",
                                                  "/opt/tops/lib"};
    /// Name patterns (fnmatch) of the `compute` capability's runtime libraries.
    std::vector<std::string> compute_libraries{"libtopsrt.so*", "libefrt*.so*", "libeccl*.so*"};
    /// Upper bound for one efsmi call.
    std::uint32_t efsmi_timeout_ms = 5000;
};

/// The whole configuration.
struct Config {
    RuntimeSection runtime;
    CliSection cli;
    /// Where it came from ("defaults" or a path), for messages.
    std::string source = "defaults";
};

/// Parses TOML text. `source` names the input in errors: "<source>: line 3: unknown key 'mdoe'".
[[nodiscard]] Result<Config> parse(std::string_view toml_text, std::string_view source);

/// Reads and parses `path`. A missing file gives the defaults when `missing_ok`.
[[nodiscard]] Result<Config> load_file(const std::string& path, bool missing_ok);

/// The effective configuration as TOML (every key, defaults included).
[[nodiscard]] std::string to_toml(const Config& cfg);

/// `s` as a TOML basic string ("..."), every character that needs it escaped: a value written
/// into a config from outside input cannot end the string or add a key.
[[nodiscard]] std::string toml_string(const std::string& s);

}  // namespace inject::config
