// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// `enflame-ctk health CHECK`: one GCU health check per call, for Node Problem Detector's
/// custom-plugin monitor. Each check answers OK, Problem or Unknown (NPD's exit codes 0, 1, 2)
/// with one line under 80 bytes naming the card (NPD keeps only the first 80 bytes of stdout
/// for the condition's message). The checks read sysfs, the device nodes and libefml in
/// process; none runs efsmi. The ones that compare with an earlier run (ecc, devices) keep
/// their last values in Options::state_dir.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "inject/config.hpp"
#include "inject/result.hpp"

namespace inject::health {

/// NPD's custom-plugin exit codes (pkg/custompluginmonitor/types: OK=0, NonOK=1, Unknown=2).
enum class Code { Ok = 0, Problem = 1, Unknown = 2 };

/// What a check found: the code and the line for NPD's condition message.
struct Verdict {
    Code code = Code::Ok;
    std::string line;
};

/// What the checks need; the library reads no environment and picks no file itself.
struct Options {
    config::Config cfg;                        ///< driver-root, dev-root, device prefix, spec dirs
    std::string state_dir;                     ///< where ecc and devices keep their last values
    std::vector<std::string> driver_versions;  ///< the versions known good; empty = any
    double max_temperature_c = 85.0;           ///< temperature: a card above this is a problem
    bool link_speed = true;                    ///< pcie: compare the speed too (not only the width)
    std::chrono::seconds ecc_hold{3600};       ///< ecc: stays a problem this long after a rise
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

/// The checks, in the order `--help` lists them: driver, devices, health, ecc, temperature,
/// pcie, cdi.
[[nodiscard]] const std::vector<std::string_view>& check_names();

/// Runs one check. InvalidInput when `name` is not one of check_names(); a host the check
/// cannot read gives Code::Unknown with the reason, not an error.
[[nodiscard]] Result<Verdict> run(std::string_view name, const Options& opts);

/// `s` cut to at most `max` bytes (with "..." when cut, never inside a UTF-8 sequence), its
/// first line only.
[[nodiscard]] std::string fit_line(std::string_view s, std::size_t max = 79);

}  // namespace inject::health
