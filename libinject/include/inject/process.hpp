// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Running a helper program (efsmi) safely: fork+execve of an absolute path (or of an fd opened
/// when it was found), no shell, an explicit environment, a timeout, and a bound on the output.

#include "inject/result.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace inject::process {

/// What to run.
struct Command {
    std::string path;                ///< absolute path of the executable
    std::vector<std::string> argv;   ///< argv[0] included
    std::vector<std::string> env;    ///< the whole environment ("K=V"); nothing is inherited
    std::chrono::milliseconds timeout{5000};
    std::size_t max_output = 4 << 20;  ///< stdout beyond this is an error (InvalidInput)
    /// When >= 0: an fd (O_PATH is enough) of the executable to run, found once and run as
    /// found (execveat AT_EMPTY_PATH), so a path swapped after the lookup cannot redirect the
    /// exec. `path` then only names it in messages. The caller keeps ownership.
    int exec_fd = -1;
};

/// How it ended.
struct Output {
    int exit_code = -1;     ///< exit status, or -1 when killed by a signal
    int term_signal = 0;    ///< the signal that ended it, or 0
    std::string out;        ///< stdout
    std::string err;        ///< the first 4 KiB of stderr
};

/// Runs the command to completion. Errors: NotFound (no such executable), Io (spawn failed),
/// InvalidInput (output too large), Io with ETIMEDOUT (killed after the timeout).
/// A non-zero exit is not an error here: the caller reads exit_code.
[[nodiscard]] Result<Output> run(const Command& cmd);

}  // namespace inject::process
