// SPDX-License-Identifier: Apache-2.0
// Discovery with its fallback chain: efsmi JSON, efsmi text, libefml. A backend "answers" when
// it reported the cards and every card's node was confirmed; otherwise its one-line reason
// goes to Host::fallbacks and the next one is tried.
#include <array>

#include "device/backends.hpp"
#include "inject/config.hpp"
#include "inject/log.hpp"

namespace inject::discover {

std::string_view backend_name(Backend b) noexcept {
    switch (b) {
        case Backend::Auto:
            return "auto";
        case Backend::EfsmiJson:
            return "efsmi-json";
        case Backend::EfsmiText:
            return "efsmi-text";
        case Backend::Efml:
            return "libefml";
    }
    return "unknown";
}

Result<Backend> parse_backend(std::string_view name) {
    for (Backend b : {Backend::Auto, Backend::EfsmiJson, Backend::EfsmiText, Backend::Efml})
        if (backend_name(b) == name) return b;
    return fail(Errc::InvalidInput, "unknown backend '" + std::string(name) +
                                        "' (expected auto, efsmi-json, efsmi-text or libefml)");
}

Options options_from(const config::Config& cfg) {
    Options o;
    o.driver_root = cfg.cli.driver_root;
    o.dev_root = cfg.cli.dev_root;
    o.device_prefix = cfg.cli.device_prefix;
    o.library_search_paths = cfg.cli.library_search_paths;
    o.efsmi_timeout = std::chrono::milliseconds(cfg.cli.efsmi_timeout_ms);
    return o;
}

namespace {

Result<void> check_options(const Options& opts) {
    if (opts.driver_root.empty()) return fail(Errc::InvalidInput, "empty driver-root");
    if (opts.dev_root.empty()) return fail(Errc::InvalidInput, "empty dev-root");
    if (opts.device_prefix.empty() || opts.device_prefix.find('/') != std::string::npos ||
        opts.device_prefix == "." || opts.device_prefix == "..")
        return fail(Errc::InvalidInput, "bad device prefix '" + opts.device_prefix + "'");
    return ok();
}

// One backend, confirmed. `drs` says whether to ask efsmi for DRS afterwards.
Result<device::Host> run_one(const Options& opts, Backend b, bool drs) {
    Result<detail::Report> rep = fail(Errc::Internal, "no backend");
    switch (b) {
        case Backend::EfsmiJson:
            rep = detail::query_efsmi(opts, true);
            break;
        case Backend::EfsmiText:
            rep = detail::query_efsmi(opts, false);
            break;
        case Backend::Efml:
            rep = detail::query_efml(opts);
            break;
        case Backend::Auto:
            return fail(Errc::Internal, "run_one(auto)");
    }
    if (!rep) return fail(std::move(rep).error());
    INJECT_TRY(device::Host host, detail::confirm(opts, std::move(*rep)));
    host.backend = backend_name(b);
    if (drs) detail::add_drs(opts, host);
    return host;
}

}  // namespace

Result<device::Host> discover_with(const Options& opts, Backend backend) {
    if (backend == Backend::Auto) {
        Options o = opts;
        o.backend = Backend::Auto;
        return discover(o);
    }
    INJECT_TRY_VOID(check_options(opts));
    return run_one(opts, backend, true);
}

Result<device::Host> discover(const Options& opts) {
    if (opts.backend != Backend::Auto) return discover_with(opts, opts.backend);
    INJECT_TRY_VOID(check_options(opts));
    std::vector<std::string> reasons;
    std::optional<Errc> code;
    bool drs = true;
    for (Backend b : {Backend::EfsmiJson, Backend::EfsmiText, Backend::Efml}) {
        auto host = run_one(opts, b, drs);
        if (host) {
            host->fallbacks = std::move(reasons);
            return host;
        }
        const Error& e = host.error();
        log::debug("{} did not answer: {}", backend_name(b), e.what());
        reasons.push_back(std::string(backend_name(b)) + ": " + e.what());
        if (b != Backend::Efml && detail::efsmi_unusable(e)) drs = false;
        if (!code || *code == Errc::NotFound) code = e.code();
    }
    std::string msg = "no backend found the cards: ";
    for (std::size_t i = 0; i < reasons.size(); ++i) msg += (i ? "; " : "") + reasons[i];
    return fail(*code, msg);
}

}  // namespace inject::discover
