// SPDX-License-Identifier: Apache-2.0
#pragma once

// What enflame-feature-discovery writes, as pure functions (docs/kubelet-wire.md, node labels):
// the node labels from what discovery found, the label-value rules, and NFD's features.d file text
// with its optional expiry line and its 64 KiB bound. No I/O here; daemon.cpp does the writing.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inject/device.hpp"
#include "inject/result.hpp"

namespace feature_discovery {

/// The prefix of every label we write.
inline constexpr std::string_view kPrefix = "enflame.com/gpu.";
/// The largest file NFD's local source reads; we refuse to write a larger one.
inline constexpr std::size_t kMaxFileBytes = 64 * 1024;
/// The longest label value Kubernetes accepts.
inline constexpr std::size_t kMaxValueChars = 63;

/// Labels in the order they are written: full name ("enflame.com/gpu.count") and value.
using Labels = std::vector<std::pair<std::string, std::string>>;

/// What the labels say about sharing (the device plugin's config, k8s/sharing.hpp).
struct SharingInfo {
    std::string strategy = "none";  ///< "none" or "time-slicing"; "" = unknown (no such config):
                                    ///< the sharing-strategy and replicas labels are left out
    std::uint32_t replicas = 1;
};

/// A value as Kubernetes accepts it: every character outside [A-Za-z0-9._-] becomes '-', then
/// at most 63 characters, then leading and trailing characters that are not alphanumeric are
/// dropped (a value must start and end with one). May return "" (the label is then left out).
[[nodiscard]] std::string sanitise(std::string_view value);

/// A driver version split as the labels carry it: "1.4.3.4" -> major "1", minor "4",
/// revision "3.4" (everything after the second dot). Missing parts stay empty.
struct DriverVersion {
    std::string full, major, minor, revision;
};
[[nodiscard]] DriverVersion split_driver_version(std::string_view version);

/// The labels for a host. `drs_layout`: the DRS layout enflame-drs-manager reports in force
/// (its state file says success), "" for none: drs.config is then left out. With no cards:
/// present=false and count=0 only. With cards of several models, model, memory, family and arch
/// describe the first card (lowest index), as NVIDIA's GFD labels the first GPU; count counts them
/// all. Values that sanitise to "" are left out.
[[nodiscard]] Labels make_labels(const inject::device::Host& host, const SharingInfo& sharing,
                                 std::string_view drs_layout = {});

/// The distinct products of a host's cards, in index order ("S60", "T10").
[[nodiscard]] std::vector<std::string> models(const inject::device::Host& host);

/// `t` as RFC 3339 in UTC to the second: "2026-12-01T12:43:02Z".
[[nodiscard]] std::string rfc3339(std::chrono::system_clock::time_point t);

/// The features.d file: `# +expiry-time=<RFC3339>` first when `expiry` is set, then one
/// `name=value` line per label. InvalidInput when the text would exceed kMaxFileBytes (the
/// message says how large it would be).
[[nodiscard]] inject::Result<std::string> render(
    const Labels& labels, std::optional<std::chrono::system_clock::time_point> expiry);

}  // namespace feature_discovery
