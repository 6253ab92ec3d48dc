// SPDX-License-Identifier: Apache-2.0
// Dispatch by engine, and the one function that writes: backup of the first original, then an
// atomic replace.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "inject/fs.hpp"
#include "inject/mount.hpp"
#include "runtime_config_internal.hpp"

namespace inject::runtime_config {
namespace {
constexpr std::size_t kMaxConfigBytes = 4 << 20;
}

std::string_view engine_name(Engine e) noexcept {
    switch (e) {
        case Engine::Docker:
            return "docker";
        case Engine::Containerd:
            return "containerd";
        case Engine::Crio:
            return "crio";
    }
    return "docker";
}

Result<Engine> parse_engine(std::string_view name) {
    if (name == "docker") return Engine::Docker;
    if (name == "containerd") return Engine::Containerd;
    if (name == "crio" || name == "cri-o") return Engine::Crio;
    return fail(Errc::InvalidInput,
                "runtime '" + std::string(name) + "' is not one of docker, containerd, crio");
}

std::optional<std::string> default_drop_in(Engine e) {
    switch (e) {
        case Engine::Docker:
            return std::nullopt;
        case Engine::Containerd:
            return "/etc/containerd/conf.d/99-enflame.toml";
        case Engine::Crio:
            return "/etc/crio/crio.conf.d/99-enflame.toml";
    }
    return std::nullopt;
}

std::optional<std::string> drop_in_for(Engine e, std::string_view config) {
    if (e != Engine::Containerd) return default_drop_in(e);
    const auto name = std::filesystem::path(*default_drop_in(e)).filename();
    return (std::filesystem::path(config).parent_path() / "conf.d" / name)
        .lexically_normal()
        .string();
}

std::string default_config_path(Engine e) {
    switch (e) {
        case Engine::Docker:
            return "/etc/docker/daemon.json";
        case Engine::Containerd:
            return "/etc/containerd/config.toml";
        case Engine::Crio:
            return "/etc/crio/crio.conf";
    }
    return "";
}

namespace {

/// The NRI options make sense for the engine.
Result<void> check_nri(Engine e, const Options& o) {
    if (!o.nri_enabled) return ok();
    if (e == Engine::Docker)
        return fail(Errc::Unsupported, "docker has no NRI: enabling it is for containerd and crio");
    if (o.nri_socket.empty() || o.nri_socket.front() != '/')
        return fail(Errc::InvalidInput,
                    "NRI socket '" + o.nri_socket + "' must be an absolute path");
    return ok();
}

}  // namespace

Result<std::string> configure(Engine e, std::string_view text, const Options& opts,
                              std::string_view source) {
    if (opts.runtime_name.empty())
        return fail(Errc::InvalidInput, "the runtime name must not be empty");
    if (opts.runtime_path.empty() || opts.runtime_path.front() != '/')
        return fail(Errc::InvalidInput,
                    "runtime path '" + opts.runtime_path + "' must be an absolute path");
    INJECT_TRY_VOID(check_nri(e, opts));
    if (e == Engine::Docker) return detail::json_configure(text, opts, source);
    return detail::toml_configure(e, text, opts, source);
}

Result<std::string> unconfigure(Engine e, std::string_view text, const Options& opts,
                                std::string_view source, std::optional<std::string_view> original) {
    if (e == Engine::Docker) return detail::json_unconfigure(text, opts, source, original);
    return detail::toml_unconfigure(e, text, opts, source, original);
}

Result<std::string> drop_in(Engine e, std::string_view main_text, const Options& opts,
                            std::string_view main_source) {
    if (e == Engine::Docker)
        return fail(Errc::Unsupported, "docker has no drop-in configuration files");
    if (opts.runtime_path.empty() || opts.runtime_path.front() != '/')
        return fail(Errc::InvalidInput,
                    "runtime path '" + opts.runtime_path + "' must be an absolute path");
    INJECT_TRY_VOID(check_nri(e, opts));
    return detail::toml_drop_in(e, main_text, opts, main_source);
}

std::string backup_path(std::string_view path) {
    return std::string(path) + ".enflame.bak";
}

Result<WriteOutcome> write_file(int root_fd, std::string_view path, std::string_view content,
                                bool remove) {
    const std::string p(path);
    auto current = fs::read_in_root(root_fd, p, kMaxConfigBytes);
    bool exists = current.has_value();
    if (!exists && current.error().code() != Errc::NotFound)
        return fail(std::move(current).error().context("reading " + p));
    if (remove) {
        if (!exists) return WriteOutcome::Unchanged;
        INJECT_TRY_CTX(fs::remove_in_root(root_fd, p), "removing '" + p + "'");
        return WriteOutcome::Removed;
    }
    if (exists && *current == content) return WriteOutcome::Unchanged;
    if (exists) {
        const auto bak = backup_path(p);
        auto there = fs::open_in_root(root_fd, bak, O_PATH | O_NOFOLLOW);
        if (!there && there.error().code() != Errc::NotFound)
            return fail(std::move(there).error().context("checking '" + bak + "'"));
        if (!there) {
            // The backup keeps the original's mode: a config may be readable by root only.
            struct stat st {};
            fs::AtomicWriteOptions wo;
            INJECT_TRY(auto orig, fs::open_in_root(root_fd, p, O_PATH));
            if (::fstat(orig.get(), &st) == 0) wo.mode = st.st_mode & 07777;
            INJECT_TRY_CTX(fs::atomic_write_in_root(root_fd, bak, *current, wo),
                           "backing up '" + p + "'");
        }
    }
    INJECT_TRY_CTX(fs::atomic_write_in_root(root_fd, p, content), "writing '" + p + "'");
    return WriteOutcome::Written;
}

Result<WriteOutcome> write_file(const std::string& path, std::string_view content, bool remove) {
    INJECT_TRY(auto root, fs::open_root("/"));
    std::error_code ec;
    const auto abs = std::filesystem::absolute(path, ec);
    return write_file(root.get(), ec ? path : abs.string(), content, remove);
}

}  // namespace inject::runtime_config
