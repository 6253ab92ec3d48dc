// SPDX-License-Identifier: Apache-2.0
// The sandbox for privileged helpers. Everything that can fail or allocate is prepared before
// fork (the executable fd, the namespace fd, the capability set, the seccomp filter compiled to
// BPF, argv and envp); the child runs a fixed sequence of system calls, allocates nothing, and
// reports the first failing step through a close-on-exec pipe. The order matters:
//   setns (needs CAP_SYS_ADMIN) -> open rootfs in the entered namespace -> fchdir + chroot(".")
//   -> securebits (needs CAP_SETPCAP) -> bounding set -> ambient -> capset(empty)
//   -> no_new_privs -> rlimits (last: RLIMIT_AS would starve any later mmap) -> seccomp
//   -> execveat(host binary fd).
// Dropping the bounding set is what keeps uid 0 from getting every capability back at execve.
#include "inject/sandbox.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memory>

#include "core/child.hpp"
#include "core/cstrings.hpp"
#include "inject/fs.hpp"

namespace inject::sandbox {
namespace {

enum Step : int {
    kStdio = 1,
    kSetns,
    kOpenRoot,
    kChroot,
    kWorkdir,
    kRlimit,
    kSecbits,
    kBounding,
    kAmbient,
    kCapset,
    kNoNewPrivs,
    kCloseFds,
    kSeccomp,
    kExec,
};

const char* step_name(int s) {
    switch (s) {
        case kStdio:
            return "setting up stdio";
        case kSetns:
            return "entering mount namespace";
        case kOpenRoot:
            return "opening the rootfs";
        case kChroot:
            return "chroot into the rootfs";
        case kWorkdir:
            return "changing to the working directory";
        case kRlimit:
            return "setting resource limits";
        case kSecbits:
            return "setting securebits";
        case kBounding:
            return "dropping the capability bounding set";
        case kAmbient:
            return "clearing ambient capabilities";
        case kCapset:
            return "dropping capabilities";
        case kNoNewPrivs:
            return "setting no_new_privs";
        case kCloseFds:
            return "closing inherited file descriptors";
        case kSeccomp:
            return "installing the seccomp filter";
        case kExec:
            return "executing";
        default:
            return "setting up";
    }
}

using process::detail::child_fail;

struct SeccompDeleter {
    void operator()(void* ctx) const { seccomp_release(ctx); }
};
using SeccompCtx = std::unique_ptr<void, SeccompDeleter>;

struct CapDeleter {
    void operator()(cap_t c) const { cap_free(c); }
};
using CapPtr = std::unique_ptr<std::remove_pointer_t<cap_t>, CapDeleter>;

Result<SeccompCtx> build_ctx(const std::vector<std::string>& names, int exe_fd) {
    SeccompCtx ctx(seccomp_init(SCMP_ACT_ERRNO(EPERM)));
    if (!ctx) return fail(Errc::Internal, "seccomp_init failed");
    auto allow = [&](const std::string& name) -> Result<void> {
        int nr = seccomp_syscall_resolve_name(name.c_str());
        if (nr == __NR_SCMP_ERROR)
            return fail(Errc::InvalidInput, "unknown system call '" + name + "'");
        int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0);
        if (rc != 0) return fail(sys_error("seccomp rule for '" + name + "'", -rc));
        return ok();
    };
    for (const auto& n : names) INJECT_TRY_VOID(allow(n));
    // The exec that ends the setup runs under the filter: allow exactly that one (our fd, empty
    // path), so the helper itself cannot exec anything (the fd is close-on-exec).
    // libseccomp's SCMP_A* macros are C compound literals by design.
    // NOLINTBEGIN(clang-diagnostic-c99-extensions,clang-diagnostic-missing-field-initializers)
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, SCMP_SYS(execveat), 2,
                              SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(exe_fd)),
                              SCMP_A4(SCMP_CMP_EQ, static_cast<scmp_datum_t>(AT_EMPTY_PATH)));
    // NOLINTEND(clang-diagnostic-c99-extensions,clang-diagnostic-missing-field-initializers)
    if (rc != 0) return fail(sys_error("seccomp rule for execveat", -rc));
    return ctx;
}

// The filter as a BPF program, compiled before fork so the child only calls prctl().
Result<std::vector<sock_filter>> build_filter(const std::vector<std::string>& names, int exe_fd) {
    INJECT_TRY(SeccompCtx ctx, build_ctx(names, exe_fd));
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return fail(sys_error("sandbox: pipe"));
    fs::UniqueFd rd(p[0]), wr(p[1]);
    int rc = seccomp_export_bpf(ctx.get(), wr.get());
    if (rc != 0) return fail(sys_error("sandbox: exporting the seccomp filter", -rc));
    wr.reset();
    std::string bytes;
    char buf[4096];
    for (ssize_t n; (n = ::read(rd.get(), buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(sys_error("sandbox: reading the seccomp filter"));
        bytes.append(buf, static_cast<std::size_t>(n));
    }
    if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0)
        return fail(Errc::Internal,
                    "sandbox: seccomp filter of " + std::to_string(bytes.size()) + " bytes");
    std::vector<sock_filter> prog(bytes.size() / sizeof(sock_filter));
    std::memcpy(prog.data(), bytes.data(), bytes.size());
    return prog;
}

// The child: a fixed list of system calls, no allocation (libcap calls use only what was
// prepared before fork; the filter is already BPF).
[[noreturn]] void child(const Options& o, int err_fd, int exe_fd, int ns_fd, int null_fd,
                        int out_fd, int errout_fd, cap_t empty_caps, const sock_fprog* filter,
                        char* const* argv, char* const* envp) {
    if (::dup2(null_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(errout_fd, 2) < 0)
        child_fail(err_fd, kStdio);
    if (ns_fd >= 0 && ::setns(ns_fd, CLONE_NEWNS) != 0) child_fail(err_fd, kSetns);
    if (!o.rootfs.empty()) {
        // Opened after setns: the container's view of its rootfs, with its mounts.
        int root = ::open(o.rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) child_fail(err_fd, kOpenRoot);
        if (::fchdir(root) != 0 || ::chroot(".") != 0) child_fail(err_fd, kChroot);
        ::close(root);
    }
    if (::chdir(o.workdir.c_str()) != 0) child_fail(err_fd, kWorkdir);
    // uid 0 must not regain capabilities at execve, whatever the file says.
    if (cap_set_secbits(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                        SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED) != 0)
        child_fail(err_fd, kSecbits);
    for (cap_value_t c = 0; c < static_cast<cap_value_t>(cap_max_bits()); ++c) {
        if (cap_drop_bound(c) != 0 && errno != EINVAL) child_fail(err_fd, kBounding);
    }
    if (cap_reset_ambient() != 0) child_fail(err_fd, kAmbient);
    if (cap_set_proc(empty_caps) != 0) child_fail(err_fd, kCapset);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail(err_fd, kNoNewPrivs);
    const std::array<std::pair<int, std::uint64_t>, 4> limits{
        {{RLIMIT_CPU, o.limits.cpu_seconds},
         {RLIMIT_AS, o.limits.address_space},
         {RLIMIT_FSIZE, o.limits.file_size},
         {RLIMIT_NOFILE, o.limits.open_files}}};
    for (const auto& [res, v] : limits) {
        rlimit cur{};
        if (::getrlimit(res, &cur) != 0) child_fail(err_fd, kRlimit);
        rlim_t want = static_cast<rlim_t>(v);
        if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < want) want = cur.rlim_max;
        rlimit nl{want, want};
        if (::setrlimit(res, &nl) != 0) child_fail(err_fd, kRlimit);
    }
    // Nothing but stdio and the two fds we still need survives the exec.
    if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
        child_fail(err_fd, kCloseFds);
    if (filter != nullptr && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, filter, 0, 0) != 0)
        child_fail(err_fd, kSeccomp);
    ::syscall(SYS_execveat, exe_fd, "", argv, envp, AT_EMPTY_PATH);
    child_fail(err_fd, kExec);
}

}  // namespace

const std::vector<std::string>& ldconfig_syscalls() {
    // From strace of glibc 2.36's static ldconfig building a cache in a chroot, plus what glibc
    // may use instead on other kernels/versions (open vs openat, stat variants).
    static const std::vector<std::string> k{
        "read",          "write",        "pread64",         "readv",           "writev",
        "open",          "openat",       "close",           "lseek",           "stat",
        "fstat",         "lstat",        "newfstatat",      "statx",           "getdents64",
        "readlink",      "readlinkat",   "access",          "faccessat",       "faccessat2",
        "mkdir",         "mkdirat",      "rename",          "renameat",        "renameat2",
        "unlink",        "unlinkat",     "symlink",         "symlinkat",       "chmod",
        "fchmod",        "fchmodat",     "fsync",           "fdatasync",       "ftruncate",
        "fcntl",         "ioctl",        "getcwd",          "chdir",           "umask",
        "brk",           "mmap",         "munmap",          "mremap",          "mprotect",
        "madvise",       "arch_prctl",   "set_tid_address", "set_robust_list", "rseq",
        "futex",         "getrandom",    "prlimit64",       "getrlimit",       "uname",
        "getpid",        "gettid",       "getuid",          "geteuid",         "getgid",
        "getegid",       "rt_sigaction", "rt_sigprocmask",  "rt_sigreturn",    "sigaltstack",
        "clock_gettime", "exit",         "exit_group",
    };
    return k;
}

Result<process::Output> run(const Options& o) {
    if (o.executable.empty() || o.executable.front() != '/')
        return fail(Errc::InvalidInput,
                    "sandbox: '" + o.executable + "' is not an absolute host path");
    for (const auto& e : o.env) {
        if (e.rfind("LD_", 0) == 0)
            return fail(Errc::InvalidInput,
                        "sandbox: refusing environment entry '" + e.substr(0, e.find('=')) + "'");
    }
    // The binary comes from the host, opened here, before any namespace or root change.
    fs::UniqueFd exe(::open(o.executable.c_str(), O_PATH | O_CLOEXEC));
    if (!exe.valid()) return fail(sys_error("sandbox: opening " + o.executable));
    struct stat st {};
    if (::fstat(exe.get(), &st) != 0) return fail(sys_error("sandbox: stat " + o.executable));
    if (!S_ISREG(st.st_mode))
        return fail(Errc::InvalidInput, "sandbox: " + o.executable + " is not a regular file");
    fs::UniqueFd ns;
    if (!o.mount_namespace.empty()) {
        ns.reset(::open(o.mount_namespace.c_str(), O_RDONLY | O_CLOEXEC));
        if (!ns.valid()) return fail(sys_error("sandbox: opening " + o.mount_namespace));
    }
    fs::UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!devnull.valid()) return fail(sys_error("sandbox: opening /dev/null"));
    std::vector<sock_filter> prog;
    if (!o.syscalls.empty()) {
        INJECT_TRY(prog, build_filter(o.syscalls, exe.get()));
    }
    sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
    CapPtr empty(cap_init());
    if (!empty) return fail(sys_error("sandbox: cap_init"));
    const std::vector<std::string> args =
        o.argv.empty() ? std::vector<std::string>{o.executable} : o.argv;
    auto argv = detail::cstrings(args);
    auto envp = detail::cstrings(o.env);
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return fail(sys_error("sandbox: pipe"));
    fs::UniqueFd status_r(p[0]), status_w(p[1]);
    if (::pipe2(p, O_CLOEXEC) != 0) return fail(sys_error("sandbox: pipe"));
    fs::UniqueFd out_r(p[0]), out_w(p[1]);
    if (::pipe2(p, O_CLOEXEC) != 0) return fail(sys_error("sandbox: pipe"));
    fs::UniqueFd err_r(p[0]), err_w(p[1]);
    pid_t pid = ::fork();
    if (pid < 0) return fail(sys_error("sandbox: fork"));
    if (pid == 0)
        child(o, status_w.get(), exe.get(), ns.get(), devnull.get(), out_w.get(), err_w.get(),
              empty.get(), prog.empty() ? nullptr : &fprog, argv.data(), envp.data());
    status_w.reset();
    out_w.reset();
    err_w.reset();
    const auto failed = process::detail::wait_for_exec(status_r.get());
    auto res = process::detail::collect(pid, std::move(out_r), std::move(err_r), o.executable,
                                        o.timeout, process::kMaxOutput);
    if (failed) {
        std::string what = std::string("sandbox: ") + step_name(failed->step);
        if (failed->step == kSetns) what += " " + o.mount_namespace;
        if (failed->step == kOpenRoot || failed->step == kChroot) what += " " + o.rootfs;
        if (failed->step == kExec) what += " " + o.executable;
        return fail(sys_error(what, failed->err));
    }
    return res;
}

}  // namespace inject::sandbox
