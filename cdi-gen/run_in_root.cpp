// SPDX-License-Identifier: Apache-2.0
#include "run_in_root.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace ctk {

namespace {
constexpr std::size_t kMaxOutput = 4u << 20;
}  // namespace

inject::Result<RunResult> run_in_root(const std::string& root, const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return inject::fail(inject::sys_error("pipe"));
    std::vector<char*> args;
    for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
    args.push_back(nullptr);
    char path_env[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    char* envp[] = {path_env, nullptr};
    const bool chroot_needed = std::filesystem::path(root).lexically_normal() != "/";
    const pid_t pid = ::fork();
    if (pid < 0) return inject::fail(inject::sys_error("fork"));
    if (pid == 0) {
        ::dup2(fds[1], 1);
        ::dup2(fds[1], 2);
        if (chroot_needed && (::chroot(root.c_str()) != 0 || ::chdir("/") != 0)) {
            const std::string m = "cannot chroot into '" + root + "': " + std::strerror(errno) + "\n";
            (void)!::write(2, m.data(), m.size());
            ::_exit(126);
        }
        ::execve(args[0], args.data(), envp);
        const int e = errno;
        // ENOENT for a file that is there: the loader (or #! program) it names is not
        const std::string why = e == ENOENT && ::access(args[0], F_OK) == 0
                                    ? "the interpreter it names (its dynamic loader) is not on this host"
                                    : std::strerror(e);
        const std::string m = "cannot run '" + argv[0] + "': " + why + "\n";
        (void)!::write(2, m.data(), m.size());
        ::_exit(127);
    }
    ::close(fds[1]);
    RunResult r;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    char buf[4096];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{fds[0], POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
            ::kill(pid, SIGKILL);
            r.output += "\n(killed after 60 s)";
            break;
        }
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (r.output.size() < kMaxOutput) r.output.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    return r;
}

std::string last_line(std::string_view out) {
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.remove_suffix(1);
    const auto nl = out.rfind('\n');
    return std::string(nl == std::string_view::npos ? out : out.substr(nl + 1));
}

}  // namespace ctk
