// SPDX-License-Identifier: Apache-2.0
#include "dra/checkpoint.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "inject/fs.hpp"

namespace dra {

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
                pd.created = k8s::drs::made_from_json(*in);
            pc.devices.push_back(std::move(pd));
        }
        cp.claims.emplace(uid, std::move(pc));
    }
    cp.pending = k8s::drs::pending_from_json(j.value("pending", Json::array()), "claim");
    return cp;
}

}  // namespace

std::string to_text(const Checkpoint& cp) {
    Json claims = Json::object();
    for (const auto& [uid, c] : cp.claims) {
        Json devices = Json::array();
        for (const auto& d : c.devices) {
            Json dev = {{"requests", d.requests},
                        {"pool", d.pool},
                        {"device", d.device},
                        {"cdiDeviceIDs", d.cdi_ids}};
            if (d.created) dev["createdInstance"] = k8s::drs::made_json(*d.created);
            devices.push_back(std::move(dev));
        }
        claims[uid] = {{"namespace", c.ns}, {"name", c.name}, {"devices", std::move(devices)}};
    }
    Json out = {{"version", kVersion}, {"claims", std::move(claims)}};
    if (!cp.pending.empty()) out["pending"] = k8s::drs::pending_json(cp.pending, "claim");
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
    return k8s::drs::save_file(path, to_text(cp), drops_claims);
}

LoadedCheckpoint load_checkpoint_or_previous(const std::string& path) {
    auto f = k8s::drs::load_file(
        path, [](const std::string& text, const std::string& source) -> inject::Result<void> {
            INJECT_TRY_VOID(parse_checkpoint(text, source));
            return inject::ok();
        });
    LoadedCheckpoint out{{}, std::move(f.problem), f.lost};
    if (f.text) out.cp = *parse_checkpoint(*f.text, path);
    if (f.lost) out.problem += ": starting without prepared claims";
    return out;
}

}  // namespace dra
