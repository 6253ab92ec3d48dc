// SPDX-License-Identifier: Apache-2.0
// The doctor's container-engine checks: installed (on PATH), its version, its config file
// parses, it is wired to enflame-container-runtime or reads CDI specs, its daemon answers a
// socket connect. Nothing is sent to a daemon and nothing is changed.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "inject/doctor.hpp"
#include "inject/fs.hpp"
#include "inject/process.hpp"

namespace inject::doctor {
namespace {

constexpr std::string_view kOurRuntime = "enflame-container-runtime";

std::optional<std::string> find_binary(const std::vector<std::string>& path,
                                       const std::string& name) {
    for (const auto& dir : path) {
        const std::string p = (dir.ends_with('/') ? dir : dir + "/") + name;
        if (::access(p.c_str(), X_OK) == 0) return p;
    }
    return std::nullopt;
}

std::string first_line(const std::string& s) {
    auto line = s.substr(0, s.find('\n'));
    while (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
}

// "docker --version": its first line; empty when it does not answer in time.
std::string version_of(const std::string& binary, const Engine& e,
                       std::chrono::milliseconds timeout) {
    process::Command cmd;
    cmd.path = binary;
    cmd.argv.push_back(binary);
    cmd.argv.insert(cmd.argv.end(), e.version_args.begin(), e.version_args.end());
    cmd.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
    cmd.timeout = timeout;
    cmd.max_output = 64 << 10;
    auto out = process::run(cmd);
    if (!out || out->exit_code != 0) return {};
    return first_line(out->out.empty() ? out->err : out->out);
}

// Whether a unix socket accepts a connection within `timeout` (nothing is sent).
std::string connect_error(const std::string& path, std::chrono::milliseconds timeout) {
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) return "socket path too long";
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    fs::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (fd.get() < 0) return std::strerror(errno);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return {};
    if (errno != EINPROGRESS && errno != EAGAIN) return std::strerror(errno);
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0)
        return "no answer within " + std::to_string(timeout.count()) + " ms";
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
        return std::strerror(err ? err : errno);
    return {};
}

// The config parses (JSON for Docker, TOML for the others): empty, else the one-line reason.
std::string parse_error(const Engine& e, const std::string& text) {
    if (e.name == "docker") {
        if (text.find_first_not_of(" \t\r\n") == std::string::npos) return {};
        try {
            if (!nlohmann::json::parse(text).is_object())
                return "line 1: the top level must be an object";
        } catch (const nlohmann::json::parse_error& x) {
            return x.what();
        }
        return {};
    }
    try {
        (void)toml::parse(text, e.config);
    } catch (const toml::parse_error& x) {
        return "line " + std::to_string(x.source().begin.line) + ": " +
               std::string(x.description());
    }
    return {};
}

// Wired: our runtime named in the config, or CDI on (Docker features.cdi, containerd
// enable_cdi). CRI-O (1.23+) and podman read CDI specs with no setting.
bool wired(const Engine& e, const std::string& text) {
    if (text.find(kOurRuntime) != std::string::npos) return true;
    if (e.name == "crio" || e.name == "podman") return true;
    if (e.name == "docker") {
        try {
            const auto j = nlohmann::json::parse(text);
            return j.contains("features") && j["features"].is_object() &&
                   j["features"].value("cdi", false);
        } catch (const std::exception&) {
            return false;
        }
    }
    return text.find("enable_cdi = true") != std::string::npos;
}

// containerd's `imports` (where `runtime configure` puts its drop-in): their text is read with
// the main file's for the wiring check. Globs in imports are not expanded.
std::string with_imports(const Engine& e, const std::string& text) {
    if (e.name != "containerd") return text;
    std::string all = text;
    try {
        const auto root = toml::parse(text, e.config);
        if (const auto* imports = root["imports"].as_array()) {
            for (const auto& i : *imports) {
                if (const auto* p = i.as_string())
                    if (auto t = fs::read_file(p->get(), 4 << 20)) all += "\n" + *t;
            }
        }
    } catch (const toml::parse_error&) {
        // parse_error() already reported it
    }
    return all;
}

Check engine_check(const Options& opts, const Engine& e) {
    Check c{"runtime." + e.name, Status::Ok, "", ""};
    const auto binary = find_binary(opts.path, e.binary);
    std::optional<std::string> text;
    if (!e.config.empty()) {
        auto t = fs::read_file(e.config, 4 << 20);
        if (t)
            text = std::move(*t);
        else if (t.error().code() != Errc::NotFound) {
            c.status = Status::Fail;
            c.seen = t.error().what();
            c.fix = "make '" + e.config + "' readable";
            return c;
        }
    }
    if (text) {
        if (auto why = parse_error(e, *text); !why.empty()) {
            c.status = Status::Fail;
            c.seen = e.config + ": does not parse: " + why;
            c.fix = "correct '" + e.config + "' (" + e.name + " refuses to start with it)";
            return c;
        }
    }
    if (!binary) {
        c.seen = e.binary + " is not installed (not on PATH)";
        return c;
    }
    const std::string version = version_of(*binary, e, opts.timeout);
    c.seen = *binary + (version.empty() ? std::string(" (no version answer)") : ": " + version);
    if (text) text = with_imports(e, *text);
    if (!wired(e, text.value_or(""))) {
        c.status = Status::Warn;
        c.seen += "; not wired to " + std::string(kOurRuntime) + " and CDI off" +
                  (e.config.empty() ? std::string() : " in '" + e.config + "'");
        c.fix = "enflame-ctk runtime configure --runtime " + e.name +
                (e.name == "docker" ? " --cdi.enabled" : "");
    } else {
        c.seen += "; wired (" +
                  std::string(text && text->find(kOurRuntime) != std::string::npos ? kOurRuntime
                                                                                   : "CDI") +
                  ")";
    }
    if (!e.socket.empty()) {
        if (auto why = connect_error(e.socket, opts.timeout); !why.empty()) {
            c.status = Status::Warn;
            c.seen += "; daemon not reachable at '" + e.socket + "': " + why;
            c.fix = (c.fix.empty() ? "" : c.fix + "; ") + "systemctl start " + e.name;
        } else {
            c.seen += "; daemon answers at '" + e.socket + "'";
        }
    }
    return c;
}

}  // namespace

std::vector<Engine> default_engines() {
    return {
        Engine{
            "docker", "docker", {"--version"}, "/etc/docker/daemon.json", "/var/run/docker.sock"},
        Engine{"containerd",
               "containerd",
               {"--version"},
               "/etc/containerd/config.toml",
               "/run/containerd/containerd.sock"},
        Engine{"crio", "crio", {"--version"}, "/etc/crio/crio.conf", "/var/run/crio/crio.sock"},
        Engine{"podman", "podman", {"--version"}, "/etc/containers/containers.conf", ""},
    };
}

std::vector<Check> check_runtimes(const Options& opts) {
    std::vector<Check> out;
    for (const auto& e : opts.engines) out.push_back(engine_check(opts, e));
    return out;
}

}  // namespace inject::doctor
