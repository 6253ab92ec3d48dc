// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Noticing that one file was written, replaced or removed, without polling: an inotify watch
/// on the file's folder. The folder need not exist yet: until it does, the nearest existing
/// ancestor is watched, one level deeper each time the next folder appears, so a daemon that
/// starts before the writer (the DRS manager makes its folder on its first write) still sees
/// the first write. A queue overflow (events lost) counts as a change.

#include <cstdint>
#include <string>

#include "inject/fs.hpp"
#include "inject/result.hpp"

namespace k8s {

class FileWatch {
public:
    /// Watches `path` (absolute).
    [[nodiscard]] static inject::Result<FileWatch> create(std::string path);

    /// The fd to poll for POLLIN.
    [[nodiscard]] int fd() const noexcept { return fd_.get(); }

    /// Reads the pending events without blocking. True when one of them is a write, rename or
    /// removal of the file, or when a folder on its path appeared and the file is in it.
    [[nodiscard]] inject::Result<bool> changed();

    /// The folder watched now: the file's, or an ancestor while that is missing.
    [[nodiscard]] const std::string& watching() const noexcept { return watched_; }

private:
    FileWatch(inject::fs::UniqueFd fd, std::string path)
        : fd_(std::move(fd)), path_(std::move(path)) {}
    /// Watches the deepest existing folder on the file's path. True when the file exists.
    [[nodiscard]] inject::Result<bool> arm();

    inject::fs::UniqueFd fd_;
    std::string path_;
    std::string watched_;
    int wd_ = -1;
};

}  // namespace k8s
