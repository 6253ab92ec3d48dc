// SPDX-License-Identifier: Apache-2.0
#pragma once
// The halves of a child process that process::run and sandbox::run share: the child's report of
// the step that failed before its exec (through a close-on-exec pipe), and the parent's reading
// of its output under the one policy inject/process.hpp documents.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "inject/fs.hpp"
#include "inject/process.hpp"
#include "inject/result.hpp"

namespace inject::process::detail {

/// What a child that never reached its program writes into the status pipe.
struct ChildError {
    int step = 0;  ///< the caller's own step numbers
    int err = 0;   ///< errno of the failed call
    int flag = 0;  ///< a step's extra fact (process: the file to exec exists)
};

/// In the child: reports the step and errno (async-signal-safe) and exits 127.
[[noreturn]] void child_fail(int status_fd, int step, int flag = 0);

/// In the parent, after closing its copy of the write end: blocks until the child's exec closes
/// the pipe (nullopt) or the child reports a failed step.
[[nodiscard]] std::optional<ChildError> wait_for_exec(int status_fd);

/// In the parent: reads the child's stdout (`out`) and stderr (`err`; invalid when it goes into
/// `out`) until both close, kills the child on timeout or output over `max_output`, and reaps
/// it. `name` names the program in the errors.
[[nodiscard]] Result<Output> collect(pid_t pid, fs::UniqueFd out, fs::UniqueFd err,
                                     const std::string& name, std::chrono::milliseconds timeout,
                                     std::size_t max_output);

}  // namespace inject::process::detail
