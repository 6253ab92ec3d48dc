// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Model rewrites (canary / A-B model routing), upstream's InferenceModelRewrite
/// (inference.networking.x-k8s.io/v1alpha2): rules that send a request for one model to
/// weighted target models. They come from the pool's objects (pool/pool_watch.cpp) and from the
/// config file's `modelRewrites`; the scheduler picks a target for each request before anything
/// else (docs/epp-scheduling.md, "Model rewrites").
///
///     RewriteTable t(cluster_objects, config_file_entries);
///     if (auto m = t.match(request.model)) target = pick_target(*m->rule, rng);

#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "inject/result.hpp"

namespace epp {

/// The highest weight a target may have (the CRD's maximum).
inline constexpr int kMaxRewriteWeight = 1000000;

/// A weighted target: targets[].{modelRewrite, weight}.
struct RewriteTarget {
    std::string model;  ///< modelRewrite
    int weight = 0;     ///< 1..kMaxRewriteWeight; 0: left out (none given: an even split)
    bool operator==(const RewriteTarget&) const = default;
};

/// One rule: rules[].{matches, targets}.
struct RewriteRule {
    /// matches[].model.value (type Exact); empty: the rule matches every model.
    std::vector<std::string> models;
    std::vector<RewriteTarget> targets;  ///< at least one
    bool operator==(const RewriteRule&) const = default;
};

/// One InferenceModelRewrite, or one entry of the config file's modelRewrites.
struct ModelRewrite {
    std::string name;
    /// metadata.creationTimestamp (RFC 3339, UTC: sorts as text); empty in the config file.
    std::string created;
    std::vector<RewriteRule> rules;
    bool operator==(const ModelRewrite&) const = default;
};

/// The objects' order of precedence: the older first (creationTimestamp), then by name.
[[nodiscard]] bool older(const ModelRewrite& a, const ModelRewrite& b);

/// Parses a rules list (the CRD's spec.rules, in JSON). InvalidInput "<key>[i]...: <reason>"
/// for a list that is not one (or is empty), an unknown key, a match type other than Exact, an
/// empty model name, a rule without targets, or a weight outside 1..kMaxRewriteWeight.
[[nodiscard]] inject::Result<std::vector<RewriteRule>> parse_rewrite_rules(
    const nlohmann::json& rules, const std::string& key);

/// The rule that applies to a model, and the rewrite it belongs to.
struct RewriteMatch {
    const ModelRewrite* rewrite = nullptr;
    const RewriteRule* rule = nullptr;
};

/// The rewrites in force, in precedence order: the cluster's objects (oldest first, by
/// creationTimestamp, then name), then the config file's entries (in file order) that no object
/// of the same name replaces.
class RewriteTable {
public:
    RewriteTable() = default;
    RewriteTable(std::vector<ModelRewrite> cluster, const std::vector<ModelRewrite>& file);

    /// The rule for `model`: the first rule, in precedence order, with an Exact match on it;
    /// else the first rule that matches every model; nullopt: none (the model is left as is).
    [[nodiscard]] std::optional<RewriteMatch> match(std::string_view model) const;
    [[nodiscard]] bool empty() const { return order_.empty(); }
    [[nodiscard]] const std::vector<ModelRewrite>& rewrites() const { return order_; }

private:
    std::vector<ModelRewrite> order_;
};

/// A target of `rule` drawn by weight (the chance of each is its weight over their sum, so a
/// target without a weight beside weighted ones is never drawn, as upstream's); an even draw
/// when no target has a weight.
[[nodiscard]] const std::string& pick_target(const RewriteRule& rule, std::mt19937_64& rng);

/// The rewrites on one line for the log: "canary (llama -> llama-v1 90, llama-v2 10; * -> x)".
[[nodiscard]] std::string describe(const std::vector<ModelRewrite>& rewrites);

}  // namespace epp
