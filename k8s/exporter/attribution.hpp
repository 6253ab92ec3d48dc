// SPDX-License-Identifier: Apache-2.0
#pragma once

// Which containers hold which card, from kubelet's pod-resources API (v1 List;
// docs/kubelet-wire.md, pod attribution). Two ways a container gets a card:
//   - the device plugin: resources of the enflame.com domain (enflame.com/gcu, a renamed
//     time-slicing resource, enflame.com/drs-<profile>) whose device IDs are what our plugin
//     advertises (k8s/device-plugin/plugin.cpp): the card's UUID or index, either with a
//     replica suffix "::N", or a DRS instance's drs_address ("DRS-<instance uuid>", or
//     "<card>:<profile>:<instance id>" when efsmi gives the instance no UUID);
//   - DRA: claim resources of the driver gcu.enflame.com whose device is "gcu-<index>" (a card)
//     or "gcu-<index>-<suffix>" (a DRS slice of card <index>).
// Anything else (other vendors' resources and drivers, IDs of cards we do not see) is ignored.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/snapshot.hpp"
#include "inject/result.hpp"
#include "k8s/pod_resources.hpp"
#include "k8s/proto/podresources_v1.pb.h"

namespace exporter {

inline constexpr std::string_view kResourceDomain = "enflame.com";
inline constexpr std::string_view kDraDriver = "gcu.enflame.com";

/// The card a device-plugin ID names, among `cards`, or nullopt.
[[nodiscard]] std::optional<std::uint32_t> card_of_device_id(
    std::string_view id, const std::vector<CardIdentity>& cards);

/// The card index a DRA device name ("gcu-3", "gcu-3-1g.11gb-0") names, or nullopt.
[[nodiscard]] std::optional<std::uint32_t> card_of_dra_device(std::string_view device_name);

/// Holders of each card (by index): sorted, without duplicates (a container with two replicas
/// of one card holds it once). Cards nobody holds are absent.
[[nodiscard]] std::map<std::uint32_t, std::vector<Holder>> attribute(
    const v1::ListPodResourcesResponse& r, const std::vector<CardIdentity>& cards);

}  // namespace exporter
