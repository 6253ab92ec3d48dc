// SPDX-License-Identifier: Apache-2.0
// The one adapter between nlohmann/json and the shim: its exceptions end in this file.
#include "create.hpp"

#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>

#include "inject/fs.hpp"
#include "inject/oci.hpp"
#include "inject/request_edits.hpp"

namespace shim {
namespace {

using inject::Errc;
using inject::fail;
using inject::Result;
using inject::cdi::ContainerEdits;
using inject::request::Request;
using inject::request::Selector;
using Json = nlohmann::ordered_json;

Result<Json> parse_json(const std::string& text, const std::string& path) {
    try {
        return Json::parse(text);
    } catch (const Json::parse_error& e) {
        std::string what = e.what();
        // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
        if (auto p = what.find("] "); p != std::string::npos) what.erase(0, p + 2);
        constexpr std::string_view kPrefix = "parse error at ";  // "line 1, column 49: ..." follows
        if (what.starts_with(kPrefix))
            return fail(Errc::InvalidInput,
                        path + ": invalid JSON at " + what.substr(kPrefix.size()));
        return fail(Errc::InvalidInput,
                    path + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + what);
    } catch (const std::exception& e) {
        return fail(Errc::InvalidInput, path + ": " + e.what());
    }
}

/// A request needs one of these strings; a config.json without them is passed through
/// without being parsed. (A request spelled with JSON \u escapes is not seen: nobody writes that.)
bool may_hold_request(const std::string& text) {
    return text.find("ENFLAME_") != std::string::npos ||
           text.find("cdi.k8s.io/") != std::string::npos;
}

/// The container's env and annotations, checked for type.
Result<Request> request_of(const Json& doc, const inject::config::Config& cfg,
                           const std::string& path) {
    std::vector<std::string> env;
    if (doc.contains("process") && doc["process"].is_object() && doc["process"].contains("env")) {
        const auto& e = doc["process"]["env"];
        if (!e.is_array())
            return fail(Errc::InvalidInput, path + ": 'process.env' is not an array");
        for (const auto& kv : e) {
            if (!kv.is_string())
                return fail(Errc::InvalidInput,
                            path + ": 'process.env' is not an array of strings");
            env.push_back(kv.get<std::string>());
        }
    }
    std::map<std::string, std::string> annotations;
    if (doc.contains("annotations")) {
        const auto& a = doc["annotations"];
        if (!a.is_object())
            return fail(Errc::InvalidInput, path + ": 'annotations' is not an object");
        for (const auto& [k, v] : a.items())
            if (v.is_string()) annotations.emplace(k, v.get<std::string>());
    }
    return inject::request::request_of(cfg, env, annotations, inject::oci::privileged(doc));
}

/// enflame-ctk beside the shim is the ldcache hook of edits built from discovery.
inject::request::EditsOptions edits_options(const ShimEnv& env) {
    inject::request::EditsOptions o;
    if (const std::string ctk = env.self_dir + "/enflame-ctk";
        !env.self_dir.empty() && ::access(ctk.c_str(), X_OK) == 0)
        o.ctk_path = ctk;
    return o;
}

Result<ContainerEdits> legacy_edits(const inject::config::Config& cfg, const ShimEnv& env) {
    std::string hook = cfg.runtime.hook_path;
    if (hook.empty()) hook = env.self_dir + "/enflame-container-runtime-hook";
    if (hook.front() != '/' || ::access(hook.c_str(), X_OK) != 0)
        return fail(Errc::NotFound, "legacy mode: hook '" + hook + "' is not an executable file");
    inject::cdi::Hook h;
    h.hook_name = "prestart";
    h.path = hook;
    h.args = {hook, "prestart"};
    // An explicit env: nothing inherited (no LD_PRELOAD into a root hook, CVE-2025-23266).
    h.env.push_back(
        "PATH=" + (env.path_env.empty()
                       ? std::string("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
                       : env.path_env));
    if (!env.config_path.empty()) h.env.push_back("ENFLAME_CTK_CONFIG=" + env.config_path);
    ContainerEdits edits;
    edits.hooks.push_back(std::move(h));
    return edits;
}

/// Legacy mode: the nodes the hook will create and the env it cannot set (a DRS instance's
/// TOPS_VISIBLE_DEVICES). The nodes' allow rules go into config.json, so the runtime programs
/// the device cgroup itself, on v1 and v2 alike, and the hook has none to add.
Result<ContainerEdits> legacy_card_edits(const inject::config::Config& cfg, const Request& req,
                                         const ShimEnv& env) {
    INJECT_TRY(auto edits, inject::request::edits_from_discovery(cfg, req, edits_options(env)));
    INJECT_TRY_VOID(inject::oci::fill_device_numbers(edits));
    ContainerEdits out;
    out.device_nodes = std::move(edits.device_nodes);
    out.env = inject::request::env_besides_request(edits);
    return out;
}

}  // namespace

// The library logs through inject/log.hpp, which main.cpp routes into `log`.
Result<ContainerEdits> build_edits(const inject::config::Config& cfg, const Request& req,
                                   const ShimEnv& env, RuncLog& /*log*/) {
    switch (cfg.runtime.mode) {
        case inject::config::Mode::Legacy:
            return legacy_edits(cfg, env);
        case inject::config::Mode::Cdi: {
            INJECT_TRY(auto reg, inject::request::load_registry(cfg));
            return inject::request::edits_from_registry(reg, cfg, req);
        }
        case inject::config::Mode::Auto:
            break;
    }
    INJECT_TRY(auto out, inject::request::auto_edits(cfg, req, edits_options(env)));
    return std::move(out.edits);
}

Result<Outcome> prepare_bundle(const inject::config::Config& cfg, const std::string& bundle,
                               const ShimEnv& env, RuncLog& log) {
    const std::string path = (bundle.empty() ? std::string(".") : bundle) + "/config.json";
    INJECT_TRY(auto text, inject::fs::read_file(path, kMaxConfigJson));
    Outcome out;
    if (!may_hold_request(text)) {
        out.summary = "no request";
        return out;
    }
    INJECT_TRY(auto doc, parse_json(text, path));
    if (!doc.is_object()) return fail(Errc::InvalidInput, path + ": the spec is not a JSON object");
    INJECT_TRY(auto req, request_of(doc, cfg, path));
    if (req.empty()) {
        out.summary = "no request";
        return out;
    }
    INJECT_TRY(auto edits, build_edits(cfg, req, env, log));
    INJECT_TRY_VOID(inject::oci::fill_device_numbers(edits));
    INJECT_TRY_CTX(inject::oci::apply(doc, edits), path);
    std::size_t rules = 0;
    if (cfg.runtime.mode == inject::config::Mode::Legacy) {
        INJECT_TRY(auto cards, legacy_card_edits(cfg, req, env));
        INJECT_TRY_CTX(inject::oci::allow_devices(doc, cards.device_nodes), path);
        rules = cards.device_nodes.size();
        // The env only: apply() would also add the nodes to linux.devices, which the hook makes.
        cards.device_nodes.clear();
        INJECT_TRY_CTX(inject::oci::apply(doc, cards), path);
    }
    INJECT_TRY(auto json, inject::oci::dump(doc));
    // Atomic but not fsynced: the runtime reads it within milliseconds, and after a crash
    // the container it describes is gone anyway (fsync cost 3-9 ms here).
    inject::fs::AtomicWriteOptions wopts;
    wopts.durable = false;
    // The context names the file: a failed mkostemp alone only names the folder.
    INJECT_TRY_CTX(inject::fs::atomic_write(path, json, wopts), "writing " + path);
    out.rewritten = true;
    out.document = std::make_shared<Json>(std::move(doc));
    out.summary = "mode " + std::string(inject::config::mode_name(cfg.runtime.mode)) + ": " +
                  req.source + ": " + std::to_string(edits.device_nodes.size()) +
                  " device nodes, " + std::to_string(edits.mounts.size()) + " mounts, " +
                  std::to_string(edits.hooks.size()) + " hooks" +
                  (rules ? ", " + std::to_string(rules) + " device-cgroup rules" : "");
    return out;
}

}  // namespace shim
