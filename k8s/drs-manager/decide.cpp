// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/decide.hpp"

#include "drs-manager/layout.hpp"

namespace drs_manager {

std::string wanted_layout(std::string_view label, std::string_view default_layout) {
    return std::string(label.empty() ? default_layout : label);
}

Decision decide(const std::string& name, const std::optional<std::string>& layouts_text,
                const std::string& source, const inject::device::Host& host,
                const HeldOnNode& held) {
    using O = Decision::Outcome;
    if (!layouts_text)
        return {O::Failed, source + ": missing (no layouts to pick '" + name + "' from)", {}};
    auto layouts = parse_layouts(*layouts_text, source);
    if (!layouts) return {O::Failed, layouts.error().what(), {}};
    auto layout = find_layout(*layouts, name);
    if (!layout) return {O::Failed, layout.error().what(), {}};
    auto targets = resolve_layout(**layout, host);
    if (!targets) return {O::Failed, targets.error().what(), {}};

    Decision d{O::Apply, {}, plan_layout(*targets, host, held.instances)};
    // A card given whole to a container is not repartitioned under it.
    for (auto& card : d.plan.cards)
        if (const auto w = held.whole_cards.find(card.card); w != held.whole_cards.end())
            card.holds.push_back({"card " + std::to_string(card.card), w->second});
    if (d.plan.empty()) return {O::Done, {}, {}};
    if (!d.plan.blocked()) return d;
    d.outcome = O::Blocked;
    d.reason = "layout '" + name + "': waiting for";
    bool first = true;
    for (const auto& card : d.plan.cards)
        for (const auto& h : card.holds) {
            d.reason += std::string(first ? " " : ", ") + h.instance + " (held by";
            for (const auto& who : h.holders) d.reason += " " + who;
            d.reason += ")";
            first = false;
        }
    return d;
}

}  // namespace drs_manager
