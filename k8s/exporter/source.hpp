// SPDX-License-Identifier: Apache-2.0
#pragma once

// Where the collector gets its cards: the seam between the exporter and the driver. The real
// source (efml_source.cpp) asks libefml for readings and discovery for names; unit tests feed
// their own samples.

#include "inject/device.hpp"
#include "inject/efml.hpp"
#include "inject/result.hpp"

#include <cstdint>
#include <memory>

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
};

/// libefml (opened under driver-root, reopened after the driver went away) and discovery with
/// `opts`.
[[nodiscard]] std::unique_ptr<Source> make_efml_source(const inject::discover::Options& opts);

}  // namespace exporter
