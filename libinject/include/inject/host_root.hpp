// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The node's root as `enflame-ctk toolkit` and `runtime configure` see it: opened once, and every
/// host path resolved inside it with openat2 RESOLVE_IN_ROOT (inject::fs::open_in_root). From a
/// pod that mounts the node's root at /host, the node's absolute links (`/var/run` -> `/run`)
/// lead where they lead on the node, not into the pod's own /run, and neither a `..` nor a
/// symlink in the node's root can lead a read or a write outside it.

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/fs.hpp"
#include "inject/result.hpp"

namespace inject::toolkit {

class HostRoot {
public:
    /// Opens `path` (the --host-root folder; "/" on the node itself).
    [[nodiscard]] static inject::Result<HostRoot> open(const std::string& path);

    [[nodiscard]] int fd() const noexcept { return fd_.get(); }
    /// `host_path` as the caller's own namespace names it: for messages only, never opened.
    [[nodiscard]] std::string show(std::string_view host_path) const;

    /// The file's bytes, nullopt when it does not exist.
    [[nodiscard]] inject::Result<std::optional<std::string>> read(std::string_view host_path,
                                                                  std::size_t max) const;
    /// Replaces the file atomically and durably (temp file, fsync, rename in its folder, fsync of
    /// the folder). A new file gets `mode`, an existing one keeps its own unless `force_mode`.
    [[nodiscard]] inject::Result<void> write(std::string_view host_path, std::string_view text,
                                             mode_t mode, bool force_mode = false) const;
    /// Removes the file; one that does not exist is fine.
    [[nodiscard]] inject::Result<void> remove(std::string_view host_path) const;
    /// Removes the folder if it is empty; anything else is left alone, silently.
    void remove_dir_if_empty(std::string_view host_path) const;
    [[nodiscard]] bool exists(std::string_view host_path) const;
    /// The names in the folder (no "." or ".."), unsorted; empty when it is missing or no folder.
    [[nodiscard]] std::vector<std::string> list(std::string_view host_dir) const;
    /// A regular file with an execute bit.
    [[nodiscard]] bool executable(std::string_view host_path) const;
    /// `mkdir -p host_dir`, appending each folder it created (host path, outermost first) to
    /// `created`.
    [[nodiscard]] inject::Result<void> make_dirs(std::string_view host_dir,
                                                 std::vector<std::string>& created) const;
    /// The pid listening on the unix socket `host_path` (SO_PEERCRED, connected through the
    /// socket opened in the root); 0 when nothing listens there.
    [[nodiscard]] pid_t socket_owner(std::string_view host_path) const;

private:
    HostRoot(std::string path, inject::fs::UniqueFd fd)
        : path_(std::move(path)), fd_(std::move(fd)) {}
    std::string path_;
    inject::fs::UniqueFd fd_;
};

}  // namespace inject::toolkit
