// SPDX-License-Identifier: Apache-2.0
#include "k8s/watch.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

namespace k8s {

inject::Result<KubeletWatcher> KubeletWatcher::create(const std::string& dir, std::string kubelet_socket) {
    inject::fs::UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!fd.valid()) return inject::fail(inject::sys_error("inotify_init1"));
    if (::inotify_add_watch(fd.get(), dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0)
        return inject::fail(inject::sys_error("watching '" + dir + "'"));
    return KubeletWatcher(std::move(fd), std::move(kubelet_socket));
}

inject::Result<bool> KubeletWatcher::restarted(const std::function<bool(const std::string&)>& ours_gone) {
    bool kubelet_created = false;
    std::vector<std::string> removed;
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
            const std::string name = ev.len > 0 ? std::string(buf + off + sizeof ev) : std::string();
            if ((ev.mask & (IN_CREATE | IN_MOVED_TO)) && name == kubelet_) kubelet_created = true;
            if ((ev.mask & (IN_DELETE | IN_MOVED_FROM)) && !name.empty()) removed.push_back(name);
            off += static_cast<ssize_t>(sizeof ev + ev.len);
        }
    }
    if (kubelet_created) return true;
    // Asked after the whole batch is read: by then our own re-serve has made its new file.
    return std::any_of(removed.begin(), removed.end(), [&](const std::string& n) { return ours_gone(n); });
}

}  // namespace k8s
