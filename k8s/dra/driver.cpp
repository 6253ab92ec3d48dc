// SPDX-License-Identifier: Apache-2.0
#include "driver.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "claim_cdi.hpp"
#include "slices.hpp"
#include "inject/log.hpp"

namespace edra {

using inject::Errc;
using inject::fail;

namespace {

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

std::string spec_path(const DriverOptions& o, const std::string& uid) {
    return o.cdi_root + (o.cdi_root.ends_with('/') ? "" : "/") + spec_file_name(uid);
}

// The device names a checkpointed claim holds (each once, in order).
inject::Result<std::vector<DeviceName>> names_of(const PreparedClaim& c) {
    std::vector<DeviceName> out;
    for (const auto& d : c.devices) {
        INJECT_TRY(auto n, parse_device_name(d.device));
        if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
    return out;
}

// The instance made for each placement of a claim: device name -> instance id.
std::map<std::string, std::uint32_t> made_of(const PreparedClaim& c) {
    std::map<std::string, std::uint32_t> out;
    for (const auto& d : c.devices)
        if (d.created) out[d.device] = d.created->id;
    return out;
}

// The profile a placement name stands for on `host` (its name spelled as placement_name does).
const inject::device::DrsProfile* profile_of(const inject::device::Host& host, const DeviceName& n) {
    for (const auto& p : host.drs_profiles)
        if (placement_name(n.index, p.name, n.placement->k) == n.str()) return &p;
    return nullptr;
}

inject::device::Device* card_of(inject::device::Host& host, std::uint32_t index) {
    for (auto& c : host.devices)
        if (c.index == index) return &c;
    return nullptr;
}

}  // namespace

inject::Result<std::unique_ptr<Driver>> Driver::create(DriverOptions o, ClaimSource claims,
                                                       Discoverer discover) {
    INJECT_TRY(auto cp, load_checkpoint(o.checkpoint_path));
    auto host = discover();
    if (!host) return fail(std::move(host).error().context("discovering Enflame cards"));
    return std::unique_ptr<Driver>(new Driver(std::move(o), std::move(claims), std::move(discover),
                                              std::move(*host), std::move(cp)));
}

Checkpoint Driver::checkpoint() const {
    const std::lock_guard lock(mu_);
    return cp_;
}

inject::Result<bool> Driver::write_spec(const std::string& uid,
                                        const std::vector<DeviceName>& devices,
                                        const std::map<std::string, std::uint32_t>& made,
                                        bool only_if_changed) {
    auto spec = claim_spec(host_, o_.cdi, uid, devices, made);
    if (!spec && spec.error().code() == Errc::NotFound) {
        // A DRS instance created (or a card added) since we last looked: look again, once.
        auto host = discover_();
        if (!host) return fail(std::move(host).error().context("discovering Enflame cards"));
        host_ = std::move(*host);
        spec = claim_spec(host_, o_.cdi, uid, devices, made);
    }
    if (!spec) return fail(std::move(spec).error());
    return write_claim_spec(o_.cdi_root, uid, *spec, only_if_changed);
}

inject::Result<bool> Driver::write_spec(const std::string& uid, const PreparedClaim& c,
                                        bool only_if_changed) {
    INJECT_TRY(const auto names, names_of(c));
    return write_spec(uid, names, made_of(c), only_if_changed);
}

inject::Result<void> Driver::make_instances(const std::string& uid, PreparedClaim& pc) {
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
        if (!p) return fail(Errc::NotFound, "device '" + d.device + "': no DRS profile of this node has that name");
        wants.push_back({&d, n.index, p});
    }
    if (wants.empty()) return inject::ok();
    if (!o_.drs.create || !o_.drs.list || !o_.drs.destroy)
        return fail(Errc::Unsupported, "device '" + wants.front().dev->device + "': this plugin cannot create DRS instances");
    // The pending entries, durable before efsmi makes anything.
    std::map<std::uint32_t, std::vector<std::uint32_t>> before;
    for (const auto& w : wants) {
        if (before.contains(w.card)) continue;
        auto list = o_.drs.list(w.card);
        if (!list) return fail(std::move(list).error().context("device '" + w.dev->device + "'"));
        for (const auto& in : *list) before[w.card].push_back(in.instance_id);
        before[w.card];  // a card without instances has an empty list
    }
    for (const auto& w : wants) cp_.pending.push_back({uid, w.card, w.profile->name, before[w.card]});
    const auto drop_pending = [&] {
        std::erase_if(cp_.pending, [&](const PendingCreate& p) { return p.claim_uid == uid; });
    };
    if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) {
        drop_pending();
        return fail(std::move(r).error());
    }
    for (const auto& w : wants) {
        auto in = o_.drs.create(w.card, *w.profile);
        if (!in) {
            undo_instances(uid, pc);
            if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) spdlog::error("prepare: {}", r.error().what());
            return fail(std::move(in).error().context("device '" + w.dev->device + "'"));
        }
        w.dev->created = CreatedInstance{w.card, in->instance_id, in->profile, in->uuid};
        inject::log::info("claim {}: made DRS instance {} for device {}", uid, inject::device::drs_name(*in), w.dev->device);
        // The spec is written from host_: it knows the instance now, without a rediscovery.
        card_of(host_, w.card)->drs_instances.push_back(std::move(*in));
    }
    return inject::ok();
}

void Driver::undo_instances(const std::string& uid, const PreparedClaim& pc) {
    for (const auto& d : pc.devices) {
        if (!d.created) continue;
        if (auto r = o_.drs.destroy(d.created->card, d.created->id); !r)
            spdlog::error("claim {}: taking back DRS instance {} of card {}: {}", uid, d.created->id, d.created->card,
                          r.error().what());
        if (auto* card = card_of(host_, d.created->card))
            std::erase_if(card->drs_instances, [&](const auto& in) { return in.instance_id == d.created->id; });
    }
    std::erase_if(cp_.pending, [&](const PendingCreate& p) { return p.claim_uid == uid; });
}

inject::Result<void> Driver::release_instances(const PreparedClaim& pc) {
    for (const auto& d : pc.devices) {
        if (!d.created) continue;
        const auto& c = *d.created;
        if (!o_.drs.list || !o_.drs.destroy)
            return fail(Errc::Unsupported, "device '" + d.device + "': this plugin cannot destroy DRS instances");
        auto list = o_.drs.list(c.card);
        if (!list) return fail(std::move(list).error().context("device '" + d.device + "'"));
        const auto it = std::find_if(list->begin(), list->end(), [&](const auto& in) { return in.instance_id == c.id; });
        if (it == list->end()) continue;  // gone already (an unprepare retried after a crash)
        if (it->profile != c.profile || (!c.uuid.empty() && !it->uuid.empty() && it->uuid != c.uuid)) {
            inject::log::warn("device {}: card {} instance {} is now {} {}, not the {} we made: left alone", d.device,
                              c.card, c.id, it->profile, it->uuid, c.profile);
            continue;
        }
        if (auto r = o_.drs.destroy(c.card, c.id); !r) return fail(std::move(r).error().context("device '" + d.device + "'"));
        if (auto* card = card_of(host_, c.card))
            std::erase_if(card->drs_instances, [&](const auto& in) { return in.instance_id == c.id; });
    }
    return inject::ok();
}

void Driver::converge_pending() {
    if (cp_.pending.empty()) return;
    if (!o_.drs.list || !o_.drs.destroy) {
        spdlog::error("the checkpoint lists DRS instances being made, but this plugin cannot list or destroy them");
        return;
    }
    // By card and profile: how many were being made, and the ids the card had before.
    std::map<std::pair<std::uint32_t, std::string>, std::pair<std::size_t, std::set<std::uint32_t>>> groups;
    for (const auto& p : cp_.pending) {
        auto& g = groups[{p.card, p.profile}];
        ++g.first;
        g.second.insert(p.before.begin(), p.before.end());
    }
    bool all_done = true;
    for (const auto& [key, g] : groups) {
        const auto& [card, profile] = key;
        auto list = o_.drs.list(card);
        if (!list) {
            spdlog::error("checking DRS instances a stopped prepare may have made: {}", list.error().what());
            all_done = false;
            continue;
        }
        std::set<std::uint32_t> recorded;
        for (const auto& [uid, c] : cp_.claims)
            for (const auto& d : c.devices)
                if (d.created && d.created->card == card) recorded.insert(d.created->id);
        std::vector<std::uint32_t> ours;
        for (const auto& in : *list)
            if (in.profile == profile && !g.second.contains(in.instance_id) && !recorded.contains(in.instance_id))
                ours.push_back(in.instance_id);
        if (ours.size() > g.first) {
            spdlog::warn("card {}: {} new {} DRS instances, but only {} were being made by us: none destroyed (cannot "
                         "tell ours)", card, ours.size(), profile, g.first);
            continue;
        }
        for (const auto id : ours) {
            if (auto r = o_.drs.destroy(card, id); !r) {
                spdlog::error("{}", r.error().what());
                all_done = false;
                continue;
            }
            inject::log::info("destroyed DRS instance {} ({}) of card {}: made by a prepare that never finished", id,
                              profile, card);
            if (auto* c = card_of(host_, card))
                std::erase_if(c->drs_instances, [&](const auto& in) { return in.instance_id == id; });
        }
    }
    if (!all_done) return;  // kept: the next start looks again
    cp_.pending.clear();
    if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) spdlog::error("{}", r.error().what());
}

void Driver::converge() {
    const std::lock_guard lock(mu_);
    converge_pending();
    auto specs = claim_specs_in(o_.cdi_root);
    if (!specs) {
        spdlog::error("checking CDI specs against the checkpoint: {}", specs.error().what());
        return;
    }
    for (const auto& uid : *specs) {
        if (cp_.claims.contains(uid)) continue;
        // Written by a prepare that never answered (we were stopped before the checkpoint):
        // kubelet retries that prepare, which writes it again.
        if (auto r = remove_claim_spec(o_.cdi_root, uid); !r)
            spdlog::error("{}", r.error().what());
        else
            inject::log::info(
                "removed CDI spec of claim {}: not in the checkpoint (its prepare never finished)",
                uid);
    }
    for (const auto& [uid, c] : cp_.claims) {
        // Missing (removed, or a tmpfs cdi-root after a reboot) or not what the checkpoint
        // says (a spec cut short by a power loss: specs are not fsynced): written again.
        auto r = write_spec(uid, c, true);
        if (!r)
            spdlog::error("claim {}/{} ({}): writing its CDI spec again: {}", c.ns, c.name, uid,
                          r.error().what());
        else if (*r)
            inject::log::info(
                "claim {}/{} ({}): CDI spec was missing or differed, written again from the "
                "checkpoint",
                c.ns, c.name, uid);
    }
}

inject::Result<PreparedClaim> Driver::fetch(const ClaimRef& ref) const {
    auto obj = claims_(ref.ns, ref.name);
    if (!obj)
        return fail(std::move(obj).error().context("claim '" + ref.text() + "': fetching it"));
    INJECT_TRY(const auto results, allocated_devices(*obj, ref, o_.driver_name));
    PreparedClaim pc{ref.ns, ref.name, {}};
    for (const auto& a : results) {
        INJECT_TRY(auto n, parse_device_name(a.device));
        pc.devices.push_back({{a.request}, a.pool, a.device, {cdi_device_id(ref.uid, n)}, std::nullopt});
    }
    return pc;
}

std::map<std::string, ClaimAnswer> Driver::prepare(const std::vector<ClaimRef>& claims) {
    // The API server is asked without holding the lock, so a slow one delays only the claims
    // that wait for it, not another pod's prepare or an unprepare.
    std::vector<const ClaimRef*> unknown;
    {
        const std::lock_guard lock(mu_);
        for (const auto& ref : claims) {
            if (!cp_.claims.contains(ref.uid)) unknown.push_back(&ref);
        }
    }
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    std::map<std::string, inject::Result<PreparedClaim>> fetched;
    for (const auto* ref : unknown) fetched.emplace(ref->uid, fetch(*ref));
    const auto t1 = Clock::now();

    const std::lock_guard lock(mu_);
    std::map<std::string, ClaimAnswer> out;
    std::vector<std::string> added;
    bool dirty = false;  // pending entries changed without a claim added
    for (const auto& ref : claims) {
        auto& answer = out[ref.uid];
        if (const auto it = cp_.claims.find(ref.uid); it != cp_.claims.end()) {
            // Prepared before (kubelet retries; we restarted; or a concurrent call did it):
            // the same answer, and the spec again if it went missing.
            if (!exists(spec_path(o_, ref.uid))) {
                if (auto r = write_spec(ref.uid, it->second); !r) {
                    answer.error = "claim '" + ref.text() + "': " + r.error().what();
                    continue;
                }
                inject::log::info("claim {} ({}): CDI spec written again from the checkpoint",
                                  ref.text(), ref.uid);
            }
            answer.devices = it->second.devices;
            continue;
        }
        // Unprepared by a concurrent call since we looked: ask again (rare).
        auto f = fetched.find(ref.uid);
        if (f == fetched.end()) f = fetched.emplace(ref.uid, fetch(ref)).first;
        auto& pc = f->second;
        if (!pc) {
            answer.error = pc.error().what();
            inject::log::warn("prepare: {}", answer.error);
            continue;
        }
        auto r = make_instances(ref.uid, *pc);
        if (r) {
            if (auto w = write_spec(ref.uid, *pc); !w) {
                r = fail(std::move(w).error());
                undo_instances(ref.uid, *pc);
                dirty = true;
            }
        }
        if (!r) {
            answer.error = r.error().context("claim '" + ref.text() + "'").what();
            inject::log::warn("prepare: {}", answer.error);
            continue;
        }
        answer.devices = pc->devices;
        cp_.claims[ref.uid] = std::move(*pc);
        added.push_back(ref.uid);
    }
    // The claims recorded; their instances are no longer pending.
    for (const auto& uid : added)
        std::erase_if(cp_.pending, [&](const PendingCreate& p) { return p.claim_uid == uid; });
    if (added.empty() && !dirty) return out;
    if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) {
        // Not remembered means not prepared: take the specs and instances back so nothing is
        // left behind.
        for (const auto& uid : added) {
            undo_instances(uid, cp_.claims[uid]);
            cp_.claims.erase(uid);
            (void)remove_claim_spec(o_.cdi_root, uid);
            out[uid] = ClaimAnswer{{}, r.error().what()};
        }
        spdlog::error("prepare: {}", r.error().what());
        return out;
    }
    for (const auto& uid : added) {
        const auto& c = cp_.claims[uid];
        inject::log::info("prepared claim {}/{} ({}): {} device(s)", c.ns, c.name, uid,
                          c.devices.size());
    }
    const auto us = [](auto d) {
        return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    };
    inject::log::debug(
        "prepare of {} claim(s): {} us asking the API server, {} us specs and checkpoint",
        claims.size(), us(t1 - t0), us(Clock::now() - t1));
    return out;
}

std::map<std::string, std::string> Driver::unprepare(const std::vector<ClaimRef>& claims) {
    const std::lock_guard lock(mu_);
    std::map<std::string, std::string> out;
    std::map<std::string, PreparedClaim> removed;
    for (const auto& ref : claims) {
        out[ref.uid];
        if (auto it = cp_.claims.find(ref.uid); it != cp_.claims.end()) {
            // Instances first: a claim whose instance could not go stays, and kubelet retries.
            if (auto r = release_instances(it->second); !r) {
                out[ref.uid] = r.error().context("claim '" + ref.text() + "'").what();
                spdlog::error("unprepare: {}", out[ref.uid]);
                continue;
            }
            removed.insert(*it);
            cp_.claims.erase(it);
        }
    }
    if (!removed.empty()) {
        if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) {
            for (auto& [uid, c] : removed) {
                cp_.claims[uid] = std::move(c);
                out[uid] = r.error().what();
            }
            spdlog::error("unprepare: {}", r.error().what());
            return out;
        }
    }
    for (auto& [uid, err] : out) {
        if (!err.empty()) continue;
        // Also for claims we do not know: a spec a crash left behind goes now.
        if (auto r = remove_claim_spec(o_.cdi_root, uid); !r)
            err = r.error().what();
        else if (removed.contains(uid))
            inject::log::info("unprepared claim {}/{} ({})", removed[uid].ns, removed[uid].name,
                              uid);
    }
    return out;
}

}  // namespace edra
