// SPDX-License-Identifier: Apache-2.0
#pragma once
// The first half of update_ldcache(), shared by update_ldcache() and
// apply_edits_and_prepare_ldcache() (which runs it in the child that applied the edits, one
// process fewer). Internal to libinject/src/sandbox.

#include <string>
#include <string_view>

#include "inject/hook.hpp"

namespace inject::hook::detail {

/// The child's answer when the cache already resolves every library (ldconfig need not run).
inline constexpr std::string_view kLdcacheCurrent = "current";

/// Checks `opts` (a host ldconfig, absolute folders) and returns the conf.d file's text.
[[nodiscard]] Result<std::string> ldconf_text(const LdcacheOptions& opts);

/// In the container's mount namespace, with the rootfs open as `root_fd`: writes `conf` to
/// kLdconfConfPath, then returns kLdcacheCurrent when `libraries` is not empty and the
/// container's ld.so.cache resolves them all, otherwise why ldconfig must run.
[[nodiscard]] Result<std::string> prepare_in_root(int root_fd, const std::string& conf,
                                                  const std::vector<MountedLibrary>& libraries);

/// Logs the child's answer; true when ldconfig must still run.
[[nodiscard]] bool ldconfig_needed(const std::string& rootfs, std::size_t libraries,
                                   const std::string& answer);

}  // namespace inject::hook::detail
