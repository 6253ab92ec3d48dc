// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The file edits behind `enflame-ctk runtime configure|unconfigure`, shared with
/// `enflame-ctk toolkit install|uninstall`: plan() reads the engine's files and returns what
/// to write, apply_changes() writes it. The edits themselves are inject::runtime_config's pure
/// functions; nothing here prints.

#include <string>
#include <vector>

#include "inject/host_root.hpp"
#include "inject/result.hpp"
#include "inject/runtime_config.hpp"

namespace inject::toolkit {

struct RuntimeArgs {
    std::string engine;
    /// The engine's main config and our drop-in, as the host names them (written into files).
    std::string config;
    std::string drop_in;
    bool no_drop_in = false;
    bool dry_run = false;  ///< for the command: print the plan instead of applying it
    bool uninstall = false;
    inject::runtime_config::Options opts;
};

/// One file to change (its host path, resolved in the root): its new content, or removal.
struct Change {
    std::string path;
    std::string content;
    bool remove = false;
    bool drop_backup = false;  ///< the file is back to its first original: the backup is redundant
};

/// What configure (or, with a.uninstall, unconfigure) writes; the files are read inside `root`.
[[nodiscard]] inject::Result<std::vector<Change>> plan(const RuntimeArgs& a, const HostRoot& root);

/// Writes every change inside `root`, creating missing folders, and appends a line for each to
/// `lines` ("updated: PATH", "unchanged: PATH (nothing to do)", "removed: PATH"; the lines of
/// the files written before a failure too); true when a file changed.
[[nodiscard]] inject::Result<bool> apply_changes(const HostRoot& root,
                                                 const std::vector<Change>& changes,
                                                 std::vector<std::string>& lines);

}  // namespace inject::toolkit
