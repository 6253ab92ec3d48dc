// SPDX-License-Identifier: Apache-2.0
#pragma once
// What enflame-nri-plugin answers to CreateContainer: the container's request read as the shim
// reads it (ENFLAME_VISIBLE_DEVICES with the unprivileged rule, cdi.k8s.io/* annotations, which
// is also how the device plugin's Allocate answer arrives), the edits built by the same libinject
// functions as the shim's, turned into an NRI adjustment (device nodes with the host's numbers,
// whose cgroup allow rules the runtime adds; mounts; env; hooks).

#include <optional>
#include <string>

#include "inject/cdi.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/config.hpp"
#include "inject/request_edits.hpp"
#include "inject/result.hpp"
#include "nri/proto/nri.pb.h"

namespace nri_plugin {

namespace api = ::nri::pkg::api::v1alpha1;

/// The answer for one container.
struct Decision {
    bool asked = false;  ///< the container asked for something (else `adjust` is empty)
    api::ContainerAdjustment adjust;
    std::string summary;  ///< one line for the log
};

/// The configured spec dirs, loaded once and kept while they do not change: each dir's and each
/// spec file's inode, size and modification time are compared on every get() (a readdir and a
/// stat per file), so a create parses no YAML unless a spec changed.
class SpecCache {
public:
    [[nodiscard]] inject::Result<const inject::cdi::Registry*> get(
        const inject::config::Config& cfg);

private:
    std::string stamp_;
    std::optional<inject::cdi::Registry> reg_;
};

/// The adjustment for `c`. NRI shows no capabilities, so every container counts as unprivileged:
/// with accept-envvar-when-unprivileged = false only annotations are read. An error names the
/// device or entry that cannot be given; the runtime then fails the container's creation.
[[nodiscard]] inject::Result<Decision> decide(const inject::config::Config& cfg,
                                              const api::Container& c,
                                              const inject::request::EditsOptions& opts,
                                              SpecCache& specs);

/// Edits as an adjustment: one entry per device path, mount destination and env key (NRI counts
/// a second claim on a key, even by the same plugin, as a conflict; the last one wins, as in
/// oci::apply). Unsupported for edits NRI cannot express (additionalGids, an unknown hook stage).
[[nodiscard]] inject::Result<api::ContainerAdjustment> to_adjustment(
    const inject::cdi::ContainerEdits& edits);

}  // namespace nri_plugin
