// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Noticing a kubelet restart without polling. Kubelet, when it starts, deletes every socket in
/// its device-plugin folder (ours too) and creates kubelet.sock again (KUBERNETES.md section 2).
/// An inotify watch on the folder sees both.

#include "inject/fs.hpp"
#include "inject/result.hpp"

#include <functional>
#include <string>

namespace k8s {

/// An inotify watch on kubelet's socket folder.
class KubeletWatcher {
public:
    /// Watches `dir` for `kubelet_socket` (a basename) being created and for files being
    /// removed from it.
    [[nodiscard]] static inject::Result<KubeletWatcher> create(const std::string& dir, std::string kubelet_socket);

    /// The fd to poll for POLLIN.
    [[nodiscard]] int fd() const noexcept { return fd_.get(); }

    /// Reads the pending events without blocking. True when one of them says kubelet restarted:
    /// kubelet's socket was created, or a removed file (its basename passed to `ours_gone`) is
    /// one of our sockets and `ours_gone` confirms it is gone (our own re-serve replaces the
    /// file too; the caller knows whether the file on disk is still the one it made).
    [[nodiscard]] inject::Result<bool> restarted(const std::function<bool(const std::string&)>& ours_gone);

private:
    KubeletWatcher(inject::fs::UniqueFd fd, std::string kubelet_socket)
        : fd_(std::move(fd)), kubelet_(std::move(kubelet_socket)) {}

    inject::fs::UniqueFd fd_;
    std::string kubelet_;
};

}  // namespace k8s
