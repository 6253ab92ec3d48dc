// SPDX-License-Identifier: Apache-2.0
#include "dra/driver.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <set>
#include <thread>

#include "dra/claim_cdi.hpp"
#include "dra/slices.hpp"
#include "inject/log.hpp"

namespace dra {

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

// The instance made for each placement of a claim, by device name.
std::map<std::string, CreatedInstance> made_of(const PreparedClaim& c) {
    std::map<std::string, CreatedInstance> out;
    for (const auto& d : c.devices)
        if (d.created) out[d.device] = *d.created;
    return out;
}

// "0:1g.11gb:3 0:2g.22gb:4": a card's instances as an error names them.
std::string instance_list(const std::vector<inject::device::DrsInstance>& list) {
    std::string out;
    for (const auto& in : list) out += (out.empty() ? "" : " ") + inject::device::drs_name(in);
    return out;
}

// A fetched claim, checked, with the answer it will get (no files).
inject::Result<PreparedClaim> prepared_from(const Json& obj, const ClaimRef& ref,
                                            const DriverOptions& o) {
    INJECT_TRY(const auto results, allocated_devices(obj, ref, o.driver_name));
    INJECT_TRY_VOID(check_pool(results, ref, o.node_name));
    PreparedClaim pc{ref.ns, ref.name, {}};
    for (const auto& a : results) {
        INJECT_TRY(auto n, parse_device_name(a.device));
        pc.devices.push_back(
            {{a.request}, a.pool, a.device, {cdi_device_id(ref.uid, n)}, std::nullopt});
    }
    return pc;
}

}  // namespace

inject::Result<std::unique_ptr<Driver>> Driver::create(DriverOptions o, ClaimSource claims,
                                                       Discoverer discover) {
    auto loaded = load_checkpoint_or_previous(o.checkpoint_path);
    if (loaded.lost)
        spdlog::error("{}", loaded.problem);
    else if (!loaded.problem.empty())
        spdlog::warn("{}", loaded.problem);
    auto cp = std::move(loaded.cp);
    auto host = discover();
    if (!host) return fail(std::move(host).error().context("discovering Enflame cards"));
    std::uint64_t attempt = 0;  // past every attempt an entry kept from before names
    for (const auto& p : cp.pending) attempt = std::max(attempt, p.attempt);
    auto d = std::unique_ptr<Driver>(new Driver(
        std::move(o), std::move(claims), std::move(discover), std::move(*host), std::move(cp)));
    d->next_attempt_ = attempt + 1;
    d->keep_unknown_specs_ = !loaded.problem.empty();
    return d;
}

Checkpoint Driver::checkpoint() const {
    const std::lock_guard lock(mu_);
    return cp_;
}

inject::Result<bool> Driver::write_spec(const std::string& uid,
                                        const std::vector<DeviceName>& devices,
                                        const std::map<std::string, CreatedInstance>& made,
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

inject::Result<void> Driver::check_whole_cards(const PreparedClaim& pc) {
    // Without DRS profiles no card can be split (and no efsmi call slows the prepare).
    if (host_.drs_profiles.empty() || !o_.drs.list) return inject::ok();
    std::set<std::uint32_t> cards;
    for (const auto& d : pc.devices) {
        INJECT_TRY(const auto n, parse_device_name(d.device));
        if (n.placement || n.drs_instance || !cards.insert(n.index).second) continue;
        // Asked now, not from discovery: an instance made a moment ago counts. An efsmi that
        // cannot answer is an error too (fail closed: a split card is never handed out whole).
        auto list = o_.drs.list(n.index);
        if (!list) return fail(std::move(list).error().context("device '" + d.device + "'"));
        if (!list->empty())
            return fail(Errc::Conflict, "card " + std::to_string(n.index) +
                                            " is split into DRS instances (" +
                                            instance_list(*list) + "): not handed out whole");
    }
    return inject::ok();
}

k8s::drs::Ops Driver::ledger_ops() const {
    return {o_.drs.list, o_.drs.destroy};
}

bool Driver::take_back_failed_create(const std::string& uid, std::uint32_t card,
                                     const std::string& profile,
                                     const std::vector<std::uint32_t>& before) {
    return k8s::drs::take_back_failed_create(ledger_ops(), "claim " + uid, card, profile, before,
                                             [&](std::uint32_t c, std::uint32_t id) {
                                                 return recorded_by_other("", {c, id, "", ""});
                                             });
}

inject::Result<void> Driver::held_whole(std::uint32_t card, const std::string& device) const {
    // The scheduler may allocate both for one window (partitions published before their
    // counters were dropped): the card's holder keeps it.
    const std::string whole = "gcu-" + std::to_string(card);
    for (const auto& [uid, c] : cp_.claims)
        for (const auto& d : c.devices)
            if (d.device == whole)
                return fail(Errc::Conflict, "device '" + device + "': card " +
                                                std::to_string(card) +
                                                " is prepared whole for claim '" + c.ns + "/" +
                                                c.name + "': no DRS instance made on it");
    return inject::ok();
}

void Driver::converge() {
    const std::lock_guard lock(mu_);
    converge_pending();
    std::set<std::string> unrestored;
    for (auto& [uid, c] : cp_.claims) {
        auto r = restore_instances(uid, c);
        if (r) continue;
        // Fail closed: no spec is better than one naming an instance that is not there (or
        // another's that got its id): the container fails to start, kubelet says why.
        unrestored.insert(uid);
        const bool removed = static_cast<bool>(remove_claim_spec(o_.cdi_root, uid));
        spdlog::error(
            "claim {}/{} ({}): its DRS instance is gone and could not be made again: {}; {}", c.ns,
            c.name, uid, r.error().what(),
            removed ? "its CDI spec removed (its containers fail to start)"
                    : "removing its CDI spec failed");
    }
    // A crash in the middle of a spec write leaves its temporary file: nothing reads or
    // removes it otherwise.
    if (auto temps = remove_temp_specs(o_.cdi_root); !temps)
        spdlog::error("{}", temps.error().what());
    else
        for (const auto& name : *temps)
            inject::log::info("removed {}/{}: a temporary CDI spec a stopped write left",
                              o_.cdi_root, name);
    auto specs = claim_specs_in(o_.cdi_root);
    if (!specs) {
        spdlog::error("checking CDI specs against the checkpoint: {}", specs.error().what());
        return;
    }
    for (const auto& uid : *specs) {
        if (cp_.claims.contains(uid)) continue;
        if (keep_unknown_specs_) {
            // The checkpoint is an older one (or none): this claim may well be prepared, and
            // its running containers need the spec. kubelet's unprepare removes it.
            inject::log::info(
                "kept CDI spec of claim {}: not in the checkpoint, which was restored from an "
                "older one",
                uid);
            continue;
        }
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
        if (unrestored.contains(uid)) continue;
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

std::map<std::string, inject::Result<PreparedClaim>> Driver::fetch_all(
    const std::vector<const ClaimRef*>& refs, std::chrono::steady_clock::time_point until) const {
    // One thread per claim, each with its own copy of what it needs: a fetch still running at
    // `until` is left to finish on its own (detached) and its answer dropped.
    struct Slot {
        std::mutex m;
        std::condition_variable cv;
        std::optional<inject::Result<Json>> got;
    };
    std::vector<std::pair<std::shared_ptr<Slot>, std::thread>> running;
    for (const auto* ref : refs) {
        auto slot = std::make_shared<Slot>();
        running.emplace_back(slot,
                             std::thread([slot, source = claims_, ns = ref->ns, name = ref->name] {
                                 auto r = source(ns, name);
                                 const std::lock_guard lock(slot->m);
                                 slot->got.emplace(std::move(r));
                                 slot->cv.notify_all();
                             }));
    }
    std::map<std::string, inject::Result<PreparedClaim>> out;
    for (std::size_t i = 0; i < refs.size(); ++i) {
        auto& [slot, thread] = running[i];
        const auto& ref = *refs[i];
        std::unique_lock lock(slot->m);
        if (!slot->cv.wait_until(lock, until, [&] { return slot->got.has_value(); })) {
            lock.unlock();
            thread.detach();
            out.emplace(ref.uid,
                        fail(Errc::Io, "claim '" + ref.text() +
                                           "': fetching it: no answer from the API server in time "
                                           "(before kubelet's deadline)"));
            continue;
        }
        auto obj = std::move(*slot->got);
        lock.unlock();
        thread.join();
        out.emplace(ref.uid, [&]() -> inject::Result<PreparedClaim> {
            if (!obj)
                return fail(
                    std::move(obj).error().context("claim '" + ref.text() + "': fetching it"));
            return prepared_from(*obj, ref, o_);
        }());
    }
    return out;
}

std::string Driver::unwanted(const std::string& uid, std::chrono::steady_clock::time_point start,
                             const CallLimits& call) {
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(unprepared_, [&](const auto& t) { return now - t.second > kTombstoneLife; });
    if (const auto t = unprepared_.find(uid); t != unprepared_.end() && t->second >= start)
        return "unprepared while this prepare was running: not prepared";
    if (now >= call.deadline || (call.cancelled && call.cancelled()))
        return "the call was cancelled or its deadline passed before the claim was prepared: not "
               "prepared";
    return {};
}

std::map<std::string, ClaimAnswer> Driver::prepare(const std::vector<ClaimRef>& claims,
                                                   const CallLimits& call) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    // The API server is asked without holding the lock, so a slow one delays only the claims
    // that wait for it, not another pod's prepare or an unprepare.
    std::vector<const ClaimRef*> unknown;
    {
        const std::lock_guard lock(mu_);
        for (const auto& ref : claims) {
            if (!cp_.claims.contains(ref.uid)) unknown.push_back(&ref);
        }
    }
    // Answered a little before kubelet gives up, so it sees which claim was late.
    const auto until =
        call.deadline == Clock::time_point::max()
            ? t0 + kFetchBudget
            : std::min(t0 + kFetchBudget, call.deadline - std::chrono::milliseconds(100));
    auto fetched = fetch_all(unknown, until);
    const auto t1 = Clock::now();

    const std::lock_guard lock(mu_);
    std::map<std::string, ClaimAnswer> out;
    // Claims prepared by this call, with their attempt: kept out of cp_ until the final save,
    // so a pending save of a later claim does not record them before their answer.
    std::map<std::string, std::pair<PreparedClaim, std::uint64_t>> added;
    bool dirty = false;  // pending entries changed without a claim added
    for (const auto& ref : claims) {
        auto& answer = out[ref.uid];
        if (const auto a = added.find(ref.uid); a != added.end()) {  // named twice in one call
            answer.devices = a->second.first.devices;
            continue;
        }
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
        if (const auto why = unwanted(ref.uid, t0, call); !why.empty()) {
            answer.error = "claim '" + ref.text() + "': " + why;
            inject::log::warn("prepare: {}", answer.error);
            continue;
        }
        const auto f = fetched.find(ref.uid);
        if (f == fetched.end()) {  // in the checkpoint when we looked, unprepared since: unwanted()
            answer.error = "claim '" + ref.text() +
                           "': unprepared while this prepare was running: not prepared";
            continue;
        }
        auto& pc = f->second;
        if (!pc) {
            answer.error = pc.error().what();
            inject::log::warn("prepare: {}", answer.error);
            continue;
        }
        const std::uint64_t attempt = next_attempt_++;
        auto r = check_whole_cards(*pc);
        if (r) r = make_instances(ref.uid, attempt, *pc);
        if (r) {
            if (auto w = write_spec(ref.uid, *pc); !w) {
                r = fail(std::move(w).error());
                undo_instances(ref.uid, attempt, *pc);
                dirty = true;
            }
        }
        if (!r) {
            answer.error = r.error().context("claim '" + ref.text() + "'").what();
            inject::log::warn("prepare: {}", answer.error);
            continue;
        }
        answer.devices = pc->devices;
        added.emplace(ref.uid, std::make_pair(std::move(*pc), attempt));
    }
    if (added.empty() && !dirty) return out;
    // The claims recorded; their instances are no longer pending (entries another attempt
    // kept stay).
    const auto pending_before = cp_.pending;
    for (const auto& [uid, a] : added) {
        cp_.claims[uid] = a.first;
        std::erase_if(cp_.pending, [&, &uid = uid, &a = a](const PendingCreate& p) {
            return p.owner == uid && p.attempt == a.second;
        });
    }
    if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) {
        // Not remembered means not prepared: take the specs and instances back so nothing is
        // left behind (an instance that will not go keeps its pending entry).
        cp_.pending = pending_before;
        for (auto& [uid, a] : added) {
            cp_.claims.erase(uid);
            undo_instances(uid, a.second, a.first);
            (void)remove_claim_spec(o_.cdi_root, uid);
            out[uid] = ClaimAnswer{{}, r.error().what()};
        }
        spdlog::error("prepare: {}", r.error().what());
        return out;
    }
    for (const auto& [uid, a] : added) {
        const auto& c = a.first;
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
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(unprepared_, [&](const auto& t) { return now - t.second > kTombstoneLife; });
    for (const auto& ref : claims) {
        out[ref.uid];
        unprepared_[ref.uid] = now;  // a prepare of it still fetching must not commit (unwanted())
        if (auto it = cp_.claims.find(ref.uid); it != cp_.claims.end()) {
            // Instances first: a claim whose instance could not go stays, and kubelet retries;
            // the ones that went are no longer recorded (saved now), so the retry never
            // destroys an instance that got their id meanwhile.
            bool changed = false;
            if (auto r = release_instances(ref.uid, it->second, changed); !r) {
                out[ref.uid] = r.error().context("claim '" + ref.text() + "'").what();
                spdlog::error("unprepare: {}", out[ref.uid]);
                if (changed) {
                    if (auto s = save_checkpoint(o_.checkpoint_path, cp_); !s)
                        spdlog::error("unprepare: {}", s.error().what());
                }
                continue;
            }
            removed.insert(*it);
            cp_.claims.erase(it);
        }
    }
    if (!removed.empty()) {
        if (auto r = save_checkpoint(o_.checkpoint_path, cp_, true); !r) {
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

}  // namespace dra
