// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/holders.hpp"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "inject/fs.hpp"
#include "k8s/drs_ledger.hpp"

namespace drs_manager {
namespace {

using inject::Errc;
using inject::fail;
using Json = nlohmann::json;

constexpr std::size_t kMaxFile = 64 << 20;

std::optional<std::uint32_t> number(std::string_view s) {
    std::uint32_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

// A DRA device name as the plugin's checkpoint records it: "gcu-<n>" (the whole card) or
// "gcu-<n>-drs-<id>" (an instance that was there before the claim); placements
// ("gcu-<n>-1g-11gb-0") are held through their createdInstance. Anything else: none.
std::optional<Held> dra_device(std::string_view device, const std::string& holder) {
    if (!device.starts_with("gcu-")) return std::nullopt;
    device.remove_prefix(4);
    const auto dash = device.find('-');
    const auto card = number(device.substr(0, dash));
    if (!card) return std::nullopt;
    if (dash == std::string_view::npos) return Held{*card, std::nullopt, {}, {}, holder};
    const auto rest = device.substr(dash + 1);
    if (!rest.starts_with("drs-")) return std::nullopt;
    if (const auto id = number(rest.substr(4))) return Held{*card, *id, {}, {}, holder};
    return std::nullopt;
}

// The pending creates that already have a made id: the instance is its owner's.
void add_pending(std::vector<Held>& out, const Json& j, const char* owner_key, const char* kind) {
    for (const auto& p : k8s::drs::pending_from_json(j.value("pending", Json::array()), owner_key))
        if (p.made)
            out.push_back({p.card, *p.made, p.profile, p.made_uuid,
                           std::string(kind) + " " + p.owner + " (being made)"});
}

Json parse_object(std::string_view text, const std::string& source) {
    Json j = Json::parse(text, nullptr, false);
    if (!j.is_object() || j.value("version", 0) != 1)
        throw std::invalid_argument(source + ": want a JSON object with \"version\": 1");
    return j;
}

}  // namespace

inject::Result<std::vector<Held>> parse_dra_holders(std::string_view text,
                                                    const std::string& source) {
    try {
        const Json j = parse_object(text, source);
        std::vector<Held> out;
        for (const auto& [uid, c] : j.at("claims").items()) {
            const auto holder = "claim " + c.at("namespace").get<std::string>() + "/" +
                                c.at("name").get<std::string>();
            for (const auto& d : c.at("devices")) {
                if (const auto in = d.find("createdInstance"); in != d.end()) {
                    out.push_back({in->at("card").get<std::uint32_t>(),
                                   in->at("id").get<std::uint32_t>(), in->value("profile", ""),
                                   in->value("uuid", ""), holder});
                } else if (auto h = dra_device(d.at("device").get<std::string>(), holder)) {
                    out.push_back(std::move(*h));
                }
            }
        }
        add_pending(out, j, "claim", "claim");
        return out;
    } catch (const std::exception& e) {
        const std::string what = e.what();
        return fail(Errc::InvalidInput,
                    what.starts_with(source) ? what : source + ": claims: " + what);
    }
}

inject::Result<std::vector<Held>> parse_hami_holders(std::string_view text,
                                                     const std::string& source) {
    try {
        const Json j = parse_object(text, source);
        std::vector<Held> out;
        for (const auto& e : j.at("instances"))
            out.push_back({e.at("card").get<std::uint32_t>(), e.at("instance").get<std::uint32_t>(),
                           e.value("profile", ""), e.value("uuid", ""),
                           "pod " + e.value("namespace", "") + "/" + e.value("pod", "")});
        add_pending(out, j, "podUID", "pod");
        return out;
    } catch (const std::exception& e) {
        const std::string what = e.what();
        return fail(Errc::InvalidInput,
                    what.starts_with(source) ? what : source + ": instances: " + what);
    }
}

inject::Result<std::vector<Held>> read_holder_files(const std::vector<std::string>& paths) {
    std::vector<Held> out;
    for (const auto& path : paths) {
        auto text = inject::fs::read_file(path, kMaxFile);
        if (!text && text.error().code() == Errc::NotFound) continue;
        if (!text)
            return fail(std::move(text).error().context("holders checkpoint '" + path + "'"));
        const auto source = "holders checkpoint '" + path + "'";
        const Json j = Json::parse(*text, nullptr, false);
        auto held = j.is_object() && j.contains("claims") ? parse_dra_holders(*text, source)
                                                          : parse_hami_holders(*text, source);
        if (!held) return fail(std::move(held).error());
        out.insert(out.end(), held->begin(), held->end());
    }
    return out;
}

std::vector<Held> pod_resource_holders(const v1::ListPodResourcesResponse& r,
                                       const inject::device::Host& host) {
    std::vector<Held> out;
    auto add = [&](Held h) {
        if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(std::move(h));
    };
    for (const auto& pod : r.pod_resources()) {
        const std::string holder = "pod " + pod.namespace_() + "/" + pod.name();
        for (const auto& c : pod.containers())
            for (const auto& dev : c.devices()) {
                if (!dev.resource_name().starts_with("enflame.com/")) continue;
                for (const auto& full : dev.device_ids()) {
                    const std::string id = full.substr(0, full.find("::"));
                    if (id.empty()) continue;
                    for (const auto& card : host.devices) {
                        if ((!card.uuid.empty() && id == card.uuid) ||
                            id == std::to_string(card.index))
                            add({card.index, std::nullopt, "", "", holder});
                        for (const auto& in : card.drs_instances)
                            if (id == inject::device::drs_address(in))
                                add({card.index, in.instance_id, in.profile, in.uuid, holder});
                    }
                }
            }
    }
    return out;
}

HeldOnNode held_on(const inject::device::Host& host, const std::vector<Held>& held) {
    HeldOnNode out;
    for (const auto& h : held) {
        const auto card = std::find_if(host.devices.begin(), host.devices.end(),
                                       [&](const auto& d) { return d.index == h.card; });
        if (card == host.devices.end()) continue;
        if (!h.id) {
            out.whole_cards[h.card].push_back(h.holder);
            continue;
        }
        const k8s::drs::Made rec{h.card, *h.id, h.profile, h.uuid};
        if (k8s::drs::seen_in(card->drs_instances, rec) != k8s::drs::Seen::Ours) continue;
        for (const auto& in : card->drs_instances)
            if (in.instance_id == *h.id)
                out.instances[inject::device::drs_name(in)].push_back(h.holder);
    }
    return out;
}

}  // namespace drs_manager
