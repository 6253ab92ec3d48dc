// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Building the CDI spec for a discovered host (docs/requests.md, the CDI spec we write): kind
/// enflame.com/gpu, devices by index, by UUID and "all", DRS instances; spec-level edits with
/// /dev/gcuctl, the efsmi / libefml / runtime library mounts, the ldcache hook and
/// ENFLAME_VISIBLE_DEVICES=void. Pure apart from reading the driver root (stat/readlink/readdir of
/// library folders): the same host and options give the same Spec, and to_yaml()/to_json() give
/// the same bytes.

#include <string>
#include <string_view>
#include <vector>

#include "inject/cdi.hpp"
#include "inject/device.hpp"
#include "inject/multiarch.hpp"
#include "inject/result.hpp"

namespace inject::config {
struct Config;
}

namespace inject::cdi {

/// Which names each card gets.
enum class NameStrategy {
    Index,  ///< "0", "1", ... (DRS: "0:1g.11gb:0")
    Uuid,   ///< "TR6Y46010302" (DRS: "DRS-<uuid>")
    Both,   ///< both of the above
};

/// "index", "uuid", "both".
[[nodiscard]] std::string_view name_strategy_name(NameStrategy s) noexcept;
/// Parses a strategy name; InvalidInput: "unknown device name strategy 'x': want index, uuid or
/// both".
[[nodiscard]] Result<NameStrategy> parse_name_strategy(std::string_view name);

/// Capability bits (the same values as inject::request::Capability).
inline constexpr unsigned kCapUtility = 1u << 0;
inline constexpr unsigned kCapCompute = 1u << 1;

/// How to build the spec.
struct GenerateOptions {
    std::string vendor = "enflame.com";
    std::string cls = "gpu";
    NameStrategy names = NameStrategy::Both;
    bool all_device = true;  ///< add the "all" device
    unsigned capabilities = kCapUtility | kCapCompute;
    std::string driver_root = "/";  ///< efsmi, libefml, runtime libraries are found under it
    std::string dev_root = "/";     ///< informational: Host already carries host node paths
    /// driver-root as the host sees it: each mount's hostPath is this root joined with the
    /// file's path inside driver-root. Empty = the path as this process sees it.
    std::string host_driver_root;
    /// dev-root as the host sees it: each device node's hostPath is this root joined with the
    /// node's path. Empty = the node's host_path as discovery found it.
    std::string host_dev_root;
    /// Folders (container-style absolute paths, looked up under driver-root) searched for
    /// libefml.so* and the compute libraries.
    std::vector<std::string> library_search_paths{"/usr/lib",
                                                  "/usr/lib64",
                                                  kMultiarchLibDir,
                                                  "/usr/local/lib",
                                                  "/usr/local/topsrider/lib",
                                                  "/opt/tops/lib"};
    /// fnmatch patterns of the compute runtime libraries.
    std::vector<std::string> compute_libraries{"libtopsrt.so*", "libefrt*.so*", "libeccl*.so*"};
    /// efsmi locations tried in order (under driver-root); the first found is mounted.
    std::vector<std::string> efsmi_paths{"/usr/bin/efsmi", "/usr/sbin/efsmi",
                                         "/usr/local/bin/efsmi"};
    /// Absolute path of enflame-ctk on the host, run as the createContainer hook
    /// (`enflame-ctk hook update-ldcache --folder <dir>...`). Empty = no hook.
    std::string ctk_path;
    /// ldconfig for the hook ("@/sbin/ldconfig" = host path); empty = the hook's default.
    std::string ldconfig;
};

/// Options from the configuration's [enflame-container-cli] section (roots, search paths,
/// compute patterns) and [enflame-container-runtime] cdi-kind. ctk_path and ldconfig stay
/// empty: the hook (`enflame-ctk hook update-ldcache`) reads ldconfig from the host's config
/// when the spec does not name one, so a spec stays valid when the config changes.
[[nodiscard]] Result<GenerateOptions> options_from(const config::Config& cfg);

/// The spec for `host`. Errors: NotFound "no Enflame cards found: nothing to generate" for a
/// host without cards; InvalidInput for a vendor/class/name the CDI rules reject; Io/NotFound
/// naming a path under driver-root that cannot be resolved inside it.
/// The Spec's cdiVersion is minimum_version() of the result.
[[nodiscard]] Result<Spec> generate(const device::Host& host, const GenerateOptions& opts);

}  // namespace inject::cdi
