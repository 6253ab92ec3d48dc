// SPDX-License-Identifier: Apache-2.0
#pragma once

// What one collection saw: the cards the driver answered for, each with its identity (from
// discovery), its readings (from libefml) and the containers that hold it (from kubelet's
// pod-resources API). Plain data: the collector fills it in, metrics.cpp turns it into text.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inject/device.hpp"
#include "inject/efml.hpp"

namespace exporter {

/// A container holding a card (pod-resources v1).
struct Holder {
    std::string pod, ns, container;
    auto operator<=>(const Holder&) const = default;
};

/// How a card is named in labels and addressed by kubelet's device IDs.
struct CardIdentity {
    std::uint32_t index = 0;             ///< the driver's index (libefml, efsmi's DEV ID)
    std::optional<std::uint32_t> minor;  ///< /dev/gcu<minor>; unknown without discovery
    std::string uuid, busid, name;
    std::string slot;  ///< the kernel's PCI slot name (/sys/bus/pci/slots); empty if none
    /// The DRS instances on this card (discovery's); the device plugin advertises each by its
    /// drs_address: "DRS-<uuid>", or "<card>:<profile>:<instance>" when efsmi gives no UUID.
    std::vector<inject::device::DrsInstance> drs;
};

/// One card in one collection.
struct CardReading {
    CardIdentity id;
    inject::efml::Sample sample;
    std::vector<Holder> holders;  ///< sorted, no duplicates; empty = nobody (or no kubelet)
};

/// One collection.
struct Snapshot {
    std::string host;            ///< the `host` label
    std::string driver_version;  ///< for enflame_gcu_info; empty when unknown
    std::vector<CardReading> cards;
};

}  // namespace exporter
