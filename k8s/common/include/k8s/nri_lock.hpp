// SPDX-License-Identifier: Apache-2.0
#pragma once

// enflame-nri-plugin's liveness lock: how the device plugin, in its --require-nri mode, knows
// that the NRI plugin runs on this node before it answers an Allocate with an env only that
// plugin turns into a card (containerd 1.7's NRI has no required plugins: without the plugin the
// container would start without its card).
//
// The NRI plugin holds an open-file-description (OFD) read lock on the whole file while the
// runtime has it registered (its Synchronize answered); the kernel drops it when the process
// dies, however it dies. The device plugin asks with F_OFD_GETLK whether a write lock could be
// placed: a conflicting lock means a plugin holds it. OFD locks, not flock(2): the check takes
// no lock itself, so two concurrent Allocate checks never see each other's probe as a live
// plugin, and read locks are shared, so two plugin processes (a rolling update's old and new
// pod) both hold it.
//
// The folder is ours (a hostPath both DaemonSets mount): its last component and the file are
// opened with O_NOFOLLOW, the file must be a regular file, and a world-writable folder is refused.
// Only root may hold it: the file is 0600 and root's (an OFD read lock needs only read access),
// else both sides refuse it; the checker also refuses when another file took the path meanwhile.

#include <string>
#include <string_view>

#include "inject/fs.hpp"
#include "inject/result.hpp"

namespace k8s {

/// The lock's usual place on the host.
inline constexpr std::string_view kNriLockPath = "/var/run/enflame/nri-plugin.lock";

/// The NRI plugin's side: the lock file, opened (its folder and the file created when missing).
class NriLock {
public:
    /// Opens (creating, mode 0600, an older file narrowed to 0600; the folder 0755) `path`.
    /// Errors name the path: also a file not root's.
    [[nodiscard]] static inject::Result<NriLock> create(const std::string& path);

    /// Takes the shared lock (no-op when held), without waiting; when another file is at the path
    /// now (made anew when missing), that one. Errors name the path; Conflict when another
    /// process holds a write lock on it.
    [[nodiscard]] inject::Result<void> hold();
    /// Drops it (no-op when not held).
    void release();
    [[nodiscard]] bool held() const { return held_; }
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    NriLock(std::string path, inject::fs::UniqueFd fd)
        : path_(std::move(path)), fd_(std::move(fd)) {}
    std::string path_;
    inject::fs::UniqueFd fd_;
    bool held_ = false;
};

/// The device plugin's side: whether some process holds the lock on `path`. A missing file (or
/// folder) is false: no plugin ever ran. Errors (a symlink, not a regular file, a world-writable
/// folder, a file others than root may open or not root's, replaced while checked, I/O) name
/// the path; the caller refuses then too.
[[nodiscard]] inject::Result<bool> nri_lock_held(const std::string& path);

namespace detail {
/// Tests only: called by nri_lock_held between its lock query and its look at the path again.
inline void (*nri_lock_checked_hook)() = nullptr;
}  // namespace detail

}  // namespace k8s
