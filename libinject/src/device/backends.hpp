// SPDX-License-Identifier: Apache-2.0
#pragma once
// The discovery backends and the node confirmation they share. Internal to libinject/src/device.

#include <string>
#include <string_view>
#include <vector>

#include "inject/discover.hpp"
#include "inject/fs.hpp"

namespace inject::discover::detail {

/// What one backend reported, before nodes are confirmed.
struct Report {
    std::vector<RawCard> cards;
    std::string driver_version;  ///< empty when the backend does not say
};

/// efsmi as found under driver-root: opened (O_PATH) with its path resolved inside the root,
/// and run through that fd, so what was checked is what runs; `path` is its host path, for
/// messages and argv[0].
struct Efsmi {
    fs::UniqueFd fd;
    std::string path;
};

/// The first of Options::efsmi_paths that resolves inside driver-root. NotFound lists what was
/// tried.
[[nodiscard]] Result<Efsmi> find_efsmi(const Options& opts);

/// Runs efsmi (no shell, env exactly PATH and LC_ALL=C, the configured timeout) and returns its
/// stdout. A timeout, a signal or a non-zero exit is an error with a one-line reason;
/// `exit_hint` is appended to the non-zero exit reason.
[[nodiscard]] Result<std::string> run_efsmi(const Options& opts, const Efsmi& efsmi,
                                            const std::vector<std::string>& args,
                                            std::string_view exit_hint = {});

/// `efsmi -q --json-format` (json) or `efsmi -q`, parsed.
[[nodiscard]] Result<Report> query_efsmi(const Options& opts, bool json);

/// dlopen of libefml under driver-root.
[[nodiscard]] Result<Report> query_efml(const Options& opts);

/// Confirms every card's node against sysfs and dev-root and builds the Host.
[[nodiscard]] Result<device::Host> confirm(const Options& opts, Report report);

/// Adds DRS profiles and instances from efsmi (every card at once, else card by card); a
/// failure only drops DRS, of one card where it can (debug log).
void add_drs(const Options& opts, device::Host& host);
/// An efsmi that is absent, hangs or crashes: it will do the same for any other query.
[[nodiscard]] bool efsmi_unusable(const Error& e);

}  // namespace inject::discover::detail
