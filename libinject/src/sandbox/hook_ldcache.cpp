// SPDX-License-Identifier: Apache-2.0
// Updating a container's ldcache: the conf.d file is written in-root, then the host's ldconfig
// runs in the sandbox chrooted into the rootfs. Never a binary from the image
// (CVE-2024-0136/0137), never with an inherited environment (CVE-2025-23266).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "inject/ldcache.hpp"
#include "inject/log.hpp"
#include "inject/mount.hpp"
#include "inject/sandbox.hpp"
#include "sandbox/ldcache_prepare.hpp"

namespace inject::hook {
namespace {

/// A host library file and the container folders it is mounted to.
struct LibraryFile {
    std::string host_path;
    dev_t dev = 0;
    ino_t ino = 0;
    std::vector<std::string> folders;
};

std::string folder_of(std::string_view path) {
    const auto slash = path.rfind('/');
    return std::string(slash == 0 || slash == std::string_view::npos ? "/" : path.substr(0, slash));
}

/// The mounted libraries grouped by host file (stat on the host side: bind mounts keep the
/// device and inode, so the container sees the same numbers).
Result<std::vector<LibraryFile>> library_files(const std::vector<MountedLibrary>& libs) {
    std::vector<LibraryFile> out;
    for (const auto& l : libs) {
        struct stat st {};
        if (::stat(l.host_path.c_str(), &st) != 0) return fail(sys_error("library " + l.host_path));
        auto it = std::find_if(out.begin(), out.end(), [&](const LibraryFile& f) {
            return f.dev == st.st_dev && f.ino == st.st_ino;
        });
        if (it == out.end())
            it = out.insert(out.end(), LibraryFile{l.host_path, st.st_dev, st.st_ino, {}});
        const std::string folder = folder_of(l.container_path);
        if (std::find(it->folders.begin(), it->folders.end(), folder) == it->folders.end())
            it->folders.push_back(folder);
    }
    return out;
}

/// Reads the container's /etc/ld.so.cache in the opened root (bounded).
Result<std::string> read_cache(int root_fd) {
    // O_PATH first: the image may put a FIFO or a device node there, which a plain open would
    // block on or act on. Only a regular file is then opened for reading.
    INJECT_TRY(fs::UniqueFd path_fd,
               fs::open_in_root(root_fd, "/etc/ld.so.cache", O_PATH | O_NOFOLLOW));
    struct stat st {};
    if (::fstat(path_fd.get(), &st) != 0) return fail(sys_error("stat /etc/ld.so.cache"));
    if (!S_ISREG(st.st_mode))
        return fail(Errc::InvalidInput, "/etc/ld.so.cache is not a regular file");
    fs::UniqueFd fd(::open(("/proc/self/fd/" + std::to_string(path_fd.get())).c_str(),
                           O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd.valid()) return fail(sys_error("opening /etc/ld.so.cache"));
    if (static_cast<std::uint64_t>(st.st_size) > ldcache::kMaxCacheBytes)
        return fail(Errc::InvalidInput, "/etc/ld.so.cache is larger than " +
                                            std::to_string(ldcache::kMaxCacheBytes) + " bytes");
    std::string data(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < data.size()) {
        const ssize_t n = ::read(fd.get(), data.data() + got, data.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(sys_error("reading /etc/ld.so.cache"));
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    data.resize(got);
    return data;
}

/// Why the container's cache does not already resolve every library; empty when it does.
/// Runs in the container's mount namespace with the rootfs open as `root_fd`.
std::string cache_gap(int root_fd, const std::vector<LibraryFile>& files) {
    auto data = read_cache(root_fd);
    if (!data) return data.error().what();
    auto entries = ldcache::parse(*data);
    if (!entries) return entries.error().what();
    std::vector<std::string> folders;
    for (const auto& f : files) folders.insert(folders.end(), f.folders.begin(), f.folders.end());
    const auto winners = ldcache::first_native_in(*entries, folders);
    for (const auto& f : files) {
        const bool resolved =
            std::any_of(winners.begin(), winners.end(), [&](const ldcache::Entry& e) {
                if (std::find(f.folders.begin(), f.folders.end(), folder_of(e.value)) ==
                    f.folders.end())
                    return false;
                auto fd = fs::open_in_root(root_fd, e.value,
                                           O_PATH);  // symlinks followed inside the root
                struct stat st {};
                return fd && ::fstat(fd->get(), &st) == 0 && st.st_dev == f.dev &&
                       st.st_ino == f.ino;
            });
        if (!resolved)
            return "the cache resolves no soname in " + f.folders.front() + " to " + f.host_path;
    }
    return {};
}

}  // namespace

namespace detail {

Result<std::string> ldconf_text(const LdcacheOptions& opts) {
    if (opts.ldconfig.size() < 2 || opts.ldconfig[0] != '@' || opts.ldconfig[1] != '/')
        return fail(Errc::Permission,
                    "ldconfig '" + opts.ldconfig +
                        "' is not a host path: only host binaries ('@/sbin/ldconfig') are run");
    std::string conf;
    for (const auto& f : opts.folders) {
        if (f.empty() || f.front() != '/' || f.find('\n') != std::string::npos)
            return fail(Errc::InvalidInput, "library folder '" + f + "' is not an absolute path");
        conf += f + "\n";
    }
    return conf;
}

Result<std::string> prepare_in_root(int root_fd, const std::string& conf,
                                    const std::vector<MountedLibrary>& libraries) {
    // Written even when the cache is current: an ldconfig run later inside the container (a
    // package install) then keeps our folders in the cache.
    auto w = fs::write_in_root(root_fd, kLdconfConfPath, conf);
    if (!w) return fail(std::move(w).error().context("writing " + std::string(kLdconfConfPath)));
    if (libraries.empty()) return std::string("no libraries to look up");
    // stat here, in the container's namespace before pivot_root: the same host paths the
    // mounts were made from (bind mounts keep device and inode).
    INJECT_TRY(auto files, library_files(libraries));
    std::string why = cache_gap(root_fd, files);
    return why.empty() ? std::string(kLdcacheCurrent) : why;
}

bool ldconfig_needed(const std::string& rootfs, std::size_t libraries, const std::string& answer) {
    if (answer == kLdcacheCurrent) {
        log::debug(
            "ldcache of {} already resolves every mounted library ({} mounts): ldconfig not run",
            rootfs, libraries);
        return false;
    }
    if (libraries != 0) log::debug("ldcache of {} needs an update: {}", rootfs, answer);
    return true;
}

}  // namespace detail

Result<void> update_ldcache(const std::string& rootfs, const LdcacheOptions& opts) {
    INJECT_TRY(const std::string conf, detail::ldconf_text(opts));
    auto w = in_mount_namespace_text(opts.mount_namespace, [&]() -> Result<std::string> {
        INJECT_TRY(fs::UniqueFd root, fs::open_root(rootfs));
        return detail::prepare_in_root(root.get(), conf, {});  // no libraries: ldconfig runs
    });
    if (!w) return fail(std::move(w).error().context("in " + rootfs));
    return run_ldconfig(rootfs, opts);
}

Result<void> run_ldconfig(const std::string& rootfs, const LdcacheOptions& opts) {
    INJECT_TRY_VOID(detail::ldconf_text(opts));
    const std::string ldconfig = opts.ldconfig.substr(1);
    sandbox::Options so;
    so.executable = ldconfig;
    so.argv = {"ldconfig"};
    // Folders on the command line too: a minimal image has no ld.so.conf including conf.d.
    so.argv.insert(so.argv.end(), opts.folders.begin(), opts.folders.end());
    so.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    so.mount_namespace = opts.mount_namespace;
    so.rootfs = rootfs;
    so.syscalls = sandbox::ldconfig_syscalls();
    so.timeout = opts.timeout;
    INJECT_TRY(auto out, sandbox::run(so));
    if (out.exit_code != 0) {
        std::string first = out.err.substr(0, out.err.find('\n'));
        return fail(Errc::Io, "ldconfig in " + rootfs + " exited with " +
                                  (out.term_signal ? "signal " + std::to_string(out.term_signal)
                                                   : std::to_string(out.exit_code)) +
                                  (first.empty() ? "" : ": " + first));
    }
    log::debug("ldcache of {} updated ({} folders)", rootfs, opts.folders.size());
    return ok();
}

}  // namespace inject::hook
