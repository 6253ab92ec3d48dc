// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Lays out a simulated Enflame host under a root folder (docs/efsmi-model.md).

#include <string>

#include "inject/result.hpp"
#include "model.hpp"

namespace sim {

struct BuildOptions {
    std::string root;     ///< the folder to (re)create
    std::string sim_dir;  ///< where enflame-sim-efsmi and libefml-sim.so were built
};

/// Builds the whole tree in a sibling staging folder, then swaps it with `root`
/// (renameat2 RENAME_EXCHANGE) and removes the old content: a failure leaves `root` as it
/// was, a success replaces it whole. Needs root for mknod (Permission otherwise).
[[nodiscard]] inject::Result<void> build_host(const Host& h, const BuildOptions& opts);

/// Returns a copy of the ELF image `elf` in which each named dynamic symbol can no longer be
/// found: "\0EfmlGetDevUuid\0" becomes "\0XfmlGetDevUuid\0" (same length, nothing moves).
[[nodiscard]] inject::Result<std::string> hide_symbols(std::string elf,
                                                       const std::vector<std::string>& names);

}  // namespace sim
