// SPDX-License-Identifier: Apache-2.0
#pragma once

// Where the collector gets its cards: the seam between the exporter and the driver. The real
// source (efml_source.cpp) asks libefml for readings and discovery for names; unit tests feed
// their own samples.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "inject/device.hpp"
#include "inject/efml.hpp"
#include "inject/result.hpp"

namespace inject::discover {
struct Options;
}

namespace exporter {

class Source {
public:
    virtual ~Source() = default;
    /// How many cards the driver reports now; an error when it cannot be asked (no library,
    /// the driver is gone).
    [[nodiscard]] virtual inject::Result<std::uint32_t> count() = 0;
    /// Card `index`'s readings; an error when that card cannot be asked.
    [[nodiscard]] virtual inject::Result<inject::efml::Sample> sample(std::uint32_t index) = 0;
    /// The cards' identities (minor, UUID, bus id, product, DRS instances).
    [[nodiscard]] virtual inject::Result<inject::device::Host> discover() = 0;
    /// The host's named PCI slots: "<domain>:<bus>:<device>" (a bus id without its function)
    /// -> the slot's name, from /sys/bus/pci/slots/<name>/address under driver-root. Empty
    /// when the host names none (common on virtual machines).
    [[nodiscard]] virtual std::map<std::string, std::string> pci_slots() { return {}; }
};

/// libefml (opened under driver-root, reopened after the driver went away) and discovery with
/// `opts`.
[[nodiscard]] std::unique_ptr<Source> make_efml_source(const inject::discover::Options& opts);

}  // namespace exporter
