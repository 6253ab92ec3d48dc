// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Reading and writing CDI specs (inject/cdi.hpp) as YAML or JSON. Parsing is strict like the
/// reference implementation (tags.cncf.io/container-device-interface): an unknown field is an
/// error naming it and its location. Writing is deterministic: the same Spec gives the same
/// bytes (fields in the spec's order, empty fields left out, maps sorted by key).

#include <string>
#include <string_view>

#include "inject/cdi.hpp"
#include "inject/result.hpp"

namespace inject::cdi {

/// Parses a spec from YAML or JSON text (JSON is read as YAML, a superset, but a text that
/// starts with '{' is parsed as JSON so errors carry a byte offset). `source` names the input
/// in errors: "<source>: line 4, column 3: unknown field 'devcies'".
/// Only syntax and types are checked here; the spec's rules are checked by validate().
[[nodiscard]] Result<Spec> parse_spec(std::string_view text, std::string_view source);

/// Reads and parses a spec file (at most 4 MiB). Errors name the path.
[[nodiscard]] Result<Spec> load_spec(const std::string& path);

/// The spec as YAML (block style, 2-space indent, trailing newline). Deterministic.
[[nodiscard]] std::string to_yaml(const Spec& spec);

/// The spec as JSON (2-space indent, trailing newline). Deterministic.
[[nodiscard]] std::string to_json(const Spec& spec);

/// Output format of a spec file.
enum class Format { Yaml, Json };

/// The format a file name implies: ".json" -> Json, anything else (".yaml", ".yml", "-") -> Yaml.
[[nodiscard]] Format format_for_path(std::string_view path) noexcept;

/// Parses "yaml" / "json" (InvalidInput otherwise: "unknown format 'xml': want yaml or json").
[[nodiscard]] Result<Format> parse_format(std::string_view name);

/// to_yaml() or to_json().
[[nodiscard]] std::string serialize(const Spec& spec, Format format);

}  // namespace inject::cdi
