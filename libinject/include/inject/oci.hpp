// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Edits of an OCI runtime spec (config.json) as pure functions: JSON in, JSON out. Fields we
/// do not touch are kept as they are.

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "inject/cdi.hpp"
#include "inject/result.hpp"

namespace inject::oci {

/// Applies CDI container edits the way the OCI runtime spec wants them: linux.devices and
/// linux.resources.devices allow rules (real type/major/minor), mounts, process.env (a key
/// already set is replaced), hooks by stage, additionalGids. Idempotent: applying the same
/// edits twice gives the same spec.
[[nodiscard]] Result<void> apply(nlohmann::json& spec, const cdi::ContainerEdits& edits);
/// The same for an order-preserving document (the shim rewrites config.json with it).
[[nodiscard]] Result<void> apply(nlohmann::ordered_json& spec, const cdi::ContainerEdits& edits);

/// Adds only the linux.resources.devices allow rules of `nodes` (no linux.devices entry): the
/// runtime then programs the device cgroup (v1 or v2) for nodes a legacy hook creates later.
/// Idempotent; a bad node leaves the spec as it was.
[[nodiscard]] Result<void> allow_devices(nlohmann::ordered_json& spec,
                                         const std::vector<cdi::DeviceNode>& nodes);

/// True when the container is privileged as accept-envvar-when-unprivileged means it:
/// CAP_SYS_ADMIN is in process.capabilities.bounding (what `--privileged` gives).
[[nodiscard]] bool privileged(const nlohmann::json& spec);
/// The same for an order-preserving document.
[[nodiscard]] bool privileged(const nlohmann::ordered_json& spec);

/// `spec` as compact JSON, byte for byte what `spec.dump()` writes, in about a third of its
/// time: strings of printable ASCII (all of a config.json but odd values) are copied whole
/// instead of escaped byte by byte. InvalidInput for a string that is not UTF-8 (as dump()).
[[nodiscard]] Result<std::string> dump(const nlohmann::ordered_json& spec);

/// Fills the type, major, minor and file mode of device nodes that lack them from the host
/// node (stat of host_path, or path when host_path is empty). Not pure: reads the host.
[[nodiscard]] Result<void> fill_device_numbers(cdi::ContainerEdits& edits);

}  // namespace inject::oci
