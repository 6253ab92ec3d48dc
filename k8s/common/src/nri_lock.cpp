// SPDX-License-Identifier: Apache-2.0
#include "k8s/nri_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace k8s {
namespace {

using inject::Errc;
using inject::fail;
using inject::fs::UniqueFd;

// The folder of `path`, its last component not followed if a symlink; with `create`, made
// (that component only) when missing. A world-writable folder is refused: anyone could then
// replace the file with one they keep locked.
inject::Result<UniqueFd> open_folder(const std::string& path, bool create) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos || slash + 1 == path.size())
        return fail(Errc::InvalidInput, "NRI lock file '" + path + "': want an absolute file path");
    const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    // Not O_PATH: with it O_NOFOLLOW opens a symlink itself instead of failing with ELOOP.
    constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int raw = ::open(dir.c_str(), kFlags);
    if (raw < 0 && errno == ENOENT && create) {
        if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
            return fail(inject::sys_error("NRI lock folder '" + dir + "': mkdir"));
        raw = ::open(dir.c_str(), kFlags);
    }
    const int err = errno;
    UniqueFd fd(raw);
    if (!fd.valid()) {
        if (err == ENOENT)
            return fail(Errc::NotFound, "NRI lock folder '" + dir + "': missing", err);
        if (err == ELOOP || err == ENOTDIR)
            return fail(Errc::Permission,
                        "NRI lock folder '" + dir + "': not a directory (a symlink?), refused",
                        err);
        return fail(inject::sys_error("NRI lock folder '" + dir + "': open", err));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        return fail(inject::sys_error("NRI lock folder '" + dir + "': fstat"));
    if (!S_ISDIR(st.st_mode) || (st.st_mode & S_IWOTH) != 0)
        return fail(Errc::Permission, "NRI lock folder '" + dir + "': world-writable, refused");
    return fd;
}

// The file at `path`, opened, with its folder (to look at the path again) and its fstat.
struct Opened {
    UniqueFd dir;
    UniqueFd fd;
    std::string name;
    struct stat st {};
};

std::string octal(mode_t m) {
    char b[8];
    std::snprintf(b, sizeof(b), "%04o", static_cast<unsigned>(m & 07777));
    return b;
}

// Only root (or, for tests, the checking user itself) may hold the lock: the file must be
// theirs and neither readable nor writable by anyone else (an OFD read lock needs only read).
inject::Result<void> check_safe(const std::string& path, const struct stat& st) {
    if (!S_ISREG(st.st_mode))
        return fail(Errc::Permission, "NRI lock file '" + path + "': not a regular file");
    if (st.st_uid != 0 && st.st_uid != ::geteuid())
        return fail(Errc::Permission, "NRI lock file '" + path + "': owned by uid " +
                                          std::to_string(st.st_uid) + ", not root, refused");
    if ((st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) != 0)
        return fail(Errc::Permission, "NRI lock file '" + path + "': mode " + octal(st.st_mode) +
                                          ", others than its owner may open it, refused");
    return inject::ok();
}

// Whether `o` is still the file at its path (same device and inode).
inject::Result<bool> still_at_path(const std::string& path, const Opened& o) {
    struct stat now {};
    if (::fstatat(o.dir.get(), o.name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return false;
        return fail(inject::sys_error("NRI lock file '" + path + "': stat"));
    }
    return now.st_dev == o.st.st_dev && now.st_ino == o.st.st_ino;
}

// With `create` (the plugin's side) the file is made 0600 when missing, and an older one's
// mode is narrowed to 0600.
inject::Result<Opened> open_lock(const std::string& path, bool create) {
    Opened o;
    INJECT_TRY(o.dir, open_folder(path, create));
    o.name = path.substr(path.rfind('/') + 1);
    // O_NONBLOCK: a FIFO put there must not hang the open; the S_ISREG check then refuses it.
    const int flags = (create ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    const int raw = ::openat(o.dir.get(), o.name.c_str(), flags, 0600);
    const int err = errno;
    o.fd = UniqueFd(raw);
    if (!o.fd.valid()) {
        if (err == ENOENT)
            return fail(Errc::NotFound, "NRI lock file '" + path + "': missing", err);
        if (err == ELOOP)
            return fail(Errc::Permission, "NRI lock file '" + path + "': a symlink, refused", err);
        return fail(inject::sys_error("NRI lock file '" + path + "': open", err));
    }
    if (::fstat(o.fd.get(), &o.st) != 0)
        return fail(inject::sys_error("NRI lock file '" + path + "': fstat"));
    if (create && S_ISREG(o.st.st_mode) && (o.st.st_mode & 077) != 0 &&
        o.st.st_uid == ::geteuid()) {
        if (::fchmod(o.fd.get(), 0600) != 0 || ::fstat(o.fd.get(), &o.st) != 0)
            return fail(inject::sys_error("NRI lock file '" + path + "': chmod 0600"));
    }
    INJECT_TRY_VOID(check_safe(path, o.st));
    return o;
}

// The whole file, from offset 0 to its end whatever its size.
struct flock whole_file(short type) {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    return fl;
}

}  // namespace

inject::Result<NriLock> NriLock::create(const std::string& path) {
    INJECT_TRY(auto o, open_lock(path, true));
    return NriLock(path, std::move(o.fd));
}

inject::Result<void> NriLock::hold() {
    // Another file at the path (the folder cleaned, the file replaced): that one is locked now.
    INJECT_TRY(auto o, open_lock(path_, true));
    struct stat mine {};
    if (::fstat(fd_.get(), &mine) != 0)
        return fail(inject::sys_error("NRI lock file '" + path_ + "': fstat"));
    if (mine.st_dev != o.st.st_dev || mine.st_ino != o.st.st_ino) {
        release();
        fd_ = std::move(o.fd);
    }
    if (held_) return inject::ok();
    struct flock fl = whole_file(F_RDLCK);
    // Not waiting: only a write lock conflicts, which none of ours takes; a stranger's must not
    // stall the plugin (the caller tries again at the next connection).
    if (::fcntl(fd_.get(), F_OFD_SETLK, &fl) != 0) {
        if (errno == EAGAIN || errno == EACCES)
            return fail(Errc::Conflict,
                        "NRI lock file '" + path_ + "': another process holds it for writing",
                        errno);
        return fail(inject::sys_error("NRI lock file '" + path_ + "': lock"));
    }
    held_ = true;
    return inject::ok();
}

void NriLock::release() {
    if (!held_) return;
    struct flock fl = whole_file(F_UNLCK);
    (void)::fcntl(fd_.get(), F_OFD_SETLK, &fl);
    held_ = false;
}

inject::Result<bool> nri_lock_held(const std::string& path) {
    auto o = open_lock(path, false);
    if (!o) {
        if (o.error().code() == Errc::NotFound) return false;
        return fail(std::move(o).error());
    }
    struct flock fl = whole_file(F_WRLCK);
    if (::fcntl(o->fd.get(), F_OFD_GETLK, &fl) != 0)
        return fail(inject::sys_error("NRI lock file '" + path + "': F_OFD_GETLK"));
    if (detail::nri_lock_checked_hook != nullptr) detail::nri_lock_checked_hook();
    // The answer is about the file at the path only if it is still there.
    INJECT_TRY(const bool same, still_at_path(path, *o));
    if (!same)
        return fail(Errc::Conflict,
                    "NRI lock file '" + path + "': replaced while checked, refused");
    return fl.l_type != F_UNLCK;
}

}  // namespace k8s
