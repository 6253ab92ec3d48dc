// SPDX-License-Identifier: Apache-2.0
#include "device-plugin/hami.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include "device-plugin/hami_trust.hpp"
#include "inject/drs_slices.hpp"
#include "inject/text.hpp"

namespace device_plugin::hami {

using inject::Errc;
using inject::fail;

namespace {

const Json* annotations(const Json& pod) {
    if (!pod.is_object() || !pod.contains("metadata") || !pod["metadata"].is_object())
        return nullptr;
    const auto& m = pod["metadata"];
    if (!m.contains("annotations") || !m["annotations"].is_object()) return nullptr;
    return &m["annotations"];
}

std::string meta(const Json& pod, const char* key) {
    if (!pod.is_object() || !pod.contains("metadata")) return {};
    const auto& m = pod["metadata"];
    return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string();
}

template <class T>
bool parse_number(std::string_view s, T& out) {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && p == s.data() + s.size() && !s.empty();
}

inject::Error bad(const char* key, const std::string& value, const std::string& want) {
    return inject::Error(Errc::InvalidInput,
                         "annotation " + std::string(key) + " '" + value + "': " + want);
}

using inject::text::split;

std::string string_field(const Json& o, const char* key) {
    if (!o.contains(key)) return {};
    if (o[key].is_string()) return o[key].get<std::string>();
    if (o[key].is_number_integer()) return std::to_string(o[key].get<std::int64_t>());
    return {};
}

// required(pod, key): annotation KEY's value, or the error naming it missing.
inject::Result<std::string> required(const Json& pod, const char* key) {
    auto v = annotation(pod, key);
    if (!v) return fail(Errc::InvalidInput, std::string("annotation ") + key + ": missing");
    return std::move(*v);
}

// assigned(pod, d): what every decision HAMi's Enflame backend writes starts with: the pod and
// when HAMi assigned it (kAssignedTime, Unix nanoseconds, the order Allocate serves pods in).
template <class Decision>
inject::Result<void> assigned(const Json& pod, Decision& d) {
    d.ns = meta(pod, "namespace");
    d.name = meta(pod, "name");
    d.uid = meta(pod, "uid");
    INJECT_TRY(const auto time, required(pod, kAssignedTime));
    if (!parse_number(time, d.assigned_time) || d.assigned_time < 0)
        return fail(bad(kAssignedTime, time, "want Unix nanoseconds"));
    return inject::ok();
}

}  // namespace

std::optional<std::string> annotation(const Json& pod, const char* key) {
    const Json* a = annotations(pod);
    if (!a || !a->contains(key) || !(*a)[key].is_string()) return std::nullopt;
    return (*a)[key].get<std::string>();
}

bool finished(const Json& pod) {
    if (!pod.is_object()) return false;
    const Json* st = pod.contains("status") && pod["status"].is_object() ? &pod["status"] : nullptr;
    const bool ended = st && st->contains("phase") && (*st)["phase"].is_string() &&
                       ((*st)["phase"] == "Succeeded" || (*st)["phase"] == "Failed");
    return ended || (pod.contains("metadata") && pod["metadata"].is_object() &&
                     pod["metadata"].contains("deletionTimestamp"));
}

inject::Result<DrsDecision> parse_drs_decision(const Json& pod) {
    DrsDecision d;
    INJECT_TRY_VOID(assigned(pod, d));
    INJECT_TRY(const auto index, required(pod, kAssignedIndex));
    if (!parse_number(index, d.index)) return fail(bad(kAssignedIndex, index, "want a card index"));
    if (const auto minor = annotation(pod, kAssignedMinor)) {
        std::uint32_t m = 0;
        if (!parse_number(*minor, m))
            return fail(bad(kAssignedMinor, *minor, "want a device minor"));
        d.minor = m;
    }
    const auto raw = annotation(pod, kContainers);
    if (!raw)
        return fail(Errc::InvalidInput, std::string("annotation ") + kContainers + ": missing");
    const Json j = Json::parse(*raw, nullptr, false);
    if (!j.is_object() || j.empty())
        return fail(bad(kContainers, raw->substr(0, 80), "want a JSON object of containers"));
    for (const auto& [name, c] : j.items()) {
        DrsContainer dc;
        dc.name = name;
        if (!c.is_object() || !c.contains("request") || !c["request"].is_number_integer() ||
            c["request"].get<std::int64_t>() <= 0 || c["request"].get<std::int64_t>() > 1024)
            return fail(bad(kContainers, raw->substr(0, 80),
                            "container '" + name + "': want a request of 1 or more slices"));
        dc.request = c["request"].get<std::uint32_t>();
        dc.allocated =
            c.contains("allocated") && c["allocated"].is_boolean() && c["allocated"].get<bool>();
        dc.profile_id = string_field(c, "profileID");
        dc.profile_name = string_field(c, "profileName");
        dc.instance_id = string_field(c, "instanceID");
        dc.instance_uuid = string_field(c, "instanceUUID");
        if (dc.profile_id.empty() && dc.profile_name.empty())
            return fail(bad(kContainers, raw->substr(0, 80),
                            "container '" + name + "': no profileID or profileName"));
        d.containers.push_back(std::move(dc));
    }
    return d;
}

Json containers_json(const DrsDecision& d) {
    Json j = Json::object();
    for (const auto& c : d.containers) {
        Json o{{"allocated", c.allocated}, {"request", c.request}};
        if (!c.profile_id.empty()) o["profileID"] = c.profile_id;
        if (!c.profile_name.empty()) o["profileName"] = c.profile_name;
        if (!c.instance_id.empty()) {
            o["kubeletAllocated"] = true;
            o["instanceID"] = c.instance_id;
            o["instanceUUID"] = c.instance_uuid;
        }
        j[c.name] = std::move(o);
    }
    return j;
}

inject::Result<CardDecision> parse_card_decision(const Json& pod, const std::string& node) {
    CardDecision d;
    d.ns = meta(pod, "namespace");
    d.name = meta(pod, "name");
    d.uid = meta(pod, "uid");
    if (const auto t = annotation(pod, kBindTime); t && !parse_number(*t, d.bind_time))
        return fail(bad(kBindTime, *t, "want Unix seconds"));
    const auto raw = annotation(pod, kCardsToAllocate);
    if (!raw)
        return fail(Errc::InvalidInput,
                    std::string("annotation ") + kCardsToAllocate + ": missing");
    auto ctrs = split(*raw, ';');
    if (!ctrs.empty() && ctrs.back().empty()) ctrs.pop_back();  // every container ends in ';'
    const std::string prefix = node + "-GCU-";
    for (const auto& ctr : ctrs) {
        std::vector<std::uint32_t> cards;
        for (const auto& dev : split(ctr, ':')) {
            if (dev.empty()) continue;
            const auto f = split(dev, ',');
            std::uint32_t i = 0;
            if (f.size() < 4 || f[1] != "GCU" || !f[0].starts_with(prefix) ||
                !parse_number(std::string_view(f[0]).substr(prefix.size()), i))
                return fail(bad(kCardsToAllocate, dev, "want " + prefix + "<i>,GCU,<mem>,<cores>"));
            cards.push_back(i);
        }
        d.containers.push_back(std::move(cards));
    }
    return d;
}

std::string encode_cards(const CardDecision& d, const std::string& node) {
    std::string s;
    for (const auto& c : d.containers) {
        for (auto i : c) s += node + "-GCU-" + std::to_string(i) + ",GCU,100,100:";
        s += ';';
    }
    return s;
}

namespace {

template <class D, class Parse, class Fits>
Pick<D> pick(const Json& pods, Parse parse, Fits fits, std::int64_t D::*time) {
    Pick<D> out;
    if (!pods.is_object() || !pods.contains("items") || !pods["items"].is_array()) return out;
    for (const auto& pod : pods["items"]) {
        if (finished(pod)) continue;
        auto d = parse(pod);
        if (!d) {
            if (d.error().code() != Errc::NotFound)
                out.broken.push_back({meta(pod, "namespace"), meta(pod, "name"), meta(pod, "uid"),
                                      d.error().what()});
            continue;
        }
        auto c = fits(*d);
        if (!c) continue;
        if (!out.decision || (*d).*time < (*out.decision).*time) {
            out.decision = std::move(*d);
            out.container = *c;
        }
    }
    return out;
}

}  // namespace

std::uint32_t container_request(const Json& pod, const std::string& ctr,
                                const std::string& resource) {
    if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) return 0;
    for (const char* list : {"initContainers", "containers"}) {
        const auto& spec = pod["spec"];
        if (!spec.contains(list) || !spec[list].is_array()) continue;
        for (const auto& c : spec[list]) {
            if (!c.is_object() || c.value("name", "") != ctr) continue;
            const Json lim = c.contains("resources") && c["resources"].is_object()
                                 ? c["resources"].value("limits", Json::object())
                                 : Json::object();
            std::uint32_t n = 0;
            if (!lim.is_object() || !lim.contains(resource)) return 0;
            // The API server gives quantities as strings; an integer count is all we take.
            const auto v = string_field(lim, resource.c_str());
            return parse_number(v, n) ? n : 0;
        }
    }
    return 0;
}

Pick<DrsDecision> pick_drs(const Json& pods, std::size_t request, const std::string& by) {
    std::map<std::string, Json> spec;  // uid -> pod spec, for the limits of `by`
    if (!by.empty() && pods.is_object() && pods.contains("items") && pods["items"].is_array())
        for (const auto& pod : pods["items"])
            spec[meta(pod, "uid")] = Json{{"spec", pod.value("spec", Json::object())}};
    auto parse = [](const Json& pod) -> inject::Result<DrsDecision> {
        const auto a = annotation(pod, kAssigned);
        // No assigned-containers: HAMi <= 2.9's shared decision (pick_shared), not DRS.
        if (a != "false" || annotation(pod, kError) || !annotation(pod, kContainers))
            return fail(Errc::NotFound, "not waiting");
        return parse_drs_decision(pod);
    };
    auto fits = [&](const DrsDecision& d) -> std::optional<std::size_t> {
        for (std::size_t i = 0; i < d.containers.size(); ++i) {
            const auto& c = d.containers[i];
            if (c.allocated) continue;
            const std::size_t n =
                by.empty() ? c.request : container_request(spec[d.uid], c.name, by);
            if (n == request) return i;
        }
        return std::nullopt;
    };
    return pick<DrsDecision>(pods, parse, fits, &DrsDecision::assigned_time);
}

inject::Result<SharedDecision> parse_shared_decision(const Json& pod, const std::string& resource) {
    SharedDecision d;
    INJECT_TRY_VOID(assigned(pod, d));
    INJECT_TRY(const auto ids, required(pod, kAssignedId));
    for (const auto& id : split(ids, ',')) {
        std::uint32_t i = 0;
        if (!parse_number(id, i)) return fail(bad(kAssignedId, ids, "want card indexes (0,1)"));
        d.cards.push_back(i);
    }
    Json served = Json::array();
    if (const auto raw = annotation(pod, kSharedServed)) {
        served = Json::parse(*raw, nullptr, false);
        if (!served.is_array()) return fail(bad(kSharedServed, *raw, "want a JSON list of names"));
    }
    for (const char* list : {"initContainers", "containers"}) {
        if (!pod.contains("spec") || !pod["spec"].contains(list) || !pod["spec"][list].is_array())
            continue;
        for (const auto& c : pod["spec"][list]) {
            const std::string name = c.is_object() ? c.value("name", "") : "";
            const auto n = container_request(pod, name, resource);
            if (n == 0) continue;
            const bool done = std::find(served.begin(), served.end(), Json(name)) != served.end();
            d.containers.push_back({name, n, done});
        }
    }
    return d;
}

std::string served_json(const SharedDecision& d) {
    Json j = Json::array();
    for (const auto& c : d.containers)
        if (c.served) j.push_back(c.name);
    return j.dump();
}

Pick<SharedDecision> pick_shared(const Json& pods, const std::string& resource,
                                 std::size_t request) {
    auto parse = [&](const Json& pod) -> inject::Result<SharedDecision> {
        if (annotation(pod, kAssigned) != "false" || annotation(pod, kError) ||
            annotation(pod, kContainers))
            return fail(Errc::NotFound, "not waiting");
        return parse_shared_decision(pod, resource);
    };
    auto fits = [&](const SharedDecision& d) -> std::optional<std::size_t> {
        // kubelet admits a pod's containers in order: the first not served is the one it asks
        // for (gcushare: the container whose request equals the IDs kubelet passed).
        for (std::size_t i = 0; i < d.containers.size(); ++i) {
            if (d.containers[i].served) continue;
            if (d.containers[i].request == request) return i;
            return std::nullopt;
        }
        return std::nullopt;
    };
    return pick<SharedDecision>(pods, parse, fits, &SharedDecision::assigned_time);
}

Pick<CardDecision> pick_cards(const Json& pods, const std::string& node, std::size_t request,
                              const std::string& by) {
    std::map<std::string, Json> spec;  // uid -> pod spec, for the limits of `by`
    if (!by.empty() && pods.is_object() && pods.contains("items") && pods["items"].is_array())
        for (const auto& pod : pods["items"])
            spec[meta(pod, "uid")] = Json{{"spec", pod.value("spec", Json::object())}};
    auto parse = [&](const Json& pod) -> inject::Result<CardDecision> {
        if (annotation(pod, kBindPhase) != "allocating" || !annotation(pod, kCardsToAllocate) ||
            annotation(pod, kError))
            return fail(Errc::NotFound, "not waiting");
        return parse_card_decision(pod, node);
    };
    auto fits = [&](const CardDecision& d) -> std::optional<std::size_t> {
        // HAMi's order: the first container not served yet is the one kubelet asks for.
        for (std::size_t i = 0; i < d.containers.size(); ++i) {
            if (d.containers[i].empty()) continue;
            const auto& pod = spec[d.uid];
            const std::size_t n = by.empty() ? d.containers[i].size()
                                             : container_request(pod, container_at(pod, i), by);
            if (n == request) return i;
            return std::nullopt;
        }
        return std::nullopt;
    };
    return pick<CardDecision>(pods, parse, fits, &CardDecision::bind_time);
}

NodeAnnotations node_annotations(const inject::device::Host& host,
                                 const std::vector<OwnInstance>& ours,
                                 std::uint32_t legacy_slices) {
    NodeAnnotations out;
    out.cards = host.devices.size();
    const std::uint32_t slices = inject::drs::card_slices(host.drs_profiles);
    Json devices = Json::array(), shared = Json::object(), profiles = Json::object();
    for (const auto& p : host.drs_profiles) {
        if (inject::drs::profile_slices(p.name).value_or(0) > 0)
            profiles[p.name] = std::to_string(p.id);
    }
    for (const auto& c : host.devices) {
        if (slices == 0) break;
        std::uint32_t taken = 0;
        for (const auto& in : c.drs_instances) {
            const bool own = std::any_of(ours.begin(), ours.end(), [&](const OwnInstance& o) {
                return o.card == c.index && o.instance_id == in.instance_id;
            });
            if (!own) taken += inject::drs::profile_slices(in.profile).value_or(0);
        }
        // HAMi refuses the whole node for a card of capacity 0: a full card is left out.
        if (taken >= slices) continue;
        const std::uint32_t cap = slices - taken;
        devices.push_back({{"index", std::to_string(c.index)},
                           {"minor", std::to_string(c.minor)},
                           {"capacity", cap}});
        shared[std::to_string(c.minor)] = cap;
    }
    if (legacy_slices > 0) {
        shared = Json::object();
        for (const auto& c : host.devices) shared[std::to_string(c.minor)] = legacy_slices;
    }
    out.drs_capacity = Json{{"devices", devices}, {"profiles", profiles}}.dump();
    out.shared_capacity = shared.dump();
    return out;
}

std::string checkpoint_text(const Ledger& l) {
    Json list = Json::array();
    for (const auto& r : l.instances) {
        Json e{{"podUID", r.uid}, {"namespace", r.ns},         {"pod", r.pod},
               {"card", r.card},  {"instance", r.instance_id}, {"uuid", r.uuid}};
        if (!r.profile.empty()) e["profile"] = r.profile;
        list.push_back(std::move(e));
    }
    Json out{{"version", 1}, {"instances", list}};
    if (!l.pending.empty()) out["pending"] = k8s::drs::pending_json(l.pending, "podUID");
    return out.dump(1) + "\n";
}

inject::Result<Ledger> parse_checkpoint(std::string_view text, const std::string& source) {
    const Json j = Json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("version") || j["version"] != 1 || !j.contains("instances") ||
        !j["instances"].is_array())
        return fail(Errc::InvalidInput,
                    source + ": want {\"version\":1,\"instances\":[...]} (JSON)");
    Ledger out;
    for (std::size_t i = 0; i < j["instances"].size(); ++i) {
        const auto& e = j["instances"][i];
        auto u32 = [&](const char* k) {
            return e.is_object() && e.contains(k) && e[k].is_number_unsigned() &&
                   e[k].get<std::uint64_t>() <= UINT32_MAX;
        };
        auto text_of = [&](const char* k) {
            return e.is_object() && e.contains(k) && e[k].is_string() ? e[k].get<std::string>()
                                                                      : std::string();
        };
        if (!u32("card") || !u32("instance") || text_of("podUID").empty())
            return fail(Errc::InvalidInput, source + ": instances[" + std::to_string(i) +
                                                "]: want podUID, card and instance");
        out.instances.push_back({text_of("podUID"), text_of("namespace"), text_of("pod"),
                                 e["card"].get<std::uint32_t>(), e["instance"].get<std::uint32_t>(),
                                 text_of("uuid"), text_of("profile")});
    }
    try {
        out.pending = k8s::drs::pending_from_json(j.value("pending", Json::array()), "podUID");
    } catch (const std::exception& e) {
        return fail(Errc::InvalidInput, source + ": pending: " + e.what());
    }
    return out;
}

bool still_there(const inject::device::Host& host, const Recorded& r) {
    for (const auto& c : host.devices)
        if (c.index == r.card)
            return k8s::drs::seen_in(c.drs_instances, {r.card, r.instance_id, r.profile, r.uuid}) ==
                   k8s::drs::Seen::Ours;
    return false;
}

namespace {

// Per card `per_card(card)` IDs `<minor>-<n>`, the card's other fields as the whole card's.
template <class F>
Resource per_card(const Inventory& cards, const std::string& name, F per_card) {
    Resource r{name, "enflame-" + name.substr(name.find('/') + 1) + ".sock", {}};
    r.inventory.control = cards.control;
    for (const auto& d : cards.devices) {
        const std::uint64_t n = per_card(d);
        for (std::uint64_t i = 0; i < n; ++i) {
            PluginDevice s = d;
            s.id = std::to_string(d.minor) + "-" + std::to_string(i);
            r.inventory.devices.push_back(std::move(s));
        }
    }
    return r;
}

}  // namespace

inject::Result<std::vector<Resource>> make_resources(const inject::device::Host& host,
                                                     IdStrategy strategy, const Names& names) {
    std::vector<Resource> out;
    INJECT_TRY(auto cards, make_inventory(host, strategy, 1));
    if (names.legacy_slices > 0) {
        out.push_back(per_card(cards, names.shared,
                               [&](const auto&) { return std::uint64_t{names.legacy_slices}; }));
    } else {
        const std::uint32_t n = inject::drs::card_slices(host.drs_profiles);
        out.push_back(per_card(cards, names.drs, [&](const auto&) { return std::uint64_t{n}; }));
        // HAMi counts gcu-memory in GB (a request above twice the largest profile's is taken as
        // MiB: not schedulable here, see the README); one ID per GiB keeps kubelet's list small.
        out.push_back(per_card(cards, names.memory, [&](const PluginDevice& d) {
            const auto c = std::find_if(host.devices.begin(), host.devices.end(),
                                        [&](const auto& x) { return x.index == d.index; });
            return c == host.devices.end() ? std::uint64_t{0} : c->memory_bytes >> 30;
        }));
        out.push_back(per_card(cards, names.core, [](const auto&) { return std::uint64_t{100}; }));
    }
    out.insert(out.begin(), Resource{names.cards, names.cards_socket, std::move(cards)});
    return out;
}

}  // namespace device_plugin::hami
