// SPDX-License-Identifier: Apache-2.0
#pragma once

// The node's CDI spec kept naming the DRS instances in force (docs/drs-manager.md, "The CDI
// spec"): the device plugin hands out `enflame.com/gpu=DRS-<uuid>`, which containerd resolves
// against the spec the toolkit installer wrote, so each layout change regenerates it there
// (inject::toolkit::refresh_cdi_spec), before the manager writes `success`.

#include <optional>
#include <set>
#include <string>

#include "inject/device.hpp"

namespace drs_manager {

class CdiSpec {
public:
    /// `host_root`: where the node's root is mounted ("": never refreshed); `toolkit_dir`: the
    /// installer's toolkit folder on the node.
    CdiSpec(std::string host_root, std::string toolkit_dir);

    /// Called when discovery shows the layout done: regenerates the spec when `host`'s DRS
    /// instances are not those it was last regenerated for (at start: not known, so once).
    /// Returns why the spec is stale (logged once as a warning line), or nullopt when it is not.
    std::optional<std::string> refresh(const inject::device::Host& host);

private:
    std::string host_root_, toolkit_dir_;
    std::optional<std::set<std::string>> done_for_;  // the instances of the last good refresh
    std::string last_warning_;
};

}  // namespace drs_manager
