// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The CDI spec's rules, as the reference library (container-device-interface) checks them:
/// kind = "<vendor>/<class>" with the reference's character rules, device names, known
/// cdiVersion values and the minimum version a spec's features need, unique device names,
/// env entries "K=V", hook names, absolute paths, device node types and cgroup permissions.
///
/// Versions: we know 0.1.0 .. 0.8.0 and never emit a version higher than needed. The podman
/// we test against (Debian 12: podman 4.3.1, which vendors an older container-device-interface)
/// accepts cdiVersion 0.1.0 to 0.5.0 and skips specs with 0.6.0 or later (measured, see
/// schemas/README.md), so what we generate needs at most 0.5.0.

#include <string>
#include <string_view>
#include <vector>

#include "inject/cdi.hpp"
#include "inject/result.hpp"

namespace inject::cdi {

/// One rule a spec breaks.
struct Problem {
    /// Where: "<source>", "<source>: device '0'", "<source>: device '0': deviceNodes[1]",
    /// "<source>: containerEdits: hooks[0]".
    std::string where;
    /// What, lowercase, quoting the value: "env entry 'FOO' has no '='".
    std::string message;
    /// "<where>: <message>"
    [[nodiscard]] std::string text() const { return where + ": " + message; }
    bool operator==(const Problem&) const = default;
};

/// Every problem of the spec (empty = valid). `source` is the file name used in `where`.
[[nodiscard]] std::vector<Problem> validate(const Spec& spec, std::string_view source);

/// The cdiVersion values we know, oldest first ("0.3.0", ..., "0.8.0").
[[nodiscard]] const std::vector<std::string>& known_versions();

/// The lowest cdiVersion that expresses `spec` (the reference's MinimumRequiredVersion):
/// 0.3.0 by default; 0.5.0 for a hostPath or a device name starting with a digit;
/// 0.6.0 for annotations (spec or device) or a device-level intelChannel-like extension;
/// 0.7.0 for additionalGids or an IntelRdt/NetDevices edit (we model additionalGids only).
[[nodiscard]] std::string minimum_version(const Spec& spec);

/// Compares two "x.y.z" versions: <0, 0, >0. Unparsable parts compare as 0.
[[nodiscard]] int compare_versions(std::string_view a, std::string_view b);

/// A fully qualified device name, "vendor/class=name".
struct QualifiedName {
    std::string vendor;  ///< "enflame.com"
    std::string cls;     ///< "gpu"
    std::string name;    ///< "0", "TR6Y46010302", "all"
    /// "vendor/class"
    [[nodiscard]] std::string kind() const { return vendor + "/" + cls; }
    /// "vendor/class=name"
    [[nodiscard]] std::string str() const { return vendor + "/" + cls + "=" + name; }
    bool operator==(const QualifiedName&) const = default;
};

/// Parses and checks "vendor/class=name". InvalidInput quotes the input and the rule:
/// "bad CDI device name 'enflame.com=0': want vendor/class=name".
[[nodiscard]] Result<QualifiedName> parse_qualified_name(std::string_view text);

/// True when `text` looks like a qualified name (has '/' before '='), without checking rules.
[[nodiscard]] bool is_qualified_name(std::string_view text) noexcept;

/// The single-field rules, exposed for callers that build names (empty string = valid,
/// else the reason): vendor ("enflame.com"), class ("gpu"), device name ("0", "0:1g.11gb:0").
[[nodiscard]] std::string check_vendor(std::string_view vendor);
[[nodiscard]] std::string check_class(std::string_view cls);
[[nodiscard]] std::string check_device_name(std::string_view name);

}  // namespace inject::cdi
