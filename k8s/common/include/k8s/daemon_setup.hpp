// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// For a daemon that polls: the signals it handles arrive on a signalfd (blocked before gRPC
/// starts its threads, which inherit the mask, so no thread of gRPC's takes them). The logger
/// and the common flags are in k8s/daemon_cli.hpp.

#include <sys/signalfd.h>

#include <csignal>
#include <initializer_list>

#include "inject/fs.hpp"
#include "inject/result.hpp"

namespace k8s {

/// Blocks `signals` in the calling thread and returns a signalfd (non-blocking, close-on-exec)
/// that reads them.
[[nodiscard]] inline inject::Result<inject::fs::UniqueFd> signal_fd(
    std::initializer_list<int> signals) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : signals) sigaddset(&set, s);
    if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0)
        return inject::fail(inject::Errc::Internal, "blocking signals failed");
    inject::fs::UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd.valid()) return inject::fail(inject::sys_error("signalfd"));
    return fd;
}

/// For a daemon that sigwaits: blocks SIGTERM and SIGINT in the calling thread (threads started
/// later inherit the mask) and returns the set to sigwait on.
[[nodiscard]] inline sigset_t block_stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return set;
}

}  // namespace k8s
