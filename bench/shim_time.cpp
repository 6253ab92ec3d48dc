// SPDX-License-Identifier: Apache-2.0
// shim_time [-C DIR] [-o FILE] [-k] [-r FILE] [-f] [-c] -- ARGV...: runs ARGV once (fork + execve,
// the caller's env) and prints "<wall ns> <peak RSS KiB> <exit code>" (with -f, then "<minor
// faults>"; with -c, then "<CPU us>"). A real fork (not vfork), so
// the child's peak RSS is its own, not the caller's: every bench script times its commands
// with it. By default stdin is /dev/null and stdout/stderr go to FILE (-o) or /dev/null.
//   -k       keep the caller's stdin, stdout and stderr (to wrap an OCI hook, which reads the
//            container state on stdin, or a runtime);
//   -r FILE  append the result line to FILE instead of printing it, and exit with the child's
//            exit code, so a wrapped hook that fails still fails its caller;
//   -f       append the child's minor page faults (getrusage; perf stat's instructions are not
//            available on every VM, faults are);
//   -c       append the child's CPU time in microseconds (user + system, getrusage): the work
//            itself, which a busy machine stretches less than the wall time (waiting for a
//            core and for the disk is not in it).
// The peak RSS is wait4's: the largest of the child's own peak and those of the processes it
// waited for (not a sum); a process that execs another program keeps the larger of the two.
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
    const char* result = nullptr;
    bool keep_stdio = false;
    bool faults = false;
    bool cpu = false;
    int i = 1;
    for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
        if (std::strcmp(argv[i], "-C") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (std::strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (std::strcmp(argv[i], "-r") == 0 && i + 1 < argc)
            result = argv[++i];
        else if (std::strcmp(argv[i], "-k") == 0)
            keep_stdio = true;
        else if (std::strcmp(argv[i], "-f") == 0)
            faults = true;
        else if (std::strcmp(argv[i], "-c") == 0)
            cpu = true;
    }
    if (i + 1 >= argc) {
        std::fprintf(stderr,
                     "usage: shim_time [-C DIR] [-o FILE] [-k] [-r FILE] [-f] [-c] -- ARGV...\n");
        return 2;
    }
    char** cmd = argv + i + 1;
    timespec t0{}, t1{};
    ::clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = ::fork();
    if (pid == 0) {
        if (!keep_stdio) {
            int in = ::open("/dev/null", O_RDONLY);
            int o = ::open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (in < 0 || o < 0) _exit(126);
            ::dup2(in, 0);
            ::dup2(o, 1);
            ::dup2(o, 2);
        }
        if (dir != nullptr && ::chdir(dir) != 0) _exit(126);
        ::execve(cmd[0], cmd, environ);
        _exit(127);
    }
    int status = 0;
    rusage ru{};
    if (pid < 0 || ::wait4(pid, &status, 0, &ru) < 0) return 2;
    ::clock_gettime(CLOCK_MONOTONIC, &t1);
    const long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    char line[128];
    int n = std::snprintf(line, sizeof line, "%lld %ld %d", ns, ru.ru_maxrss, code);
    if (faults) n += std::snprintf(line + n, sizeof line - n, " %ld", ru.ru_minflt);
    if (cpu) {
        const long long us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL +
                             ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
        n += std::snprintf(line + n, sizeof line - n, " %lld", us);
    }
    std::snprintf(line + n, sizeof line - n, "\n");
    if (result == nullptr) {
        std::fputs(line, stdout);
        return 0;
    }
    std::FILE* f = std::fopen(result, "a");
    if (f == nullptr) return 2;
    std::fputs(line, f);
    std::fclose(f);
    return code;
}
