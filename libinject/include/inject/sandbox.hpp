// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Running a privileged helper (the host's ldconfig) against a container rootfs without
/// trusting anything in that rootfs (CVE-2025-23267, CVE-2024-0136/0137): a forked child enters
/// the container's mount namespace, chroots into the rootfs (fchdir + chroot(".")), lowers its
/// resource limits, drops every capability (bounding and ambient sets too), sets
/// no_new_privs, installs a libseccomp allow-list, and execs a binary that was opened on the
/// host before any of that (execveat on an O_PATH fd): never a path inside the rootfs, and with
/// an explicit environment (no LD_PRELOAD, ever).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "inject/process.hpp"
#include "inject/result.hpp"

namespace inject::sandbox {

/// Resource limits set in the child (soft = hard).
struct Limits {
    std::uint64_t cpu_seconds = 10;
    std::uint64_t address_space = 1ULL << 30;  ///< RLIMIT_AS, bytes
    std::uint64_t file_size = 256ULL << 20;    ///< RLIMIT_FSIZE, bytes
    std::uint64_t open_files = 256;            ///< RLIMIT_NOFILE
};

/// What to run and where.
struct Options {
    /// Host path of the executable, opened O_PATH in the caller's namespaces before anything
    /// else. Must be a static binary when `rootfs` is set (the rootfs has no loader we trust).
    std::string executable;
    std::vector<std::string> argv;  ///< argv[0] included; empty = {executable}
    std::vector<std::string> env;   ///< the whole environment; LD_* entries are refused
    /// "/proc/<pid>/ns/mnt" of the container, or empty to stay in the caller's mount namespace.
    std::string mount_namespace;
    /// The rootfs to chroot into, as a path in the (entered) mount namespace; empty = no chroot.
    std::string rootfs;
    /// Working directory inside the new root.
    std::string workdir = "/";
    Limits limits;
    /// Names of the allowed system calls (everything else fails with EPERM); empty = no filter.
    std::vector<std::string> syscalls;
    std::chrono::milliseconds timeout{10000};
};

/// The allow-list sized for glibc's static ldconfig (building /etc/ld.so.cache and links).
[[nodiscard]] const std::vector<std::string>& ldconfig_syscalls();

/// Runs the sandboxed child to completion. A failure while setting up the sandbox in the child
/// is an error naming the step ("sandbox: entering mount namespace /proc/9/ns/mnt: ..."); a
/// non-zero exit of the program itself is not (read Output::exit_code). The output, the timeout
/// and the kill follow process::run's one policy (inject/process.hpp), with its default bound.
[[nodiscard]] Result<process::Output> run(const Options& opts);

}  // namespace inject::sandbox
