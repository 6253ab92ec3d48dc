// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The host's multiarch library folder for the architecture this binary is built for (the
/// Debian and Ubuntu layout that Enflame's driver packages install into): where discovery and
/// the CDI spec look for libefml and the compute libraries besides the plain /usr/lib folders.
/// An arm64 node's libraries are in /usr/lib/aarch64-linux-gnu, never in the x86_64 folder.

namespace inject {

// The two architectures we build for (CMakePresets.json): aarch64, else x86_64.
#if defined(__aarch64__)
inline constexpr const char* kMultiarchLibDir = "/usr/lib/aarch64-linux-gnu";
#else
inline constexpr const char* kMultiarchLibDir = "/usr/lib/x86_64-linux-gnu";
#endif

}  // namespace inject
