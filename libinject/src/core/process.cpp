// SPDX-License-Identifier: Apache-2.0
// The one child-process runner (inject/process.hpp has the policy): process::run starts a plain
// child (optionally chrooted), sandbox::run a confined one; both wait for the exec through the
// status pipe and read the output with collect().
#include "inject/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/child.hpp"
#include "core/cstrings.hpp"
#include "inject/fs.hpp"
#include "inject/text.hpp"

namespace inject::process {

namespace detail {

void child_fail(int status_fd, int step, int flag) {
    const ChildError e{step, errno, flag};
    const ssize_t n = ::write(status_fd, &e, sizeof e);
    (void)n;
    _exit(127);
}

std::optional<ChildError> wait_for_exec(int status_fd) {
    ChildError e;
    ssize_t n;
    do {
        n = ::read(status_fd, &e, sizeof e);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof e)) return e;
    return std::nullopt;
}

Result<Output> collect(pid_t pid, fs::UniqueFd out, fs::UniqueFd err, const std::string& name,
                       std::chrono::milliseconds timeout, std::size_t max_output) {
    Output res;
    bool too_big = false;
    bool timed_out = false;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // a negative fd is skipped by poll: stderr merged into stdout has no pipe of its own
    std::array<pollfd, 2> fds{{{out.get(), POLLIN, 0}, {err.valid() ? err.get() : -1, POLLIN, 0}}};
    int open_fds = err.valid() ? 2 : 1;
    char buf[65536];
    while (open_fds > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        const int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        for (std::size_t i = 0; i < fds.size() && !too_big; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            const ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                fds[i].fd = -1;
                --open_fds;
                continue;
            }
            const auto len = static_cast<std::size_t>(r);
            if (i == 0) {
                if (res.out.size() + len > max_output)
                    too_big = true;
                else
                    res.out.append(buf, len);
            } else if (res.err.size() < kMaxStderr) {
                res.err.append(buf, std::min(len, kMaxStderr - res.err.size()));
            }
        }
        if (too_big) break;
    }
    if (timed_out || too_big) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out)
        return fail(Error(Errc::Io,
                          name + ": timed out after " + std::to_string(timeout.count()) + " ms",
                          ETIMEDOUT));
    if (too_big)
        return fail(Errc::InvalidInput,
                    name + ": output larger than " + std::to_string(max_output) + " bytes");
    if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) res.term_signal = WTERMSIG(status);
    return res;
}

}  // namespace detail

namespace {

enum Step : int { kChroot = 1, kExec };

/// The child: stdio, the chroot, the exec; after fork only async-signal-safe calls.
[[noreturn]] void child(const Command& cmd, const char* root, int status_fd, int out_fd, int err_fd,
                        char* const* argv, char* const* envp) {
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    if (root != nullptr && (::chroot(root) != 0 || ::chdir("/") != 0))
        detail::child_fail(status_fd, kChroot);
    if (cmd.exec_fd >= 0) {
        // Kept open across the exec: a #! script is then read through /dev/fd/N.
        ::fcntl(cmd.exec_fd, F_SETFD, 0);
        // fexecve: execveat(fd, "", AT_EMPTY_PATH), and where that is ENOSYS (kernels before
        // 3.19, which the static host binaries run on: CentOS 7's 3.10; Debian 12's qemu-user)
        // an execve of /proc/self/fd/N (docs/host-binaries.md).
        ::fexecve(cmd.exec_fd, argv, envp);
    } else {
        ::execve(cmd.path.c_str(), argv, envp);
    }
    const int e = errno;
    // ENOENT for a file that is there: the loader (or #! program) it names is not
    const int present = cmd.exec_fd >= 0 || ::access(cmd.path.c_str(), F_OK) == 0 ? 1 : 0;
    errno = e;
    detail::child_fail(status_fd, kExec, present);
}

Error start_error(const Command& cmd, const detail::ChildError& ce) {
    const Errc code = sys_error("", ce.err).code();
    if (ce.step == kChroot)
        return Error(code, "cannot chroot into '" + cmd.root + "': " + std::strerror(ce.err),
                     ce.err);
    const std::string why =
        ce.err == ENOENT && ce.flag != 0
            ? "the interpreter it names (its dynamic loader) is not on this host"
            : std::strerror(ce.err);
    return Error(code, "cannot run '" + cmd.path + "': " + why, ce.err);
}

}  // namespace

Result<Output> run(const Command& cmd) {
    if (cmd.path.empty() || cmd.path.front() != '/')
        return fail(Errc::InvalidInput, "refusing to run '" + cmd.path + "': not an absolute path");
    const bool chroot_needed =
        !cmd.root.empty() && std::filesystem::path(cmd.root).lexically_normal() != "/";
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return fail(sys_error("pipe"));
    fs::UniqueFd status_r(p[0]), status_w(p[1]);
    if (::pipe2(p, O_CLOEXEC) != 0) return fail(sys_error("pipe"));
    fs::UniqueFd out_r(p[0]), out_w(p[1]);
    fs::UniqueFd err_r, err_w;
    if (!cmd.merge_stderr) {
        if (::pipe2(p, O_CLOEXEC) != 0) return fail(sys_error("pipe"));
        err_r.reset(p[0]);
        err_w.reset(p[1]);
    }
    // Everything the child needs is built before fork: after fork only async-signal-safe calls.
    const std::vector<std::string> args =
        cmd.argv.empty() ? std::vector<std::string>{cmd.path} : cmd.argv;
    auto argv = inject::detail::cstrings(args);
    auto envp = inject::detail::cstrings(cmd.env);
    const pid_t pid = ::fork();
    if (pid < 0) return fail(sys_error("fork"));
    if (pid == 0)
        child(cmd, chroot_needed ? cmd.root.c_str() : nullptr, status_w.get(), out_w.get(),
              cmd.merge_stderr ? out_w.get() : err_w.get(), argv.data(), envp.data());
    status_w.reset();
    out_w.reset();
    err_w.reset();
    const auto failed = detail::wait_for_exec(status_r.get());
    auto res = detail::collect(pid, std::move(out_r), std::move(err_r), cmd.path, cmd.timeout,
                               cmd.max_output);
    if (failed) return fail(start_error(cmd, *failed));
    return res;
}

std::string last_line(std::string_view out) {
    out = text::trim_end(out, "\n ");
    const auto nl = out.rfind('\n');
    return std::string(nl == std::string_view::npos ? out : out.substr(nl + 1));
}

}  // namespace inject::process
