// SPDX-License-Identifier: Apache-2.0
// In-root creation and bind mounts on file descriptors. The rule everywhere: resolve with
// open_in_root(), create relative to the opened parent, act on the opened fd (through
// /proc/self/fd/<n> where the kernel wants a path). A symlink planted in the rootfs can then only
// ever lead to another place inside the rootfs, and a swap between two steps is detected (the
// reopened mount target must be the source) or lands inside the rootfs too.
#include "inject/mount.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <vector>

namespace inject::fs {
namespace {

std::string proc_fd(int fd) {
    return "/proc/self/fd/" + std::to_string(fd);
}

std::vector<std::string> components(std::string_view path) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < path.size()) {
        while (i < path.size() && path[i] == '/') ++i;
        std::size_t j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        std::string_view c = path.substr(i, j - i);
        if (c.empty() || c == ".") {
        } else if (c == "..") {
            if (!out.empty()) out.pop_back();
        } else {
            out.emplace_back(c);
        }
        i = j;
    }
    return out;
}

std::string join_components(const std::vector<std::string>& c, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += "/" + c[i];
    return out.empty() ? "/" : out;
}

bool same_inode(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

SplitPath split_in_root_path(std::string_view path) {
    auto c = components(path);
    if (c.empty()) return {"/", ""};
    SplitPath out{join_components(c, c.size() - 1), c.back()};
    return out;
}

Result<UniqueFd> mkdir_in_root(int root_fd, std::string_view path, mode_t mode) {
    auto comps = components(path);
    INJECT_TRY(UniqueFd cur, open_in_root(root_fd, "/", O_PATH | O_DIRECTORY));
    for (std::size_t i = 0; i < comps.size(); ++i) {
        const std::string prefix = join_components(comps, i + 1);
        auto next = open_in_root(root_fd, prefix, O_PATH | O_DIRECTORY);
        if (!next && next.error().sys_errno() == ENOENT) {
            // Missing: create it in the folder we hold open. EEXIST means something appeared
            // (or a dangling symlink sits there): resolve again and let that decide.
            if (::mkdirat(cur.get(), comps[i].c_str(), mode) != 0 && errno != EEXIST)
                return fail(sys_error("creating folder " + prefix));
            next = open_in_root(root_fd, prefix, O_PATH | O_DIRECTORY);
        }
        if (!next) return fail(std::move(next).error());
        cur = std::move(next).value();
    }
    return cur;
}

Result<UniqueFd> ensure_in_root(int root_fd, std::string_view path, bool directory, mode_t mode) {
    if (directory) return mkdir_in_root(root_fd, path, 0755);
    const auto sp = split_in_root_path(path);
    if (sp.name.empty()) return fail(Errc::Conflict, "'/' is a folder, not a file");
    const std::string full = join_components(components(path), components(path).size());
    INJECT_TRY(UniqueFd parent, mkdir_in_root(root_fd, sp.dir, 0755));
    auto fd = open_in_root(root_fd, full, O_PATH);
    if (!fd && fd.error().sys_errno() == ENOENT) {
        UniqueFd created(::openat(parent.get(), sp.name.c_str(),
                                  O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode));
        if (!created.valid() && errno != EEXIST) return fail(sys_error("creating " + full));
        fd = open_in_root(root_fd, full, O_PATH);
    }
    if (!fd) return fail(std::move(fd).error());
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return fail(sys_error("stat " + full));
    if (S_ISDIR(st.st_mode)) return fail(Errc::Conflict, full + " is a folder, expected a file");
    return std::move(fd).value();
}

Result<void> bind_mount_in_root(int source_fd, int root_fd, std::string_view target,
                                const BindOptions& opts) {
    struct stat src {};
    if (::fstat(source_fd, &src) != 0) return fail(sys_error("stat of the mount source"));
    const bool dir = S_ISDIR(src.st_mode);
    INJECT_TRY(UniqueFd tgt, ensure_in_root(root_fd, target, dir));
    struct stat before {};
    if (::fstat(tgt.get(), &before) != 0) return fail(sys_error("stat " + std::string(target)));
    if (!same_inode(before, src)) {
        unsigned long flags = MS_BIND;
        if (dir) flags |= MS_REC;
        if (::mount(proc_fd(source_fd).c_str(), proc_fd(tgt.get()).c_str(), nullptr, flags,
                    nullptr) != 0)
            return fail(sys_error("bind-mounting onto " + std::string(target)));
    }
    // The fd we mounted on refers to the covered inode; reopen to reach the new mount, and check
    // it is ours: if the target was swapped between open and mount, we stop here.
    INJECT_TRY(UniqueFd top, open_in_root(root_fd, target, O_PATH));
    struct stat after {};
    if (::fstat(top.get(), &after) != 0) return fail(sys_error("stat " + std::string(target)));
    if (!same_inode(after, src))
        return fail(Errc::Conflict, std::string(target) + " changed while it was being mounted");
    unsigned long rflags = MS_REMOUNT | MS_BIND;
    if (opts.read_only) rflags |= MS_RDONLY;
    if (opts.nosuid) rflags |= MS_NOSUID;
    if (opts.nodev) rflags |= MS_NODEV;
    if (opts.noexec) rflags |= MS_NOEXEC;
    if (rflags != (MS_REMOUNT | MS_BIND) &&
        ::mount(nullptr, proc_fd(top.get()).c_str(), nullptr, rflags, nullptr) != 0)
        return fail(sys_error("remounting " + std::string(target) + " read-only"));
    return ok();
}

Result<void> symlink_in_root(int root_fd, std::string_view target, std::string_view link) {
    const auto sp = split_in_root_path(link);
    if (sp.name.empty()) return fail(Errc::InvalidInput, "cannot make '/' a symlink");
    const std::string where = sp.dir == "/" ? "/" + sp.name : sp.dir + "/" + sp.name;
    INJECT_TRY(UniqueFd parent, mkdir_in_root(root_fd, sp.dir, 0755));
    const std::string t(target);
    if (::symlinkat(t.c_str(), parent.get(), sp.name.c_str()) == 0) return ok();
    if (errno != EEXIST) return fail(sys_error("creating symlink " + where));
    std::vector<char> buf(4096);
    ssize_t n = ::readlinkat(parent.get(), sp.name.c_str(), buf.data(), buf.size());
    if (n >= 0 && std::string_view(buf.data(), static_cast<std::size_t>(n)) == t) return ok();
    return fail(Errc::Conflict, where + " exists and is not a symlink to '" + t + "'");
}

Result<void> chmod_in_root(int root_fd, std::string_view path, mode_t mode) {
    const std::string p(path);
    INJECT_TRY(UniqueFd fd, open_in_root(root_fd, p, O_PATH | O_NOFOLLOW));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return fail(sys_error("stat " + p));
    if (S_ISLNK(st.st_mode))
        return fail(Errc::InvalidInput, p + ": refusing to change the mode of a symlink");
    // fchmod() refuses O_PATH fds; chmod on the magic link acts on exactly the opened inode.
    // (Opening a device node for reading just to fchmod it could wake the device.)
    if (::chmod(proc_fd(fd.get()).c_str(), mode & 07777) != 0)
        return fail(sys_error("changing the mode of " + p));
    return ok();
}

namespace {

/// How replace_in_folder() writes.
struct Replace {
    mode_t mode = 0644;
    bool keep_mode = false;  ///< an existing file keeps its own mode
    bool durable = false;    ///< fsync the file before the rename and the folder after it
};

/// The common part of write_in_root() and atomic_write_in_root(): `parent` is the folder, already
/// opened in the root (O_PATH is fine), `name` the last component, `where` the path for messages.
Result<void> replace_in_folder(int parent, const std::string& name, const std::string& where,
                               std::string_view content, const Replace& how) {
    mode_t mode = how.mode & 07777;
    struct stat st {};
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode))
            return fail(Errc::InvalidInput, where + ": refusing to replace a symlink");
        if (S_ISDIR(st.st_mode)) return fail(Errc::InvalidInput, where + ": is a directory");
        if (how.keep_mode) mode = st.st_mode & 07777;
    } else if (errno != ENOENT) {
        return fail(sys_error("checking " + where));
    }
    // O_PATH fds cannot be used for openat() of new files: reopen the folder for real.
    UniqueFd dir(::openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) return fail(sys_error("opening the folder of " + where));
    std::random_device rd;
    std::string tmp;
    UniqueFd fd;
    for (int i = 0; i < 16 && !fd.valid(); ++i) {
        tmp = "." + name + ".tmp" + std::to_string(rd());
        fd.reset(::openat(dir.get(), tmp.c_str(),
                          O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!fd.valid() && errno != EEXIST)
            return fail(sys_error("creating a temporary file for " + where));
    }
    if (!fd.valid()) return fail(sys_error("creating a temporary file for " + where));
    Result<void> r = ok();
    std::string_view rest = content;
    while (r && !rest.empty()) {
        ssize_t n = ::write(fd.get(), rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            r = fail(sys_error("writing " + where));
        else
            rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (r && ::fchmod(fd.get(), mode) != 0) r = fail(sys_error("setting the mode of " + where));
    if (r && how.durable && ::fsync(fd.get()) != 0) r = fail(sys_error("syncing " + where));
    if (r && ::close(fd.release()) != 0) r = fail(sys_error("closing " + where));
    if (r && ::renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0)
        r = fail(sys_error("renaming into " + where));
    if (!r) {
        ::unlinkat(dir.get(), tmp.c_str(), 0);
        return r;
    }
    if (how.durable) ::fsync(dir.get());  // the rename is durable only once the folder is
    return ok();
}

std::string shown(const SplitPath& sp) {
    return sp.dir == "/" ? "/" + sp.name : sp.dir + "/" + sp.name;
}

}  // namespace

Result<void> write_in_root(int root_fd, std::string_view path, std::string_view content,
                           mode_t mode) {
    const auto sp = split_in_root_path(path);
    if (sp.name.empty()) return fail(Errc::InvalidInput, "'/' is a folder");
    INJECT_TRY(UniqueFd parent, mkdir_in_root(root_fd, sp.dir, 0755));
    return replace_in_folder(parent.get(), sp.name, shown(sp), content,
                             Replace{mode, false, false});
}

Result<void> atomic_write_in_root(int root_fd, std::string_view path, std::string_view content,
                                  const AtomicWriteOptions& opts) {
    const auto sp = split_in_root_path(path);
    if (sp.name.empty()) return fail(Errc::InvalidInput, "'/' is a folder");
    INJECT_TRY(UniqueFd parent, open_in_root(root_fd, sp.dir, O_PATH | O_DIRECTORY));
    return replace_in_folder(parent.get(), sp.name, shown(sp), content,
                             Replace{opts.mode, true, opts.durable});
}

Result<void> remove_in_root(int root_fd, std::string_view path, bool directory) {
    const auto sp = split_in_root_path(path);
    if (sp.name.empty()) return fail(Errc::InvalidInput, "cannot remove '/'");
    INJECT_TRY(UniqueFd parent, open_in_root(root_fd, sp.dir, O_PATH | O_DIRECTORY));
    if (::unlinkat(parent.get(), sp.name.c_str(), directory ? AT_REMOVEDIR : 0) != 0)
        return fail(sys_error("removing " + shown(sp)));
    return ok();
}

}  // namespace inject::fs
