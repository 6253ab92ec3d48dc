// SPDX-License-Identifier: Apache-2.0
// enflame-nri-plugin: gives containers their Enflame GCUs through NRI (containerd 1.7 with NRI
// enabled, 2.x, CRI-O): the runtime applies our adjustment itself, so no runtime wrapper runs on
// any call. External (DaemonSet or service): connects to the NRI socket and reconnects whenever
// the runtime restarts. Pre-launched from the runtime's plugin folder (e.g. /opt/nri/plugins/
// 10-enflame): NRI_PLUGIN_SOCKET is the connected fd, NRI_PLUGIN_NAME/NRI_PLUGIN_IDX our
// identity; the process exits when that connection closes.
// --lock-file: while the runtime has us registered (its Synchronize answered), and --lock-grace
// after the last such connection ends (a runtime restart is not the plugin gone), we hold the
// liveness lock the device plugin's --require-nri checks in Allocate (k8s/nri_lock.hpp). A
// connection the runtime refuses or drops before that neither takes it nor extends the grace:
// while the runtime refuses us, no card is allocated that no one would inject.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <optional>
#include <thread>

#include "k8s/daemon_cli.hpp"
#include "k8s/daemon_setup.hpp"
#include "k8s/nri_lock.hpp"
#include "nri/plugin.hpp"

namespace {

std::string env_or(const char* name, std::string fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : std::move(fallback);
}

/// enflame-ctk beside our own binary, as the shim finds it (the createContainer ldcache hook of
/// edits built from discovery); empty when there is none.
std::string ctk_beside_self() {
    char self[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return {};
    std::string dir(self, static_cast<std::size_t>(n));
    dir.erase(dir.rfind('/'));
    const std::string ctk = dir + "/enflame-ctk";
    return ::access(ctk.c_str(), X_OK) == 0 ? ctk : std::string();
}

// The liveness lock, when --lock-file names one: held while the runtime has us registered.
class Liveness {
public:
    explicit Liveness(std::optional<k8s::NriLock> lock, double grace_s)
        : lock_(std::move(lock)), grace_(std::chrono::duration<double>(grace_s)) {}

    /// The runtime synchronized us: hold it.
    void registered() {
        registered_ = true;
        hold();
    }
    /// The connection ended: the grace starts only if the runtime had us on it.
    void disconnected() {
        if (registered_) since_ = std::chrono::steady_clock::now();
        registered_ = false;
    }
    /// About once a second: while registered, held on the file now at the path; else dropped
    /// once the grace is over.
    void tick() {
        if (!lock_) return;
        if (registered_) {
            hold();
            return;
        }
        if (!lock_->held() || std::chrono::steady_clock::now() - since_ < grace_) return;
        lock_->release();
        spdlog::warn("released {}: not registered with the runtime for {:.0f}s", lock_->path(),
                     grace_.count());
    }

private:
    void hold() {
        if (!lock_) return;
        const bool was = lock_->held();
        if (auto r = lock_->hold(); !r) {
            if (r.error().what() != last_error_) spdlog::warn("{}", r.error().what());
            last_error_ = r.error().what();
            return;
        }
        last_error_.clear();
        if (!was)
            spdlog::info("holding {}: device plugins with --require-nri allocate", lock_->path());
    }

    std::optional<k8s::NriLock> lock_;
    std::chrono::duration<double> grace_;
    std::chrono::steady_clock::time_point since_{};
    bool registered_ = false;
    std::string last_error_;
};

}  // namespace

int main(int argc, char** argv) try {
    nri_plugin::PluginOptions o;
    o.name = env_or("NRI_PLUGIN_NAME", o.name);
    o.idx = env_or("NRI_PLUGIN_IDX", o.idx);
    std::string config_path, log_level = "info", socket = "/var/run/nri/nri.sock", ctk = "auto";
    bool config_given = false;
    double retry_s = 1.0, grace_s = 30.0;
    std::string lock_file;
    CLI::App app{
        "enflame-nri-plugin: give containers their Enflame GCUs through NRI, with no runtime "
        "wrapper",
        "enflame-nri-plugin"};
    k8s::add_common_flags(app, "enflame-nri-plugin", config_path, config_given);
    app.add_option("--socket", socket, "the runtime's NRI socket")
        ->envname("NRI_SOCKET")
        ->capture_default_str();
    app.add_option("--plugin-name", o.name, "our NRI plugin name")->capture_default_str();
    app.add_option("--plugin-index", o.idx,
                   "our NRI index: two digits, plugins run in ascending order")
        ->capture_default_str();
    app.add_option(
           "--ctk-path", ctk,
           "enflame-ctk as the host sees it, the ldcache hook of edits built from discovery "
           "('auto': beside this binary; '' for none)")
        ->capture_default_str();
    app.add_option("--retry-interval", retry_s, "seconds between connection attempts")
        ->capture_default_str();
    app.add_option("--lock-file", lock_file,
                   "hold this file locked while the runtime has us registered, for "
                   "enflame-device-plugin "
                   "--require-nri (e.g. " +
                       std::string(k8s::kNriLockPath) + "; '' for none)")
        ->capture_default_str();
    app.add_option("--lock-grace", grace_s,
                   "seconds the lock stays held after the last registered connection ends (the "
                   "runtime's restart)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 3600.0));
    k8s::add_log_level_flag(app, log_level);
    if (auto code = k8s::parse_and_log(app, argc, argv, "enflame-nri-plugin", log_level))
        return *code;
    if (auto r = nri_plugin::check_identity(o); !r) return k8s::exit_error(r.error());
    auto cfg = inject::config::load_file(config_path, !config_given);
    if (!cfg) return k8s::exit_error(cfg.error());
    o.cfg = std::move(*cfg);
    o.edits.ctk_path = ctk == "auto" ? ctk_beside_self() : ctk;

    std::optional<k8s::NriLock> lock;
    if (!lock_file.empty()) {
        auto l = k8s::NriLock::create(lock_file);
        if (!l) return k8s::exit_error(std::move(l).error().context("--lock-file"));
        lock.emplace(std::move(*l));
    }
    Liveness live(std::move(lock), grace_s);
    const nri_plugin::ServeHooks hooks{[&live] { live.registered(); }, [&live] { live.tick(); }};

    auto sig = k8s::signal_fd({SIGTERM, SIGINT});
    if (!sig) return k8s::exit_error(sig.error());

    // Pre-launched: the runtime's socketpair end; one connection, then exit.
    if (const std::string pre = env_or("NRI_PLUGIN_SOCKET", ""); !pre.empty()) {
        const int fd = std::atoi(pre.c_str());
        auto r = nri_plugin::serve(fd, o, sig->get(), hooks);
        if (!r) return k8s::exit_error(r.error());
        spdlog::info("the runtime closed the connection");
        return 0;
    }
    bool said_waiting = false;
    for (;;) {
        auto fd = nri_plugin::connect_socket(socket);
        if (fd) {
            inject::fs::UniqueFd conn(*fd);
            said_waiting = false;
            spdlog::info("connected to {}", socket);
            auto r = nri_plugin::serve(conn.get(), o, sig->get(), hooks);
            live.disconnected();
            if (!r)
                spdlog::warn("{}", r.error().what());
            else
                spdlog::info("connection to {} closed", socket);
        } else if (!said_waiting) {
            spdlog::info("waiting for the runtime: {}", fd.error().what());
            said_waiting = true;
        }
        live.tick();
        signalfd_siginfo si{};
        pollfd p{sig->get(), POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(retry_s * 1000)) > 0 &&
            ::read(sig->get(), &si, sizeof(si)) > 0) {
            spdlog::info("stopping on signal {}", si.ssi_signo);
            return 0;
        }
    }
} catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 125;
}
