// SPDX-License-Identifier: Apache-2.0
#pragma once

// The plugin's own config file (--plugin-config, PLUGIN_CONFIG): card sharing, in the shape
// NVIDIA's device plugin users know:
//
//   version: v1
//   sharing:
//     timeSlicing:
//       renameByDefault: false      # true: advertise <resource>.shared
//       resources:
//       - name: enflame.com/gcu
//         replicas: 4               # each card advertised as <id>::0 .. <id>::3
//         rename: enflame.com/gcu-4  # optional, wins over renameByDefault
//
// Every key is checked: an unknown one, a wrong type or a bad value is one error naming the
// file, the line and the key path.

#include "inject/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace edp {

/// Time-slicing of our resource.
struct Sharing {
    std::uint32_t replicas = 1;  ///< 1 = no sharing
    std::string resource_name;   ///< the name to advertise (the flag's, or the renamed one)
};

/// The most replicas of one card we advertise.
inline constexpr std::uint32_t kMaxReplicas = 64;

/// Parses the plugin config text for the resource `resource_name`. `source` names the input.
[[nodiscard]] inject::Result<Sharing> parse_plugin_config(std::string_view text, std::string_view source,
                                                          const std::string& resource_name);

/// Reads and parses `path`; an empty path is no sharing.
[[nodiscard]] inject::Result<Sharing> load_plugin_config(const std::string& path, const std::string& resource_name);

}  // namespace edp
