// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/apply.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "inject/log.hpp"

namespace drs_manager {
namespace {

using inject::Errc;
using inject::fail;
using Json = nlohmann::json;
using k8s::drs::Made;

constexpr const char* kOwnerKey = "layout";

}  // namespace

std::string ledger_text(const Ledger& l) {
    Json made = Json::array();
    for (const auto& m : l.made) made.push_back(k8s::drs::made_json(m));
    Json out{{"version", 1}, {"made", made}};
    if (!l.pending.empty()) out["pending"] = k8s::drs::pending_json(l.pending, kOwnerKey);
    return out.dump(1) + "\n";
}

inject::Result<Ledger> parse_ledger(const std::string& text, const std::string& source) {
    try {
        const Json j = Json::parse(text);
        if (j.at("version").get<int>() != 1)
            return fail(Errc::InvalidInput,
                        source + ": version " + j.at("version").dump() + ": want 1");
        Ledger l;
        for (const auto& m : j.at("made")) l.made.push_back(k8s::drs::made_from_json(m));
        l.pending = k8s::drs::pending_from_json(j.value("pending", Json::array()), kOwnerKey);
        return l;
    } catch (const std::exception& e) {
        return fail(Errc::InvalidInput, source + ": " + e.what());
    }
}

inject::Result<void> Applier::start(const k8s::drs::IsRecorded& held) {
    const auto f = k8s::drs::load_file(
        path_, [](const std::string& text, const std::string& source) -> inject::Result<void> {
            INJECT_TRY_VOID(parse_ledger(text, source));
            return inject::ok();
        });
    if (!f.problem.empty()) inject::log::warn("ledger: {}", f.problem);
    if (f.text) {
        INJECT_TRY(ledger_, parse_ledger(*f.text, path_));
    }
    for (const auto& p : ledger_.pending) attempt_ = std::max(attempt_, p.attempt);
    if (ledger_.pending.empty()) return inject::ok();
    const auto before = ledger_.pending.size();
    ledger_.pending = k8s::drs::converge(
        ledger_.pending, "layout", efsmi_.ops(),
        [&](std::uint32_t card, std::uint32_t id) {
            return held(card, id) ||
                   std::any_of(ledger_.made.begin(), ledger_.made.end(),
                               [&](const Made& m) { return m.card == card && m.id == id; });
        },
        [](const Made&) {});
    return save(ledger_.pending.size() != before);
}

inject::Result<void> Applier::save(bool drops_records) {
    std::error_code ec;
    const auto dir = std::filesystem::path(path_).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (ec) return fail(Errc::Io, "ledger: creating " + dir.string() + ": " + ec.message());
    return k8s::drs::save_file(path_, ledger_text(ledger_), drops_records);
}

inject::Result<void> Applier::destroy(const inject::device::DrsInstance& in) {
    const Made m{in.parent_index, in.instance_id, in.profile, in.uuid};
    const auto name = inject::device::drs_name(in);
    INJECT_TRY(const auto seen, k8s::drs::release(efsmi_.ops(), m));
    if (seen == k8s::drs::Seen::Other)
        return fail(Errc::Conflict, "card " + std::to_string(m.card) + ": instance " + name +
                                        " changed since it was planned: left alone");
    inject::log::info("destroyed DRS instance {}{}", name,
                      seen == k8s::drs::Seen::Gone ? " (it was gone already)" : "");
    const auto n = ledger_.made.size();
    std::erase_if(ledger_.made, [&](const Made& r) { return r.card == m.card && r.id == m.id; });
    if (ledger_.made.size() != n) return save(true);
    return inject::ok();
}

inject::Result<void> Applier::create(std::uint32_t card, const inject::device::DrsProfile& profile,
                                     const std::string& layout) {
    INJECT_TRY(const auto now, efsmi_.list(card));
    std::vector<std::uint32_t> before;
    for (const auto& in : now) before.push_back(in.instance_id);
    const auto attempt = ++attempt_;
    ledger_.pending.push_back({layout, card, profile.name, before, attempt, std::nullopt, {}});
    auto drop_pending = [&] {
        std::erase_if(ledger_.pending, [&](const auto& p) { return p.attempt == attempt; });
    };
    if (auto r = save(false); !r) {
        drop_pending();
        return r;
    }
    auto in = efsmi_.create(card, profile);
    if (!in) {
        const auto recorded = [&](std::uint32_t c, std::uint32_t id) {
            return std::any_of(ledger_.made.begin(), ledger_.made.end(),
                               [&](const Made& m) { return m.card == c && m.id == id; });
        };
        // Its entry stays for the next start when what efsmi may have made cannot be told.
        if (k8s::drs::take_back_failed_create(efsmi_.ops(), "layout " + layout, card, profile.name,
                                              before, recorded)) {
            drop_pending();
            if (auto r = save(true); !r) spdlog::error("{}", r.error().what());
        }
        return fail(std::move(in).error());
    }
    drop_pending();
    ledger_.made.push_back({card, in->instance_id, in->profile, in->uuid});
    INJECT_TRY_VOID(save(true));
    inject::log::info("made DRS instance {}", inject::device::drs_name(*in));
    return inject::ok();
}

inject::Result<void> Applier::run(const Plan& plan, const std::string& layout) {
    for (const auto& card : plan.cards) {
        inject::log::info("layout {}: {}", layout, describe(card));
        for (const auto& in : card.destroy) INJECT_TRY_VOID(destroy(in));
        for (const auto& p : card.create) INJECT_TRY_VOID(create(card.card, p, layout));
    }
    return inject::ok();
}

}  // namespace drs_manager
