// SPDX-License-Identifier: Apache-2.0
// The one adapter between nlohmann/json and the shim: its exceptions end in this file.
#include "create.hpp"

#include "inject/cdi_generate.hpp"
#include "inject/cdi_provenance.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/discover.hpp"
#include "inject/fs.hpp"
#include "inject/oci.hpp"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <map>

namespace shim {
namespace {

using inject::Errc;
using inject::Result;
using inject::fail;
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
        if (what.starts_with(kPrefix)) return fail(Errc::InvalidInput, path + ": invalid JSON at " + what.substr(kPrefix.size()));
        return fail(Errc::InvalidInput, path + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + what);
    } catch (const std::exception& e) {
        return fail(Errc::InvalidInput, path + ": " + e.what());
    }
}


/// A request needs one of these strings; a config.json without them is passed through
/// without being parsed. (A request spelled with JSON \u escapes is not seen: nobody writes that.)
bool may_hold_request(const std::string& text) {
    return text.find("ENFLAME_") != std::string::npos || text.find("cdi.k8s.io/") != std::string::npos;
}

bool is_privileged(const Json& doc) {
    const auto* caps = doc.contains("process") && doc["process"].is_object() && doc["process"].contains("capabilities")
                           ? &doc["process"]["capabilities"]
                           : nullptr;
    if (caps == nullptr || !caps->is_object() || !caps->contains("bounding") || !(*caps)["bounding"].is_array())
        return false;
    const auto& b = (*caps)["bounding"];
    return std::find(b.begin(), b.end(), Json("CAP_SYS_ADMIN")) != b.end();
}

/// The container's env and annotations, checked for type.
Result<Request> request_of(const Json& doc, const inject::config::Config& cfg, const std::string& path) {
    std::vector<std::string> env;
    if (doc.contains("process") && doc["process"].is_object() && doc["process"].contains("env")) {
        const auto& e = doc["process"]["env"];
        if (!e.is_array()) return fail(Errc::InvalidInput, path + ": 'process.env' is not an array");
        for (const auto& kv : e) {
            if (!kv.is_string()) return fail(Errc::InvalidInput, path + ": 'process.env' is not an array of strings");
            env.push_back(kv.get<std::string>());
        }
    }
    if (!cfg.runtime.accept_envvar_when_unprivileged && !is_privileged(doc)) env.clear();
    std::map<std::string, std::string> annotations;
    if (doc.contains("annotations")) {
        const auto& a = doc["annotations"];
        if (!a.is_object()) return fail(Errc::InvalidInput, path + ": 'annotations' is not an object");
        for (const auto& [k, v] : a.items())
            if (v.is_string()) annotations.emplace(k, v.get<std::string>());
    }
    return inject::request::parse(env, annotations);
}

std::string join_list(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

/// Device names of the request in our kind, as cdi generate names them (by index, by UUID,
/// "DRS-<uuid>", "all"); CDI names from annotations/env as written.
std::vector<std::string> qualified_names(const Request& req, const std::string& kind) {
    std::vector<std::string> out;
    auto add = [&](std::string n) {
        if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(std::move(n));
    };
    if (req.mode == Request::Mode::All) add(kind + "=all");
    for (const auto& s : req.selectors)
        add(kind + "=" + (s.kind == Selector::Kind::Index || s.kind == Selector::Kind::GcuName ? std::to_string(s.index)
                                                                                                : s.text));
    for (const auto& n : req.cdi_names) add(n);
    return out;
}

/// Spec-level edits of the first spec of `kind` ("none": the control node and utilities).
Result<ContainerEdits> kind_edits(const inject::cdi::Registry& reg, const inject::config::Config& cfg) {
    for (const auto& s : reg.specs())
        if (s.spec.kind == cfg.runtime.cdi_kind) return s.spec.edits;
    return fail(Errc::NotFound, "no CDI spec of kind '" + cfg.runtime.cdi_kind + "' in " +
                                    join_list(cfg.runtime.spec_dirs));
}

Result<ContainerEdits> from_registry(const inject::cdi::Registry& reg, const inject::config::Config& cfg,
                                     const Request& req) {
    ContainerEdits edits;
    if (req.mode == Request::Mode::NoCards) {
        INJECT_TRY(edits, kind_edits(reg, cfg));
    }
    auto names = qualified_names(req, cfg.runtime.cdi_kind);
    if (names.empty()) return edits;
    INJECT_TRY(auto more, reg.resolve(names));
    inject::cdi::merge_edits(edits, more);
    return edits;
}

Result<inject::cdi::Registry> load_registry(const inject::config::Config& cfg, RuncLog& log) {
    INJECT_TRY(auto reg, inject::cdi::Registry::load(cfg.runtime.spec_dirs));
    for (const auto& p : reg.problems()) log.debug("cdi: skipped " + p);
    return reg;
}

/// Auto mode without a spec on disk: discover the cards, generate the spec in memory, resolve
/// the selected cards plus `names` (CDI names of our kind, resolved against the generated spec).
Result<ContainerEdits> from_discovery(const inject::config::Config& cfg, const Request& req,
                                      std::vector<std::string> names, const ShimEnv& env, RuncLog& log) {
    auto opts = inject::discover::options_from(cfg);
    opts.with_drs = std::any_of(req.selectors.begin(), req.selectors.end(),
                                [](const Selector& s) { return s.kind == Selector::Kind::Drs; }) ||
                    std::any_of(names.begin(), names.end(), [](const std::string& n) {
                        // "DRS-<uuid>" or "<card>:<profile>:<id>" after the kind's '='
                        return n.find("DRS-") != std::string::npos || n.find(':') != std::string::npos;
                    });
    // libefml in-process first: no child process on the hot path; efsmi only as the fallback.
    auto host = opts.with_drs ? inject::discover::discover(opts)
                              : inject::discover::discover_with(opts, inject::discover::Backend::Efml);
    if (!host && !opts.with_drs) {
        log.debug("libefml did not answer (" + host.error().what() + "), trying efsmi");
        host = inject::discover::discover(opts);
    }
    if (!host) return fail(std::move(host).error().context("discovering the cards"));
    INJECT_TRY(auto sel, inject::request::select(req, *host));
    INJECT_TRY(auto gen, inject::cdi::options_from(cfg));
    gen.capabilities = req.capabilities;
    gen.names = inject::cdi::NameStrategy::Both;
    if (const std::string ctk = env.self_dir + "/enflame-ctk"; !env.self_dir.empty() && ::access(ctk.c_str(), X_OK) == 0)
        gen.ctk_path = ctk;
    INJECT_TRY(auto spec, inject::cdi::generate(*host, gen));
    if (req.mode == Request::Mode::All) names.emplace_back("all");
    for (auto i : sel.card_indices) names.push_back(std::to_string(i));
    for (const auto& d : sel.drs_instances) names.push_back(inject::device::drs_name(d));
    ContainerEdits edits;
    if (req.mode == Request::Mode::NoCards) edits = spec.edits;
    if (!names.empty()) {
        INJECT_TRY(auto more, inject::cdi::resolve(spec, names));
        inject::cdi::merge_edits(edits, more);
    }
    if (!sel.drs_instances.empty()) {
        std::string tops = "TOPS_VISIBLE_DEVICES=";
        for (std::size_t i = 0; i < sel.drs_instances.size(); ++i)
            tops += (i ? "," : "") + inject::device::drs_address(sel.drs_instances[i]);
        inject::cdi::ContainerEdits env_edit;
        env_edit.env.push_back(tops);
        inject::cdi::merge_edits(edits, env_edit);
    }
    return edits;
}

/// Why the spec on disk no longer fits the host for `edits` (auto mode then builds them from
/// discovery); nullopt when it fits. Cheap on purpose, it runs on every create: a stat per node
/// and mount of the edits, and, when the spec records what it was generated from, the driver
/// version and the sysfs entries of the cards the edits name.
std::optional<std::string> stale_spec(const inject::cdi::Registry& reg, const inject::config::Config& cfg,
                                      const ContainerEdits& edits) {
    if (auto why = inject::cdi::stale_edits(edits)) return why;
    for (const auto& s : reg.specs()) {
        if (s.spec.kind != cfg.runtime.cdi_kind || !s.generated_from) continue;
        std::vector<std::uint32_t> cards;
        for (const auto& c : s.generated_from->cards)
            for (const auto& n : edits.device_nodes)
                if (n.major == c.major && n.minor == c.minor) cards.push_back(c.index);
        // No card in the edits ("none"): only the driver version is compared.
        const inject::cdi::HostPaths paths{cfg.cli.driver_root, cfg.cli.dev_root, cfg.cli.device_prefix};
        if (auto why = inject::cdi::stale_reason(*s.generated_from, paths, cards)) return s.path + ": " + *why;
        break;
    }
    return std::nullopt;
}

Result<ContainerEdits> auto_edits(const inject::config::Config& cfg, const Request& req, const ShimEnv& env,
                                  RuncLog& log) {
    // CDI names of other kinds can only come from the spec dirs.
    const std::string prefix = cfg.runtime.cdi_kind + "=";
    std::vector<std::string> foreign;
    Request ours = req;
    ours.cdi_names.clear();
    for (const auto& n : req.cdi_names) (n.starts_with(prefix) ? ours.cdi_names : foreign).push_back(n);

    INJECT_TRY(auto reg, load_registry(cfg, log));
    auto on_disk = from_registry(reg, cfg, ours);
    ContainerEdits edits;
    std::optional<std::string> stale;
    if (on_disk) stale = stale_spec(reg, cfg, *on_disk);
    if (on_disk && !stale) {
        log.debug("auto: using the CDI spec on disk");
        edits = std::move(*on_disk);
    } else if (stale || on_disk.error().code() == Errc::NotFound) {
        if (stale) log.warn("auto: the CDI spec on disk is stale (" + *stale + "); discovering the cards instead");
        else log.debug("auto: " + on_disk.error().what() + "; discovering the cards");
        Request plain = ours;
        plain.cdi_names.clear();
        INJECT_TRY(edits, from_discovery(cfg, plain, ours.cdi_names, env, log));
    } else {
        return fail(std::move(on_disk).error());
    }
    if (!foreign.empty()) {
        INJECT_TRY(auto more, reg.resolve(foreign));
        inject::cdi::merge_edits(edits, more);
    }
    return edits;
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
    h.env.push_back("PATH=" + (env.path_env.empty() ? std::string("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
                                                    : env.path_env));
    if (!env.config_path.empty()) h.env.push_back("ENFLAME_CTK_CONFIG=" + env.config_path);
    ContainerEdits edits;
    edits.hooks.push_back(std::move(h));
    return edits;
}

/// Legacy mode: the nodes the hook will create. Their allow rules go into config.json, so the
/// runtime programs the device cgroup itself, on v1 and v2 alike, and the hook has none to add.
Result<std::vector<inject::cdi::DeviceNode>> legacy_nodes(const inject::config::Config& cfg, const Request& req,
                                                          const ShimEnv& env, RuncLog& log) {
    const std::string prefix = cfg.runtime.cdi_kind + "=";
    Request plain = req;
    plain.cdi_names.clear();
    std::vector<std::string> names;
    for (const auto& n : req.cdi_names)
        if (n.starts_with(prefix)) names.push_back(n);
    INJECT_TRY(auto edits, from_discovery(cfg, plain, names, env, log));
    INJECT_TRY_VOID(inject::oci::fill_device_numbers(edits));
    return edits.device_nodes;
}

}  // namespace

Result<ContainerEdits> build_edits(const inject::config::Config& cfg, const Request& req, const ShimEnv& env,
                                   RuncLog& log) {
    switch (cfg.runtime.mode) {
    case inject::config::Mode::Legacy: return legacy_edits(cfg, env);
    case inject::config::Mode::Cdi: {
        INJECT_TRY(auto reg, load_registry(cfg, log));
        return from_registry(reg, cfg, req);
    }
    case inject::config::Mode::Auto: break;
    }
    return auto_edits(cfg, req, env, log);
}

Result<Outcome> prepare_bundle(const inject::config::Config& cfg, const std::string& bundle, const ShimEnv& env,
                               RuncLog& log) {
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
        INJECT_TRY(auto nodes, legacy_nodes(cfg, req, env, log));
        INJECT_TRY_CTX(inject::oci::allow_devices(doc, nodes), path);
        rules = nodes.size();
    }
    INJECT_TRY(auto json, inject::oci::dump(doc));
    // Atomic but not fsynced: the runtime reads it within milliseconds, and after a crash
    // the container it describes is gone anyway (fsync cost 3-9 ms here).
    inject::fs::AtomicWriteOptions wopts;
    wopts.durable = false;
    // The context names the file: a failed mkostemp alone only names the folder.
    INJECT_TRY_CTX(inject::fs::atomic_write(path, json, wopts), "writing " + path);
    out.rewritten = true;
    out.summary = "mode " + std::string(inject::config::mode_name(cfg.runtime.mode)) + ": " + req.source + ": " +
                  std::to_string(edits.device_nodes.size()) + " device nodes, " + std::to_string(edits.mounts.size()) +
                  " mounts, " + std::to_string(edits.hooks.size()) + " hooks" +
                  (rules ? ", " + std::to_string(rules) + " device-cgroup rules" : "");
    return out;
}

}  // namespace shim
