// SPDX-License-Identifier: Apache-2.0
#include "k8s/drs_ledger.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <string_view>

#include "inject/fs.hpp"

namespace k8s::drs {

using inject::Errc;
using inject::fail;
using Json = nlohmann::json;

namespace {

constexpr std::size_t kMaxBytes = 16u << 20;

// Older efsmi prints "DRS-<uuid>", newer the bare UUID: the same instance either way.
std::string_view bare(std::string_view uuid) {
    return uuid.starts_with("DRS-") ? uuid.substr(4) : uuid;
}

}  // namespace

Seen seen_in(const std::vector<inject::device::DrsInstance>& card_instances, const Made& rec) {
    const auto it = std::find_if(card_instances.begin(), card_instances.end(),
                                 [&](const auto& in) { return in.instance_id == rec.id; });
    if (it == card_instances.end()) return Seen::Gone;
    if (!rec.profile.empty() && it->profile != rec.profile) return Seen::Other;
    if (!rec.uuid.empty() && !it->uuid.empty() && bare(it->uuid) != bare(rec.uuid))
        return Seen::Other;
    return Seen::Ours;
}

Json made_json(const Made& m) {
    return {{"card", m.card}, {"id", m.id}, {"profile", m.profile}, {"uuid", m.uuid}};
}

Made made_from_json(const Json& j) {
    return {j.at("card").get<std::uint32_t>(), j.at("id").get<std::uint32_t>(),
            j.at("profile").get<std::string>(), j.at("uuid").get<std::string>()};
}

Json pending_json(const std::vector<Pending>& pending, const char* owner_key) {
    Json out = Json::array();
    for (const auto& p : pending) {
        Json e = {{owner_key, p.owner},
                  {"card", p.card},
                  {"profile", p.profile},
                  {"before", p.before},
                  {"attempt", p.attempt}};
        if (p.made) e["made"] = {{"id", *p.made}, {"uuid", p.made_uuid}};
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<Pending> pending_from_json(const Json& list, const char* owner_key) {
    std::vector<Pending> out;
    for (const auto& p : list) {
        Pending e{p.at(owner_key).get<std::string>(),
                  p.at("card").get<std::uint32_t>(),
                  p.at("profile").get<std::string>(),
                  p.at("before").get<std::vector<std::uint32_t>>(),
                  p.value("attempt", std::uint64_t{0}),
                  std::nullopt,
                  {}};
        if (const auto m = p.find("made"); m != p.end()) {
            e.made = m->at("id").get<std::uint32_t>();
            e.made_uuid = m->at("uuid").get<std::string>();
        }
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<std::uint32_t> unrecorded_new(
    const std::vector<inject::device::DrsInstance>& card_instances, std::uint32_t card,
    const std::string& profile, const std::set<std::uint32_t>& before, const IsRecorded& recorded) {
    std::vector<std::uint32_t> out;
    for (const auto& in : card_instances)
        if (in.profile == profile && !before.contains(in.instance_id) &&
            !recorded(card, in.instance_id))
            out.push_back(in.instance_id);
    return out;
}

bool take_back_failed_create(const Ops& ops, const std::string& who, std::uint32_t card,
                             const std::string& profile, const std::vector<std::uint32_t>& before,
                             const IsRecorded& recorded) {
    auto list = ops.list(card);
    if (!list) {
        spdlog::error(
            "{}: checking card {} for a {} DRS instance a failed create may have made: {}", who,
            card, profile, list.error().what());
        return false;
    }
    const auto ours =
        unrecorded_new(*list, card, profile, {before.begin(), before.end()}, recorded);
    if (ours.empty()) return true;  // efsmi made nothing
    if (ours.size() > 1) {
        spdlog::warn(
            "{}: card {}: {} new {} DRS instances after a failed create: none destroyed (cannot "
            "tell ours); the next start looks again",
            who, card, ours.size(), profile);
        return false;
    }
    if (auto r = ops.destroy(card, ours.front()); !r) {
        spdlog::error("{}: taking back DRS instance {} of card {}: {}", who, ours.front(), card,
                      r.error().what());
        return false;
    }
    spdlog::info("{}: destroyed DRS instance {} ({}) of card {}: made by a create that failed", who,
                 ours.front(), profile, card);
    return true;
}

std::vector<Pending> converge(const std::vector<Pending>& pending, const char* owner_kind,
                              const Ops& ops, const IsRecorded& recorded,
                              const std::function<void(const Made&)>& destroyed) {
    if (pending.empty()) return {};
    if (!ops.list || !ops.destroy) {
        spdlog::error(
            "the ledger lists DRS instances being made, but efsmi cannot list or destroy "
            "them here");
        return pending;
    }
    std::vector<Pending> kept;
    std::map<std::uint32_t, std::vector<inject::device::DrsInstance>> lists;
    for (const auto& p : pending) {
        if (!p.made) {
            spdlog::warn(
                "{} {}: stopped before efsmi answered its create of a {} DRS instance on card {}: "
                "nothing destroyed (an instance it may have made cannot be told from an "
                "administrator's)",
                owner_kind, p.owner, p.profile, p.card);
            continue;
        }
        if (!lists.contains(p.card)) {
            auto list = ops.list(p.card);
            if (!list) {
                spdlog::error("checking DRS instances a stopped create may have made: {}",
                              list.error().what());
                kept.push_back(p);
                continue;
            }
            lists[p.card] = std::move(*list);
        }
        const Made m{p.card, *p.made, p.profile, p.made_uuid};
        const auto seen = seen_in(lists[p.card], m);
        if (seen == Seen::Gone) continue;  // taken back before the save that would say so
        if (seen == Seen::Other || recorded(m.card, m.id)) {
            spdlog::warn(
                "card {}: instance {} is not the {} {} a stopped create made for {} {} now: "
                "left alone",
                p.card, m.id, m.profile, m.uuid, owner_kind, p.owner);
            continue;
        }
        if (auto r = ops.destroy(p.card, m.id); !r) {
            spdlog::error("{}", r.error().what());
            kept.push_back(p);
            continue;
        }
        spdlog::info(
            "destroyed DRS instance {} ({}) of card {}: made for {} {} by a create that "
            "never finished",
            m.id, m.profile, p.card, owner_kind, p.owner);
        if (destroyed) destroyed(m);
    }
    return kept;
}

inject::Result<Seen> release(const Ops& ops, const Made& rec) {
    if (!ops.list || !ops.destroy)
        return fail(Errc::Unsupported, "this plugin cannot list or destroy DRS instances");
    INJECT_TRY(const auto list, ops.list(rec.card));
    const auto seen = seen_in(list, rec);
    if (seen != Seen::Ours) return seen;
    INJECT_TRY_VOID(ops.destroy(rec.card, rec.id));
    return Seen::Ours;
}

inject::Result<void> save_file(const std::string& path, const std::string& text,
                               bool drops_records) {
    const std::string prev = path + ".prev", link_tmp = prev + ".tmp";
    inject::fs::AtomicWriteOptions o;
    o.mode = 0600;
    (void)::unlink(link_tmp.c_str());  // a crash between link and rename left it
    if (drops_records) {
        // .prev first: a crash before the file leaves the file as it was and a .prev that only
        // lacks what is going anyway.
        if (auto r = inject::fs::atomic_write(prev, text, o); !r)
            return fail(std::move(r).error().context("writing checkpoint '" + prev + "'"));
    } else if (::link(path.c_str(), link_tmp.c_str()) == 0) {
        // The current file becomes .prev: a link under a temporary name renamed over the old
        // .prev. No current file (the first save, or after a fallback): .prev stays.
        if (::rename(link_tmp.c_str(), prev.c_str()) != 0) (void)::unlink(link_tmp.c_str());
    }
    if (auto r = inject::fs::atomic_write(path, text, o); !r)
        return fail(std::move(r).error().context("writing checkpoint '" + path + "'"));
    return inject::ok();
}

namespace {

inject::Result<std::string> read_parsed(
    const std::string& path,
    const std::function<inject::Result<void>(const std::string&, const std::string&)>& parse) {
    INJECT_TRY(auto text, inject::fs::read_file(path, kMaxBytes));
    INJECT_TRY_VOID(parse(text, path));
    return text;
}

}  // namespace

LoadedFile load_file(
    const std::string& path,
    const std::function<inject::Result<void>(const std::string&, const std::string&)>& parse) {
    struct stat st {};
    const std::string prev = path + ".prev";
    const bool have_prev = ::lstat(prev.c_str(), &st) == 0;
    const bool have_cur = ::lstat(path.c_str(), &st) == 0;
    std::string why;
    if (have_cur) {
        auto cur = read_parsed(path, parse);
        if (cur) return {std::move(*cur), {}, false};
        why = cur.error().what();
        // Kept for a look, and out of the way: the next save must not make it the .prev.
        if (::rename(path.c_str(), (path + ".corrupt").c_str()) == 0)
            why += " (kept as '" + path + ".corrupt')";
    } else if (!have_prev) {
        return {};
    } else {
        why = "checkpoint '" + path + "': missing while '" + prev + "' is there";
    }
    if (!have_prev) return {std::nullopt, why + "; no previous checkpoint", true};
    auto old = read_parsed(prev, parse);
    if (!old)
        return {std::nullopt, why + "; the previous one is bad too: " + old.error().what(), true};
    return {std::move(*old), why + "; using the previous one, '" + prev + "'", false};
}

}  // namespace k8s::drs
