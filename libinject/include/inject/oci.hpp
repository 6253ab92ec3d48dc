// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Edits of an OCI runtime spec (config.json) as pure functions: JSON in, JSON out. Fields we
/// do not touch are kept as they are.

#include "inject/cdi.hpp"
#include "inject/result.hpp"

#include <nlohmann/json_fwd.hpp>

namespace inject::oci {

/// Applies CDI container edits the way the OCI runtime spec wants them: linux.devices and
/// linux.resources.devices allow rules (real type/major/minor), mounts, process.env (a key
/// already set is replaced), hooks by stage, additionalGids. Idempotent: applying the same
/// edits twice gives the same spec.
[[nodiscard]] Result<void> apply(nlohmann::json& spec, const cdi::ContainerEdits& edits);

}  // namespace inject::oci
