// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "inject/fs.hpp"
#include "inject/mount.hpp"

namespace inject::fs {

void UniqueFd::reset(int fd) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

namespace {

Result<std::string> read_all(int fd, std::size_t max_bytes, const std::string& path) {
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(sys_error("reading " + path));
        }
        if (n == 0) break;
        if (out.size() + static_cast<std::size_t>(n) > max_bytes)
            return fail(Errc::InvalidInput,
                        path + ": file is larger than " + std::to_string(max_bytes) + " bytes");
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

}  // namespace

Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return fail(sys_error("opening " + path));
    return read_all(fd.get(), max_bytes, path);
}

Result<std::string> read_in_root(int root_fd, std::string_view path, std::size_t max_bytes) {
    // O_NONBLOCK: a FIFO planted in the root must not hang the reader (no effect on a file)
    INJECT_TRY(UniqueFd fd, open_in_root(root_fd, path, O_RDONLY | O_NONBLOCK));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return fail(sys_error("stat " + std::string(path)));
    if (!S_ISREG(st.st_mode))
        return fail(Errc::InvalidInput, std::string(path) + ": not a regular file");
    return read_all(fd.get(), max_bytes, std::string(path));
}

namespace {

Result<void> write_all(int fd, std::string_view data, const std::string& what) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(sys_error("writing " + what));
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return ok();
}

/// Puts `tmp` in the place of `path`. A plain rename over an existing file makes ext4 (its
/// default auto_da_alloc) start writing the new file's data back inside the rename, for files
/// never fsynced: 0.06 ms on an idle disk, milliseconds on a busy one, on every container start
/// for the shim's config.json. Exchanging the two names (one atomic step: `path` holds one
/// whole version at every moment, as with rename) and then removing the old file does not.
/// Falls back to rename where there is nothing to exchange with or the filesystem cannot.
Result<void> replace_not_durable(const std::string& tmp, const std::string& path) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) {
        if (::unlink(tmp.c_str()) == 0) return ok();
        // `path` became something unlink cannot remove (a directory, made after atomic_write's
        // check): rename would have failed and changed nothing, so put it back and fail alike.
        const int err = errno;
        if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0)
            return fail(sys_error("removing the previous " + path + " (now " + tmp + ")", err));
        return fail(sys_error("replacing " + path, err));
    }
    if (errno != ENOENT && errno != EINVAL && errno != ENOSYS)
        return fail(sys_error("exchanging " + tmp + " and " + path));
    if (::rename(tmp.c_str(), path.c_str()) != 0)
        return fail(sys_error("renaming " + tmp + " to " + path));
    return ok();
}

std::string dir_of(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

}  // namespace

namespace {
constexpr std::string_view kTempInfix = ".tmp.";
constexpr std::size_t kTempRandom = 6;  // mkostemp's XXXXXX
}  // namespace

std::string atomic_temp_template(const std::string& path, bool hidden) {
    std::string tmp = path + std::string(kTempInfix) + std::string(kTempRandom, 'X');
    if (hidden) {
        const auto slash = path.rfind('/');
        tmp.insert(slash == std::string::npos ? 0 : slash + 1, ".");
    }
    return tmp;
}

std::string atomic_temp_target(std::string_view file_name) {
    const auto at = file_name.rfind(kTempInfix);
    if (at == std::string_view::npos || at == 0 ||
        file_name.size() != at + kTempInfix.size() + kTempRandom)
        return {};
    return std::string(file_name.substr(0, at));
}

Result<void> atomic_write(const std::string& path, std::string_view content,
                          const AtomicWriteOptions& opts) {
    mode_t mode = opts.mode;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return fail(Errc::InvalidInput, path + ": refusing to replace a symlink");
        if (S_ISDIR(st.st_mode)) return fail(Errc::InvalidInput, path + ": is a directory");
        mode = st.st_mode & 07777;
    } else if (errno != ENOENT) {
        return fail(sys_error("checking " + path));
    }
    const std::string dir = dir_of(path);
    std::string tmp = atomic_temp_template(path, opts.hidden_temp);
    std::vector<char> tmpl(tmp.begin(), tmp.end());
    tmpl.push_back('\0');
    UniqueFd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
    if (!fd.valid()) return fail(sys_error("creating a temporary file in " + dir));
    tmp.assign(tmpl.data());
    auto cleanup = [&tmp] { ::unlink(tmp.c_str()); };
    auto r = write_all(fd.get(), content, tmp);
    if (r && ::fchmod(fd.get(), mode) != 0) r = fail(sys_error("setting the mode of " + tmp));
    if (r && opts.durable && ::fsync(fd.get()) != 0) r = fail(sys_error("syncing " + tmp));
    if (r && ::close(fd.release()) != 0) r = fail(sys_error("closing " + tmp));
    if (r && !opts.durable) {
        r = replace_not_durable(tmp, path);
    } else if (r && ::rename(tmp.c_str(), path.c_str()) != 0) {
        r = fail(sys_error("renaming " + tmp + " to " + path));
    }
    if (!r) {
        cleanup();
        return r;
    }
    if (!opts.durable) return ok();
    // The rename is durable only once the folder is synced.
    UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.valid()) ::fsync(dfd.get());
    return ok();
}

std::string join(std::string_view root, std::string_view path) {
    std::string r(root);
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    if (r == "/" || r.empty()) return std::string(path.empty() ? "/" : path);
    if (path.empty() || path.front() != '/') r += '/';
    r += path;
    return r;
}

Result<std::string> fd_path(int fd) {
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    std::vector<char> buf(4096);
    ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size());
    if (n < 0) return fail(sys_error("reading " + link));
    if (static_cast<std::size_t>(n) >= buf.size())
        return fail(Errc::Unsupported, link + ": path too long");
    return std::string(buf.data(), static_cast<std::size_t>(n));
}

}  // namespace inject::fs
