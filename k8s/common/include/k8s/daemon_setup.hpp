// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What every Kubernetes-plane daemon does first: the signals it handles arrive on a signalfd
/// (blocked before gRPC starts its threads, which inherit the mask, so no thread of gRPC's
/// takes them), and the log goes to stderr, synchronously, one flushed line each (kubelet and
/// `kubectl logs` read the container's stderr). Header-only: the daemons link spdlog already.

#include "inject/fs.hpp"
#include "inject/result.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <initializer_list>
#include <string>
#include <sys/signalfd.h>

namespace k8s {

/// Blocks `signals` in the calling thread and returns a signalfd (non-blocking, close-on-exec)
/// that reads them.
[[nodiscard]] inline inject::Result<inject::fs::UniqueFd> signal_fd(std::initializer_list<int> signals) {
    sigset_t set;
    sigemptyset(&set);
    for (int s : signals) sigaddset(&set, s);
    if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0)
        return inject::fail(inject::Errc::Internal, "blocking signals failed");
    inject::fs::UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd.valid()) return inject::fail(inject::sys_error("signalfd"));
    return fd;
}

/// Makes a stderr logger called `name` the default, at `level` (debug, info, warn, error, or
/// any spdlog level name). InvalidInput: "--log-level 'x': want debug, info, warn or error".
[[nodiscard]] inline inject::Result<void> setup_logging(const std::string& name, const std::string& level) {
    const auto lvl = spdlog::level::from_str(level);
    if (lvl == spdlog::level::off && level != "off")
        return inject::fail(inject::Errc::InvalidInput, "--log-level '" + level + "': want debug, info, warn or error");
    auto logger = spdlog::stderr_logger_mt(name);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l: %v");
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    spdlog::set_level(lvl);
    return inject::ok();
}

}  // namespace k8s
