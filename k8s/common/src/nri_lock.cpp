// SPDX-License-Identifier: Apache-2.0
#include "k8s/nri_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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

inject::Result<UniqueFd> open_lock(const std::string& path, bool create) {
    INJECT_TRY(const auto dir, open_folder(path, create));
    const std::string name = path.substr(path.rfind('/') + 1);
    // O_NONBLOCK: a FIFO put there must not hang the open; the S_ISREG check then refuses it.
    const int flags = (create ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    const int raw = ::openat(dir.get(), name.c_str(), flags, 0644);
    const int err = errno;
    UniqueFd fd(raw);
    if (!fd.valid()) {
        if (err == ENOENT)
            return fail(Errc::NotFound, "NRI lock file '" + path + "': missing", err);
        if (err == ELOOP)
            return fail(Errc::Permission, "NRI lock file '" + path + "': a symlink, refused", err);
        return fail(inject::sys_error("NRI lock file '" + path + "': open", err));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        return fail(inject::sys_error("NRI lock file '" + path + "': fstat"));
    if (!S_ISREG(st.st_mode))
        return fail(Errc::Permission, "NRI lock file '" + path + "': not a regular file");
    return fd;
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
    INJECT_TRY(auto fd, open_lock(path, true));
    return NriLock(path, std::move(fd));
}

inject::Result<void> NriLock::hold() {
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
    auto fd = open_lock(path, false);
    if (!fd) {
        if (fd.error().code() == Errc::NotFound) return false;
        return fail(std::move(fd).error());
    }
    struct flock fl = whole_file(F_WRLCK);
    if (::fcntl(fd->get(), F_OFD_GETLK, &fl) != 0)
        return fail(inject::sys_error("NRI lock file '" + path + "': F_OFD_GETLK"));
    return fl.l_type != F_UNLCK;
}

}  // namespace k8s
