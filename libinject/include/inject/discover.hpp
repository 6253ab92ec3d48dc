// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Discovery of the Enflame cards of a host, with its three-level fallback:
/// `efsmi -q --json-format`, then `efsmi -q` text, then dlopen of libefml. Each backend is
/// also usable on its own. Every lookup happens under driver-root / dev-root.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "inject/device.hpp"
#include "inject/multiarch.hpp"
#include "inject/result.hpp"

namespace inject::config {
struct Config;
}

namespace inject::discover {

enum class Backend { Auto, EfsmiJson, EfsmiText, Efml };

/// "auto", "efsmi-json", "efsmi-text", "libefml".
[[nodiscard]] std::string_view backend_name(Backend b) noexcept;
/// Parses a backend name (as above); InvalidInput names the value.
[[nodiscard]] Result<Backend> parse_backend(std::string_view name);

/// Where and how to look.
struct Options {
    std::string driver_root = "/";
    std::string dev_root = "/";
    std::string device_prefix = "gcu";
    Backend backend = Backend::Auto;
    /// efsmi locations tried in order (under driver-root).
    std::vector<std::string> efsmi_paths{"/usr/bin/efsmi", "/usr/sbin/efsmi",
                                         "/usr/local/bin/efsmi"};
    /// Folders (under driver-root) searched for libefml.so / libefml.so.1.
    std::vector<std::string> library_search_paths{"/usr/lib", "/usr/lib64", kMultiarchLibDir,
                                                  "/usr/local/lib"};
    std::chrono::milliseconds efsmi_timeout{5000};
    /// Also ask efsmi for DRS profiles and instances (`efsmi --drs --list-profile`, then
    /// `--list-instance` when there are profiles; card by card with `-i <card>` when the
    /// every-card answer fails).
    bool with_drs = true;
};

/// Options from the configuration's [enflame-container-cli] section.
[[nodiscard]] Options options_from(const config::Config& cfg);

/// A card as a backend reports it, before device nodes are confirmed on the host.
/// Fields a backend does not know stay empty / default.
struct RawCard {
    std::uint32_t index = 0;
    std::optional<std::uint32_t> minor;  ///< libefml knows it; efsmi does not (sysfs does)
    std::string uuid, serial, product, pci_bus_id, pci_device_id, driver_version;
    std::uint64_t memory_bytes = 0;
    std::int32_t numa_node = -1;
    std::optional<bool> healthy;
};

/// Parses `efsmi -q` text. `source` names the input in errors:
/// "efsmi -q: line 12: bad value 'x' for 'Total Size'". Banner-only output is zero cards;
/// output cut short (no final newline, a block ending in a bare section name) is an error.
[[nodiscard]] Result<std::vector<RawCard>> parse_efsmi_text(std::string_view text,
                                                            std::string_view source = "efsmi -q");
/// Parses `efsmi -q --json-format` (docs/efsmi-model.md; tolerant of numbers vs strings; a bare
/// number for a memory size is MiB, the unit efsmi prints). Syntax errors name the byte offset.
[[nodiscard]] Result<std::vector<RawCard>> parse_efsmi_json(
    std::string_view text, std::string_view source = "efsmi -q --json-format");
/// Parses `efsmi [-i <card>] --drs --list-profile`: the rows are the lines holding a profile
/// name (`\b\d+g\.\d+gb\b`), `card-index profile-name profile-id instance-count memory sip`;
/// headers, borders (`|`, `+---+`) and spacing are ignored. With `card`, a row of another card
/// is an error. Cards of one product offer the same profiles: each distinct one is listed once.
[[nodiscard]] Result<std::vector<device::DrsProfile>> parse_efsmi_drs_profiles(
    std::string_view text, std::optional<std::uint32_t> card = std::nullopt);
/// Parses `efsmi [-i <card>] --drs --list-instance`, rows found as above, in either layout:
/// `card-index profile-name profile-id instance-id placement` or the older
/// `card-index profile-name instance-id uuid`.
[[nodiscard]] Result<std::vector<device::DrsInstance>> parse_efsmi_drs_instances(
    std::string_view text, std::optional<std::uint32_t> card = std::nullopt);

/// Runs one backend only (no fallback).
[[nodiscard]] Result<device::Host> discover_with(const Options& opts, Backend backend);

/// Runs the backends in fallback order (or the one `opts.backend` names) and confirms device
/// nodes against dev-root and sysfs. `Host::fallbacks` says why earlier backends did not answer.
[[nodiscard]] Result<device::Host> discover(const Options& opts);

/// A memory size string as efsmi prints it ("42976 MiB", "16 GiB", "1024 KB") in bytes. Units
/// are binary whatever their spelling (KB = KiB); a unit is required.
[[nodiscard]] Result<std::uint64_t> parse_memory(std::string_view text);

}  // namespace inject::discover
