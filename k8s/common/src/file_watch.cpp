// SPDX-License-Identifier: Apache-2.0
#include "k8s/file_watch.hpp"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace k8s {

namespace {

constexpr std::uint32_t kFileEvents =
    IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB;
constexpr std::uint32_t kSelfEvents = IN_DELETE_SELF | IN_MOVE_SELF;

bool is_dir(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

inject::Result<FileWatch> FileWatch::create(std::string path) {
    const std::filesystem::path p(path);
    if (!p.is_absolute() || !p.has_filename())
        return inject::fail(inject::Errc::InvalidInput,
                            "'" + path + "': want the absolute path of a file");
    inject::fs::UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!fd.valid()) return inject::fail(inject::sys_error("inotify_init1"));
    FileWatch w(std::move(fd), std::move(path));
    INJECT_TRY_VOID(w.arm());
    return w;
}

inject::Result<bool> FileWatch::arm() {
    if (wd_ >= 0) (void)::inotify_rm_watch(fd_.get(), wd_);
    wd_ = -1;
    std::filesystem::path dir = std::filesystem::path(path_).parent_path();
    while (!is_dir(dir.string()) && dir.has_relative_path()) dir = dir.parent_path();
    watched_ = dir.string();
    const bool own = watched_ == std::filesystem::path(path_).parent_path().string();
    wd_ = ::inotify_add_watch(fd_.get(), watched_.c_str(),
                              (own ? kFileEvents : IN_CREATE | IN_MOVED_TO) | kSelfEvents);
    if (wd_ < 0) return inject::fail(inject::sys_error("inotify_add_watch " + watched_));
    struct stat st {};
    return own && ::stat(path_.c_str(), &st) == 0;
}

inject::Result<bool> FileWatch::changed() {
    const std::filesystem::path file(path_);
    const std::string dir = file.parent_path().string();
    const std::string name = file.filename().string();
    bool changed = false, rearm = false;
    alignas(inotify_event) char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) break;
        if (n <= 0) return inject::fail(inject::sys_error("reading inotify events"));
        for (ssize_t i = 0; i < n;) {
            const auto* ev = reinterpret_cast<const inotify_event*>(buf + i);
            i += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
            const std::string ev_name = ev->len ? std::string(ev->name) : std::string();
            if (ev->mask & IN_Q_OVERFLOW) {
                changed = rearm = true;
            } else if (ev->mask & (kSelfEvents | IN_IGNORED)) {
                changed = rearm = true;  // our folder went: watch what is left of the path
            } else if (watched_ == dir) {
                changed = changed || ev_name == name;
            } else if (ev->mask & IN_ISDIR) {
                rearm = true;  // a folder on the way may have appeared
            }
        }
    }
    if (rearm) {
        INJECT_TRY(const bool exists, arm());
        changed = changed || exists;
    }
    return changed;
}

}  // namespace k8s
