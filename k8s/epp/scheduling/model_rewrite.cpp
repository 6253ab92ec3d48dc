// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/model_rewrite.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace epp {
namespace {

using inject::Errc;
using nlohmann::json;

// The checks of one rules list; `fail` keeps the first problem.
struct RuleReader {
    std::string problem;

    bool fail(const std::string& key, const std::string& why) {
        if (problem.empty()) problem = key + ": " + why;
        return false;
    }
    // Every key of object `j` is one of `known`.
    bool only(const json& j, const std::string& key, const std::set<std::string>& known) {
        if (!j.is_object()) return fail(key, "want a map");
        for (const auto& [k, v] : j.items())
            if (!known.count(k)) return fail(key + "." + k, "unknown key");
        return true;
    }
    bool name(const json& j, const std::string& key, std::string& out) {
        if (!j.is_string() || j.get_ref<const std::string&>().empty())
            return fail(key, "want a model name");
        out = j.get<std::string>();
        return true;
    }
    bool match(const json& m, const std::string& key, RewriteRule& rule) {
        if (!only(m, key, {"model"})) return false;
        if (!m.contains("model")) return fail(key + ".model", "missing");
        const json& model = m["model"];
        if (!only(model, key + ".model", {"type", "value"})) return false;
        if (const auto t = model.find("type");
            t != model.end() && !t->is_null() && *t != json("Exact"))
            return fail(key + ".model.type", "want Exact, got " + t->dump());
        if (!model.contains("value")) return fail(key + ".model.value", "missing");
        return name(model["value"], key + ".model.value", rule.models.emplace_back());
    }
    bool target(const json& t, const std::string& key, RewriteRule& rule) {
        if (!only(t, key, {"modelRewrite", "weight"})) return false;
        RewriteTarget& out = rule.targets.emplace_back();
        if (!t.contains("modelRewrite")) return fail(key + ".modelRewrite", "missing");
        if (!name(t["modelRewrite"], key + ".modelRewrite", out.model)) return false;
        const json w = t.value("weight", json());
        if (w.is_null()) return true;
        if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > kMaxRewriteWeight)
            return fail(key + ".weight", "want an integer from 1 to " +
                                             std::to_string(kMaxRewriteWeight) + ", got " +
                                             w.dump());
        out.weight = w.get<int>();
        return true;
    }
    bool rule(const json& r, const std::string& key, RewriteRule& out) {
        if (!only(r, key, {"matches", "targets"})) return false;
        const json matches = r.value("matches", json());
        if (!matches.is_null() && !matches.is_array())
            return fail(key + ".matches", "want a list of {model: {type, value}}");
        for (std::size_t i = 0; i < matches.size() && matches.is_array(); ++i)
            if (!match(matches[i], key + ".matches[" + std::to_string(i) + "]", out)) return false;
        const json targets = r.value("targets", json());
        if (!targets.is_array() || targets.empty())
            return fail(key + ".targets", "want at least one {modelRewrite, weight}");
        for (std::size_t i = 0; i < targets.size(); ++i)
            if (!target(targets[i], key + ".targets[" + std::to_string(i) + "]", out)) return false;
        return true;
    }
};

}  // namespace

inject::Result<std::vector<RewriteRule>> parse_rewrite_rules(const json& rules,
                                                             const std::string& key) {
    if (!rules.is_array() || rules.empty())
        return inject::fail(Errc::InvalidInput, key + ": want a list of rules");
    RuleReader rd;
    std::vector<RewriteRule> out(rules.size());
    for (std::size_t i = 0; i < rules.size(); ++i)
        if (!rd.rule(rules[i], key + "[" + std::to_string(i) + "]", out[i]))
            return inject::fail(Errc::InvalidInput, rd.problem);
    return out;
}

bool older(const ModelRewrite& a, const ModelRewrite& b) {
    return std::tie(a.created, a.name) < std::tie(b.created, b.name);
}

RewriteTable::RewriteTable(std::vector<ModelRewrite> cluster, const std::vector<ModelRewrite>& file)
    : order_(std::move(cluster)) {
    std::sort(order_.begin(), order_.end(), older);
    std::set<std::string> objects;
    for (const auto& r : order_) objects.insert(r.name);
    for (const auto& r : file)
        if (!objects.count(r.name)) order_.push_back(r);
}

std::optional<RewriteMatch> RewriteTable::match(std::string_view model) const {
    for (const auto& rw : order_)
        for (const auto& rule : rw.rules)
            if (std::find(rule.models.begin(), rule.models.end(), model) != rule.models.end())
                return RewriteMatch{&rw, &rule};
    for (const auto& rw : order_)
        for (const auto& rule : rw.rules)
            if (rule.models.empty()) return RewriteMatch{&rw, &rule};
    return std::nullopt;
}

const std::string& pick_target(const RewriteRule& rule, std::mt19937_64& rng) {
    uint64_t total = 0;
    for (const auto& t : rule.targets) total += static_cast<uint64_t>(t.weight);
    if (total == 0) {
        std::uniform_int_distribution<std::size_t> any(0, rule.targets.size() - 1);
        return rule.targets[any(rng)].model;
    }
    uint64_t draw = std::uniform_int_distribution<uint64_t>(0, total - 1)(rng);
    for (const auto& t : rule.targets) {
        const auto w = static_cast<uint64_t>(t.weight);
        if (draw < w) return t.model;
        draw -= w;
    }
    return rule.targets.back().model;  // not reached: the draw is below the sum
}

std::string describe(const std::vector<ModelRewrite>& rewrites) {
    std::string out;
    for (const auto& rw : rewrites) {
        out += (out.empty() ? "" : ", ") + rw.name + " (";
        for (std::size_t i = 0; i < rw.rules.size(); ++i) {
            const auto& rule = rw.rules[i];
            std::string models;
            for (const auto& m : rule.models) models += (models.empty() ? "" : "|") + m;
            out += (i ? "; " : "") + (models.empty() ? "*" : models) + " ->";
            for (std::size_t j = 0; j < rule.targets.size(); ++j) {
                const auto& t = rule.targets[j];
                out += (j ? ", " : " ") + t.model;
                if (t.weight) out += " " + std::to_string(t.weight);
            }
        }
        out += ")";
    }
    return out.empty() ? "none" : out;
}

}  // namespace epp
