// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Running a helper program: fork+execve of an absolute path (or of an fd opened when it was
/// found), no shell, an explicit environment, optionally chrooted into a host root, a timeout,
/// and a bound on the output. The one child-process runner of the project: sandbox::run starts
/// its child its own way and reads it with the same policy.
///
/// The policy, for every child:
/// - stdout (with merge_stderr, stdout and stderr together, in the order written) is kept
///   whole up to `max_output` bytes; one byte more is an error (InvalidInput) and the child is
///   killed: a caller never parses a truncated answer.
/// - stderr (without merge_stderr) keeps its first 4 KiB, for a message; the rest is read and
///   dropped, so a chatty child never blocks on a full pipe.
/// - past `timeout` the child is killed (SIGKILL) and the run is an error (Io, ETIMEDOUT).
/// - a program that cannot be started (chroot or exec failed, reported by the child through a
///   close-on-exec pipe) is an error naming why, never an exit code.
/// - a non-zero exit or a signal is not an error: the caller reads exit_code and term_signal.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "inject/result.hpp"

namespace inject::process {

/// The output bound a caller gets unless it says otherwise.
inline constexpr std::size_t kMaxOutput = std::size_t{4} << 20;
/// What a run keeps of stderr (without merge_stderr).
inline constexpr std::size_t kMaxStderr = 4096;

/// What to run.
struct Command {
    std::string path;               ///< absolute path of the executable (inside `root` if set)
    std::vector<std::string> argv;  ///< argv[0] included
    std::vector<std::string> env;   ///< the whole environment ("K=V"); nothing is inherited
    std::chrono::milliseconds timeout{5000};
    std::size_t max_output = kMaxOutput;  ///< stdout beyond this is an error (InvalidInput)
    /// When >= 0: an fd (O_PATH is enough) of the executable to run, found once and run as
    /// found (execveat AT_EMPTY_PATH), so a path swapped after the lookup cannot redirect the
    /// exec. `path` then only names it in messages. The caller keeps ownership.
    int exec_fd = -1;
    /// When set and not "/": the child chroots into this folder (and changes to its "/") before
    /// the exec, so `path`, the program's libraries and its loader are the folder's own (a
    /// program of the node's root, run from a pod that mounts it).
    std::string root;
    /// stderr goes into `out` too, in the order written (what a terminal shows); `err` stays empty.
    bool merge_stderr = false;
};

/// How it ended.
struct Output {
    int exit_code = -1;   ///< exit status, or -1 when killed by a signal
    int term_signal = 0;  ///< the signal that ended it, or 0
    std::string out;      ///< stdout (with merge_stderr: stderr too)
    std::string err;      ///< the first 4 KiB of stderr
};

/// Runs the command to completion. Errors: InvalidInput (a relative path; output too large),
/// NotFound, Permission or Io from the failed chroot or exec ("cannot run '/x': why"; ENOENT of
/// a file that is there says its loader is missing), Io with ETIMEDOUT (killed after the
/// timeout), Io (pipe or fork failed).
[[nodiscard]] Result<Output> run(const Command& cmd);

/// The last non-empty line of a program's output, for a one-line error.
[[nodiscard]] std::string last_line(std::string_view out);

}  // namespace inject::process
