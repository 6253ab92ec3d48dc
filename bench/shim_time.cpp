// SPDX-License-Identifier: Apache-2.0
// shim_time [-C DIR] [-o FILE] -- ARGV...: runs ARGV once (fork + execve, the caller's env,
// stdin /dev/null, stdout/stderr to FILE or /dev/null) and prints "<wall ns> <peak RSS KiB>
// <exit code>". A real fork (not vfork), so the child's peak RSS is its own, not the caller's:
// bench/shim.sh uses it for every timed command.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

extern char** environ;

int main(int argc, char** argv) {
    const char* dir = nullptr;
    const char* out = "/dev/null";
    int i = 1;
    for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
        if (std::strcmp(argv[i], "-C") == 0 && i + 1 < argc) dir = argv[++i];
        else if (std::strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
    }
    if (i + 1 >= argc) {
        std::fprintf(stderr, "usage: shim_time [-C DIR] [-o FILE] -- ARGV...\n");
        return 2;
    }
    char** cmd = argv + i + 1;
    timespec t0{}, t1{};
    ::clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = ::fork();
    if (pid == 0) {
        int in = ::open("/dev/null", O_RDONLY);
        int o = ::open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0 || (dir != nullptr && ::chdir(dir) != 0)) _exit(126);
        ::dup2(in, 0);
        ::dup2(o, 1);
        ::dup2(o, 2);
        ::execve(cmd[0], cmd, environ);
        _exit(127);
    }
    int status = 0;
    rusage ru{};
    if (pid < 0 || ::wait4(pid, &status, 0, &ru) < 0) return 2;
    ::clock_gettime(CLOCK_MONOTONIC, &t1);
    const long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    std::printf("%lld %ld %d\n", ns, ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return 0;
}
