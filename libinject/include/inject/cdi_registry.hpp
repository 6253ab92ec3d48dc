// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The CDI registry: the specs in the spec dirs (`/etc/cdi`, then `/var/run/cdi`; a later dir
/// wins a conflict, as in the reference), and resolution of fully qualified device names into
/// the ContainerEdits to apply. The runtime shim uses this in cdi mode and resolve(Spec, ...)
/// on an in-memory spec in auto mode; the OCI hook applies the resolved edits.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "inject/cdi.hpp"
#include "inject/cdi_provenance.hpp"
#include "inject/cdi_validate.hpp"
#include "inject/result.hpp"

namespace inject::cdi {

/// A loaded spec and the file it came from.
struct LoadedSpec {
    std::string path;
    int dir_priority = 0;  ///< index of its dir in the dirs given to Registry::load
    Spec spec;
    /// The spec's generated-from record (inject/cdi_provenance.hpp); nullopt when it has none
    /// or it does not parse.
    std::optional<GeneratedFrom> generated_from;
};

/// The specs of a set of spec dirs. Build with Registry::load().
class Registry {
public:
    /// Loads every `*.yaml`, `*.yml` and `*.json` file (not recursing; sorted by name within a
    /// dir) of `dirs`. A missing dir is skipped; an unreadable dir is an error (Io/Permission
    /// naming it). A file that does not parse or validate is not loaded and is reported in
    /// problems(); it never fails the load, as with the reference registry.
    /// The same qualified name in two specs: the one from the later dir wins; within one dir,
    /// the first file by name keeps it, and conflicts() names both files.
    [[nodiscard]] static Result<Registry> load(const std::vector<std::string>& dirs);

    /// Builds a registry from specs already in memory (tests, auto mode). Same rules as load().
    [[nodiscard]] static Registry from_specs(std::vector<LoadedSpec> specs);

    /// The specs loaded, in load order.
    [[nodiscard]] const std::vector<LoadedSpec>& specs() const { return specs_; }

    /// One line per conflict: "device 'enflame.com/gpu=0' is defined in '/etc/cdi/a.yaml' and
    /// '/etc/cdi/b.yaml'". Later-dir overrides are not conflicts.
    [[nodiscard]] const std::vector<std::string>& conflicts() const { return conflicts_; }

    /// Files that failed to parse or validate ("<file>: <reason>"), one line each.
    [[nodiscard]] const std::vector<std::string>& problems() const { return problems_; }

    /// Every fully qualified device name, sorted.
    [[nodiscard]] std::vector<std::string> device_names() const;

    /// Resolves fully qualified names ("enflame.com/gpu=0") into edits: for each spec used,
    /// its spec-level edits once (in order of first use), then each device's edits in request
    /// order; identical entries are kept once. Errors: InvalidInput for a malformed name,
    /// NotFound "unknown CDI device 'enflame.com/gpu=9'", Conflict for a name defined twice in
    /// one dir.
    [[nodiscard]] Result<ContainerEdits> resolve(
        const std::vector<std::string>& qualified_names) const;

private:
    struct Entry {
        std::string qualified_name;
        std::size_t spec_index;
        std::size_t device_index;
        bool conflicted;
    };
    const Entry* find(const std::string& qualified_name) const;

    std::vector<LoadedSpec> specs_;
    std::vector<Entry> entries_;  ///< sorted by qualified_name
    std::vector<std::string> conflicts_;
    std::vector<std::string> problems_;
};

/// Resolves device names of one in-memory spec: plain names ("0", "all") or qualified names
/// of the spec's kind. Spec-level edits first, then each device's in request order,
/// de-duplicated. NotFound: "unknown CDI device 'enflame.com/gpu=9'".
[[nodiscard]] Result<ContainerEdits> resolve(const Spec& spec,
                                             const std::vector<std::string>& device_names);

/// Appends `from` to `into`, skipping entries already there (env by whole entry, device nodes
/// by container path, mounts by container path, hooks by equality, gids by value).
void merge_edits(ContainerEdits& into, const ContainerEdits& from);

}  // namespace inject::cdi
