// SPDX-License-Identifier: Apache-2.0
// Applying CDI edits to a live container from a hook: a forked child enters the container's
// mount namespace (the hook itself stays in the host's), opens the rootfs there (so it sees the
// container's /dev tmpfs and other mounts), and does every operation on fds in that root.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "inject/log.hpp"
#include "inject/mount.hpp"
#include "sandbox/ldcache_prepare.hpp"

namespace inject::hook {
namespace {

struct Wire {
    int ok;
    int code;
    int err;
    unsigned len;
};

/// The child's answer: an error, or the text its function returned (at most 4000 bytes).
void send(int fd, const Result<std::string>& r) {
    Wire w{r ? 1 : 0, r ? 0 : static_cast<int>(r.error().code()), r ? 0 : r.error().sys_errno(), 0};
    std::string msg = r ? *r : r.error().what();
    if (msg.size() > 4000) msg.resize(4000);
    w.len = static_cast<unsigned>(msg.size());
    std::string buf(reinterpret_cast<const char*>(&w), sizeof w);
    buf += msg;
    ssize_t n = ::write(fd, buf.data(), buf.size());
    (void)n;
}

/// `fn`, its exceptions (std::bad_alloc above all) turned into an Internal error: the forked
/// child must end in _exit, never unwind into the copy of the caller's stack (main()'s catch
/// would print a second error line and the child would go on running the caller's code).
Result<std::string> run_caught(const std::function<Result<std::string>()>& fn) {
    try {
        return fn();
    } catch (const std::exception& e) {
        return fail(Errc::Internal, std::string("internal: ") + e.what());
    } catch (...) {
        return fail(Errc::Internal, "internal: unknown exception");
    }
}

Result<void> make_node(int root_fd, const cdi::DeviceNode& n, const ApplyOptions& opts) {
    const std::string host = n.host_path.empty() ? n.path : n.host_path;
    struct stat st {};
    if (::stat(host.c_str(), &st) != 0) return fail(sys_error("device node " + host));
    const mode_t type = n.type == "b" ? S_IFBLK : S_IFCHR;
    if ((st.st_mode & S_IFMT) != type)
        return fail(Errc::InvalidInput, "device node " + host + " is not a " +
                                            (type == S_IFBLK ? "block" : "character") + " device");
    fs::NodeSpec spec;
    spec.type = type;
    spec.dev = (n.major && n.minor)
                   ? makedev(static_cast<unsigned>(*n.major), static_cast<unsigned>(*n.minor))
                   : st.st_rdev;
    spec.mode = n.file_mode ? static_cast<mode_t>(*n.file_mode & 07777) : (st.st_mode & 07777);
    spec.uid = n.uid ? *n.uid : 0;
    spec.gid = n.gid ? *n.gid : 0;
    if (!opts.bind_device_nodes) {
        auto r = fs::mknod_in_root(root_fd, n.path, spec);
        if (r || r.error().sys_errno() != EPERM) return r;
        log::debug("mknod {} refused (EPERM), bind-mounting {}", n.path, host);
    }
    fs::UniqueFd src(::open(host.c_str(), O_PATH | O_CLOEXEC));
    if (!src.valid()) return fail(sys_error("opening device node " + host));
    fs::BindOptions bo;
    bo.read_only = false;
    bo.nodev = false;
    return fs::bind_mount_in_root(src.get(), root_fd, n.path, bo);
}

}  // namespace

Result<std::string> in_mount_namespace_text(const std::string& mount_namespace,
                                            const std::function<Result<std::string>()>& fn) {
    fs::UniqueFd ns;
    if (!mount_namespace.empty()) {
        ns.reset(::open(mount_namespace.c_str(), O_RDONLY | O_CLOEXEC));
        if (!ns.valid()) return fail(sys_error("opening " + mount_namespace));
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return fail(sys_error("pipe"));
    fs::UniqueFd rd(p[0]), wr(p[1]);
    pid_t pid = ::fork();
    if (pid < 0) return fail(sys_error("fork"));
    if (pid == 0) {
        rd.reset();
        Result<std::string> r = std::string();
        if (ns.valid() && ::setns(ns.get(), CLONE_NEWNS) != 0)
            r = fail(sys_error("entering " + mount_namespace));
        if (r) r = run_caught(fn);
        send(wr.get(), r);
        _exit(r ? 0 : 1);
    }
    wr.reset();
    std::string buf;
    char chunk[4096];
    for (;;) {
        ssize_t n = ::read(rd.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        buf.append(chunk, static_cast<std::size_t>(n));
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (buf.size() < sizeof(Wire))
        return fail(Errc::Internal, "namespace helper ended without a result (status " +
                                        std::to_string(status) + ")");
    Wire w{};
    std::memcpy(&w, buf.data(), sizeof w);
    if (w.ok) return buf.substr(sizeof w, w.len);
    return fail(Errc(w.code), buf.substr(sizeof w, w.len), w.err);
}

Result<void> in_mount_namespace(const std::string& mount_namespace,
                                const std::function<Result<void>()>& fn) {
    auto r = in_mount_namespace_text(mount_namespace, [&]() -> Result<std::string> {
        INJECT_TRY_VOID(fn());
        return std::string();
    });
    if (!r) return fail(std::move(r).error());
    return ok();
}

namespace {

/// The nodes and mounts of `edits`, in the child that entered the container's namespace.
Result<void> apply_in_root(int root_fd, const std::string& rootfs, const cdi::ContainerEdits& edits,
                           const ApplyOptions& opts) {
    for (const auto& n : edits.device_nodes) {
        auto r = make_node(root_fd, n, opts);
        if (!r) return fail(std::move(r).error().context("creating " + n.path + " in " + rootfs));
        log::debug("device node {} ready", n.path);
    }
    for (const auto& m : edits.mounts) {
        if (!m.type.empty() && m.type != "bind" && m.type != "none")
            return fail(Errc::Unsupported, "mount of type '" + m.type + "' at " + m.container_path);
        fs::UniqueFd src(::open(m.host_path.c_str(), O_PATH | O_CLOEXEC));
        if (!src.valid())
            return fail(sys_error("opening " + m.host_path)
                            .context("mounting " + m.host_path + " into " + rootfs));
        auto r = fs::bind_mount_in_root(src.get(), root_fd, m.container_path, {});
        if (!r)
            return fail(
                std::move(r).error().context("mounting " + m.host_path + " into " + rootfs));
        log::debug("mounted {} at {}", m.host_path, m.container_path);
    }
    return ok();
}

std::string namespace_of(int pid) {
    return pid > 0 ? "/proc/" + std::to_string(pid) + "/ns/mnt" : std::string();
}

}  // namespace

Result<void> apply_edits(int pid, const std::string& rootfs, const cdi::ContainerEdits& edits,
                         const ApplyOptions& opts) {
    return in_mount_namespace(namespace_of(pid), [&]() -> Result<void> {
        INJECT_TRY(fs::UniqueFd root, fs::open_root(rootfs));
        return apply_in_root(root.get(), rootfs, edits, opts);
    });
}

Result<bool> apply_edits_and_prepare_ldcache(int pid, const std::string& rootfs,
                                             const cdi::ContainerEdits& edits,
                                             const LdcacheOptions& lo,
                                             const std::vector<MountedLibrary>& libraries,
                                             const ApplyOptions& opts) {
    INJECT_TRY(const std::string conf, detail::ldconf_text(lo));
    auto w = in_mount_namespace_text(namespace_of(pid), [&]() -> Result<std::string> {
        INJECT_TRY(fs::UniqueFd root, fs::open_root(rootfs));
        INJECT_TRY_VOID(apply_in_root(root.get(), rootfs, edits, opts));
        auto r = detail::prepare_in_root(root.get(), conf, libraries);
        if (!r) return fail(std::move(r).error().context("updating the ldcache in " + rootfs));
        return r;
    });
    if (!w) return fail(std::move(w).error());
    return detail::ldconfig_needed(rootfs, libraries.size(), *w);
}

}  // namespace inject::hook
