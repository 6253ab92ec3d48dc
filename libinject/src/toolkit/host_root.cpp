// SPDX-License-Identifier: Apache-2.0
#include "inject/host_root.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "inject/mount.hpp"

namespace inject::toolkit {

inject::Result<HostRoot> HostRoot::open(const std::string& path) {
    INJECT_TRY(auto fd, fs::open_root(path));
    return HostRoot(path, std::move(fd));
}

std::string HostRoot::show(std::string_view host_path) const {
    return fs::join(path_, host_path);
}

inject::Result<std::optional<std::string>> HostRoot::read(std::string_view host_path,
                                                          std::size_t max) const {
    auto t = fs::read_in_root(fd(), host_path, max);
    if (!t && t.error().code() == inject::Errc::NotFound) return std::optional<std::string>();
    if (!t) return inject::fail(std::move(t).error().context("reading '" + show(host_path) + "'"));
    return std::optional<std::string>(std::move(*t));
}

inject::Result<void> HostRoot::write(std::string_view host_path, std::string_view text, mode_t mode,
                                     bool force_mode) const {
    fs::AtomicWriteOptions wo;
    wo.mode = mode;
    auto r = fs::atomic_write_in_root(fd(), host_path, text, wo);
    if (r && force_mode) r = fs::chmod_in_root(fd(), host_path, mode);
    if (!r) return inject::fail(std::move(r).error().context("writing '" + show(host_path) + "'"));
    return inject::ok();
}

inject::Result<void> HostRoot::remove(std::string_view host_path) const {
    auto r = fs::remove_in_root(fd(), host_path);
    if (!r && r.error().code() != inject::Errc::NotFound)
        return inject::fail(std::move(r).error().context("removing '" + show(host_path) + "'"));
    return inject::ok();
}

void HostRoot::remove_dir_if_empty(std::string_view host_path) const {
    (void)fs::remove_in_root(fd(), host_path, true);
}

bool HostRoot::exists(std::string_view host_path) const {
    return fs::open_in_root(fd(), host_path, O_PATH).has_value();
}

std::vector<std::string> HostRoot::list(std::string_view host_dir) const {
    std::vector<std::string> names;
    auto f = fs::open_in_root(fd(), host_dir, O_RDONLY | O_DIRECTORY);
    if (!f) return names;
    DIR* d = ::fdopendir(f->get());
    if (d == nullptr) return names;
    (void)f->release();  // closedir closes it
    while (const dirent* e = ::readdir(d)) {
        const std::string_view n = e->d_name;
        if (n != "." && n != "..") names.emplace_back(n);
    }
    ::closedir(d);
    return names;
}

bool HostRoot::executable(std::string_view host_path) const {
    auto f = fs::open_in_root(fd(), host_path, O_PATH);
    struct stat st {};
    return f && ::fstat(f->get(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
}

inject::Result<void> HostRoot::make_dirs(std::string_view host_dir,
                                         std::vector<std::string>& created) const {
    std::vector<std::string> missing;
    for (std::filesystem::path p{std::string(host_dir)}; p.has_relative_path();
         p = p.parent_path()) {
        if (exists(p.string())) break;
        missing.push_back(p.string());
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        // mkdir_in_root creates the one missing component in the folder it opened in the root
        auto r = fs::mkdir_in_root(fd(), *it, 0755);
        if (!r) return inject::fail(std::move(r).error().context("creating '" + show(*it) + "'"));
        created.push_back(*it);
    }
    return inject::ok();
}

pid_t HostRoot::socket_owner(std::string_view host_path) const {
    auto sock = fs::open_in_root(fd(), host_path, O_PATH);
    if (!sock) return 0;
    // connect() through the opened socket's magic link: the socket the root names, whatever
    // the caller's own namespace has at that path, and no 108-byte sun_path limit either.
    const std::string via = "/proc/self/fd/" + std::to_string(sock->get());
    fs::UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return 0;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, via.c_str(), via.size() + 1);
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        ::getsockopt(s.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return 0;
    return cred.pid;
}

}  // namespace inject::toolkit
