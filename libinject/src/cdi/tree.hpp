// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal to the CDI reader: the document tree the YAML and JSON parsers produce and the
// strict decoder consumes (io.cpp), and the fast reader for the block-YAML subset that
// enflame-ctk and most tools write (yaml_fast.cpp).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inject/result.hpp"

namespace inject::cdi::detail {

struct Node {
    enum class Kind { Null, String, Number, Bool, Seq, Map };
    Kind kind = Kind::Null;
    std::string text;                                  // scalar text as written
    std::vector<Node> items;                           // Seq
    std::vector<std::pair<std::string, Node>> fields;  // Map, in document order
    int line = 0;                                      // 1-based; 0 = unknown (JSON)
    bool operator==(const Node&) const = default;
};

/// What a plain (unquoted) YAML scalar resolves to, as go-yaml reads it.
Node::Kind resolve_plain(std::string_view s);

/// Reads block-style YAML made of mappings, sequences, plain, single- and double-quoted
/// one-line scalars, `{}`, `[]` and comments into the same tree yaml-cpp would give.
/// nullopt when the text uses anything else (flow collections, anchors, tags, multi-line
/// scalars, tabs, duplicate keys, ...): the caller then uses yaml-cpp, which also produces
/// the error message for malformed input.
std::optional<Node> parse_simple_yaml(std::string_view all);

/// Reads any YAML with yaml-cpp into the tree (the slow, complete path). Errors name `source`
/// and the line.
Result<Node> parse_yaml_tree(std::string_view text, std::string_view source);

}  // namespace inject::cdi::detail
