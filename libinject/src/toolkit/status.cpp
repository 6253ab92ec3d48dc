// SPDX-License-Identifier: Apache-2.0
// `toolkit status` (the installer's readiness probe) and `toolkit install --wait`'s watch:
// whether the install is in place as its state file says and its binaries run on this host, and
// the repair when it is not.
#include <signal.h>

#include <cerrno>
#include <ctime>
#include <filesystem>

#include "toolkit_internal.hpp"

namespace inject::toolkit {

namespace fsys = std::filesystem;

namespace {

/// Each installed binary runs on this host: `NAME --version`, run as install runs enflame-ctk,
/// starts with its name. A binary built for another host (a library or glibc it lacks, another
/// architecture) fails with the loader's or the kernel's reason (docs/host-binaries.md).
Result<void> binaries_run(const Options& o, const json& st) {
    for (const auto& f : st.at("files")) {
        const auto name = f.get<std::string>();
        auto r = run_in_root(o.root, {(fsys::path(o.toolkit_dir) / name).string(), "--version"});
        if (r && r->out.rfind(name + " ", 0) == 0) continue;
        const auto why = r ? process::last_line(r->out) : r.error().what();
        return fail(
            Errc::Unsupported,
            name + " cannot run on this host: " +
                (why.empty() ? "exit " + std::to_string(r->exit_code) + ", no output" : why));
    }
    return ok();
}

Result<void> check_status(const Options& o, Lines& out) {
    INJECT_TRY(auto h, open_host(o));
    // not Ready: the operator waits for this to know the pod has seen its mark before it
    // deletes the pod (the preStop then leaves the toolkit in place)
    if (handing_over(o))
        return fail(Errc::Conflict,
                    "handing over to a new installer (enflame.com/toolkit-handover)");
    INJECT_TRY(auto st, check_installed(o, h));
    INJECT_TRY_VOID(binaries_run(o, st));
    out.push_back("installed: " + st.at("engine").get<std::string>() + " uses " +
                  st.at("runtime_path").get<std::string>());
    return ok();
}

/// One check of watch(): a report when the install had drifted and was installed again.
std::optional<Report> recheck(const Options& o) {
    if (handing_over(o)) return std::nullopt;  // leaving: leave it as it is
    auto h = open_host(o);
    if (!h) return std::nullopt;
    // An uninstall (the pod's preStop runs it before this process gets SIGTERM) holds the lock
    // while it undoes and removes the state: no state is no install to repair. The re-install
    // fought the preStop's undo before (the engine's config put back and the engine signalled
    // again, the pod stuck terminating).
    auto lock = lock_toolkit(o, *h);
    if (!lock || !*lock) return std::nullopt;
    if (auto st = read_state(o, *h); !st || !*st) return std::nullopt;
    auto in_place = check_installed(o, *h);
    if (in_place) return std::nullopt;
    Report rep;
    rep.lines.push_back("drift: " + in_place.error().what() + ": installing again");
    if (auto r = install_into(o, rep.lines); !r)
        rep.lines.push_back("warning: repairing the install: " + r.error().what() + " (again in " +
                            std::to_string(o.recheck) + " s)");
    return rep;
}

}  // namespace

Result<json> check_installed(const Options& o, const HostRoot& h) {
    INJECT_TRY(auto st, read_state(o, h));
    if (!st) return fail(Errc::NotFound, "not installed: no " + h.show(state_path(o)));
    if (!st->value("engine_configured", false))
        return fail(Errc::NotFound, "not installed: the engine is not configured yet");
    for (const auto& name : st->at("files"))
        if (!h.exists((fsys::path(o.toolkit_dir) / name.get<std::string>()).string()))
            return fail(Errc::NotFound, "missing: " + name.get<std::string>());
    for (const char* key : {"toolkit_config", "cdi_spec"})
        if (!st->contains(key) || !h.exists(st->at(key).at("path").get<std::string>()))
            return fail(Errc::NotFound, std::string("missing: ") + key);
    INJECT_TRY(auto changes, plan(engine_args(*st), h));
    for (const auto& c : changes) {
        INJECT_TRY(auto now, h.read(c.path, kMaxText));
        if (!now || *now != c.content)
            return fail(Errc::NotFound, "'" + h.show(c.path) + "' lacks the enflame runtime");
    }
    return std::move(*st);
}

Report status(const Options& o) {
    Report rep;
    rep.result = check_status(o, rep.lines);
    return rep;
}

void watch(const Options& o, const std::function<void(const Report&)>& on_repair) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    const timespec tick{static_cast<time_t>(o.recheck), 0};
    for (;;) {
        const int sig =
            o.recheck > 0 ? ::sigtimedwait(&set, nullptr, &tick) : ::sigwaitinfo(&set, nullptr);
        if (sig > 0) return;
        if (errno != EAGAIN) continue;  // EINTR
        if (auto rep = recheck(o)) on_repair(*rep);
    }
}

}  // namespace inject::toolkit
