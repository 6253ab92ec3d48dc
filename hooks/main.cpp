// SPDX-License-Identifier: Apache-2.0
// enflame-container-runtime-hook: the legacy OCI prestart / createRuntime hook.
//
//   enflame-container-runtime-hook prestart|createRuntime   (OCI state on stdin)
//
// Reads the state and <bundle>/config.json, takes the request from the container's env
// (ENFLAME_VISIBLE_DEVICES, ENFLAME_DRIVER_CAPABILITIES; not looked at when the config says
// accept-envvar-when-unprivileged = false and the container lacks CAP_SYS_ADMIN) and the
// cdi.k8s.io/ annotations, takes the CDI edits of our own kind only (another kind's name is
// refused) from the spec on disk when it is fresh, else discovers the cards (libefml in
// process, efsmi last). Edits that carry env (a DRS instance's TOPS_VISIBLE_DEVICES) are refused
// unless the container's env already has it: a hook cannot set env. Then it applies them to
// the live container: device nodes and read-only
// library mounts inside its mount namespace, device access (nothing when config.json already
// allows the nodes; else devices.allow on cgroup v1, the runtime's eBPF device program
// extended on v2), then the host's ldconfig in the sandbox unless the container's ld.so.cache
// already resolves every mounted library. Fails closed: any error is exit 1 with one line on
// stderr (runc folds it into its own error); details go to the config's log-file.
#include <signal.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <string>

#include "inject/config.hpp"
#include "inject/config_path.hpp"
#include "inject/hook.hpp"
#include "inject/log.hpp"
#include "inject/request.hpp"
#include "inject/request_edits.hpp"
#include "inject/version.hpp"

namespace {

using inject::Result;

void setup_logging(const inject::config::Config& cfg) {
    std::shared_ptr<spdlog::logger> logger;
    if (!cfg.runtime.log_file.empty()) {
        try {
            logger = spdlog::basic_logger_st("hook", cfg.runtime.log_file);
            logger->set_level(spdlog::level::from_str(cfg.runtime.log_level));
            logger->flush_on(spdlog::level::trace);
        } catch (const spdlog::spdlog_ex&) {
            logger.reset();  // an unwritable debug log never stops a container
        }
    }
    if (!logger)
        logger = std::make_shared<spdlog::logger>("hook",
                                                  std::make_shared<spdlog::sinks::null_sink_st>());
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%f %P %l: %v");
    spdlog::set_default_logger(logger);
}

// The mounted shared objects (ldconfig is skipped when the container's cache resolves them)
// and their folders, in first-seen order.
struct Libraries {
    std::vector<std::string> folders;
    std::vector<inject::hook::MountedLibrary> files;
};

Libraries libraries(const inject::cdi::ContainerEdits& edits) {
    Libraries out;
    std::set<std::string> seen;
    for (const auto& m : edits.mounts) {
        auto slash = m.container_path.rfind('/');
        if (slash == std::string::npos || m.container_path.find(".so", slash) == std::string::npos)
            continue;
        out.files.push_back({m.host_path, m.container_path});
        std::string dir = slash == 0 ? "/" : m.container_path.substr(0, slash);
        if (seen.insert(dir).second) out.folders.push_back(dir);
    }
    return out;
}

// The env of the edits (a DRS instance's TOPS_VISIBLE_DEVICES) must already be the container's
// (the shim's legacy mode writes it into config.json): a hook cannot set env, and without it
// the container would use the whole parent card. Fails closed.
inject::Result<void> env_already_set(const std::vector<std::string>& want,
                                     const std::vector<std::string>& env) {
    for (const auto& kv : want) {
        const std::string key = kv.substr(0, kv.find('=') + 1);
        // The last entry of a key wins, as in execve.
        auto it = std::find_if(env.rbegin(), env.rend(),
                               [&](const std::string& e) { return e.starts_with(key); });
        if (it == env.rend() || *it != kv)
            return inject::fail(
                inject::Errc::Unsupported,
                "the request needs " + kv +
                    " in the container's env, which a hook cannot set: run the "
                    "container with enflame-container-runtime, or set it in the container's env");
    }
    return inject::ok();
}

long long since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 t0)
        .count();
}

Result<void> run(const std::string& stage) {
    using namespace inject;
    // The hook's own environment is what the runtime gives it (hook.env); only the config path
    // is read from it. The container's env is read from config.json for the request only.
    const auto cfg_path =
        config::config_path_from_env(std::getenv(std::string(config::kPathEnv).c_str()));
    INJECT_TRY(config::Config cfg, config::load_file(cfg_path.path, !cfg_path.given));
    setup_logging(cfg);
    const auto t0 = std::chrono::steady_clock::now();
    INJECT_TRY(std::string text, inject::hook::read_state(0));
    INJECT_TRY(hook::State state, hook::parse_state(text, true));
    log::debug("{} hook: container {} status {} pid {} bundle {}", stage, state.id, state.status,
               state.pid, state.bundle);
    INJECT_TRY(hook::Bundle bundle, hook::load_bundle(state.bundle));
    INJECT_TRY(request::Request req,
               request::request_of(cfg, bundle.env, bundle.annotations, bundle.privileged));
    if (req.empty()) {
        log::debug("no request: nothing to do");
        return ok();
    }
    if (::kill(state.pid, 0) != 0 && errno == ESRCH)
        return fail(Errc::NotFound, "container process " + std::to_string(state.pid) + " is gone");
    // The shim's auto-mode choice (inject/request_edits.hpp): the CDI spec on disk when it
    // names the cards and still matches the host; else discovery in process (sysfs + libefml),
    // efsmi only when libefml does not answer or DRS is asked for. No ldcache hook in the
    // edits: we update the ldcache ourselves, below. Only our own kind: this root process
    // applies whatever resolves, and another vendor's devices are that vendor's to give.
    request::EditsOptions eo;
    eo.other_kinds = false;
    INJECT_TRY(request::RequestEdits picked, request::auto_edits(cfg, req, eo));
    cdi::ContainerEdits& edits = picked.edits;
    INJECT_TRY_VOID(env_already_set(request::env_besides_request(edits), bundle.env));
    log::debug("edits from {}{} after {} us", request::edits_source_name(picked.source),
               picked.backend.empty() ? "" : " (" + picked.backend + ")", since(t0));
    const std::string ctx = "injecting into container " + state.id;
    // With libraries, the child that applies the edits also checks the container's ldcache
    // (and writes the conf.d file when ldconfig must run): one process fewer.
    auto libs = libraries(edits);
    hook::LdcacheOptions lo;
    lo.ldconfig = cfg.cli.ldconfig;
    lo.folders = libs.folders;
    lo.mount_namespace = "/proc/" + std::to_string(state.pid) + "/ns/mnt";
    bool need_ldconfig = false;
    if (libs.folders.empty()) {
        INJECT_TRY_CTX(hook::apply_edits(state.pid, bundle.rootfs, edits), ctx);
    } else {
        auto r =
            hook::apply_edits_and_prepare_ldcache(state.pid, bundle.rootfs, edits, lo, libs.files);
        if (!r) return fail(std::move(r).error().context(ctx));
        need_ldconfig = *r;
    }
    log::debug("edits applied after {} us", since(t0));
    INJECT_TRY_CTX(hook::allow_devices(state.pid, edits.device_nodes, bundle.device_rules),
                   "device cgroup of container " + state.id);
    if (need_ldconfig) {
        INJECT_TRY_CTX(hook::run_ldconfig(bundle.rootfs, lo),
                       "updating the ldcache of container " + state.id);
    }
    log::info("container {}: {} device nodes, {} mounts, {} library folders in {} us", state.id,
              edits.device_nodes.size(), edits.mounts.size(), libs.folders.size(), since(t0));
    return ok();
}

}  // namespace

int main(int argc, char** argv) try {
    const std::string stage = argc > 1 ? argv[1] : "";
    if (stage == "--version") {
        std::cout << "enflame-container-runtime-hook " << inject::kVersion << " ("
                  << inject::kGitRevision << ")\n";
        return 0;
    }
    if (stage == "poststart" || stage == "poststop")
        return 0;  // nothing to undo: mounts die with the namespace
    if (argc != 2 || (stage != "prestart" && stage != "createRuntime")) {
        std::cerr << "error: usage: enflame-container-runtime-hook prestart|createRuntime (OCI "
                     "state on stdin)\n";
        return 2;
    }
    auto r = run(stage);
    if (!r) {
        inject::log::warn("{} hook failed: {}", stage, r.error().what());
        spdlog::default_logger_raw()->flush();
        std::cerr << "error: " << r.error().what() << "\n";
        return 1;
    }
    return 0;
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 1;
}
