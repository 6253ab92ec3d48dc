// SPDX-License-Identifier: Apache-2.0
#pragma once

// The DRS instance ledger: what the plane records of the DRS instances it makes (for a DRA
// claim, a HAMi pod, a DRS layout) and the one crash rule all of them follow
// (docs/dra-driver.md, "DRS instances"):
//   - before efsmi is asked to create, a Pending entry (owner, card, profile, the card's ids at
//     that moment) is saved durably; the id efsmi made is saved into it right after;
//   - at start, a Pending entry with a made id destroys that id only, and only while efsmi still
//     lists it as made (same profile, same UUID) and no record holds it; one without a made id
//     destroys nothing (an instance new since then cannot be told from an administrator's);
//   - an instance is destroyed only while it is still the one recorded (seen_in: Ours);
//   - the ledger file keeps the version it replaces as `<file>.prev` and falls back to it when
//     the file is corrupt; a save that drops records writes `.prev` first, so a fallback never
//     brings back an instance already destroyed (its id may be someone else's by then).

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inject/device.hpp"
#include "inject/result.hpp"

namespace k8s::drs {

/// An instance we made, as efsmi printed it when it was made.
struct Made {
    std::uint32_t card = 0;
    std::uint32_t id = 0;
    std::string profile;  ///< "1g.11gb"; empty when not recorded (older HAMi checkpoints)
    std::string uuid;     ///< where efsmi prints one; empty otherwise
    bool operator==(const Made&) const = default;
};

/// How a recorded instance stands among a card's instances now.
enum class Seen {
    Ours,   ///< efsmi lists its id with its profile and UUID (where both sides have one)
    Gone,   ///< no instance has its id
    Other,  ///< its id is another instance now (another profile or UUID): never ours to touch
};
[[nodiscard]] Seen seen_in(const std::vector<inject::device::DrsInstance>& card_instances,
                           const Made& rec);

/// A record as the ledger files hold it: {"card", "id", "profile", "uuid"}.
[[nodiscard]] nlohmann::json made_json(const Made& m);
/// Reads one back; throws std::exception naming the field on a wrong shape.
[[nodiscard]] Made made_from_json(const nlohmann::json& j);

/// An instance being made for `owner` (a claim UID, a pod UID, a layout): `before` are the
/// card's instance ids just before efsmi was asked; `attempt` tells one try of an owner from a
/// later one. `made` is the id efsmi answered, saved right after the create.
struct Pending {
    std::string owner;
    std::uint32_t card = 0;
    std::string profile;
    std::vector<std::uint32_t> before;
    std::uint64_t attempt = 0;
    std::optional<std::uint32_t> made;
    std::string made_uuid;  ///< its UUID where efsmi prints one
    bool operator==(const Pending&) const = default;
};

/// The entries as the ledger files hold them: [{"owner"|key, "card", "profile", "before",
/// "attempt", "made": {"id", "uuid"}}]. `owner_key` names the owner's field ("claim" in the DRA
/// checkpoint, "podUID" in HAMi's).
[[nodiscard]] nlohmann::json pending_json(const std::vector<Pending>& pending,
                                          const char* owner_key);
/// Reads them back; throws std::exception naming the field on a wrong shape.
[[nodiscard]] std::vector<Pending> pending_from_json(const nlohmann::json& list,
                                                     const char* owner_key);

/// efsmi's instance operations (inject::drs), as functions so tests can stand in.
struct Ops {
    std::function<inject::Result<std::vector<inject::device::DrsInstance>>(std::uint32_t)> list;
    std::function<inject::Result<void>(std::uint32_t, std::uint32_t)> destroy;
};

/// Whether any record holds instance `id` of `card`.
using IsRecorded = std::function<bool(std::uint32_t card, std::uint32_t id)>;

/// The ids in `card_instances` of `profile` that are neither in `before` nor recorded.
[[nodiscard]] std::vector<std::uint32_t> unrecorded_new(
    const std::vector<inject::device::DrsInstance>& card_instances, std::uint32_t card,
    const std::string& profile, const std::set<std::uint32_t>& before, const IsRecorded& recorded);

/// After a create of `profile` on `card` failed: the one instance of that profile that is new
/// since `before` and unrecorded, which efsmi may have made anyway (a timeout, a read-back that
/// failed), destroyed. True when nothing of it is left (its pending entry can go); false when
/// it could not be checked, told apart (two new ones) or destroyed. `who` starts each log line.
[[nodiscard]] bool take_back_failed_create(const Ops& ops, const std::string& who,
                                           std::uint32_t card, const std::string& profile,
                                           const std::vector<std::uint32_t>& before,
                                           const IsRecorded& recorded);

/// The crash rule at start for `pending` (see above): returns the entries to keep (efsmi could
/// not list or destroy: the next start looks again); `destroyed` hears of each instance gone.
/// `owner_kind` ("claim", "pod") names the owner in the log lines.
[[nodiscard]] std::vector<Pending> converge(const std::vector<Pending>& pending,
                                            const char* owner_kind, const Ops& ops,
                                            const IsRecorded& recorded,
                                            const std::function<void(const Made&)>& destroyed);

/// Destroys `rec` if it is still ours; what it found (Gone and Other: nothing destroyed, the
/// record can go). Errors: efsmi could not list or destroy (the record stays).
[[nodiscard]] inject::Result<Seen> release(const Ops& ops, const Made& rec);

/// Writes ledger file `path` (mode 0600, atomically, fsynced); the file it replaces becomes
/// `<path>.prev` (a hard link swapped in, one good copy at every moment). `drops_records`: the
/// text lacks records the file holds: `.prev` is replaced by the text first.
[[nodiscard]] inject::Result<void> save_file(const std::string& path, const std::string& text,
                                             bool drops_records);

/// A ledger file as a daemon starts with it.
struct LoadedFile {
    std::optional<std::string> text;  ///< none: no file, or both bad
    /// Empty: `path` read as it is (or there was none). Else the one line to log: `path` was
    /// unreadable or corrupt (moved to `<path>.corrupt`) and `text` is `<path>.prev`'s, or,
    /// when that is bad too, none.
    std::string problem;
    bool lost = false;  ///< both were bad: records may be missing
};
/// Reads `path` as `parse` accepts it, falling back to `<path>.prev` when `path` is corrupt,
/// unreadable, or missing while `.prev` exists (a crash right after a fallback).
[[nodiscard]] LoadedFile load_file(
    const std::string& path,
    const std::function<inject::Result<void>(const std::string& text, const std::string& source)>&
        parse);

}  // namespace k8s::drs
