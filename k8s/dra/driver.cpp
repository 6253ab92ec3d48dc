// SPDX-License-Identifier: Apache-2.0
#include "driver.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "claim_cdi.hpp"
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
                                        bool only_if_changed) {
    auto spec = claim_spec(host_, o_.cdi, uid, devices);
    if (!spec && spec.error().code() == Errc::NotFound) {
        // A DRS instance created (or a card added) since we last looked: look again, once.
        auto host = discover_();
        if (!host) return fail(std::move(host).error().context("discovering Enflame cards"));
        host_ = std::move(*host);
        spec = claim_spec(host_, o_.cdi, uid, devices);
    }
    if (!spec) return fail(std::move(spec).error());
    return write_claim_spec(o_.cdi_root, uid, *spec, only_if_changed);
}

inject::Result<bool> Driver::write_spec(const std::string& uid, const PreparedClaim& c,
                                        bool only_if_changed) {
    INJECT_TRY(const auto names, names_of(c));
    return write_spec(uid, names, only_if_changed);
}

void Driver::converge() {
    const std::lock_guard lock(mu_);
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
        pc.devices.push_back({{a.request}, a.pool, a.device, {cdi_device_id(ref.uid, n)}});
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
        auto r = pc ? write_spec(ref.uid, *pc) : inject::Result<bool>(fail(pc.error()));
        if (!r) {
            answer.error =
                pc ? r.error().context("claim '" + ref.text() + "'").what() : pc.error().what();
            inject::log::warn("prepare: {}", answer.error);
            continue;
        }
        answer.devices = pc->devices;
        cp_.claims[ref.uid] = std::move(*pc);
        added.push_back(ref.uid);
    }
    if (added.empty()) return out;
    if (auto r = save_checkpoint(o_.checkpoint_path, cp_); !r) {
        // Not remembered means not prepared: take the specs back so nothing is left behind.
        for (const auto& uid : added) {
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
