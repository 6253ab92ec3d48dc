// SPDX-License-Identifier: Apache-2.0
// Updating a container's ldcache: the conf.d file is written in-root, then the host's ldconfig
// runs in the sandbox chrooted into the rootfs. Never a binary from the image
// (CVE-2024-0136/0137), never with an inherited environment (CVE-2025-23266).
#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "inject/log.hpp"
#include "inject/mount.hpp"
#include "inject/sandbox.hpp"

namespace inject::hook {

Result<void> update_ldcache(const std::string& rootfs, const LdcacheOptions& opts) {
    if (opts.ldconfig.size() < 2 || opts.ldconfig[0] != '@' || opts.ldconfig[1] != '/')
        return fail(Errc::Permission, "ldconfig '" + opts.ldconfig +
                                          "' is not a host path: only host binaries ('@/sbin/ldconfig') are run");
    const std::string ldconfig = opts.ldconfig.substr(1);
    std::string conf;
    for (const auto& f : opts.folders) {
        if (f.empty() || f.front() != '/' || f.find('\n') != std::string::npos)
            return fail(Errc::InvalidInput, "library folder '" + f + "' is not an absolute path");
        conf += f + "\n";
    }
    auto w = in_mount_namespace(opts.mount_namespace, [&]() -> Result<void> {
        INJECT_TRY(fs::UniqueFd root, fs::open_root(rootfs));
        return fs::write_in_root(root.get(), kLdconfConfPath, conf);
    });
    if (!w) return fail(std::move(w).error().context("writing " + std::string(kLdconfConfPath) + " in " + rootfs));
    sandbox::Options so;
    so.executable = ldconfig;
    so.argv = {"ldconfig"};
    // Folders on the command line too: a minimal image has no ld.so.conf including conf.d.
    so.argv.insert(so.argv.end(), opts.folders.begin(), opts.folders.end());
    so.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
    so.mount_namespace = opts.mount_namespace;
    so.rootfs = rootfs;
    so.syscalls = sandbox::ldconfig_syscalls();
    so.timeout = opts.timeout;
    INJECT_TRY(auto out, sandbox::run(so));
    if (out.exit_code != 0) {
        std::string first = out.err.substr(0, out.err.find('\n'));
        return fail(Errc::Io, "ldconfig in " + rootfs + " exited with " +
                                  (out.term_signal ? "signal " + std::to_string(out.term_signal) : std::to_string(out.exit_code)) +
                                  (first.empty() ? "" : ": " + first));
    }
    log::debug("ldcache of {} updated ({} folders)", rootfs, opts.folders.size());
    return ok();
}

}  // namespace inject::hook
