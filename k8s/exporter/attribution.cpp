// SPDX-License-Identifier: Apache-2.0
#include "exporter/attribution.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "k8s/proto/podresources_v1.grpc.pb.h"
#include "k8s/socket.hpp"

namespace exporter {
namespace {

std::optional<std::uint32_t> number(std::string_view s) {
    std::uint32_t n = 0;
    if (s.empty()) return std::nullopt;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return n;
}

bool our_resource(std::string_view resource) {
    return resource.size() > kResourceDomain.size() && resource.starts_with(kResourceDomain) &&
           resource[kResourceDomain.size()] == '/';
}

}  // namespace

std::optional<std::uint32_t> card_of_device_id(std::string_view id,
                                               const std::vector<CardIdentity>& cards) {
    // A DRS instance: "DRS-<uuid>", or "<card>:<profile>:<instance>" without a UUID.
    for (const auto& c : cards) {
        for (const auto& in : c.drs) {
            if (inject::device::drs_address(in) == id) return c.index;
        }
    }
    if (id.starts_with("DRS-")) return std::nullopt;
    // Time-slicing replicas are "<id>::<n>".
    if (const auto sep = id.rfind("::");
        sep != std::string_view::npos && number(id.substr(sep + 2)))
        id = id.substr(0, sep);
    for (const auto& c : cards) {
        if (!c.uuid.empty() && c.uuid == id) return c.index;
    }
    if (const auto n = number(id)) {
        for (const auto& c : cards) {
            if (c.index == *n) return c.index;
        }
    }
    return std::nullopt;
}

std::optional<std::uint32_t> card_of_dra_device(std::string_view name) {
    if (!name.starts_with("gcu-")) return std::nullopt;
    name.remove_prefix(4);
    return number(name.substr(0, name.find('-')));
}

std::map<std::uint32_t, std::vector<Holder>> attribute(const v1::ListPodResourcesResponse& r,
                                                       const std::vector<CardIdentity>& cards) {
    std::map<std::uint32_t, std::vector<Holder>> out;
    auto hold = [&](std::optional<std::uint32_t> index, const Holder& h) {
        if (!index) return;
        if (std::none_of(cards.begin(), cards.end(),
                         [&](const CardIdentity& c) { return c.index == *index; }))
            return;
        auto& v = out[*index];
        if (std::find(v.begin(), v.end(), h) == v.end()) v.push_back(h);
    };
    for (const auto& pod : r.pod_resources()) {
        for (const auto& c : pod.containers()) {
            const Holder h{pod.name(), pod.namespace_(), c.name()};
            for (const auto& d : c.devices()) {
                if (!our_resource(d.resource_name())) continue;
                for (const auto& id : d.device_ids()) hold(card_of_device_id(id, cards), h);
            }
            for (const auto& dr : c.dynamic_resources()) {
                for (const auto& cr : dr.claim_resources()) {
                    if (cr.driver_name() == kDraDriver)
                        hold(card_of_dra_device(cr.device_name()), h);
                }
            }
        }
    }
    for (auto& [index, v] : out) std::sort(v.begin(), v.end());
    return out;
}

}  // namespace exporter
