// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// kustomize's engine for the features the deployments/ tree uses (resources, namespace,
/// images, JSON 6902 patches, configMapGenerator), so the operator applies exactly what
/// `kubectl apply -k` would from the same folders. Anything else in a kustomization is refused
/// by name, so a new feature cannot slip by unrendered.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inject/result.hpp"

namespace gpu_operator {

using Json = nlohmann::json;

/// One rendered object: where it came from and, once render() knows, its component.
struct Object {
    Json obj;
    std::string folder;     ///< the deployments/ folder its file (or generator) is in
    std::string component;  ///< the GpuResource field that switches it ("base": always on)
    /// Made by a configMapGenerator: its name gets kustomize's content hash once the CR's
    /// fields are in (so a changed config rolls the pods that mount it).
    bool generated = false;
};

/// An image reference's parts: name (registry/path), tag, digest (kustomize's `images:` and
/// the CR's image fields).
struct ImageRef {
    std::string name, tag, digest;
    static ImageRef parse(std::string s) {
        ImageRef r;
        if (auto at = s.find('@'); at != std::string::npos)
            r.digest = s.substr(at + 1), s.resize(at);
        const auto colon = s.rfind(':');
        if (colon != std::string::npos && s.find('/', colon) == std::string::npos)
            r.tag = s.substr(colon + 1), s.resize(colon);
        r.name = s;
        return r;
    }
    std::string str() const {
        return name + (tag.empty() ? "" : ":" + tag) + (digest.empty() ? "" : "@" + digest);
    }
};

/// Appends a byte as two lowercase hex digits.
void append_hex(std::string& out, unsigned char b);

/// Kinds kustomize treats as cluster-scoped (its built-in schema): it sets no namespace on them.
[[nodiscard]] bool kustomize_cluster_scoped(const std::string& kind);

/// A YAML stream (documents separated by ---) as JSON values, nulls left out.
[[nodiscard]] inject::Result<std::vector<Json>> parse_yaml_stream(const std::string& text,
                                                                  const std::string& what);

/// A kustomization folder's objects, before the generated ConfigMaps get their hash. Errors
/// name the file and field.
[[nodiscard]] inject::Result<std::vector<Object>> load_dir(const std::filesystem::path& dir);

/// The content hash on each generated ConfigMap's name, and the new name wherever a pod template
/// in its namespace refers to it, as kustomize's name references do.
void suffix_generated(std::vector<Object>& objs);

/// kustomize's content hash of a ConfigMap's data (string values), as its generated names carry.
[[nodiscard]] std::string content_hash(const Json& data);

/// `kubectl kustomize DIR`: load_dir() and the hashes.
[[nodiscard]] inject::Result<std::vector<Object>> kustomize(const std::string& dir);

}  // namespace gpu_operator
