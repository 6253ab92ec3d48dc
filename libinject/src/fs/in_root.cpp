// SPDX-License-Identifier: Apache-2.0
// Path resolution confined to a root. This is the defence against the CVE-2024-0132 class:
// every lookup happens on file descriptors, so a symlink in the root can never lead outside
// it, and the caller keeps the fd for the operation (no check-then-use on path strings).
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <vector>

#include "inject/fs.hpp"

namespace inject::fs {
namespace {

constexpr int kMaxSymlinks = 40;  // the kernel's MAXSYMLINKS

long sys_openat2(int dirfd, const char* path, open_how* how) {
    return ::syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

std::deque<std::string> split(std::string_view path) {
    std::deque<std::string> out;
    std::size_t i = 0;
    while (i < path.size()) {
        while (i < path.size() && path[i] == '/') ++i;
        std::size_t j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        if (j > i) out.emplace_back(path.substr(i, j - i));
        i = j;
    }
    return out;
}

// The fallback where openat2 is missing (ENOSYS, kernels before 5.6, or a seccomp profile
// that refuses it): walk one component at a time with O_PATH|O_NOFOLLOW, interpret symlinks
// ourselves relative to the root, and clamp ".." at the root, exactly as RESOLVE_IN_ROOT does.
// Symlinks are read as text and re-resolved inside the root, so procfs magic links are never
// followed by the kernel.
Result<UniqueFd> walk_in_root(int root_fd, std::string_view path, int flags) {
    std::vector<UniqueFd> stack;  // directories below the root; empty = at the root
    auto cur = [&] { return stack.empty() ? root_fd : stack.back().get(); };
    std::deque<std::string> rest = split(path);
    int links = 0;
    if (rest.empty()) {
        UniqueFd fd(::openat(root_fd, ".", flags | O_CLOEXEC));
        if (!fd.valid()) return fail(sys_error("opening the root"));
        return fd;
    }
    while (!rest.empty()) {
        std::string comp = std::move(rest.front());
        rest.pop_front();
        const bool last = rest.empty();
        if (comp == ".") {
            if (last) {
                UniqueFd fd(::openat(cur(), ".", flags | O_CLOEXEC));
                if (!fd.valid()) return fail(sys_error("opening " + std::string(path)));
                return fd;
            }
            continue;
        }
        if (comp == "..") {
            if (!stack.empty()) stack.pop_back();
            if (last) {
                UniqueFd fd(::openat(cur(), ".", flags | O_CLOEXEC));
                if (!fd.valid()) return fail(sys_error("opening " + std::string(path)));
                return fd;
            }
            continue;
        }
        UniqueFd probe(::openat(cur(), comp.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (!probe.valid()) {
            if (last && errno == ENOENT && (flags & O_CREAT)) {
                UniqueFd fd(::openat(cur(), comp.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0644));
                if (!fd.valid()) return fail(sys_error("creating " + std::string(path)));
                return fd;
            }
            return fail(sys_error("resolving " + std::string(path)));
        }
        struct stat st {};
        if (::fstat(probe.get(), &st) != 0) return fail(sys_error("stat " + std::string(path)));
        if (S_ISLNK(st.st_mode) && !(last && (flags & O_NOFOLLOW))) {
            if (++links > kMaxSymlinks)
                return fail(sys_error("resolving " + std::string(path), ELOOP));
            std::vector<char> buf(4096);
            ssize_t n = ::readlinkat(probe.get(), "", buf.data(), buf.size());
            if (n < 0 || static_cast<std::size_t>(n) >= buf.size())
                return fail(sys_error("reading link in " + std::string(path),
                                      n < 0 ? errno : ENAMETOOLONG));
            std::string_view target(buf.data(), static_cast<std::size_t>(n));
            if (!target.empty() && target.front() == '/') stack.clear();
            auto parts = split(target);
            for (auto it = parts.rbegin(); it != parts.rend(); ++it) rest.push_front(*it);
            if (parts.empty() && last) rest.push_back(".");
            continue;
        }
        if (last) {
            if ((flags & O_PATH) &&
                (flags & ~(O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC)) == 0) {
                if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode))
                    return fail(sys_error("opening " + std::string(path), ENOTDIR));
                return probe;
            }
            UniqueFd fd(::openat(cur(), comp.c_str(), (flags & ~O_CREAT) | O_NOFOLLOW | O_CLOEXEC));
            if (!fd.valid()) return fail(sys_error("opening " + std::string(path)));
            return fd;
        }
        if (!S_ISDIR(st.st_mode)) return fail(sys_error("resolving " + std::string(path), ENOTDIR));
        stack.push_back(std::move(probe));
    }
    return fail(Errc::Internal, "path walk ended without a result");
}

}  // namespace

Result<UniqueFd> open_in_root(int root_fd, std::string_view path, int flags) {
    open_how how{};
    how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? 0644 : 0;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    const std::string p(path.empty() ? "." : path);
    // EAGAIN: a rename or mount somewhere on the system raced a lookup through "..", and the
    // kernel refuses to vouch for the result (openat2(2)). On a busy node that happens, so
    // retry; if it keeps happening, the component-by-component walk gives the same answer.
    constexpr int kEagainRetries = 8;
    for (int attempt = 0;; ++attempt) {
        long fd = sys_openat2(root_fd, p.c_str(), &how);
        if (fd >= 0) return UniqueFd(static_cast<int>(fd));
        if (errno == ENOSYS || errno == EPERM) return walk_in_root(root_fd, path, flags);
        if (errno != EAGAIN) break;
        if (attempt == kEagainRetries) return walk_in_root(root_fd, path, flags);
    }
    return fail(sys_error("resolving " + p));
}

Result<UniqueFd> open_root(const std::string& root) {
    UniqueFd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return fail(sys_error("opening root " + root));
    return fd;
}

Result<std::string> resolve_in_root(const std::string& root, std::string_view path) {
    INJECT_TRY(UniqueFd rfd, open_root(root));
    INJECT_TRY(UniqueFd fd, open_in_root(rfd.get(), path, O_PATH));
    return fd_path(fd.get());
}

}  // namespace inject::fs
