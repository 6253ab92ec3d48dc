// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The library's logging facade. libinject logs through these calls only; which sinks exist
/// (runc's --log file, stderr, a debug file, nothing) is decided by the binaries, which configure
/// spdlog's default logger. Nothing here ever writes to stdout on its own.

#include <spdlog/spdlog.h>

#include <utility>

namespace inject::log {

template <typename... Args>
void trace(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    spdlog::default_logger_raw()->trace(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    spdlog::default_logger_raw()->debug(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    spdlog::default_logger_raw()->info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    spdlog::default_logger_raw()->warn(fmt, std::forward<Args>(args)...);
}

/// True when debug messages would be written (skip building expensive messages otherwise).
inline bool debug_enabled() {
    return spdlog::default_logger_raw()->should_log(spdlog::level::debug);
}

}  // namespace inject::log
