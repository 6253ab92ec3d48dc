// SPDX-License-Identifier: Apache-2.0
#pragma once

// The plugin's memory across restarts: the claims it prepared and what it answered for each,
// in one JSON file in the plugin folder (written atomically: temp file, fsync, rename). kubelet
// does not tell a restarted plugin what is prepared; this file does.
//
//   {"version": 1, "claims": {"<uid>": {"namespace": "ns", "name": "c",
//     "devices": [{"requests": ["gpu"], "pool": "node1", "device": "gcu-0",
//                  "cdiDeviceIDs": ["k8s.gcu.enflame.com/claim=<uid>-gcu-0"]}]}}}
//
// A DRS placement's device also records the instance the prepare made for it
// ("createdInstance": {"card", "id", "profile", "uuid"}); unprepare destroys exactly that one.
// "pending" lists the instances being made right now: written (durably) before efsmi is asked
// to create one, with the card's instance ids at that moment and the prepare attempt, and
// cleared with the checkpoint that records the claim (an entry whose instance could not be
// told apart or taken back stays for the next start). The entry records the id efsmi made
// ("made": {"id", "uuid"}), saved right after the create; a plugin killed in between finds the
// entry at start and destroys that id only (driver.hpp).
// Both keys are left out when empty, so a checkpoint without DRS reads as version 1 always did.
// Each save keeps the file it replaces as checkpoint.json.prev; a corrupt checkpoint.json (a disk
// fault, a hand edit) is moved to checkpoint.json.corrupt and the plugin starts from .prev.
// A save that drops claims (an unprepare) writes its content as .prev first, then the file:
// neither ever holds a claim kubelet was told is unprepared, so a fallback cannot bring one back
// (its instance made again and leaked, its spec written for nobody). Tombstones in the file would
// not do: the file that holds them is the one found corrupt.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "inject/result.hpp"
#include "k8s/drs_ledger.hpp"

namespace dra {

/// A DRS instance this plugin made for a placement (the ledger's record, k8s/drs_ledger.hpp).
using CreatedInstance = k8s::drs::Made;

/// One device of a prepared claim, as NodePrepareResources answered it.
struct PreparedDevice {
    std::vector<std::string> requests;
    std::string pool;
    std::string device;
    std::vector<std::string> cdi_ids;
    std::optional<CreatedInstance> created;  ///< a placement's instance
    bool operator==(const PreparedDevice&) const = default;
};

/// An instance being made for claim `owner` (the ledger's pending entry, k8s/drs_ledger.hpp):
/// `attempt` tells the prepare that wrote it from a later one of the same claim (which must not
/// drop an entry kept for the next start: see driver.hpp).
using PendingCreate = k8s::drs::Pending;

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
    std::vector<PendingCreate> pending;
    bool operator==(const Checkpoint&) const = default;
};

/// The checkpoint file's text (deterministic: keys sorted).
[[nodiscard]] std::string to_text(const Checkpoint& cp);
/// Parses checkpoint text; errors name `source` and the field.
[[nodiscard]] inject::Result<Checkpoint> parse_checkpoint(const std::string& text,
                                                          const std::string& source);
/// Reads `path`; a missing file is an empty checkpoint.
[[nodiscard]] inject::Result<Checkpoint> load_checkpoint(const std::string& path);
/// Replaces `path` atomically (mode 0600); the file it replaces becomes `<path>.prev` (a hard
/// link, swapped in atomically: one good copy exists at every moment). `drops_claims`: `cp`
/// lacks claims the file lists; `<path>.prev` is replaced by `cp` first (see above).
[[nodiscard]] inject::Result<void> save_checkpoint(const std::string& path, const Checkpoint& cp,
                                                   bool drops_claims = false);

/// A checkpoint as the plugin starts with it.
struct LoadedCheckpoint {
    Checkpoint cp;
    /// Empty: `path` read as it is (or there was none). Else the one line to log: `path` was
    /// unreadable or corrupt (kept as `<path>.corrupt`) and `cp` is `<path>.prev`, or, when that
    /// is bad too, empty.
    std::string problem;
    bool lost = false;  ///< both were bad: `cp` is empty though claims may be prepared
};
/// Reads `path`, falling back to `<path>.prev` when `path` is corrupt, unreadable or missing
/// while `<path>.prev` exists (a crash right after a fallback). Never an error: both bad is
/// `lost` (the plugin starts without the claims; their CDI specs stay, an unprepare removes each).
[[nodiscard]] LoadedCheckpoint load_checkpoint_or_previous(const std::string& path);

}  // namespace dra
