// SPDX-License-Identifier: Apache-2.0
// The edits for a request: spec on disk when fresh, else discovery (inject/request_edits.hpp).
// Shared by the runtime shim and the legacy hook, so both pick the same source the same way.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "inject/cdi_generate.hpp"
#include "inject/cdi_provenance.hpp"
#include "inject/config.hpp"
#include "inject/discover.hpp"
#include "inject/log.hpp"
#include "inject/request_edits.hpp"

namespace inject::request {
namespace {

using cdi::ContainerEdits;

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
        add(kind + "=" +
            (s.kind == Selector::Kind::Index || s.kind == Selector::Kind::GcuName
                 ? std::to_string(s.index)
                 : s.text));
    for (const auto& n : req.cdi_names) add(n);
    return out;
}

/// Spec-level edits of the first spec of `kind` ("none": the control node and utilities).
Result<ContainerEdits> kind_edits(const cdi::Registry& reg, const config::Config& cfg) {
    for (const auto& s : reg.specs())
        if (s.spec.kind == cfg.runtime.cdi_kind) return s.spec.edits;
    return fail(Errc::NotFound, "no CDI spec of kind '" + cfg.runtime.cdi_kind + "' in " +
                                    join_list(cfg.runtime.spec_dirs));
}

bool names_drs(const Request& req, const std::vector<std::string>& names) {
    return std::any_of(req.selectors.begin(), req.selectors.end(),
                       [](const Selector& s) { return s.kind == Selector::Kind::Drs; }) ||
           std::any_of(names.begin(), names.end(), [](const std::string& n) {
               // "DRS-<uuid>" or "<card>:<profile>:<id>" after the kind's '='
               return n.find("DRS-") != std::string::npos || n.find(':') != std::string::npos;
           });
}

/// Why the spec on disk no longer fits the host for `edits` (auto mode then builds them from
/// discovery); nullopt when it fits. Cheap on purpose, it runs on every create: a stat per node
/// and mount of the edits, and, when the spec records what it was generated from, the driver
/// version and the sysfs entries of the cards the edits name.
std::optional<std::string> stale_spec(const cdi::Registry& reg, const config::Config& cfg,
                                      const ContainerEdits& edits) {
    if (auto why = cdi::stale_edits(edits)) return why;
    for (const auto& s : reg.specs()) {
        if (s.spec.kind != cfg.runtime.cdi_kind || !s.generated_from) continue;
        std::vector<std::uint32_t> cards;
        for (const auto& c : s.generated_from->cards)
            for (const auto& n : edits.device_nodes)
                if (n.major == c.major && n.minor == c.minor) cards.push_back(c.index);
        // No card in the edits ("none"): only the driver version is compared.
        const cdi::HostPaths paths{cfg.cli.driver_root, cfg.cli.dev_root, cfg.cli.device_prefix};
        if (auto why = cdi::stale_reason(*s.generated_from, paths, cards))
            return s.path + ": " + *why;
        break;
    }
    return std::nullopt;
}

}  // namespace

std::string_view edits_source_name(EditsSource s) noexcept {
    return s == EditsSource::SpecOnDisk ? "the CDI spec on disk" : "discovery";
}

Result<cdi::Registry> load_registry(const config::Config& cfg) {
    INJECT_TRY(auto reg, cdi::Registry::load(cfg.runtime.spec_dirs));
    for (const auto& p : reg.problems()) log::debug("cdi: skipped {}", p);
    return reg;
}

std::vector<std::string> env_besides_request(const ContainerEdits& edits) {
    std::vector<std::string> out;
    for (const auto& kv : edits.env) {
        const std::string_view key = std::string_view(kv).substr(0, kv.find('='));
        if (key != kVisibleDevicesEnv && key != kDriverCapabilitiesEnv) out.push_back(kv);
    }
    return out;
}

Result<Request> request_of(const config::Config& cfg, const std::vector<std::string>& env,
                           const std::map<std::string, std::string>& annotations, bool privileged) {
    if (!cfg.runtime.accept_envvar_when_unprivileged && !privileged) return parse({}, annotations);
    INJECT_TRY(Request req, parse(env, annotations));
    // The environment is anyone's to set (the image, the pod spec): it names our kind's devices
    // only, never another vendor's, whose own runtime hardening it would bypass. (Parsed alone
    // only when some CDI name is not ours: annotations may name other kinds.)
    const std::string prefix = cfg.runtime.cdi_kind + "=";
    if (std::all_of(req.cdi_names.begin(), req.cdi_names.end(),
                    [&](const std::string& n) { return n.starts_with(prefix); }))
        return req;
    INJECT_TRY(Request from_env, parse(env, {}));
    for (const auto& n : from_env.cdi_names)
        if (!n.starts_with(prefix))
            return fail(Errc::InvalidInput, std::string(kVisibleDevicesEnv) + ": CDI device '" + n +
                                                "' is not of kind " + cfg.runtime.cdi_kind +
                                                ": other kinds are not injected");
    return req;
}

Result<ContainerEdits> edits_from_registry(const cdi::Registry& reg, const config::Config& cfg,
                                           const Request& req) {
    ContainerEdits edits;
    if (req.mode == Request::Mode::NoCards) {
        INJECT_TRY(edits, kind_edits(reg, cfg));
    }
    auto names = qualified_names(req, cfg.runtime.cdi_kind);
    if (names.empty()) return edits;
    INJECT_TRY(auto more, reg.resolve(names));
    cdi::merge_edits(edits, more);
    return edits;
}

Result<ContainerEdits> edits_from_discovery(const config::Config& cfg, const Request& req,
                                            const EditsOptions& opts, std::string* backend) {
    // The request's CDI names of our kind resolve against the spec generated below; the cards
    // are selected from the rest of the request.
    const std::string prefix = cfg.runtime.cdi_kind + "=";
    std::vector<std::string> names;
    for (const auto& n : req.cdi_names)
        if (n.starts_with(prefix)) names.push_back(n);
    Request plain = req;
    plain.cdi_names.clear();
    auto dopts = discover::options_from(cfg);
    dopts.with_drs = names_drs(plain, names);
    // libefml in-process first: no child process on the hot path; efsmi only as the fallback
    // (and for DRS, which only efsmi reports).
    auto host = dopts.with_drs ? discover::discover(dopts)
                               : discover::discover_with(dopts, discover::Backend::Efml);
    if (!host && !dopts.with_drs) {
        log::debug("libefml did not answer ({}), trying efsmi", host.error().what());
        host = discover::discover(dopts);
    }
    if (!host) return fail(std::move(host).error().context("discovering the cards"));
    if (backend != nullptr) *backend = host->backend;
    INJECT_TRY(auto sel, select(plain, *host));
    INJECT_TRY(auto gen, cdi::options_from(cfg));
    gen.capabilities = plain.capabilities;
    gen.names = cdi::NameStrategy::Both;
    gen.ctk_path = opts.ctk_path;
    INJECT_TRY(auto spec, cdi::generate(*host, gen));
    if (plain.mode == Request::Mode::All) names.emplace_back("all");
    for (auto i : sel.card_indices) names.push_back(std::to_string(i));
    for (const auto& d : sel.drs_instances) names.push_back(device::drs_name(d));
    ContainerEdits edits;
    if (plain.mode == Request::Mode::NoCards) edits = spec.edits;
    if (!names.empty()) {
        INJECT_TRY(auto more, cdi::resolve(spec, names));
        cdi::merge_edits(edits, more);
    }
    if (!sel.drs_instances.empty()) {
        std::string tops = "TOPS_VISIBLE_DEVICES=";
        for (std::size_t i = 0; i < sel.drs_instances.size(); ++i)
            tops += (i ? "," : "") + device::drs_address(sel.drs_instances[i]);
        ContainerEdits env_edit;
        env_edit.env.push_back(tops);
        cdi::merge_edits(edits, env_edit);
    }
    return edits;
}

Result<RequestEdits> auto_edits(const config::Config& cfg, const Request& req,
                                const EditsOptions& opts) {
    INJECT_TRY(auto reg, load_registry(cfg));
    return auto_edits(cfg, req, opts, reg);
}

Result<RequestEdits> auto_edits(const config::Config& cfg, const Request& req,
                                const EditsOptions& opts, const cdi::Registry& reg) {
    // CDI names of other kinds can only come from the spec dirs.
    const std::string prefix = cfg.runtime.cdi_kind + "=";
    std::vector<std::string> foreign;
    Request ours = req;
    ours.cdi_names.clear();
    for (const auto& n : req.cdi_names)
        (n.starts_with(prefix) ? ours.cdi_names : foreign).push_back(n);
    if (!foreign.empty() && !opts.other_kinds)
        return fail(Errc::InvalidInput, req.source + ": CDI device '" + foreign.front() +
                                            "' is not of kind " + cfg.runtime.cdi_kind +
                                            ": other kinds are not injected");

    auto on_disk = edits_from_registry(reg, cfg, ours);
    RequestEdits out;
    std::optional<std::string> stale;
    if (on_disk) stale = stale_spec(reg, cfg, *on_disk);
    if (on_disk && !stale) {
        log::debug("auto: using the CDI spec on disk");
        out.edits = std::move(*on_disk);
        out.source = EditsSource::SpecOnDisk;
    } else if (stale || on_disk.error().code() == Errc::NotFound) {
        if (stale)
            log::warn("auto: the CDI spec on disk is stale ({}); discovering the cards instead",
                      *stale);
        else
            log::debug("auto: {}; discovering the cards", on_disk.error().what());
        INJECT_TRY(out.edits, edits_from_discovery(cfg, ours, opts, &out.backend));
        out.source = EditsSource::Discovery;
    } else {
        return fail(std::move(on_disk).error());
    }
    if (!foreign.empty()) {
        INJECT_TRY(auto more, reg.resolve(foreign));
        cdi::merge_edits(out.edits, more);
    }
    return out;
}

}  // namespace inject::request
