// SPDX-License-Identifier: Apache-2.0
#pragma once

// The DRA driver's node side, without gRPC: prepare and unprepare claims against the cards
// discovery found, writing per-claim CDI specs and the checkpoint; the DRS instances of claims
// in drs_instances.cpp. docs/dra-driver.md has the order of writes and the crash rules.

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "dra/checkpoint.hpp"
#include "dra/claims.hpp"
#include "inject/cdi_generate.hpp"
#include "inject/device.hpp"
#include "inject/result.hpp"

namespace dra {

/// The card of `index` on `host`, or nullptr.
[[nodiscard]] inject::device::Device* card_of(inject::device::Host& host, std::uint32_t index);
/// The DRS profile a placement name stands for on `host` (its name spelled as placement_name
/// does), or nullptr.
[[nodiscard]] const inject::device::DrsProfile* profile_of(const inject::device::Host& host,
                                                           const DeviceName& n);

/// Fetches a ResourceClaim object by namespace and name.
using ClaimSource =
    std::function<inject::Result<Json>(const std::string& ns, const std::string& name)>;
/// Discovers the node's cards (again: DRS instances come and go).
using Discoverer = std::function<inject::Result<inject::device::Host>()>;

/// How the driver makes and removes DRS instances (inject/drs.hpp in the daemon). Empty
/// functions: a placement cannot be prepared (the claim's error says so).
struct DrsOps {
    std::function<inject::Result<std::vector<inject::device::DrsInstance>>(std::uint32_t card)>
        list;
    std::function<inject::Result<inject::device::DrsInstance>(std::uint32_t card,
                                                              const inject::device::DrsProfile&)>
        create;
    std::function<inject::Result<void>(std::uint32_t card, std::uint32_t id)> destroy;
};

struct DriverOptions {
    std::string cdi_root = "/var/run/cdi";
    std::string checkpoint_path;
    inject::cdi::GenerateOptions cdi;  ///< roots, library paths, hook
    std::string driver_name = std::string(kDriverName);
    std::string node_name;  ///< our pool: a claim allocated from another is refused (check_pool)
    DrsOps drs;
};

/// What a NodePrepareResources call allows: kubelet's deadline (its gRPC call times out after
/// 45 s) and whether it still waits for the answer. Nothing is committed (instance, spec,
/// checkpoint) for a call that is cancelled or past its deadline.
struct CallLimits {
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    std::function<bool()> cancelled;  ///< empty: never
};

/// The longest a prepare waits for the API server, also when the call has no deadline: under
/// kubelet's 45 s, so the answer (an error for a claim still unfetched) reaches it.
inline constexpr std::chrono::milliseconds kFetchBudget{40000};
/// How long an unprepared claim is remembered: a prepare of it that started before the
/// unprepare and is still fetching (at most kFetchBudget) is refused, not committed.
inline constexpr std::chrono::milliseconds kTombstoneLife{300000};

/// One claim's answer: its devices, or one error line.
struct ClaimAnswer {
    std::vector<PreparedDevice> devices;
    std::string error;
};

class Driver {
public:
    /// Loads the checkpoint (a corrupt one falls back to the previous one, logged: see
    /// load_checkpoint_or_previous) and discovers the cards.
    [[nodiscard]] static inject::Result<std::unique_ptr<Driver>> create(DriverOptions o,
                                                                        ClaimSource claims,
                                                                        Discoverer discover);

    /// Brings the CDI folder and the checkpoint into agreement (see above). Lines logged.
    void converge();

    /// NodePrepareResources: every claim answered, keyed by UID.
    /// The claims not prepared yet are fetched in parallel, for at most kFetchBudget or until
    /// shortly before the call's deadline; a claim unprepared while this call ran is refused.
    [[nodiscard]] std::map<std::string, ClaimAnswer> prepare(const std::vector<ClaimRef>& claims,
                                                             const CallLimits& call = {});
    /// NodeUnprepareResources: UID -> error ("" = done). Unknown claims succeed.
    [[nodiscard]] std::map<std::string, std::string> unprepare(const std::vector<ClaimRef>& claims);

    /// The checkpoint as it is now.
    [[nodiscard]] Checkpoint checkpoint() const;

private:
    Driver(DriverOptions o, ClaimSource claims, Discoverer discover, inject::device::Host host,
           Checkpoint cp)
        : o_(std::move(o)),
          claims_(std::move(claims)),
          discover_(std::move(discover)),
          host_(std::move(host)),
          cp_(std::move(cp)) {}

    /// The claims `refs` fetched in parallel, each answered by `until` (else its error says so).
    std::map<std::string, inject::Result<PreparedClaim>> fetch_all(
        const std::vector<const ClaimRef*>& refs,
        std::chrono::steady_clock::time_point until) const;
    /// Why a claim of a call started at `start` must not be committed now ("" = it may).
    std::string unwanted(const std::string& uid, std::chrono::steady_clock::time_point start,
                         const CallLimits& call);
    inject::Result<bool> write_spec(const std::string& uid, const std::vector<DeviceName>& devices,
                                    const std::map<std::string, CreatedInstance>& made,
                                    bool only_if_changed = false);
    /// The spec of a claim we know, from its answer (after a restart, or when it went missing).
    inject::Result<bool> write_spec(const std::string& uid, const PreparedClaim& c,
                                    bool only_if_changed = false);

    /// A whole card of `pc` on a card split into DRS instances (asked of efsmi now, when this
    /// node has DRS profiles): an error, the card is not handed out whole.
    inject::Result<void> check_whole_cards(const PreparedClaim& pc);
    /// A placement `device` on `card` while a checkpointed claim holds the card whole: Conflict
    /// naming the card and that claim.
    inject::Result<void> held_whole(std::uint32_t card, const std::string& device) const;
    /// Makes the instances of `pc`'s placements (pending entries of `attempt` first, see
    /// above), recording each in its device and in host_. On error nothing of it is left
    /// (destroyed, pending dropped and saved), except an instance that could not be taken
    /// back: its pending entry stays for the next start.
    inject::Result<void> make_instances(const std::string& uid, std::uint64_t attempt,
                                        PreparedClaim& pc);
    /// Destroys the instances `pc` records as made (clearing them) and drops their pending
    /// entries of `attempt` (in memory only); an instance that will not go keeps its entry.
    void undo_instances(const std::string& uid, std::uint64_t attempt, PreparedClaim& pc);
    /// After a create of `profile` on `card` failed: the one new instance of that profile no
    /// claim records (not in `before`), if efsmi made it anyway, destroyed. True when nothing
    /// of it is left (its pending entry can go).
    bool take_back_failed_create(const std::string& uid, std::uint32_t card,
                                 const std::string& profile,
                                 const std::vector<std::uint32_t>& before);
    /// efsmi's list and destroy as the DRS ledger calls them.
    k8s::drs::Ops ledger_ops() const;
    /// Whether a claim other than `uid` records instance `c`.
    bool recorded_by_other(const std::string& uid, const CreatedInstance& c) const;
    /// Destroys the instances `pc` records, for unprepare, clearing each that is gone (and
    /// setting `changed`); the first error.
    inject::Result<void> release_instances(const std::string& uid, PreparedClaim& pc,
                                           bool& changed);
    /// converge()'s part for pending entries: destroys what a killed prepare made.
    void converge_pending();
    /// converge()'s part for placements: each checkpointed placement whose instance is gone
    /// (a reboot, a driver reload, destroyed behind our back) is made again through a pending
    /// entry and recorded. The first failure, naming card, profile and efsmi's message. An
    /// efsmi that cannot list is logged here and is no failure: nothing is known gone.
    inject::Result<void> restore_instances(const std::string& uid, PreparedClaim& pc);

    DriverOptions o_;
    ClaimSource claims_;
    Discoverer discover_;
    mutable std::mutex mu_;  ///< guards host_, cp_ and the files (not the API calls)
    inject::device::Host host_;
    Checkpoint cp_;
    std::uint64_t next_attempt_ = 1;  ///< the next prepare attempt's tag (PendingCreate::attempt)
    /// The checkpoint was not read as saved (load_checkpoint_or_previous): converge() keeps the
    /// specs it does not list.
    bool keep_unknown_specs_ = false;
    /// Claims unprepared in the last kTombstoneLife, with when (see unwanted()).
    std::map<std::string, std::chrono::steady_clock::time_point> unprepared_;
};

}  // namespace dra
