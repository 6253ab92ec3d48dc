// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The GpuResource's components, one row each: its spec field, its deployments/ folder, whether
/// it is on when the CR does not say, how its daemon sees the node's driver and device nodes,
/// and the function that applies its own fields. A new component is one row (and one function
/// if it has fields of its own).

#include <string>
#include <vector>

#include "operator/kustomize.hpp"

namespace gpu_operator {

/// How a component's daemon sees the node's driver files and device nodes, which decides what
/// spec.hostPaths.driverRoot and devRoot change in its config.
enum class HostView {
    None,               ///< it reads neither (NFD, the node exporter)
    Mounted,            ///< the host's / at /host, the host's /dev at /dev
    MountedNamingHost,  ///< as Mounted, and its config names the roots as the host sees them
                        ///< (the DRA plugin: its CDI specs point there)
    Runtime,            ///< through the container runtime (RuntimeClass enflame): its config's
                        ///< roots stay /, whatever the node's (the exporter)
    Flags,              ///< takes the node's roots as flags (the toolkit installer)
};

struct Component {
    const char* field;   ///< spec.<field>
    const char* folder;  ///< its deployments/ folder
    bool on_by_default;  ///< the CRD's default for spec.<field>.enabled
    HostView host;
    void (*own)(Object& o, const Json& settings);  ///< its own fields (nullptr: none)
};

/// Every component, in the CRD's order.
[[nodiscard]] const std::vector<Component>& components();

/// The component of a deployments/ folder: its field, or "base" (always deployed).
[[nodiscard]] std::string component_of_folder(const std::string& folder);

/// spec.<component>.enabled, or its default; "base" is always on.
[[nodiscard]] bool enabled(const Json& spec, const std::string& component);

/// The CR's settings on one object of an enabled component: the pods' (image, pull policy and
/// secrets, args, env, resources, nodeSelector, tolerations, priorityClassName, spec.daemonsets),
/// hostPaths, and the component's own fields.
void customize(Object& o, const Json& spec);

}  // namespace gpu_operator
