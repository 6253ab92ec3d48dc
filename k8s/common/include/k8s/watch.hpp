// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Noticing a kubelet restart without polling. Kubelet, when it starts, deletes every socket in
/// its device-plugin folder (ours too) and creates kubelet.sock again (docs/kubelet-wire.md,
/// device plugin). An inotify watch on the folder sees both. The watch does not go deaf: after a
/// queue overflow (events lost) the folder is compared with what it held before, and when the
/// folder itself is removed its parent is watched until it is back, then the watch is made again.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "inject/fs.hpp"
#include "inject/result.hpp"

namespace k8s {

/// An inotify watch on kubelet's socket folder.
class KubeletWatcher {
public:
    /// One inotify event: its watch, mask and name (empty for none).
    struct Event {
        int wd = -1;
        std::uint32_t mask = 0;
        std::string name;
    };
    using OursGone = std::function<bool(const std::string&)>;

    /// Watches `dir` for `kubelet_socket` (a basename) being created and for files being
    /// removed from it.
    [[nodiscard]] static inject::Result<KubeletWatcher> create(const std::string& dir,
                                                               std::string kubelet_socket);

    /// The fd to poll for POLLIN.
    [[nodiscard]] int fd() const noexcept { return fd_.get(); }

    /// Reads the pending events without blocking. True when one of them says kubelet restarted:
    /// kubelet's socket was created, or a removed file (its basename passed to `ours_gone`) is
    /// one of our sockets and `ours_gone` confirms it is gone (our own re-serve replaces the
    /// file too; the caller knows whether the file on disk is still the one it made).
    [[nodiscard]] inject::Result<bool> restarted(const OursGone& ours_gone);

    /// What `restarted` does with the events it read (a test feeds its own, IN_Q_OVERFLOW
    /// included). An overflow, or the folder back after its removal, compares the folder with
    /// the files it held after the last batch: a name gone or replaced is a removal,
    /// kubelet's socket new or replaced a creation.
    [[nodiscard]] inject::Result<bool> handle(const std::vector<Event>& events,
                                              const OursGone& ours_gone);

private:
    KubeletWatcher(inject::fs::UniqueFd fd, std::string dir, std::string kubelet_socket)
        : fd_(std::move(fd)), dir_(std::move(dir)), kubelet_(std::move(kubelet_socket)) {}

    [[nodiscard]] inject::Result<void> arm();           ///< watch dir_ (wd_)
    [[nodiscard]] inject::Result<void> wait_for_dir();  ///< watch dir_'s parent until dir_ is back
    /// A file as a rescan tells it from another: inode and change time (ns).
    struct Id {
        ino_t ino = 0;
        long long ctime_ns = 0;
        bool operator==(const Id&) const = default;
    };
    [[nodiscard]] std::map<std::string, Id> scan() const;

    inject::fs::UniqueFd fd_;
    std::string dir_;
    std::string kubelet_;
    int wd_ = -1;                     ///< the watch on dir_ (-1: the folder is gone)
    int parent_wd_ = -1;              ///< the watch on its parent while it is gone
    std::map<std::string, Id> seen_;  ///< dir_'s files after the last batch
};

}  // namespace k8s
