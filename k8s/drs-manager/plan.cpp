// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/plan.hpp"

#include <algorithm>
#include <optional>

#include "drs-manager/fit.hpp"

namespace drs_manager {
namespace {

using inject::device::Device;
using inject::device::DrsInstance;
using inject::device::DrsProfile;
using inject::device::Host;

/// The card's instances split into those kept and those destroyed.
struct Split {
    std::vector<DrsInstance> keep, destroy;
};

/// Keeps, of each profile, as many as wanted: held ones first, then the lowest ids.
Split fewest_destroys(const Device& card, const ProfileCounts& want, const Holders& holders) {
    auto order = card.drs_instances;
    std::sort(order.begin(), order.end(), [&](const DrsInstance& a, const DrsInstance& b) {
        const bool ha = holders.contains(inject::device::drs_name(a));
        const bool hb = holders.contains(inject::device::drs_name(b));
        return ha != hb ? ha : a.instance_id < b.instance_id;
    });
    Split out;
    std::map<std::string, std::uint32_t> kept;
    for (auto& in : order) {
        const auto w = want.find(in.profile);
        if (w != want.end() && kept[in.profile] < w->second) {
            ++kept[in.profile];
            out.keep.push_back(std::move(in));
        } else {
            out.destroy.push_back(std::move(in));
        }
    }
    return out;
}

/// Moves the kept instances `drop` says to the destroyed ones.
template <typename Pred>
Split also_destroy(Split s, Pred drop) {
    const auto mid = std::stable_partition(s.keep.begin(), s.keep.end(),
                                           [&](const auto& in) { return !drop(in); });
    s.destroy.insert(s.destroy.end(), mid, s.keep.end());
    s.keep.erase(mid, s.keep.end());
    return s;
}

/// The instances to create besides `keep`, in creation order.
std::vector<DrsProfile> creates_for(const ProfileCounts& want, const std::vector<DrsInstance>& keep,
                                    const Host& host, const CardSlices& slices) {
    std::vector<DrsProfile> out;
    for (const auto& [name, n] : want) {
        const auto p = std::find_if(host.drs_profiles.begin(), host.drs_profiles.end(),
                                    [&](const DrsProfile& q) { return q.name == name; });
        if (p == host.drs_profiles.end()) continue;  // resolve_layout refused it
        const auto have = static_cast<std::uint32_t>(std::count_if(
            keep.begin(), keep.end(), [&](const DrsInstance& in) { return in.profile == name; }));
        if (have < n) out.insert(out.end(), n - have, *p);
    }
    sort_for_creation(out, slices);
    return out;
}

/// Whether the creates fit around `keep`; true when efsmi printed no placement to check.
bool room_for(const std::vector<DrsInstance>& keep, const std::vector<DrsProfile>& creates,
              const CardSlices& slices) {
    std::vector<inject::drs::SliceRun> taken;
    for (const auto& in : keep) {
        const auto run = inject::drs::parse_placement(in.placement);
        if (!run) return true;
        taken.push_back(*run);
    }
    return fits(slices, std::move(taken), creates);
}

CardPlan plan_card(const Device& card, const ProfileCounts& want, const Host& host,
                   const Holders& holders, const CardSlices& slices) {
    auto held = [&](const DrsInstance& in) {
        return holders.contains(inject::device::drs_name(in));
    };
    // The fewest calls; else move the unheld kept ones too; else rebuild the whole card.
    Split s = fewest_destroys(card, want, holders);
    auto creates = creates_for(want, s.keep, host, slices);
    if (!room_for(s.keep, creates, slices)) {
        s = also_destroy(std::move(s), [&](const DrsInstance& in) { return !held(in); });
        creates = creates_for(want, s.keep, host, slices);
        if (!room_for(s.keep, creates, slices)) {
            s = also_destroy(std::move(s), [](const DrsInstance&) { return true; });
            creates = creates_for(want, s.keep, host, slices);
        }
    }
    std::sort(s.destroy.begin(), s.destroy.end(), [](const DrsInstance& a, const DrsInstance& b) {
        return a.instance_id < b.instance_id;
    });
    CardPlan out{card.index, std::move(s.destroy), std::move(creates), {}};
    for (const auto& in : out.destroy)
        if (const auto h = holders.find(inject::device::drs_name(in)); h != holders.end())
            out.holds.push_back({h->first, h->second});
    return out;
}

}  // namespace

bool Plan::blocked() const {
    return std::any_of(cards.begin(), cards.end(), [](const CardPlan& c) { return c.blocked(); });
}

std::size_t Plan::operations() const {
    std::size_t n = 0;
    for (const auto& c : cards) n += c.destroy.size() + c.create.size();
    return n;
}

Plan plan_layout(const std::vector<CardTarget>& targets, const Host& host, const Holders& holders) {
    const CardSlices slices = card_slices_of(host.drs_profiles);
    Plan out;
    for (const auto& t : targets) {
        const auto card = std::find_if(host.devices.begin(), host.devices.end(),
                                       [&](const Device& d) { return d.index == t.card; });
        if (card == host.devices.end()) continue;  // resolve_layout only names the host's cards
        auto cp = plan_card(*card, t.profiles, host, holders, slices);
        if (!cp.destroy.empty() || !cp.create.empty()) out.cards.push_back(std::move(cp));
    }
    std::sort(out.cards.begin(), out.cards.end(),
              [](const auto& a, const auto& b) { return a.card < b.card; });
    return out;
}

std::string describe(const CardPlan& plan) {
    std::string out = "card " + std::to_string(plan.card) + ":";
    if (!plan.destroy.empty()) {
        out += " destroy";
        for (const auto& in : plan.destroy) out += " " + inject::device::drs_name(in);
    }
    if (!plan.create.empty()) {
        out += std::string(plan.destroy.empty() ? "" : ";") + " create";
        for (std::size_t i = 0; i < plan.create.size();) {
            std::size_t j = i;
            while (j < plan.create.size() && plan.create[j].name == plan.create[i].name) ++j;
            out += " " + plan.create[i].name + " x" + std::to_string(j - i);
            i = j;
        }
    }
    for (std::size_t i = 0; i < plan.holds.size(); ++i) {
        out += i == 0 ? "; waiting for " : ", ";
        out += plan.holds[i].instance + " (held by";
        for (const auto& h : plan.holds[i].holders) out += " " + h;
        out += ")";
    }
    return out;
}

}  // namespace drs_manager
