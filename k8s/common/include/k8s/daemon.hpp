// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What every daemon of the Kubernetes plane does the same way at start: a synchronous stderr
/// logger with timestamps (kubelet's pods collect stderr), and SIGTERM/SIGINT taken by
/// sigwait rather than a handler.

#include "inject/result.hpp"

#include <signal.h>

#include <string>

namespace k8s {

/// spdlog's default logger: stderr, "2026-01-02T03:04:05.678 info: ...", flushed on every line,
/// at `level` (debug, info, warn, error, off). InvalidInput names a bad level.
[[nodiscard]] inject::Result<void> setup_logging(const std::string& name, const std::string& level);

/// Blocks SIGTERM and SIGINT in the calling thread (threads started later inherit the mask)
/// and returns the set to sigwait on.
[[nodiscard]] sigset_t block_stop_signals();

}  // namespace k8s
