// SPDX-License-Identifier: Apache-2.0
#pragma once
// The shim's logger: runc's --log file in runc's format (logrus JSON lines or text), because
// containerd and docker show the user the last error line of it, plus an optional debug log
// file from the config. Synchronous: every line is one write(2) on an O_APPEND|O_CLOEXEC fd,
// so nothing is buffered when we execve and nothing leaks into the runtime.

#include <string>
#include <string_view>

#include "inject/fs.hpp"

namespace shim {

enum class Level { Debug, Info, Warn, Error };

class RuncLog {
public:
    RuncLog() = default;
    /// Opens runc's --log (may be empty = none). `json` selects logrus' JSON formatter.
    void open_runc_log(const std::string& path, bool json, bool debug);
    /// Opens the config's debug log (may be empty = none) at `level` ("debug", "info", ...).
    void open_debug_log(const std::string& path, std::string_view level);

    void log(Level level, std::string_view msg);
    void debug(std::string_view msg) { log(Level::Debug, msg); }
    void info(std::string_view msg) { log(Level::Info, msg); }
    void warn(std::string_view msg) { log(Level::Warn, msg); }
    void error(std::string_view msg) { log(Level::Error, msg); }

    /// True when a debug line would go anywhere (skip building expensive messages otherwise).
    [[nodiscard]] bool debug_enabled() const {
        return (runc_fd_.valid() && runc_min_ == Level::Debug) ||
               (debug_fd_.valid() && debug_min_ == Level::Debug);
    }

    /// One line as runc writes it: {"level":"error","msg":"...","time":"..."} or
    /// time="..." level=error msg="...". Ends with '\n'.
    [[nodiscard]] static std::string format(Level level, std::string_view msg, bool json,
                                            std::string_view time);
    /// Now in RFC 3339 with nanoseconds, UTC, as runc's logrus prints it.
    [[nodiscard]] static std::string now();

private:
    inject::fs::UniqueFd runc_fd_;
    bool runc_json_ = false;
    Level runc_min_ = Level::Info;
    inject::fs::UniqueFd debug_fd_;
    Level debug_min_ = Level::Info;
};

}  // namespace shim
