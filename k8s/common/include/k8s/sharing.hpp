// SPDX-License-Identifier: Apache-2.0
#pragma once

// The device plugin's own config file (--plugin-config, PLUGIN_CONFIG): card sharing, in the
// shape NVIDIA's device plugin users know. Here, not in the device plugin, because the labeler
// reads it too (its sharing-strategy label):
//
//   version: v1
//   sharing:
//     timeSlicing:
//       renameByDefault: false      # true: advertise <resource>.shared
//       resources:
//       - name: enflame.com/gcu
//         replicas: 4               # each card advertised as <id>::0 .. <id>::3
//         rename: enflame.com/gcu-4  # optional, wins over renameByDefault
//   flags:
//     scheduler: hami               # who picks the card ("" = kubelet); --scheduler wins
//     hamiLegacyVgcu: true          # HAMi <= 2.9: enflame.com/shared-gcu; --hami-legacy-vgcu wins
//     hamiSharedSlices: 6           # its slices per card; --hami-shared-slices wins
//     requireNri: true              # Allocate only while enflame-nri-plugin runs; flag wins
//
// Every key is checked: an unknown one, a wrong type or a bad value is one error naming the
// file, the line and the key path.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "inject/result.hpp"

namespace k8s {

/// Time-slicing of our resource.
struct Sharing {
    std::uint32_t replicas = 1;  ///< 1 = no sharing
    std::string resource_name;   ///< the name to advertise (the flag's, or the renamed one)
    /// `flags.scheduler`: "" (kubelet picks the card) or "hami"; unset when the file has none,
    /// so the plugin's --scheduler / SCHEDULER, when given, win over it (flag > env > config).
    std::optional<std::string> scheduler;
    /// `flags.hamiLegacyVgcu`: HAMi <= 2.9's shared-gcu resource; unset when the file has none.
    std::optional<bool> hami_legacy;
    /// `flags.hamiSharedSlices`: slices per card of that resource (1 to kMaxReplicas).
    std::optional<std::uint32_t> hami_slices;
    /// `flags.requireNri`: refuse Allocate while enflame-nri-plugin is not running; unset when
    /// the file has none.
    std::optional<bool> require_nri;
};

/// The most replicas of one card we advertise.
inline constexpr std::uint32_t kMaxReplicas = 64;

/// Parses the plugin config text for the resource `resource_name`. `source` names the input.
[[nodiscard]] inject::Result<Sharing> parse_plugin_config(std::string_view text,
                                                          std::string_view source,
                                                          const std::string& resource_name);

/// Refuses a resource name kubelet would reject: `<domain>/<name>` with a DNS-subdomain
/// domain outside kubernetes.io and a qualified name.
[[nodiscard]] inject::Result<void> check_resource_name(std::string_view name);

/// Reads and parses `path`; an empty path is no sharing. A missing file is NotFound
/// ("--plugin-config: opening '<path>': ..."), which a reader that can do without it (the
/// labeler) tells apart by the code.
[[nodiscard]] inject::Result<Sharing> load_plugin_config(const std::string& path,
                                                         const std::string& resource_name);

}  // namespace k8s
