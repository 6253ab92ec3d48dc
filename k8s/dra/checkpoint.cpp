// SPDX-License-Identifier: Apache-2.0
#include "checkpoint.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "inject/fs.hpp"

namespace edra {

using inject::Errc;
using inject::fail;
using Json = nlohmann::json;

namespace {

constexpr int kVersion = 1;
constexpr std::size_t kMaxBytes = 16u << 20;

// Reads a checkpoint object; nlohmann's type errors become one message naming the field.
Checkpoint from_json(const Json& j) {
    Checkpoint cp;
    if (j.at("version").get<int>() != kVersion)
        throw std::invalid_argument("version " + j.at("version").dump() + ": want " +
                                    std::to_string(kVersion));
    for (const auto& [uid, c] : j.at("claims").items()) {
        PreparedClaim pc;
        pc.ns = c.at("namespace").get<std::string>();
        pc.name = c.at("name").get<std::string>();
        for (const auto& d : c.at("devices")) {
            PreparedDevice pd;
            pd.requests = d.at("requests").get<std::vector<std::string>>();
            pd.pool = d.at("pool").get<std::string>();
            pd.device = d.at("device").get<std::string>();
            pd.cdi_ids = d.at("cdiDeviceIDs").get<std::vector<std::string>>();
            if (const auto in = d.find("createdInstance"); in != d.end())
                pd.created = CreatedInstance{in->at("card").get<std::uint32_t>(), in->at("id").get<std::uint32_t>(),
                                             in->at("profile").get<std::string>(), in->at("uuid").get<std::string>()};
            pc.devices.push_back(std::move(pd));
        }
        cp.claims.emplace(uid, std::move(pc));
    }
    for (const auto& p : j.value("pending", Json::array())) {
        PendingCreate pc{p.at("claim").get<std::string>(),
                         p.at("card").get<std::uint32_t>(),
                         p.at("profile").get<std::string>(),
                         p.at("before").get<std::vector<std::uint32_t>>(),
                         p.value("attempt", std::uint64_t{0}),
                         std::nullopt,
                         {}};
        if (const auto m = p.find("made"); m != p.end()) {
            pc.made = m->at("id").get<std::uint32_t>();
            pc.made_uuid = m->at("uuid").get<std::string>();
        }
        cp.pending.push_back(std::move(pc));
    }
    return cp;
}

}  // namespace

std::string to_text(const Checkpoint& cp) {
    Json claims = Json::object();
    for (const auto& [uid, c] : cp.claims) {
        Json devices = Json::array();
        for (const auto& d : c.devices) {
            Json dev = {{"requests", d.requests}, {"pool", d.pool}, {"device", d.device}, {"cdiDeviceIDs", d.cdi_ids}};
            if (d.created)
                dev["createdInstance"] = {{"card", d.created->card},
                                          {"id", d.created->id},
                                          {"profile", d.created->profile},
                                          {"uuid", d.created->uuid}};
            devices.push_back(std::move(dev));
        }
        claims[uid] = {{"namespace", c.ns}, {"name", c.name}, {"devices", std::move(devices)}};
    }
    Json out = {{"version", kVersion}, {"claims", std::move(claims)}};
    for (const auto& p : cp.pending) {
        Json e = {{"claim", p.claim_uid},
                  {"card", p.card},
                  {"profile", p.profile},
                  {"before", p.before},
                  {"attempt", p.attempt}};
        if (p.made) e["made"] = {{"id", *p.made}, {"uuid", p.made_uuid}};
        out["pending"].push_back(std::move(e));
    }
    return out.dump(1) + "\n";
}

inject::Result<Checkpoint> parse_checkpoint(const std::string& text, const std::string& source) {
    try {
        return from_json(Json::parse(text));
    } catch (const std::exception& e) {
        return fail(Errc::InvalidInput, "checkpoint '" + source + "': " + e.what());
    }
}

inject::Result<Checkpoint> load_checkpoint(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return Checkpoint{};
    INJECT_TRY(const auto text, inject::fs::read_file(path, kMaxBytes));
    return parse_checkpoint(text, path);
}

inject::Result<void> save_checkpoint(const std::string& path, const Checkpoint& cp,
                                     bool drops_claims) {
    const std::string prev = path + ".prev", link_tmp = prev + ".tmp", text = to_text(cp);
    inject::fs::AtomicWriteOptions o;
    o.mode = 0600;
    (void)::unlink(link_tmp.c_str());  // a crash between link and rename left it
    if (drops_claims) {
        // .prev first: a crash before the file leaves the file as it was (kubelet not told yet)
        // and a .prev that is only missing what is going anyway.
        if (auto r = inject::fs::atomic_write(prev, text, o); !r)
            return fail(std::move(r).error().context("writing checkpoint '" + prev + "'"));
    } else if (::link(path.c_str(), link_tmp.c_str()) == 0) {
        // The current file becomes .prev: a link under a temporary name renamed over the old
        // .prev, so a crash anywhere leaves a good checkpoint.json or a good .prev. No current
        // file (the first save, or after a fallback moved a corrupt one away): .prev stays.
        if (::rename(link_tmp.c_str(), prev.c_str()) != 0) (void)::unlink(link_tmp.c_str());
    }
    if (auto r = inject::fs::atomic_write(path, text, o); !r)
        return fail(std::move(r).error().context("writing checkpoint '" + path + "'"));
    return inject::ok();
}

}  // namespace edra

namespace edra {

LoadedCheckpoint load_checkpoint_or_previous(const std::string& path) {
    struct stat st {};
    const std::string prev = path + ".prev";
    const bool have_prev = ::lstat(prev.c_str(), &st) == 0;
    const bool have_cur = ::lstat(path.c_str(), &st) == 0;
    std::string why;
    if (have_cur) {
        auto cur = load_checkpoint(path);
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
    if (!have_prev)
        return {{}, why + "; no previous checkpoint: starting without prepared claims", true};
    auto old = load_checkpoint(prev);
    if (!old)
        return {{},
                why + "; the previous one is bad too: " + old.error().what() +
                    ": starting without prepared claims",
                true};
    return {std::move(*old), why + "; using the previous one, '" + prev + "'", false};
}

}  // namespace edra
