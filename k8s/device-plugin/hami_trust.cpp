// SPDX-License-Identifier: Apache-2.0
#include "device-plugin/hami_trust.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <limits>
#include <set>

#include "inject/drs_slices.hpp"

namespace device_plugin::hami {

namespace {

// HAMi's, the API server's and our clocks may differ this much (seconds).
constexpr std::int64_t kSkew = 5;
// An untrusted time: after every trusted one.
const std::string kLast = std::to_string(std::numeric_limits<std::int64_t>::max());

std::string str(const Json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>()
                                                                  : std::string();
}

const Json& field(const Json& o, const char* key) {
    static const Json none;
    return o.is_object() && o.contains(key) ? o[key] : none;
}

Broken who(const Json& pod, std::string why) {
    const auto& m = field(pod, "metadata");
    return {str(m, "namespace"), str(m, "name"), str(m, "uid"), std::move(why)};
}

bool number(const std::string& s, std::int64_t& out) {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc{} && p == s.data() + s.size();
}

// metadata.creationTimestamp in Unix seconds (-1: none or not RFC 3339 UTC).
std::int64_t created(const Json& pod) {
    const auto t = str(field(pod, "metadata"), "creationTimestamp");
    std::tm tm{};
    char z = 0;
    if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z) != 7 ||
        z != 'Z')
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return static_cast<std::int64_t>(::timegm(&tm));
}

// The kubelet has admitted it (status.startTime): Allocate is not for it any more.
bool admitted(const Json& pod) {
    return !str(field(pod, "status"), "startTime").empty();
}

bool looks_waiting(const Json& pod) {
    return annotation(pod, kBindPhase) == "allocating" || annotation(pod, kAssigned) == "false";
}

std::string slices_of(std::size_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// <m> of a profile named <g>g.<m>gb (0 otherwise).
std::uint32_t profile_gb(const std::string& name) {
    const auto g = name.find("g.");
    if (inject::drs::profile_slices(name).value_or(0) == 0 || g == std::string::npos) return 0;
    const auto m = std::string_view(name).substr(g + 2, name.size() - g - 4);
    std::uint32_t n = 0;
    const auto [p, ec] = std::from_chars(m.data(), m.data() + m.size(), n);
    return ec == std::errc{} && p == m.data() + m.size() ? n : 0;
}

}  // namespace

std::string not_placed_by(const Json& pod, const std::string& scheduler) {
    const auto& spec = field(pod, "spec");
    std::string name = str(spec, "schedulerName");
    if (name.empty()) name = "default-scheduler";  // the API server's default
    if (name != scheduler)
        return "spec.schedulerName '" + name + "' is not HAMi's scheduler '" + scheduler + "'";
    const auto& mf = field(field(pod, "metadata"), "managedFields");
    for (const auto& e : mf.is_array() ? mf : Json::array()) {
        if (!str(e, "subresource").empty()) continue;
        if (field(field(field(e, "fieldsV1"), "f:spec"), "f:nodeName").is_null()) continue;
        return "spec.nodeName was written by '" + str(e, "manager") +
               "' (managedFields), not by a binding";
    }
    const auto& conds = field(field(pod, "status"), "conditions");
    const bool scheduled =
        conds.is_array() && std::any_of(conds.begin(), conds.end(), [](const Json& c) {
            return str(c, "type") == "PodScheduled" && str(c, "status") == "True";
        });
    if (!scheduled) return "no PodScheduled condition: spec.nodeName was not set by a binding";
    return {};
}

Screened screen(const Json& pods, const std::string& scheduler, std::int64_t now_s) {
    Screened out{Json{{"items", Json::array()}}, {}};
    const auto& items = field(pods, "items");
    for (const auto& pod : items.is_array() ? items : Json::array()) {
        if (!pod.is_object() || finished(pod) || admitted(pod)) continue;
        if (auto why = not_placed_by(pod, scheduler); !why.empty()) {
            if (looks_waiting(pod)) out.skipped.push_back(who(pod, std::move(why)));
            continue;
        }
        Json p = pod;
        const std::int64_t from = created(pod);
        auto trusted = [&](std::int64_t t_s) {
            return from >= 0 && t_s + kSkew >= from && t_s <= now_s + kSkew;
        };
        std::int64_t t = 0;
        if (annotation(pod, kCardsToAllocate) &&
            !(number(annotation(pod, kBindTime).value_or(""), t) && trusted(t)))
            p["metadata"]["annotations"][kBindTime] = kLast;
        if (annotation(pod, kAssignedTime) &&
            !(number(annotation(pod, kAssignedTime).value_or(""), t) && trusted(t / 1000000000)))
            p["metadata"]["annotations"][kAssignedTime] = kLast;
        out.pods["items"].push_back(std::move(p));
    }
    return out;
}

std::string container_at(const Json& pod, std::size_t i) {
    for (const char* list : {"initContainers", "containers"}) {
        const auto& l = field(field(pod, "spec"), list);
        if (!l.is_array()) continue;
        if (i < l.size()) return str(l[i], "name");
        i -= l.size();
    }
    return {};
}

std::string check_cards(const Json& pod, const CardDecision& d, std::size_t i,
                        const std::string& resource) {
    const auto name = container_at(pod, i);
    if (i >= d.containers.size() || name.empty())
        return "HAMi's decision names container #" + std::to_string(i + 1) +
               ", which the pod does not have";
    const auto& cards = d.containers[i];
    const auto limit = container_request(pod, name, resource);
    const std::string ctr = "container '" + name + "': ";
    if (cards.size() > limit)
        return ctr + "HAMi's decision gives " + slices_of(cards.size(), "card") +
               ", its limits ask " + std::to_string(limit) + " " + resource;
    if (std::set<std::uint32_t>(cards.begin(), cards.end()).size() != cards.size())
        return ctr + "HAMi's decision names a card twice";
    return {};
}

std::string check_shared(const SharedDecision& d, std::size_t i, std::uint32_t per_card) {
    const auto& c = d.containers.at(i);
    const std::uint32_t need = (c.request + per_card - 1) / std::max<std::uint32_t>(per_card, 1);
    if (std::set<std::uint32_t>(d.cards.begin(), d.cards.end()).size() != d.cards.size())
        return "container '" + c.name + "': HAMi's decision names a card twice";
    if (d.cards.size() > need)
        return "container '" + c.name + "': HAMi's decision gives " +
               slices_of(d.cards.size(), "card") + ", its " + slices_of(c.request, "slice") + " (" +
               std::to_string(per_card) + " a card) need " + slices_of(need, "card");
    return {};
}

std::string check_drs(const Json& pod, const DrsContainer& c, const std::string& profile,
                      const std::vector<inject::device::DrsProfile>& profiles, const Names& names) {
    const std::string ctr = "container '" + c.name + "': ";
    const std::uint32_t slices = inject::drs::profile_slices(profile).value_or(0);
    if (slices == 0) return ctr + "DRS profile '" + profile + "' is not <g>g.<m>gb";
    if (c.request != slices)
        return ctr + "assigned-containers asks " + slices_of(c.request, "slice") +
               ", DRS profile '" + profile + "' has " + std::to_string(slices);
    const auto drs = container_request(pod, c.name, names.drs);
    if (drs > 0) {
        if (drs != slices)
            return ctr + "its limits ask " + std::to_string(drs) + " " + names.drs +
                   ", HAMi's DRS profile '" + profile + "' has " + slices_of(slices, "slice");
        return {};
    }
    std::uint32_t mem = container_request(pod, c.name, names.memory);
    const auto core = container_request(pod, c.name, names.core);
    if (mem == 0 && core == 0)
        return ctr + "its limits ask none of " + names.drs + ", " + names.memory + ", " +
               names.core;
    // HAMi's choice: the smallest profile giving the memory (GB; above twice the largest
    // profile's it is MiB) and the cores (percent of the card's slices).
    const std::uint32_t total = inject::drs::card_slices(profiles);
    std::uint32_t max_gb = 0, best = 0;
    for (const auto& p : profiles) max_gb = std::max(max_gb, profile_gb(p.name));
    if (mem > 2 * max_gb) mem = (mem + 1023) / 1024;
    for (const auto& p : profiles) {
        const auto g = inject::drs::profile_slices(p.name).value_or(0);
        if (g == 0 || total == 0) continue;
        const bool fits = profile_gb(p.name) >= mem && (g * 100 + total - 1) / total >= core;
        if (fits && (best == 0 || g < best)) best = g;
    }
    if (best != slices)
        return ctr + "its limits ask " + std::to_string(mem) + " GB and " + std::to_string(core) +
               "% of a card: " +
               (best == 0 ? std::string("no profile fits")
                          : "the smallest profile that fits has " + slices_of(best, "slice")) +
               ", HAMi's DRS profile '" + profile + "' has " + std::to_string(slices);
    return {};
}

}  // namespace device_plugin::hami
