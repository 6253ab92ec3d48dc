// SPDX-License-Identifier: Apache-2.0
#include "inject/process.hpp"

#include "core/cstrings.hpp"
#include "inject/fs.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <vector>

namespace inject::process {

Result<Output> run(const Command& cmd) {
    if (cmd.path.empty() || cmd.path.front() != '/')
        return fail(Errc::InvalidInput, "refusing to run '" + cmd.path + "': not an absolute path");
    const bool by_fd = cmd.exec_fd >= 0;
    if (by_fd ? ::faccessat(cmd.exec_fd, "", X_OK, AT_EMPTY_PATH) != 0 : ::access(cmd.path.c_str(), X_OK) != 0)
        return fail(sys_error("cannot run " + cmd.path));
    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return fail(sys_error("pipe"));
    fs::UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) return fail(sys_error("pipe"));
    fs::UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
    // Everything the child needs is built before fork: after fork only async-signal-safe calls.
    const std::vector<std::string> args = cmd.argv.empty() ? std::vector<std::string>{cmd.path} : cmd.argv;
    auto argv = detail::cstrings(args);
    auto envp = detail::cstrings(cmd.env);
    pid_t pid = ::fork();
    if (pid < 0) return fail(sys_error("fork"));
    if (pid == 0) {
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) ::dup2(devnull, 0);
        ::dup2(out_w.get(), 1);
        ::dup2(err_w.get(), 2);
        if (by_fd) {
            // Kept open across the exec: a #! script is then read through /dev/fd/N.
            ::fcntl(cmd.exec_fd, F_SETFD, 0);
            ::execveat(cmd.exec_fd, "", argv.data(), envp.data(), AT_EMPTY_PATH);
        } else {
            ::execve(cmd.path.c_str(), argv.data(), envp.data());
        }
        _exit(127);
    }
    out_w.reset();
    err_w.reset();
    Output res;
    bool too_big = false;
    bool timed_out = false;
    const auto deadline = std::chrono::steady_clock::now() + cmd.timeout;
    std::array<pollfd, 2> fds{{{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}}};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) { timed_out = true; break; }
        int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
            if (r <= 0) { fds[i].fd = -1; --open_fds; continue; }
            auto len = static_cast<std::size_t>(r);
            if (i == 0) {
                if (res.out.size() + len > cmd.max_output) { too_big = true; open_fds = 0; break; }
                res.out.append(buf, len);
            } else if (res.err.size() < 4096) {
                res.err.append(buf, std::min(len, 4096 - res.err.size()));
            }
        }
    }
    if (timed_out || too_big) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (timed_out)
        return fail(Error(Errc::Io, cmd.path + ": timed out after " +
                                        std::to_string(cmd.timeout.count()) + " ms", ETIMEDOUT));
    if (too_big)
        return fail(Errc::InvalidInput, cmd.path + ": output larger than " +
                                            std::to_string(cmd.max_output) + " bytes");
    if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) res.term_signal = WTERMSIG(status);
    return res;
}

}  // namespace inject::process
