// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The Container Device Interface (CDI) spec model. Plain data mirroring the CDI spec's
/// fields (cdiVersion, kind, annotations, devices, containerEdits). Reading, writing,
/// validation and the registry are declared in inject/cdi_io.hpp and inject/cdi_registry.hpp;
/// building a spec for a discovered host in inject/cdi_generate.hpp.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace inject::cdi {

/// containerEdits.deviceNodes[]
struct DeviceNode {
    std::string path;       ///< path in the container
    std::string host_path;  ///< path on the host (0.5.0+); empty = same as path
    std::string type;       ///< "c", "b", "u", "p" or empty
    std::optional<std::int64_t> major;
    std::optional<std::int64_t> minor;
    std::optional<std::uint32_t> file_mode;  ///< permission bits (the spec's os.FileMode)
    std::string permissions;                 ///< cgroup access "rwm" subset
    std::optional<std::uint32_t> uid;
    std::optional<std::uint32_t> gid;
    bool operator==(const DeviceNode&) const = default;
};

/// containerEdits.mounts[]
struct Mount {
    std::string host_path;
    std::string container_path;
    std::string type;  ///< empty = bind
    std::vector<std::string> options;
    bool operator==(const Mount&) const = default;
};

/// containerEdits.hooks[]
struct Hook {
    std::string hook_name;  ///< prestart, createRuntime, createContainer, startContainer,
                            ///< poststart, poststop
    std::string path;
    std::vector<std::string> args;
    std::vector<std::string> env;
    std::optional<int> timeout;
    bool operator==(const Hook&) const = default;
};

/// containerEdits
struct ContainerEdits {
    std::vector<std::string> env;
    std::vector<DeviceNode> device_nodes;
    std::vector<Hook> hooks;
    std::vector<Mount> mounts;
    std::vector<std::uint32_t> additional_gids;
    bool operator==(const ContainerEdits&) const = default;
    [[nodiscard]] bool empty() const {
        return env.empty() && device_nodes.empty() && hooks.empty() && mounts.empty() &&
               additional_gids.empty();
    }
};

/// devices[]
struct Device {
    std::string name;
    std::map<std::string, std::string> annotations;
    ContainerEdits edits;
    bool operator==(const Device&) const = default;
};

/// A whole spec file.
struct Spec {
    std::string version;  ///< cdiVersion
    std::string kind;     ///< "vendor/class", e.g. "enflame.com/gpu"
    std::map<std::string, std::string> annotations;
    std::vector<Device> devices;
    ContainerEdits edits;  ///< spec-level edits, applied once when any device is used
    bool operator==(const Spec&) const = default;
};

}  // namespace inject::cdi
