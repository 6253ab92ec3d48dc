// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// File helpers: RAII file descriptors, bounded reads, atomic writes, and path resolution
/// confined to a root directory (openat2 RESOLVE_IN_ROOT, with a checked component walk where
/// openat2 is missing).

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "inject/result.hpp"

namespace inject::fs {

/// An owned file descriptor, closed on destruction.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        if (this != &o) reset(o.release());
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
    int release() noexcept {
        int f = fd_;
        fd_ = -1;
        return f;
    }
    void reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

/// Reads a whole file; refuses files larger than `max_bytes` (InvalidInput).
[[nodiscard]] Result<std::string> read_file(const std::string& path, std::size_t max_bytes);

/// Options of atomic_write().
struct AtomicWriteOptions {
    /// Mode of a new file. An existing file keeps its own mode.
    mode_t mode = 0644;
    /// fsync the file and its folder so the new content survives a crash. Off only for files
    /// consumed at once whose loss on a crash is harmless (a bundle's config.json, which the
    /// runtime shim rewrites on every container start: fsync costs milliseconds there). The
    /// replace stays atomic either way.
    bool durable = true;
    /// Name the temp file `.<name>.tmp.XXXXXX` (a dot-file) instead of `<name>.tmp.XXXXXX`: for
    /// folders whose reader skips dot-files but reads every other name it finds, such as NFD's
    /// features.d, which would otherwise publish a half-written temp file.
    bool hidden_temp = false;
};

/// Replaces `path` with `content` atomically: a temp file in the same folder, fsync, rename,
/// fsync of the folder. A failure leaves the old file as it was and no temp file behind.
/// Refuses (InvalidInput) when `path` is a symlink or a directory.
[[nodiscard]] Result<void> atomic_write(const std::string& path, std::string_view content,
                                        const AtomicWriteOptions& opts = {});

/// The mkostemp template atomic_write() names its temp file by, for `path`:
/// `<path>.tmp.XXXXXX`, or `<dir>/.<name>.tmp.XXXXXX` with `hidden`.
[[nodiscard]] std::string atomic_temp_template(const std::string& path, bool hidden = false);
/// When `file_name` (no folder) is a temp file atomic_write() makes (not hidden): the name of
/// the file it was to replace; else empty. A crash mid-write leaves one behind.
[[nodiscard]] std::string atomic_temp_target(std::string_view file_name);

/// Joins `root` and the absolute `path` as strings ("/" root returns `path`). Only for host
/// paths under a trusted root (driver-root, dev-root) that are then resolved with
/// resolve_in_root(); never for a container rootfs.
[[nodiscard]] std::string join(std::string_view root, std::string_view path);

/// Opens `path` relative to `root_fd` with every symlink and ".." resolved inside that root
/// (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS; a component walk where openat2 is missing).
/// `flags` are open(2) flags; O_CLOEXEC is always added.
[[nodiscard]] Result<UniqueFd> open_in_root(int root_fd, std::string_view path, int flags);

/// Opens a directory as a root for open_in_root().
[[nodiscard]] Result<UniqueFd> open_root(const std::string& root);

/// Resolves `path` inside `root` (symlinks followed within the root) and returns the host
/// path of the result (`root` + resolved path). NotFound if it does not exist.
[[nodiscard]] Result<std::string> resolve_in_root(const std::string& root, std::string_view path);

/// The path an open fd refers to (readlink of /proc/self/fd/N).
[[nodiscard]] Result<std::string> fd_path(int fd);

}  // namespace inject::fs
