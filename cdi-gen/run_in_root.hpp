// SPDX-License-Identifier: Apache-2.0
#pragma once

// Running a program of the node's root as the node would, for `enflame-ctk toolkit`.

#include "inject/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace ctk {

struct RunResult {
    int status = -1;
    std::string output;  ///< stdout and stderr together
};

/// Runs argv[0] (a host path) chrooted into the root (no chroot when it is "/"), with a
/// plain PATH and a 60 s bound. The output is what the program printed.
inject::Result<RunResult> run_in_root(const std::string& root, const std::vector<std::string>& argv);

/// The last non-empty line of a program's output, for a one-line error.
std::string last_line(std::string_view out);

}  // namespace ctk
