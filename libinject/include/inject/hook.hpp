// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What OCI hooks need to act on a live container: the state runc/crun give on stdin, the
/// bundle's config.json, applying CDI edits inside the container's mount namespace (device
/// nodes, read-only bind mounts) with the in-root helpers of inject/mount.hpp, allowing device
/// nodes in the container's v1 device cgroup, and updating the ldcache with the host's
/// ldconfig in the sandbox of inject/sandbox.hpp.
///
/// The functions that enter a namespace do it in a forked child, so the caller stays in the
/// host namespaces. They fork: call them from a single-threaded process (the hook binaries).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/cdi.hpp"
#include "inject/result.hpp"

namespace inject::hook {

/// The OCI state on a hook's stdin. runc says "creating" with the host pid at prestart/
/// createRuntime; crun says "created" and a relative "root". Neither root nor the cwd is used.
struct State {
    std::string id;
    std::string status;
    int pid = 0;
    std::string bundle;
};

/// Reads the OCI state a runtime writes to a hook's stdin from `fd` (the caller passes 0),
/// refusing more than 1 MiB.
[[nodiscard]] Result<std::string> read_state(int fd);

/// Parses the state JSON. InvalidInput for non-JSON (with the byte offset), a missing/
/// relative bundle, or a pid that is not a positive number when `need_pid`.
[[nodiscard]] Result<State> parse_state(std::string_view text, bool need_pid);

/// One linux.resources.devices rule of config.json.
struct DeviceRule {
    bool allow = false;
    char type = 'a';  ///< 'a', 'c' or 'b'
    std::optional<std::int64_t> major, minor;
    std::string access;  ///< subset of "rwm"
};

/// What the hooks use of config.json.
struct Bundle {
    std::string path;              ///< the bundle folder
    std::string rootfs;            ///< root.path, joined with the bundle when relative
    std::vector<std::string> env;  ///< process.env
    std::map<std::string, std::string> annotations;  ///< annotations
    std::vector<DeviceRule> device_rules;            ///< linux.resources.devices
    bool privileged = false;                         ///< oci::privileged() of config.json
};

/// Reads <bundle>/config.json. NotFound when it is missing; InvalidInput when it does not parse
/// or has no root.path; InvalidInput when the rootfs is not a folder.
[[nodiscard]] Result<Bundle> load_bundle(const std::string& bundle_dir);

/// How edits are applied to a live container.
struct ApplyOptions {
    /// Bind-mount the host node when mknod is refused (user namespaces); always when true.
    bool bind_device_nodes = false;
};

/// Applies the device nodes and mounts of `edits` to the container whose init is `pid`:
/// a child enters /proc/<pid>/ns/mnt, opens `rootfs` there, creates each node with
/// mknod_in_root() (or bind-mounts the host node), and bind-mounts each mount read-only,
/// nosuid, nodev with bind_mount_in_root(). Env and hook edits are not applied here.
/// Idempotent. `pid` 0 = stay in the caller's mount namespace.
[[nodiscard]] Result<void> apply_edits(int pid, const std::string& rootfs,
                                       const cdi::ContainerEdits& edits,
                                       const ApplyOptions& opts = {});

/// Allows the device nodes (read and write) in the container's device cgroup. Nothing to do
/// when `rules` (config.json's linux.resources.devices, which the runtime applied: the shim
/// puts them there) already allow every node. Else, on cgroup v1, writes "c <major>:<minor> rw"
/// to devices.allow of the "devices" cgroup of `pid` (from <proc_root>/<pid>/cgroup) under
/// `cgroup_root` (default /sys/fs/cgroup); on cgroup v2 (no v1 devices line, or `cgroup_root`
/// itself is a cgroup2 mount: what the runtime saw too) extends the eBPF device programs of the
/// "0::" cgroup under the cgroup2 mount (`cgroup_root`, or `cgroup_root`/unified on a hybrid
/// host) with extend_device_filters(). Fails closed.
[[nodiscard]] Result<void> allow_devices(int pid, const std::vector<cdi::DeviceNode>& nodes,
                                         const std::vector<DeviceRule>& rules,
                                         const std::string& cgroup_root = "/sys/fs/cgroup",
                                         const std::string& proc_root = "/proc");

/// cgroup v2: loads a BPF_PROG_TYPE_CGROUP_DEVICE program that enforces `rules` (the last
/// matching rule wins, unmatched access is denied: runc's filter) and attaches it to the cgroup2
/// folder `cgroup_fd` with BPF_F_ALLOW_MULTI. What a runtime does at create.
[[nodiscard]] Result<void> attach_device_filter(int cgroup_fd,
                                                const std::vector<DeviceRule>& rules);

/// cgroup v2: makes the device programs attached to the cgroup2 folder `cgroup_fd` also allow
/// `allow` (allow rules with type, major and minor). Each attached program P is read back and
/// replaced, atomically, by "if the access matches one of `allow`, allow; else run P": P's
/// rules keep holding for every other device. Returns how many programs were replaced (0 when
/// no device program applies to the cgroup at all; a program already extended with the same
/// nodes is left as it is, so a second run changes nothing). Unsupported when the filter is
/// attached to a parent cgroup only, or P cannot be reloaded (maps, helper calls).
[[nodiscard]] Result<std::size_t> extend_device_filters(int cgroup_fd,
                                                        const std::vector<DeviceRule>& allow);

/// True when `rules` (evaluated in order, the last match wins, as the kernel does) give
/// read+write on the node.
[[nodiscard]] bool rules_allow(const std::vector<DeviceRule>& rules, char type, std::int64_t major,
                               std::int64_t minor);

/// A library mounted into the container: the host file and where the container sees it.
struct MountedLibrary {
    std::string host_path;
    std::string container_path;
};

/// Updating the ldcache of a rootfs.
struct LdcacheOptions {
    /// ldconfig as the config says: "@/sbin/ldconfig" is a host path; anything else (a path in
    /// the container image) is refused.
    std::string ldconfig = "@/sbin/ldconfig";
    /// Folders (container paths) to index; written to /etc/ld.so.conf.d/00-enflame.conf.
    std::vector<std::string> folders;
    /// "/proc/<pid>/ns/mnt" to enter, or empty when the caller already is in the container's
    /// mount namespace (createContainer hooks).
    std::string mount_namespace;
    std::chrono::milliseconds timeout{10000};
};

/// Writes the conf.d file (in-root, atomic; in the container's mount namespace when one is
/// given) and runs the host ldconfig in the sandbox chrooted into `rootfs`. A non-zero exit of
/// ldconfig is an Io error carrying its first stderr line.
[[nodiscard]] Result<void> update_ldcache(const std::string& rootfs, const LdcacheOptions& opts);

/// The second half of update_ldcache(): the host ldconfig in the sandbox, chrooted into
/// `rootfs` in `opts.mount_namespace` (the conf.d file is written already).
[[nodiscard]] Result<void> run_ldconfig(const std::string& rootfs, const LdcacheOptions& opts);

/// apply_edits() and, in the same child (one process fewer on a hook's path), the first half
/// of update_ldcache(): the conf.d file (always: a later ldconfig in the container keeps our
/// folders) and a look at the container's /etc/ld.so.cache (in-root, inject/ldcache.hpp).
/// True when ldconfig must still run: run_ldconfig(rootfs, lo) (`lo.mount_namespace` must then
/// be the namespace of `pid`). False (debug log "... ldconfig not run") when, for every host
/// file of `libraries`, the cache's entry for some soname in one of the folders it is mounted
/// to resolves, inside the rootfs, to that same file (device and inode).
[[nodiscard]] Result<bool> apply_edits_and_prepare_ldcache(
    int pid, const std::string& rootfs, const cdi::ContainerEdits& edits, const LdcacheOptions& lo,
    const std::vector<MountedLibrary>& libraries, const ApplyOptions& opts = {});

/// The conf.d file update_ldcache() writes.
inline constexpr std::string_view kLdconfConfPath = "/etc/ld.so.conf.d/00-enflame.conf";

/// Runs `fn` in a forked child that entered `mount_namespace` (empty = no setns) and returns
/// its Result (the error travels back through a pipe). Used for all in-namespace work.
[[nodiscard]] Result<void> in_mount_namespace(const std::string& mount_namespace,
                                              const std::function<Result<void>()>& fn);

/// As in_mount_namespace(), and the text `fn` returns travels back too (at most 4000 bytes).
[[nodiscard]] Result<std::string> in_mount_namespace_text(
    const std::string& mount_namespace, const std::function<Result<std::string>()>& fn);

}  // namespace inject::hook
