// SPDX-License-Identifier: Apache-2.0
#include "daemon.hpp"

#include "health.hpp"
#include "service.hpp"
#include "sharing.hpp"

#include "inject/config.hpp"
#include "inject/discover.hpp"
#include "inject/log.hpp"
#include "k8s/socket.hpp"
#include "k8s/watch.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>

namespace edp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kMaxBackoff{30000};

struct Loaded {
    Settings settings;
    Inventory inventory;
    inject::discover::Options discover;
};

// The toolkit config, then discovery: what the plugin advertises.
inject::Result<Loaded> load(const DaemonOptions& o) {
    INJECT_TRY(auto cfg, inject::config::load_file(o.config_path, !o.config_path_given));
    INJECT_TRY(const auto sharing, load_plugin_config(o.plugin_config, o.settings.resource_name));
    Loaded l;
    l.settings = o.settings;
    l.settings.resource_name = sharing.resource_name;
    l.settings.cdi_kind = cfg.runtime.cdi_kind;
    l.discover = inject::discover::options_from(cfg);
    l.discover.with_drs = false;
    auto host = inject::discover::discover(l.discover);
    if (!host) return inject::fail(std::move(host).error().context("discovering Enflame cards"));
    INJECT_TRY(l.inventory, make_inventory(*host, l.settings.id_strategy, sharing.replicas));
    if (!o.health_checks) {
        // Health checks off means every card stays Healthy, whatever discovery saw.
        for (auto& d : l.inventory.devices) {
            d.healthy = true;
            d.why_unhealthy.clear();
        }
    }
    return l;
}

inject::Result<void> register_with_kubelet(const std::string& kubelet_sock, const DaemonOptions& o,
                                           const std::string& resource_name) {
    if (::access(kubelet_sock.c_str(), F_OK) != 0)
        return inject::fail(inject::sys_error("kubelet socket '" + kubelet_sock + "'"));
    auto ch = k8s::dial_unix(kubelet_sock, milliseconds(2000));
    if (!ch) return inject::fail(std::move(ch).error());
    auto stub = v1beta1::Registration::NewStub(*ch);
    v1beta1::RegisterRequest req;
    req.set_version("v1beta1");
    req.set_endpoint(o.socket_name);
    req.set_resource_name(resource_name);
    *req.mutable_options() = plugin_options();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1beta1::Empty empty;
    const auto st = stub->Register(&ctx, req, &empty);
    if (!st.ok()) return inject::fail(inject::Errc::Io, "kubelet refused the registration: " + k8s::status_text(st));
    return inject::ok();
}

class Daemon {
public:
    Daemon(DaemonOptions o, Loaded l, std::string our_path, std::string kubelet_path)
        : o_(std::move(o)), discover_(std::move(l.discover)),
          state_(std::make_shared<State>(std::move(l.settings), std::move(l.inventory))),
          our_path_(std::move(our_path)), kubelet_path_(std::move(kubelet_path)) {}

    int loop(int sig_fd, k8s::KubeletWatcher& watcher);

private:
    inject::Result<void> serve();
    void try_register();
    void reload();
    void health();

    DaemonOptions o_;
    inject::discover::Options discover_;
    std::shared_ptr<State> state_;
    std::string our_path_, kubelet_path_;
    std::unique_ptr<Service> service_;
    k8s::UnixServer server_;
    bool registered_ = false;
    int attempts_ = 0;
    Clock::time_point next_register_{};
    Clock::time_point next_health_{};
};

inject::Result<void> Daemon::serve() {
    if (server_.server) k8s::stop_unix(server_, milliseconds(500));
    service_ = std::make_unique<Service>(state_);
    INJECT_TRY(server_, k8s::serve_unix(our_path_, {service_.get()}));
    inject::log::info("serving {} on {}", state_->settings().resource_name, our_path_);
    registered_ = false;
    attempts_ = 0;
    next_register_ = Clock::now();
    return inject::ok();
}

void Daemon::try_register() {
    const std::string name = state_->settings().resource_name;
    auto r = register_with_kubelet(kubelet_path_, o_, name);
    if (r) {
        registered_ = true;
        attempts_ = 0;
        inject::log::info("registered {} with kubelet at {}", name, kubelet_path_);
        return;
    }
    const milliseconds delay = std::min(kMaxBackoff, milliseconds(1000) * (1 << std::min(attempts_, 5)));
    ++attempts_;
    next_register_ = Clock::now() + delay;
    inject::log::warn("registering with kubelet (attempt {}): {}; retrying in {} s, or when {} appears", attempts_,
                      r.error().what(), delay.count() / 1000, kubelet_path_);
}

void Daemon::reload() {
    auto l = load(o_);
    if (!l) {
        spdlog::error("SIGHUP: keeping the running configuration: {}", l.error().what());
        return;
    }
    discover_ = l->discover;
    if (o_.health_checks) check_health(discover_, l->inventory);
    const bool renamed = l->settings.resource_name != state_->settings().resource_name;
    state_->update(std::move(l->settings), std::move(l->inventory));
    inject::log::info("SIGHUP: configuration re-read, {} devices", state_->inventory().devices.size());
    if (renamed) {
        // kubelet knows a plugin by its resource name: a new name is a new registration.
        if (auto r = serve(); !r) spdlog::error("SIGHUP: serving again: {}", r.error().what());
    }
}

void Daemon::health() {
    auto inv = state_->inventory();
    if (check_health(discover_, inv)) state_->update(state_->settings(), std::move(inv));
}

int Daemon::loop(int sig_fd, k8s::KubeletWatcher& watcher) {
    if (auto r = serve(); !r) {
        std::cerr << "error: " << r.error().what() << "\n";
        return 1;
    }
    next_health_ = Clock::now() + o_.health_interval;
    for (;;) {
        if (!registered_ && Clock::now() >= next_register_) try_register();
        if (o_.health_checks && Clock::now() >= next_health_) {
            health();
            next_health_ = Clock::now() + o_.health_interval;
        }
        auto wake = o_.health_checks ? next_health_ : Clock::now() + std::chrono::hours(1);
        if (!registered_) wake = std::min(wake, next_register_);
        const auto wait = std::chrono::duration_cast<milliseconds>(wake - Clock::now()).count();
        pollfd fds[2] = {{sig_fd, POLLIN, 0}, {watcher.fd(), POLLIN, 0}};
        const int n = ::poll(fds, 2, static_cast<int>(std::clamp<long long>(wait + 1, 0, 3600000)));
        if (n < 0 && errno != EINTR) {
            std::cerr << "error: poll: " << std::strerror(errno) << "\n";
            return 1;
        }
        if (n <= 0) continue;
        if (fds[0].revents & POLLIN) {
            signalfd_siginfo si{};
            if (::read(sig_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                if (si.ssi_signo == SIGHUP) {
                    reload();
                } else {
                    inject::log::info("signal {}: stopping", si.ssi_signo);
                    state_->next_epoch();
                    k8s::stop_unix(server_, milliseconds(1000));
                    return 0;
                }
            }
        }
        if (fds[1].revents & POLLIN) {
            auto restarted = watcher.restarted([this] { return !k8s::still_ours(server_); });
            if (!restarted) {
                spdlog::error("{}", restarted.error().what());
            } else if (*restarted) {
                inject::log::info("kubelet restarted: serving and registering again");
                if (auto r = serve(); !r) {
                    std::cerr << "error: " << r.error().what() << "\n";
                    return 1;
                }
            }
        }
    }
}

}  // namespace

int run(DaemonOptions o) {
    // Signals are blocked before gRPC starts its threads, so only our signalfd sees them.
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) {
        std::cerr << "error: blocking signals failed\n";
        return 1;
    }
    inject::fs::UniqueFd sig_fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sig_fd.valid()) {
        std::cerr << "error: " << inject::sys_error("signalfd").what() << "\n";
        return 1;
    }
    auto fail_with = [](const inject::Error& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    };
    if (auto r = check_resource_name(o.settings.resource_name); !r) return fail_with(r.error());
    auto our_path = k8s::socket_path(o.kubelet_dir, o.socket_name);
    if (!our_path) return fail_with(our_path.error().context("--kubelet-dir"));
    auto kubelet_path = k8s::socket_path(o.kubelet_dir, o.kubelet_socket);
    if (!kubelet_path) return fail_with(kubelet_path.error().context("--kubelet-dir"));
    auto loaded = load(o);
    if (!loaded) return fail_with(loaded.error());
    if (loaded->inventory.devices.empty()) inject::log::warn("no Enflame cards found: advertising none");
    auto watcher = k8s::KubeletWatcher::create(o.kubelet_dir, o.kubelet_socket, o.socket_name);
    if (!watcher) return fail_with(watcher.error());
    Daemon d(std::move(o), std::move(*loaded), std::move(*our_path), std::move(*kubelet_path));
    return d.loop(sig_fd.get(), *watcher);
}

}  // namespace edp
