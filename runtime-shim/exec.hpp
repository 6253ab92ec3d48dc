// SPDX-License-Identifier: Apache-2.0
#pragma once
// Finding the low-level runtime (config `runtimes`) and handing over to it with execve.

#include <string>
#include <string_view>
#include <vector>

#include "inject/result.hpp"

namespace shim {

/// The first entry of `runtimes` that is an executable file: an absolute path as is, a bare
/// name looked up in `path_env` (PATH). Entries that are this very binary (`self_exe`, compared
/// by device and inode) are skipped so a shim installed as "runc" cannot exec itself.
/// NotFound: "no low-level runtime found: tried 'runc', 'crun' (PATH=...)".
[[nodiscard]] inject::Result<std::string> find_runtime(
    const std::vector<std::string>& runtimes, std::string_view path_env,
    const std::string& self_exe = "/proc/self/exe");

/// execve(runtime, argv with argv[0] = runtime, envp). Returns only on failure.
[[nodiscard]] inject::Error exec_runtime(const std::string& runtime, int argc, char** argv,
                                         char** envp);

}  // namespace shim
