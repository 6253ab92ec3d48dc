// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What a generated CDI spec was generated from (driver version, and each card's index, UUID,
/// bus id and major:minor), so that a spec gone stale after a driver upgrade or a card swap is
/// cheap to notice: by `enflame-ctk doctor` and by the runtime shim in auto mode.
///
/// The record is a YAML comment line at the top of the spec, `# enflame.com/generated-from:
/// driver=1.4.3.4 card=0/TR6Y46010000/0000:10:00.0/238:0 card=1/...`, not a CDI `annotations`
/// entry: annotations need cdiVersion 0.6.0, and podman 4.3.1 (Debian 12) skips every spec above
/// 0.5.0 (schemas/README.md). A JSON spec has no room for a comment and carries no record; its
/// checks fall back to comparing the spec's own content.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/cdi.hpp"
#include "inject/device.hpp"
#include "inject/result.hpp"

namespace inject::cdi {

/// The key of the comment line.
inline constexpr std::string_view kGeneratedFromKey = "enflame.com/generated-from";

/// One card as it was when the spec was generated.
struct GeneratedCard {
    std::uint32_t index = 0;
    std::string uuid;
    std::string pci_bus_id;
    std::uint32_t major = 0;
    std::uint32_t minor = 0;
    bool operator==(const GeneratedCard&) const = default;
};

/// The whole record.
struct GeneratedFrom {
    std::string driver_version;
    std::vector<GeneratedCard> cards;  ///< by index
    bool operator==(const GeneratedFrom&) const = default;
};

/// The record of a discovered host.
[[nodiscard]] GeneratedFrom generated_from(const device::Host& host);

/// The comment line (with its newline) that records `g` at the top of a YAML spec; empty when a
/// field holds a blank or '/' (the record could not be read back).
[[nodiscard]] std::string generated_from_comment(const GeneratedFrom& g);

/// The record in the leading comment lines of a spec's text; nullopt when there is none.
/// InvalidInput when the line is there but does not parse ("<source>: enflame.com/generated-from:
/// ...").
[[nodiscard]] Result<std::optional<GeneratedFrom>> read_generated_from(std::string_view text,
                                                                       std::string_view source);

/// Where the cheap checks look.
struct HostPaths {
    std::string driver_root = "/";
    std::string dev_root = "/";
    std::string device_prefix = "gcu";
};

/// Why the host no longer matches the record, cheaply (no efsmi, no libefml: one small read of
/// sys/module/enflame/version and a stat or two per card): the driver version changed, a card's
/// sysfs entry is gone or has other numbers, its node under dev-root is gone or differs.
/// nullopt = matches. `cards` limits the card checks to those indices (nullopt = every card,
/// empty = none: the driver version only).
[[nodiscard]] std::optional<std::string> stale_reason(
    const GeneratedFrom& g, const HostPaths& paths,
    const std::optional<std::vector<std::uint32_t>>& cards = std::nullopt);

/// Why a set of resolved edits no longer fits the host: a device node whose host path is gone
/// or has other major:minor than the edit says, a mounted host file that is gone. nullopt = fits.
[[nodiscard]] std::optional<std::string> stale_edits(const ContainerEdits& edits);

}  // namespace inject::cdi
