// SPDX-License-Identifier: Apache-2.0
#include "runc_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace shim {
namespace {

std::string_view level_name(Level l) {
    switch (l) {
        case Level::Debug:
            return "debug";
        case Level::Info:
            return "info";
        case Level::Warn:
            return "warning";
        case Level::Error:
            return "error";
    }
    return "info";
}

Level parse_level(std::string_view s) {
    if (s == "debug" || s == "trace") return Level::Debug;
    if (s == "warn" || s == "warning") return Level::Warn;
    if (s == "error") return Level::Error;
    return Level::Info;
}

/// JSON string escaping (RFC 8259): quotes, backslash, control characters.
void append_escaped(std::string& out, std::string_view s) {
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x",
                                  static_cast<unsigned>(static_cast<unsigned char>(c)));
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
}

void write_line(int fd, const std::string& line) {
    std::string_view rest = line;
    while (!rest.empty()) {
        ssize_t n = ::write(fd, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // a log that cannot be written must not fail the container
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
}

int open_append(const std::string& path) {
    return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

}  // namespace

void RuncLog::open_runc_log(const std::string& path, bool json, bool debug) {
    if (path.empty()) return;
    runc_fd_.reset(open_append(path));
    runc_json_ = json;
    runc_min_ = debug ? Level::Debug : Level::Info;
}

void RuncLog::open_debug_log(const std::string& path, std::string_view level) {
    if (path.empty()) return;
    debug_fd_.reset(open_append(path));
    debug_min_ = parse_level(level);
}

std::string RuncLog::now() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    tm t{};
    ::gmtime_r(&ts.tv_sec, &t);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", t.tm_year + 1900,
                  t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                  static_cast<long>(ts.tv_nsec));
    return buf;
}

std::string RuncLog::format(Level level, std::string_view msg, bool json, std::string_view time) {
    std::string line;
    line.reserve(msg.size() + 80);
    if (json) {
        line += R"({"level":")";
        line += level_name(level);
        line += R"(","msg":")";
        append_escaped(line, msg);
        line += R"(","time":")";
        line += time;
        line += "\"}\n";
    } else {
        line += "time=\"";
        line += time;
        line += "\" level=";
        line += level_name(level);
        line += " msg=\"";
        append_escaped(line, msg);
        line += "\"\n";
    }
    return line;
}

void RuncLog::log(Level level, std::string_view msg) {
    const bool to_runc = runc_fd_.valid() && level >= runc_min_;
    const bool to_debug = debug_fd_.valid() && level >= debug_min_;
    if (!to_runc && !to_debug) return;
    const std::string time = now();
    if (to_runc) write_line(runc_fd_.get(), format(level, msg, runc_json_, time));
    if (to_debug) write_line(debug_fd_.get(), format(level, msg, false, time));
}

}  // namespace shim
