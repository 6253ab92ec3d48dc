// SPDX-License-Identifier: Apache-2.0
#pragma once
// A YAML node as JSON, typed as kubectl reads YAML (sigs.k8s.io/yaml): a plain scalar that
// reads as null, a boolean or a number becomes one; a quoted scalar stays a string. For code
// that checks YAML with the same rules as the JSON an API server sends (kustomize, the EPP's
// model rewrites).

#include <nlohmann/json.hpp>

namespace YAML {
class Node;
}

namespace k8s {

/// Maps become objects (keys as written), sequences arrays; an undefined or null node (a key
/// a map does not have) is null.
/// A plain integer too large for int64 stays a string.
[[nodiscard]] nlohmann::json yaml_to_json(const YAML::Node& n);

}  // namespace k8s
