// SPDX-License-Identifier: Apache-2.0
// The DRS instances the DRA driver makes for claims (driver.hpp): made at prepare, undone when
// a prepare fails half way, released at unprepare, converged after a crash (pending creates)
// and restored from the checkpoint at start.
#include <algorithm>
#include <set>

#include "dra/claim_cdi.hpp"
#include "dra/driver.hpp"
#include "dra/slices.hpp"
#include "inject/log.hpp"

namespace dra {

using inject::Errc;
using inject::fail;

namespace {

// Drops one pending entry of that prepare attempt for (card, profile) (all entries alike).
void drop_pending_one(std::vector<PendingCreate>& pending, const std::string& uid,
                      std::uint64_t attempt, std::uint32_t card, const std::string& profile,
                      std::optional<std::uint32_t> made = std::nullopt) {
    const auto it = std::find_if(pending.begin(), pending.end(), [&](const PendingCreate& p) {
        return p.owner == uid && p.attempt == attempt && p.card == card && p.profile == profile &&
               p.made == made;
    });
    if (it != pending.end()) pending.erase(it);
}

}  // namespace

/// The profile a placement name stands for on `host` (its name spelled as placement_name does).
const inject::device::DrsProfile* profile_of(const inject::device::Host& host,
                                             const DeviceName& n) {
    for (const auto& p : host.drs_profiles)
        if (placement_name(n.index, p.name, n.placement->k) == n.str()) return &p;
    return nullptr;
}

inject::device::Device* card_of(inject::device::Host& host, std::uint32_t index) {
    for (auto& c : host.devices)
        if (c.index == index) return &c;
    return nullptr;
}

inject::Result<void> Driver::make_instances(const std::string& uid, std::uint64_t attempt,
                                            PreparedClaim& pc) {
    struct Want {
        PreparedDevice* dev;
        std::uint32_t card;
        const inject::device::DrsProfile* profile;
    };
    std::vector<Want> wants;
    for (auto& d : pc.devices) {
        INJECT_TRY(const auto n, parse_device_name(d.device));
        if (!n.placement || d.created) continue;
        if (!card_of(host_, n.index))
            return fail(Errc::NotFound, "device '" + d.device + "' is not on this node");
        const auto* p = profile_of(host_, n);
        if (!p)
            return fail(Errc::NotFound,
                        "device '" + d.device + "': no DRS profile of this node has that name");
        if (auto r = held_whole(n.index, d.device); !r) return r;
        wants.push_back({&d, n.index, p});
    }
    if (wants.empty()) return inject::ok();
    if (!o_.drs.create || !o_.drs.list || !o_.drs.destroy)
        return fail(Errc::Unsupported, "device '" + wants.front().dev->device +
                                           "': this plugin cannot create DRS instances");
    // The pending entries, durable before efsmi makes anything.
    std::map<std::uint32_t, std::vector<std::uint32_t>> before;
    for (const auto& w : wants) {
        if (before.contains(w.card)) continue;
        auto list = o_.drs.list(w.card);
        if (!list) return fail(std::move(list).error().context("device '" + w.dev->device + "'"));
        for (const auto& in : *list) before[w.card].push_back(in.instance_id);
        before[w.card];  // a card without instances has an empty list
    }
    for (const auto& w : wants)
        cp_.pending.push_back(
            {uid, w.card, w.profile->name, before[w.card], attempt, std::nullopt, {}});
    if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) {
        std::erase_if(cp_.pending, [&](const PendingCreate& p) {
            return p.owner == uid && p.attempt == attempt;
        });
        return fail(std::move(r).error());
    }
    for (std::size_t i = 0; i < wants.size(); ++i) {
        const auto& w = wants[i];
        auto in = o_.drs.create(w.card, *w.profile);
        if (!in) {
            // What this attempt made goes; efsmi may have made this one too before it failed
            // (a timeout, a read-back that failed, two new instances): taken back at once when
            // it can be told apart, else its entry stays for the next start. The entries of
            // placements not tried yet go.
            undo_instances(uid, attempt, pc);
            if (take_back_failed_create(uid, w.card, w.profile->name, before[w.card]))
                drop_pending_one(cp_.pending, uid, attempt, w.card, w.profile->name);
            for (std::size_t j = i + 1; j < wants.size(); ++j)
                drop_pending_one(cp_.pending, uid, attempt, wants[j].card, wants[j].profile->name);
            if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r)
                spdlog::error("prepare: {}", r.error().what());
            return fail(std::move(in).error().context("device '" + w.dev->device + "'"));
        }
        w.dev->created = CreatedInstance{w.card, in->instance_id, in->profile, in->uuid};
        // Its id, durable before anything else: a start after a crash destroys that one only.
        const auto entry =
            std::find_if(cp_.pending.begin(), cp_.pending.end(), [&](const PendingCreate& p) {
                return p.owner == uid && p.attempt == attempt && p.card == w.card &&
                       p.profile == w.profile->name && !p.made;
            });
        if (entry != cp_.pending.end()) {
            entry->made = in->instance_id;
            entry->made_uuid = in->uuid;
        }
        if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) {
            card_of(host_, w.card)->drs_instances.push_back(*in);
            undo_instances(uid, attempt, pc);
            for (std::size_t j = i + 1; j < wants.size(); ++j)
                drop_pending_one(cp_.pending, uid, attempt, wants[j].card, wants[j].profile->name);
            if (auto again = save_checkpoint(o_.checkpoint_path, cp_); !again)
                spdlog::error("prepare: {}", again.error().what());
            return fail(std::move(r).error().context("device '" + w.dev->device + "'"));
        }
        inject::log::info("claim {}: made DRS instance {} for device {}", uid,
                          inject::device::drs_name(*in), w.dev->device);
        // The spec is written from host_: it knows the instance now, without a rediscovery.
        card_of(host_, w.card)->drs_instances.push_back(std::move(*in));
    }
    return inject::ok();
}

void Driver::undo_instances(const std::string& uid, std::uint64_t attempt, PreparedClaim& pc) {
    for (auto& d : pc.devices) {
        if (!d.created) continue;
        const auto c = *d.created;
        d.created.reset();
        if (auto r = o_.drs.destroy(c.card, c.id); !r) {
            // Its pending entry stays: the next start finds the instance new and unrecorded.
            spdlog::error("claim {}: taking back DRS instance {} of card {}: {}", uid, c.id, c.card,
                          r.error().what());
            continue;
        }
        if (auto* card = card_of(host_, c.card))
            std::erase_if(card->drs_instances,
                          [&](const auto& in) { return in.instance_id == c.id; });
        drop_pending_one(cp_.pending, uid, attempt, c.card, c.profile, c.id);
    }
}

bool Driver::recorded_by_other(const std::string& uid, const CreatedInstance& c) const {
    for (const auto& [other, claim] : cp_.claims) {
        if (other == uid) continue;
        for (const auto& d : claim.devices)
            if (d.created && d.created->card == c.card && d.created->id == c.id) return true;
    }
    return false;
}

inject::Result<void> Driver::release_instances(const std::string& uid, PreparedClaim& pc,
                                               bool& changed) {
    for (auto& d : pc.devices) {
        if (!d.created) continue;
        const auto c = *d.created;
        if (!o_.drs.list || !o_.drs.destroy)
            return fail(Errc::Unsupported,
                        "device '" + d.device + "': this plugin cannot destroy DRS instances");
        // Ours went already (a retried unprepare) and a later prepare got its id: not ours.
        if (recorded_by_other(uid, c)) {
            inject::log::warn(
                "device {}: card {} instance {} is recorded by another claim now: left alone",
                d.device, c.card, c.id);
            d.created.reset();
            changed = true;
            continue;
        }
        auto seen = k8s::drs::release(ledger_ops(), c);
        if (!seen) return fail(std::move(seen).error().context("device '" + d.device + "'"));
        if (*seen == k8s::drs::Seen::Other) {
            inject::log::warn(
                "device {}: card {} instance {} is another instance now, not the {} we made: left "
                "alone",
                d.device, c.card, c.id, c.profile);
        } else if (*seen == k8s::drs::Seen::Ours) {
            if (auto* card = card_of(host_, c.card))
                std::erase_if(card->drs_instances,
                              [&](const auto& in) { return in.instance_id == c.id; });
        }
        // Gone (destroyed now, or before: a retried unprepare): never touched again, whoever
        // gets the id next.
        d.created.reset();
        changed = true;
    }
    return inject::ok();
}

void Driver::converge_pending() {
    if (cp_.pending.empty()) return;
    cp_.pending = k8s::drs::converge(
        cp_.pending, "claim", ledger_ops(),
        [&](std::uint32_t card, std::uint32_t id) {
            return recorded_by_other("", {card, id, "", ""});
        },
        [&](const CreatedInstance& m) {
            if (auto* card = card_of(host_, m.card))
                std::erase_if(card->drs_instances,
                              [&](const auto& in) { return in.instance_id == m.id; });
        });
    if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r)
        spdlog::error("{}", r.error().what());
}

inject::Result<void> Driver::restore_instances(const std::string& uid, PreparedClaim& pc) {
    // The placements whose instance efsmi no longer lists (an id now held by another profile
    // or UUID is someone else's: ours is gone too), made again as a prepare makes them.
    PreparedClaim gone{pc.ns, pc.name, {}};
    std::map<std::uint32_t, std::vector<inject::device::DrsInstance>> lists;
    for (const auto& d : pc.devices) {
        if (!d.created) continue;
        const auto& c = *d.created;
        // Not knowing is not "gone": the spec stays as it is (efsmi may answer again later).
        if (!o_.drs.list) {
            spdlog::error(
                "claim {}/{} ({}): device {}: this plugin cannot list DRS instances: "
                "not checked",
                pc.ns, pc.name, uid, d.device);
            return inject::ok();
        }
        if (!lists.contains(c.card)) {
            auto list = o_.drs.list(c.card);
            if (!list) {
                spdlog::error("claim {}/{} ({}): device {}: checking its DRS instance: {}", pc.ns,
                              pc.name, uid, d.device, list.error().what());
                return inject::ok();
            }
            lists[c.card] = std::move(*list);
        }
        const auto& list = lists[c.card];
        if (k8s::drs::seen_in(list, c) == k8s::drs::Seen::Ours) continue;
        gone.devices.push_back(d);
        gone.devices.back().created.reset();
    }
    if (gone.devices.empty()) return inject::ok();
    const std::uint64_t attempt = next_attempt_++;
    if (auto r = make_instances(uid, attempt, gone); !r) return r;
    for (const auto& g : gone.devices)
        for (auto& d : pc.devices)
            if (d.device == g.device && d.created && g.created) {
                inject::log::info(
                    "claim {}/{} ({}): device {}: DRS instance {} of card {} was gone, made again "
                    "as {}",
                    pc.ns, pc.name, uid, d.device, d.created->id, d.created->card, g.created->id);
                d.created = g.created;
            }
    std::erase_if(cp_.pending,
                  [&](const PendingCreate& p) { return p.owner == uid && p.attempt == attempt; });
    // A failed save leaves the pending entries naming the new instances on disk: the next
    // start destroys them (no claim there records them) and makes them again.
    if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r)
        spdlog::error("{}", r.error().what());
    return inject::ok();
}

}  // namespace dra
