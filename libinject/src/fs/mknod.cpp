// SPDX-License-Identifier: Apache-2.0
// Device nodes inside a rootfs: mknodat() on the parent's fd, never on a path string.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "inject/mount.hpp"

namespace inject::fs {
namespace {

std::string describe(mode_t type, dev_t dev) {
    return std::string(type == S_IFBLK ? "b " : "c ") + std::to_string(major(dev)) + ":" +
           std::to_string(minor(dev));
}

}  // namespace

Result<void> mknod_in_root(int root_fd, std::string_view path, const NodeSpec& node) {
    if (node.type != S_IFCHR && node.type != S_IFBLK)
        return fail(Errc::InvalidInput,
                    "device node " + std::string(path) + ": type must be c or b");
    const auto sp = split_in_root_path(path);
    if (sp.name.empty()) return fail(Errc::InvalidInput, "cannot make '/' a device node");
    const std::string where = sp.dir == "/" ? "/" + sp.name : sp.dir + "/" + sp.name;
    INJECT_TRY(UniqueFd parent, mkdir_in_root(root_fd, sp.dir, 0755));
    struct stat st {};
    if (::fstatat(parent.get(), sp.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if ((st.st_mode & S_IFMT) == node.type && st.st_rdev == node.dev) return ok();
        return fail(Errc::Conflict,
                    where + " exists and is not the device node " + describe(node.type, node.dev));
    }
    if (errno != ENOENT) return fail(sys_error("checking " + where));
    if (::mknodat(parent.get(), sp.name.c_str(), node.type | (node.mode & 07777), node.dev) != 0)
        return fail(sys_error("creating device node " + where));
    // Fix owner and mode on the node we just made (mknod applied the umask), through its own fd.
    UniqueFd fd(::openat(parent.get(), sp.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return fail(sys_error("opening " + where));
    if (::fstat(fd.get(), &st) != 0 || (st.st_mode & S_IFMT) != node.type || st.st_rdev != node.dev)
        return fail(Errc::Conflict, where + " changed after it was created");
    if (::fchownat(fd.get(), "", node.uid, node.gid, AT_EMPTY_PATH) != 0)
        return fail(sys_error("changing the owner of " + where));
    const std::string magic = "/proc/self/fd/" + std::to_string(fd.get());
    if (::chmod(magic.c_str(), node.mode & 07777) != 0)
        return fail(sys_error("changing the mode of " + where));
    return ok();
}

}  // namespace inject::fs
