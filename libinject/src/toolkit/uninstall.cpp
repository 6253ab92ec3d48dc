// SPDX-License-Identifier: Apache-2.0
// `toolkit uninstall`: undoes what the state file records (state.cpp), under the toolkit
// folder's lock, and signals the engine when its config changed; nothing while the operator
// hands the toolkit over to a new installer pod.
#include "toolkit_internal.hpp"

namespace inject::toolkit {

namespace {

Result<void> uninstall_from(const Options& o, Lines& out) {
    INJECT_TRY(auto h, open_host(o));
    if (handing_over(o)) {
        out.emplace_back(
            "handing over: the operator replaces this pod with one of the same install "
            "flags; it finds the toolkit in place (nothing undone, the engine left "
            "running)");
        return ok();
    }
    // the DaemonSet's waiting installer re-checks under the same lock: it never sees half of
    // the undo, and finds no state after it (nothing to repair)
    INJECT_TRY(auto lock, lock_toolkit(o, h));
    (void)lock;
    INJECT_TRY(auto st, read_state(o, h));
    if (!st) {
        INJECT_TRY(auto kept, read_leftover(o, h));
        if (kept) return remove_leftover(o, h, *kept, out);
        out.push_back("nothing to undo: no " + h.show(state_path(o)));
        return ok();
    }
    INJECT_TRY(auto engine_changed, undo_state(o, h, *st, out));
    if (engine_changed) {
        const auto engine = st->at("engine").get<std::string>();
        signal_engine(o, h, engine, out);
        if (engine == "docker")  // a reload applies the keys a file has, and ours are gone
            out.emplace_back(
                "note: dockerd lists the runtime until it restarts (its SIGHUP reload "
                "keeps runtimes the file no longer names)");
    }
    out.push_back("uninstalled: " + h.show(o.toolkit_dir));
    return ok();
}

}  // namespace

Report uninstall(const Options& o) {
    Report rep;
    rep.result = uninstall_from(o, rep.lines);
    return rep;
}

}  // namespace inject::toolkit
