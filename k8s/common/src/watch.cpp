// SPDX-License-Identifier: Apache-2.0
#include "k8s/watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "inject/log.hpp"

namespace k8s {

namespace {

constexpr std::uint32_t kDirEvents =
    IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF;

/// `dir` without a trailing slash: its parent and its name are what a removal and return touch.
std::filesystem::path folder(const std::string& dir) {
    std::filesystem::path p(dir);
    return p.has_filename() ? p : p.parent_path();
}

}  // namespace

inject::Result<KubeletWatcher> KubeletWatcher::create(const std::string& dir,
                                                      std::string kubelet_socket) {
    inject::fs::UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!fd.valid()) return inject::fail(inject::sys_error("inotify_init1"));
    KubeletWatcher w(std::move(fd), dir, std::move(kubelet_socket));
    INJECT_TRY_VOID(w.arm());
    w.seen_ = w.scan();
    return w;
}

inject::Result<void> KubeletWatcher::arm() {
    wd_ = ::inotify_add_watch(fd_.get(), dir_.c_str(), kDirEvents | IN_ONLYDIR);
    if (wd_ < 0) return inject::fail(inject::sys_error("watching '" + dir_ + "'"));
    return inject::ok();
}

inject::Result<void> KubeletWatcher::wait_for_dir() {
    const std::string parent = folder(dir_).parent_path().string();
    parent_wd_ =
        ::inotify_add_watch(fd_.get(), parent.c_str(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
    if (parent_wd_ < 0)
        return inject::fail(
            inject::sys_error("watching '" + parent + "' for '" + dir_ + "' to come back"));
    return inject::ok();
}

std::map<std::string, KubeletWatcher::Id> KubeletWatcher::scan() const {
    std::map<std::string, Id> out;
    DIR* d = ::opendir(dir_.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        struct stat st {};
        // An inode number comes back for the next file made; with its change time it does not.
        if (name != "." && name != ".." &&
            ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            out.emplace(name,
                        Id{st.st_ino, st.st_ctim.tv_sec * 1'000'000'000LL + st.st_ctim.tv_nsec});
    }
    ::closedir(d);
    return out;
}

inject::Result<bool> KubeletWatcher::handle(const std::vector<Event>& events,
                                            const OursGone& ours_gone) {
    bool kubelet_created = false;
    bool rescan = false;
    std::set<std::string> removed;
    for (const auto& ev : events) {
        if (ev.mask & IN_Q_OVERFLOW) {
            inject::log::warn(
                "watching '{}': inotify queue overflow, events lost: looking at the folder again",
                dir_);
            rescan = true;
            continue;
        }
        if (ev.wd == parent_wd_ && parent_wd_ >= 0) {
            if ((ev.mask & (IN_CREATE | IN_MOVED_TO)) &&
                ev.name == folder(dir_).filename().string())
                rescan = true;
            continue;
        }
        if (ev.wd != wd_) continue;  // an old watch's last events (IN_IGNORED after removal)
        if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
            if (ev.mask & IN_MOVE_SELF)
                ::inotify_rm_watch(fd_.get(), wd_);  // it follows the old folder
            wd_ = -1;
            continue;
        }
        if ((ev.mask & (IN_CREATE | IN_MOVED_TO)) && ev.name == kubelet_) kubelet_created = true;
        if ((ev.mask & (IN_DELETE | IN_MOVED_FROM)) && !ev.name.empty()) removed.insert(ev.name);
    }
    if (wd_ < 0) {
        // The folder is gone: wait for it on its parent; it may be back already.
        if (parent_wd_ < 0) {
            inject::log::warn("watching '{}': the folder was removed: waiting for it to come back",
                              dir_);
            INJECT_TRY_VOID(wait_for_dir());
        }
        struct stat st {};
        if (::stat(dir_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) rescan = true;
        if (rescan) {
            INJECT_TRY_VOID(arm());
            ::inotify_rm_watch(fd_.get(), parent_wd_);
            parent_wd_ = -1;
            inject::log::info("watching '{}' again: the folder is back", dir_);
        } else {
            // Nothing to serve into yet: what was removed is judged, against the folder as it
            // was, once it is back.
            return false;
        }
    }
    const auto now = scan();
    if (rescan) {
        for (const auto& [name, ino] : seen_) {
            const auto it = now.find(name);
            if (it == now.end() || it->second != ino) removed.insert(name);
        }
        const auto k = now.find(kubelet_);
        const auto was = seen_.find(kubelet_);
        if (k != now.end() && (was == seen_.end() || was->second != k->second))
            kubelet_created = true;
    }
    seen_ = now;
    if (kubelet_created) return true;
    // Asked after the whole batch is read: by then our own re-serve has made its new file.
    return std::any_of(removed.begin(), removed.end(),
                       [&](const std::string& n) { return ours_gone(n); });
}

inject::Result<bool> KubeletWatcher::restarted(const OursGone& ours_gone) {
    std::vector<Event> events;
    alignas(inotify_event) char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n < 0) return inject::fail(inject::sys_error("reading inotify events"));
        if (n == 0) break;
        for (ssize_t off = 0; off < n;) {
            inotify_event ev{};
            std::memcpy(&ev, buf + off, sizeof ev);
            events.push_back(
                {ev.wd, ev.mask, ev.len > 0 ? std::string(buf + off + sizeof ev) : std::string()});
            off += static_cast<ssize_t>(sizeof ev + ev.len);
        }
    }
    return handle(events, ours_gone);
}

}  // namespace k8s
