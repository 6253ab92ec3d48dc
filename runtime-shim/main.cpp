// SPDX-License-Identifier: Apache-2.0
// enflame-container-runtime: a runc shim. Called with runc's command line; on create/run it
// injects the requested Enflame cards into the bundle's config.json, then execs the low-level
// runtime with the same argv. Every other command execs the runtime at once.
//
// Hot path discipline (docs/budgets.md, the shim): a passthrough command scans argv, reads the
// small config and execs; nothing else. Nothing is ever written to stdout except for --version.
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "args.hpp"
#include "create.hpp"
#include "exec.hpp"
#include "inject/config.hpp"
#include "inject/config_path.hpp"
#include "inject/version.hpp"
#include "runc_log.hpp"

extern char** environ;

namespace {

/// Library log lines (inject/log.hpp goes through spdlog's default logger) into our logger:
/// spdlog's own default would write to stdout, which must stay silent.
class ForwardSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
public:
    explicit ForwardSink(shim::RuncLog& log) : log_(log) {}

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        const std::string_view text(msg.payload.data(), msg.payload.size());
        switch (msg.level) {
            case spdlog::level::trace:
            case spdlog::level::debug:
                log_.debug(text);
                break;
            case spdlog::level::info:
                log_.info(text);
                break;
            case spdlog::level::warn:
                log_.warn(text);
                break;
            default:
                log_.error(text);
                break;
        }
    }
    void flush_() override {}

private:
    shim::RuncLog& log_;
};

void route_library_logs(shim::RuncLog& log) {
    auto logger = std::make_shared<spdlog::logger>("enflame-container-runtime",
                                                   std::make_shared<ForwardSink>(log));
    logger->set_level(log.debug_enabled() ? spdlog::level::debug : spdlog::level::info);
    spdlog::set_default_logger(std::move(logger));
}

void write_stderr(const std::string& s) {
    std::string_view rest = s;
    while (!rest.empty()) {
        ssize_t n = ::write(2, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
}

/// The one place that reports: runc's log (containerd/docker show its last error line) and
/// stderr (podman shows it).
[[noreturn]] void die(shim::RuncLog& log, const inject::Error& e) {
    log.error(e.what());
    write_stderr("enflame-container-runtime: error: " + e.what() + "\n");
    std::_Exit(1);
}

std::string self_dir() {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return {};
    std::string p(buf, static_cast<std::size_t>(n));
    auto slash = p.rfind('/');
    return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

const char* env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
}

int run(int argc, char** argv) {
    std::vector<std::string_view> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    const shim::RuncArgs ra = shim::scan_args(args);
    shim::RuncLog log;
    log.open_runc_log(ra.log_path, ra.log_format == "json", ra.debug);

    if (ra.version && ra.command.empty()) {
        const std::string v = std::string("enflame-container-runtime version ") + inject::kVersion +
                              "\ngit revision: " + inject::kGitRevision + "\n";
        if (::write(1, v.data(), v.size()) < 0) return 1;
    }

    const auto cfg_path = inject::config::config_path_from_env(
        std::getenv(std::string(inject::config::kPathEnv).c_str()));
    auto cfg = inject::config::load_file(cfg_path.path, !cfg_path.given);
    if (!cfg) die(log, std::move(cfg).error().context("loading the configuration"));
    log.open_debug_log(cfg->runtime.log_file, cfg->runtime.log_level);

    // The runtime first: a bundle is never edited for a container that cannot start.
    auto runtime = shim::find_runtime(cfg->runtime.runtimes, env_or_empty("PATH"));
    if (!runtime) die(log, runtime.error());

    // Lives until the exec below, which never returns: what it holds is never freed, work that
    // the exec makes pointless.
    shim::Outcome edited;
    if (ra.edits_bundle()) {
        route_library_logs(log);
        const shim::ShimEnv env{self_dir(), cfg_path.given ? cfg_path.path : std::string(),
                                env_or_empty("PATH")};
        const std::string bundle = ra.bundle.value_or("");
        auto out = shim::prepare_bundle(*cfg, bundle, env, log);
        if (!out) die(log, std::move(out).error().context("container '" + ra.container_id + "'"));
        log.debug("container '" + ra.container_id + "': " + out->summary);
        edited = std::move(*out);
    }

    if (log.debug_enabled()) log.debug("exec " + *runtime + " " + ra.command);
    die(log, shim::exec_runtime(*runtime, argc, argv, environ));
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        write_stderr(std::string("enflame-container-runtime: error: internal: ") + e.what() + "\n");
        return 1;
    }
}
