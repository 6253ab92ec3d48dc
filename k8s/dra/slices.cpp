// SPDX-License-Identifier: Apache-2.0
#include "dra/slices.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>

#include "inject/drs_slices.hpp"

namespace dra {

using inject::device::Device;
using inject::device::DrsProfile;
using inject::device::Host;

namespace {

Json str_attr(const std::string& v) {
    return {{"string", v}};
}
Json int_attr(std::int64_t v) {
    return {{"int", v}};
}
Json quantity(std::uint64_t v) {
    return {{"value", canonical_quantity(v)}};
}

/// One card's share of the pool: its counter set (counter modes) and its devices (flat, v1 shape).
struct CardGroup {     // NOLINT(bugprone-exception-escape): copying JSON may throw bad_alloc, as
                       // anything
    Json counter_set;  ///< null when none
    std::vector<Json> devices;
};

/// The attributes every device of `card` carries (a whole card or one of its partitions).
Json card_attributes(const Device& card, const Host& host, const std::string& type) {
    Json a = Json::object();
    a["type"] = str_attr(type);
    a["model"] = str_attr(card.product);
    if (!card.architecture.empty()) a["architecture"] = str_attr(card.architecture);
    const std::string v =
        semver_of(card.driver_version.empty() ? host.driver_version : card.driver_version);
    if (!v.empty()) a["driverVersion"] = {{"version", v}};
    a["minor"] = int_attr(card.minor);
    if (!card.pci_bus_id.empty()) a["resource.kubernetes.io/pciBusID"] = str_attr(card.pci_bus_id);
    return a;
}

Json whole_card(const Device& card, const Host& host) {
    Json a = card_attributes(card, host, "gcu");
    a["uuid"] = str_attr(card.uuid);
    a["index"] = int_attr(card.index);
    return {{"name", "gcu-" + std::to_string(card.index)},
            {"attributes", std::move(a)},
            {"capacity", {{"memory", quantity(card.memory_bytes)}}}};
}

Json consumes(const std::string& set, std::uint64_t memory, std::uint64_t slices) {
    return Json::array(
        {{{"counterSet", set},
          {"counters", {{"memory", quantity(memory)}, {"slices", quantity(slices)}}}}});
}

/// Existing DRS instances as plain devices (DrsMode::Instances).
std::vector<Json> instance_devices(const Device& card, const Host& host) {
    std::vector<Json> out;
    for (const auto& inst : card.drs_instances) {
        Json a = card_attributes(card, host, "drs");
        a["uuid"] = str_attr(inst.uuid);
        a["parentIndex"] = int_attr(card.index);
        a["instanceId"] = int_attr(inst.instance_id);
        a["profile"] = str_attr(inst.profile);
        Json d = {{"name", "gcu-" + std::to_string(card.index) + "-drs-" +
                               std::to_string(inst.instance_id)},
                  {"attributes", std::move(a)}};
        const auto p = std::find_if(host.drs_profiles.begin(), host.drs_profiles.end(),
                                    [&](const DrsProfile& x) { return x.name == inst.profile; });
        if (p != host.drs_profiles.end()) d["capacity"] = {{"memory", quantity(p->memory_bytes)}};
        out.push_back(std::move(d));
    }
    return out;
}

/// A card with its counter set, the whole card consuming all of it, and every profile placement
/// consuming its share (DrsMode::Counters*).
CardGroup partitionable(const Device& card, const Host& host) {
    CardGroup g;
    const std::uint64_t total = inject::drs::card_slices(host.drs_profiles);
    Json whole = whole_card(card, host);
    if (total == 0) {  // no profile we can place: a plain card
        g.devices.push_back(std::move(whole));
        return g;
    }
    const std::string set = "gcu-" + std::to_string(card.index) + "-counters";
    g.counter_set = {
        {"name", set},
        {"counters", {{"memory", quantity(card.memory_bytes)}, {"slices", quantity(total)}}}};
    whole["consumesCounters"] = consumes(set, card.memory_bytes, total);
    g.devices.push_back(std::move(whole));
    for (const auto& p : host.drs_profiles) {
        const auto n = inject::drs::profile_slices(p.name);
        if (!n || *n >= total) continue;  // unknown share, or the whole card under another name
        for (std::uint32_t k = 0; k < p.max_instances; ++k) {
            Json a = card_attributes(card, host, "drs");
            a["parentIndex"] = int_attr(card.index);
            a["profile"] = str_attr(p.name);
            g.devices.push_back({{"name", placement_name(card.index, p.name, k)},
                                 {"attributes", std::move(a)},
                                 {"capacity", {{"memory", quantity(p.memory_bytes)}}},
                                 {"consumesCounters", consumes(set, p.memory_bytes, *n)}});
        }
    }
    return g;
}

std::vector<CardGroup> card_groups(const Host& host, DrsMode mode) {
    std::vector<CardGroup> groups;
    for (const auto& card : host.devices) {
        if (card.healthy.has_value() && !*card.healthy) continue;
        if (mode == DrsMode::Counters || mode == DrsMode::CountersOwnSlice) {
            groups.push_back(partitionable(card, host));
        } else if (!card.drs_instances.empty()) {
            groups.push_back({nullptr, instance_devices(card, host)});
        } else {
            groups.push_back({nullptr, {whole_card(card, host)}});
        }
    }
    return groups;
}

/// v1 keeps device fields flat; v1beta1 puts everything but the name under `basic`.
Json shaped(Json d, const std::string& version) {
    if (version == "v1") return d;
    Json name = d["name"];
    d.erase("name");
    return {{"name", std::move(name)}, {"basic", std::move(d)}};
}

/// One slice's content before naming and numbering.
struct SliceBody {
    std::vector<Json> counter_sets;
    std::vector<Json> devices;
};

/// Cards packed into slices. In DrsMode::Counters a card's counter set and its devices never
/// split (1.33/1.34 resolve counters within one slice); in CountersOwnSlice the counter sets go
/// first in slices of their own and devices fill the rest, like plain devices do.
std::vector<SliceBody> pack(std::vector<CardGroup> groups, const SliceOptions& o) {
    const bool counters = o.drs == DrsMode::Counters || o.drs == DrsMode::CountersOwnSlice;
    const std::size_t max_dev =
        counters ? std::min(o.max_devices, kMaxDevicesPerSliceWithCounters) : o.max_devices;
    std::vector<SliceBody> out;
    if (o.drs != DrsMode::Counters) {
        std::vector<CardGroup> single;
        for (auto& g : groups) {
            if (!g.counter_set.is_null()) {
                if (out.empty() || out.back().counter_sets.size() >= kMaxCounterSetsPerSlice)
                    out.emplace_back();
                out.back().counter_sets.push_back(std::move(g.counter_set));
            }
            for (auto& d : g.devices) single.push_back({nullptr, {std::move(d)}});
        }
        groups = std::move(single);
    }
    out.emplace_back();
    for (auto& g : groups) {
        const SliceBody& cur = out.back();
        const bool used = !cur.devices.empty() || !cur.counter_sets.empty();
        const bool full =
            cur.devices.size() + g.devices.size() > max_dev ||
            (!g.counter_set.is_null() && cur.counter_sets.size() >= kMaxCounterSetsPerSlice);
        if (full && used) out.emplace_back();
        if (!g.counter_set.is_null()) out.back().counter_sets.push_back(std::move(g.counter_set));
        for (auto& d : g.devices) out.back().devices.push_back(std::move(d));
    }
    return out;
}

}  // namespace

DrsMode drs_mode_for_minor(int minor) {
    // KEP-4815: alpha in 1.33 (counters beside their devices), reshaped in 1.35 (own slices).
    if (minor < 33) return DrsMode::Instances;
    return minor < 35 ? DrsMode::Counters : DrsMode::CountersOwnSlice;
}

std::string canonical_quantity(std::uint64_t v) {
    static constexpr std::array<const char*, 7> kSuffix{"", "k", "M", "G", "T", "P", "E"};
    std::size_t e = 0;
    while (v != 0 && v % 1000 == 0 && e + 1 < kSuffix.size()) {
        v /= 1000;
        ++e;
    }
    return std::to_string(v) + kSuffix[e];
}

std::string semver_of(const std::string& driver_version) {
    static const std::regex re(R"(^v?(\d{1,9})(?:\.(\d{1,9}))?(?:\.(\d{1,9}))?(?:\.(\d{1,9}))?)");
    std::smatch m;
    if (!std::regex_search(driver_version, m, re)) return {};
    auto num = [&](std::size_t i) {
        return m[i].matched ? std::to_string(std::stoull(m[i].str())) : std::string("0");
    };
    std::string v = num(1) + "." + num(2) + "." + num(3);
    if (m[4].matched) v += "+" + num(4);
    return v;
}

std::string placement_name(std::uint32_t index, const std::string& profile, std::uint32_t k) {
    std::string p;
    for (const char c : profile) {
        const auto u = static_cast<unsigned char>(c);
        p += std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '-';
    }
    return "gcu-" + std::to_string(index) + "-" + p + "-" + std::to_string(k);
}

Json build_slices(const Host& host, const SliceOptions& o) {
    const std::vector<SliceBody> bodies = pack(card_groups(host, o.drs), o);
    Json slices = Json::array();
    for (std::size_t k = 0; k < bodies.size(); ++k) {
        // No empty `devices`: the server omits empty lists, and we compare with its copy.
        Json spec = {{"driver", o.driver},
                     {"nodeName", o.node_name},
                     {"pool",
                      {{"name", o.node_name},
                       {"generation", o.generation},
                       {"resourceSliceCount", bodies.size()}}}};
        for (const auto& d : bodies[k].devices) spec["devices"].push_back(shaped(d, o.api_version));
        if (!bodies[k].counter_sets.empty()) spec["sharedCounters"] = bodies[k].counter_sets;
        Json meta = {{"name", o.node_name + "-" + o.driver + "-" + std::to_string(k)}};
        if (!o.node_uid.empty())
            meta["ownerReferences"] = Json::array({{{"apiVersion", "v1"},
                                                    {"kind", "Node"},
                                                    {"name", o.node_name},
                                                    {"uid", o.node_uid},
                                                    {"controller", true}}});
        slices.push_back({{"apiVersion", "resource.k8s.io/" + o.api_version},
                          {"kind", "ResourceSlice"},
                          {"metadata", std::move(meta)},
                          {"spec", std::move(spec)}});
    }
    return slices;
}

}  // namespace dra
