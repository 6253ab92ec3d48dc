// SPDX-License-Identifier: Apache-2.0
#pragma once

// The per-claim CDI spec (docs/kubelet-wire.md, DRA), as NVIDIA's DRA driver writes them: kind
// k8s.gcu.enflame.com/claim, file <cdi-root>/k8s.gcu.enflame.com-claim_<claimUID>.yaml, one CDI
// device per prepared device named <claimUID>-<device>. The edits are libinject's (the same
// generator as `enflame-ctk cdi generate`): the card's node, /dev/gcuctl, efsmi and libefml
// mounts, ENFLAME_VISIBLE_DEVICES=void, and for a DRS instance its parent card's node and
// TOPS_VISIBLE_DEVICES=DRS-<uuid>.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dra/checkpoint.hpp"
#include "dra/claims.hpp"
#include "inject/cdi.hpp"
#include "inject/cdi_generate.hpp"
#include "inject/device.hpp"
#include "inject/result.hpp"

namespace dra {

inline constexpr std::string_view kCdiVendor = "k8s.gcu.enflame.com";
inline constexpr std::string_view kCdiClass = "claim";

/// "k8s.gcu.enflame.com-claim_<uid>.yaml"
[[nodiscard]] std::string spec_file_name(const std::string& claim_uid);
/// The claim UID a spec file name of ours carries; empty for any other file.
[[nodiscard]] std::string claim_uid_of(const std::string& file_name);
/// Whether `file_name` is a temporary file our atomic spec write makes
/// ("k8s.gcu.enflame.com-claim_<uid>.yaml.tmp.XXXXXX"): one a crash mid-write leaves behind.
[[nodiscard]] bool is_temp_spec(const std::string& file_name);
/// "k8s.gcu.enflame.com/claim=<uid>-<device>"
[[nodiscard]] std::string cdi_device_id(const std::string& claim_uid, const DeviceName& device);

/// The spec for `devices` of claim `claim_uid` on `host`. `base` gives the roots, search paths
/// and hook (vendor, class, names and the "all" device are set here). A DRS placement is the
/// instance `made` gives for its name (device name -> the instance made for it), with the same
/// edits as an instance that already existed; the card's instance of that id must still be of
/// that profile (and that UUID, where both have one), else it is another instance that took the
/// id and the spec is refused. NotFound names a device this node does not have: "device
/// 'gcu-7' is not on this node".
[[nodiscard]] inject::Result<inject::cdi::Spec> claim_spec(
    const inject::device::Host& host, const inject::cdi::GenerateOptions& base,
    const std::string& claim_uid, const std::vector<DeviceName>& devices,
    const std::map<std::string, CreatedInstance>& made = {});

/// Writes `spec` as YAML to <cdi_root>/spec_file_name(uid) atomically (mode 0644; not
/// fsynced: it is derived from the checkpoint). With `only_if_changed`, a file that already
/// holds those bytes is left alone. True when the file was written.
[[nodiscard]] inject::Result<bool> write_claim_spec(const std::string& cdi_root,
                                                    const std::string& claim_uid,
                                                    const inject::cdi::Spec& spec,
                                                    bool only_if_changed = false);
/// Removes the claim's spec file; a missing one is fine.
[[nodiscard]] inject::Result<void> remove_claim_spec(const std::string& cdi_root,
                                                     const std::string& claim_uid);
/// Removes the temporary spec files (`is_temp_spec`) in `cdi_root`; their names (sorted).
[[nodiscard]] inject::Result<std::vector<std::string>> remove_temp_specs(
    const std::string& cdi_root);
/// The claim UIDs of our spec files in `cdi_root` (sorted; a missing folder has none).
[[nodiscard]] inject::Result<std::vector<std::string>> claim_specs_in(const std::string& cdi_root);

}  // namespace dra
