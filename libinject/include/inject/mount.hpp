// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// File operations inside a root (a container's rootfs, or a node's root mounted into the
/// installer's pod), all on file descriptors: every path is resolved
/// with open_in_root() (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, or the checked walk),
/// every creation is relative to the already-opened parent (mkdirat, mknodat, symlinkat), and
/// every mount names its target as /proc/self/fd/<n> of the opened target. No path string is
/// checked and then used (the CVE-2024-0132 / CVE-2025-23359 class).
///
/// `root_fd` is an O_PATH (or O_RDONLY) directory fd of the root (fs::open_root()). Paths are
/// paths as seen inside the root ("/usr/lib/libefml.so.1"); "." and ".." are clamped at the root,
/// and an absolute symlink resolves from the root, never from the caller's own "/".

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "inject/fs.hpp"
#include "inject/result.hpp"

namespace inject::fs {

/// `mkdir -p` inside the root: missing components are created with mkdirat() on the fd of the
/// previous one; existing ones (symlinks included) are resolved inside the root. Returns an
/// O_PATH fd of the final directory. A component that is not a directory is NotFound (ENOTDIR).
[[nodiscard]] Result<UniqueFd> mkdir_in_root(int root_fd, std::string_view path,
                                             mode_t mode = 0755);

/// Opens `path` in the root as an O_PATH fd, creating it (and its parents) when missing: an
/// empty regular file with `mode`, or a directory when `directory` is true. An existing target
/// of the other kind is a Conflict. Used to make bind-mount targets.
[[nodiscard]] Result<UniqueFd> ensure_in_root(int root_fd, std::string_view path, bool directory,
                                              mode_t mode = 0644);

/// A device node to create.
struct NodeSpec {
    mode_t type = S_IFCHR;  ///< S_IFCHR or S_IFBLK
    mode_t mode = 0666;     ///< permission bits (the umask does not apply)
    dev_t dev = 0;          ///< makedev(major, minor)
    uid_t uid = 0;
    gid_t gid = 0;
};

/// Creates the device node `path` inside the root with mknodat() on the parent's fd (parents are
/// created as by mkdir_in_root()). An existing node of the same type and number is kept
/// (idempotent); anything else at the path (a file, a symlink, another node) is a Conflict.
[[nodiscard]] Result<void> mknod_in_root(int root_fd, std::string_view path, const NodeSpec& node);

/// How bind_mount_in_root() mounts.
struct BindOptions {
    bool read_only = true;
    bool nosuid = true;
    bool nodev = true;
    bool noexec = false;
};

/// Bind-mounts the host object open as `source_fd` (any fd, O_PATH is fine) onto `target` in
/// the root: the target is created when missing (a directory for a directory source, an empty
/// file otherwise), opened in the root, and mounted through /proc/self/fd/<n>. The new mount is
/// then reopened in the root, checked to be the source (a swapped target fails with Conflict),
/// and remounted with the options. A target that already is the source is left alone
/// (idempotent). The source must be visible in the caller's mount namespace.
[[nodiscard]] Result<void> bind_mount_in_root(int source_fd, int root_fd, std::string_view target,
                                              const BindOptions& opts = {});

/// Creates the symlink `link` -> `target` inside the root (symlinkat on the parent's fd; the
/// target text is stored, never followed). An existing symlink with the same target is kept;
/// anything else at `link` is a Conflict.
[[nodiscard]] Result<void> symlink_in_root(int root_fd, std::string_view target,
                                           std::string_view link);

/// Changes the mode of `path` inside the root. The last component must not be a symlink
/// (InvalidInput): the mode is applied to the inode opened in the root, never to a path string.
[[nodiscard]] Result<void> chmod_in_root(int root_fd, std::string_view path, mode_t mode);

/// Writes `content` to `path` inside the root atomically (temp file created with O_EXCL in the
/// opened parent, renameat within that parent). Parents are created. Refuses a symlink or a
/// directory at `path`. Not fsynced: it writes into a container's rootfs, which does not outlive
/// a crash in a usable state anyway, and the hook writes the file again on every start; two
/// fsyncs on a busy disk were about half a millisecond of every hooked start.
[[nodiscard]] Result<void> write_in_root(int root_fd, std::string_view path,
                                         std::string_view content, mode_t mode = 0644);

/// Replaces `path` inside the root with `content` atomically and, with `opts.durable`, durably:
/// a temp file created with O_EXCL in the folder opened in the root, fsync, renameat within that
/// folder, fsync of the folder. The folder must exist (NotFound otherwise: the caller decides
/// which folders it creates). An existing file keeps its own mode; a new one gets `opts.mode`.
/// Refuses a symlink or a directory at `path` (InvalidInput). A failure leaves the old file as
/// it was and no temp file behind. For files that must outlive a crash (a host's engine config).
[[nodiscard]] Result<void> atomic_write_in_root(int root_fd, std::string_view path,
                                                std::string_view content,
                                                const AtomicWriteOptions& opts = {});

/// Reads the whole file `path` inside the root; refuses files larger than `max_bytes` and
/// anything but a regular file (InvalidInput: a FIFO would block). NotFound when it does not
/// exist.
[[nodiscard]] Result<std::string> read_in_root(int root_fd, std::string_view path,
                                               std::size_t max_bytes);

/// Removes the file `path` (with `directory`, the empty folder) inside the root: the folder is
/// opened in the root and the last component removed with unlinkat() on it, so a symlink there
/// is removed itself, never followed. NotFound when it does not exist.
[[nodiscard]] Result<void> remove_in_root(int root_fd, std::string_view path,
                                          bool directory = false);

/// Splits a container path into its lexically normalised folder and last component
/// ("/a/./b/../c" -> {"/a", "c"}); ".." is clamped at the root. The name is empty for "/".
struct SplitPath {
    std::string dir;
    std::string name;
};
[[nodiscard]] SplitPath split_in_root_path(std::string_view path);

}  // namespace inject::fs
