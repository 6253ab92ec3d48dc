// SPDX-License-Identifier: Apache-2.0
#pragma once

// The plugin's memory across restarts: the claims it prepared and what it answered for each,
// in one JSON file in the plugin folder (written atomically: temp file, fsync, rename). kubelet
// does not tell a restarted plugin what is prepared; this file does.
//
//   {"version": 1, "claims": {"<uid>": {"namespace": "ns", "name": "c",
//     "devices": [{"requests": ["gpu"], "pool": "node1", "device": "gcu-0",
//                  "cdiDeviceIDs": ["k8s.gcu.enflame.com/claim=<uid>-gcu-0"]}]}}}

#include <map>
#include <string>
#include <vector>

#include "inject/result.hpp"

namespace edra {

/// One device of a prepared claim, as NodePrepareResources answered it.
struct PreparedDevice {
    std::vector<std::string> requests;
    std::string pool;
    std::string device;
    std::vector<std::string> cdi_ids;
    bool operator==(const PreparedDevice&) const = default;
};

/// A prepared claim.
struct PreparedClaim {
    std::string ns;
    std::string name;
    std::vector<PreparedDevice> devices;
    bool operator==(const PreparedClaim&) const = default;
};

/// Every prepared claim by UID.
struct Checkpoint {
    std::map<std::string, PreparedClaim> claims;
    bool operator==(const Checkpoint&) const = default;
};

/// The checkpoint file's text (deterministic: keys sorted).
[[nodiscard]] std::string to_text(const Checkpoint& cp);
/// Parses checkpoint text; errors name `source` and the field.
[[nodiscard]] inject::Result<Checkpoint> parse_checkpoint(const std::string& text,
                                                          const std::string& source);
/// Reads `path`; a missing file is an empty checkpoint.
[[nodiscard]] inject::Result<Checkpoint> load_checkpoint(const std::string& path);
/// Replaces `path` atomically (mode 0600).
[[nodiscard]] inject::Result<void> save_checkpoint(const std::string& path, const Checkpoint& cp);

}  // namespace edra
