// SPDX-License-Identifier: Apache-2.0
#include "dra/daemon.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "dra/service.hpp"
#include "inject/config.hpp"
#include "inject/discover.hpp"
#include "inject/drs.hpp"
#include "inject/log.hpp"
#include "k8s/daemon_setup.hpp"
#include "k8s/driver_events.hpp"
#include "k8s/socket.hpp"
#include "k8s/watch.hpp"

namespace dra {
namespace {

using std::chrono::milliseconds;

int fail_with(const inject::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
}

// A folder we own (ours under plugins-dir, the CDI root): made when missing.
inject::Result<void> make_dir(const std::string& dir, std::filesystem::perms perms) {
    std::error_code ec;
    if (std::filesystem::is_directory(dir, ec)) return inject::ok();
    std::filesystem::create_directories(dir, ec);
    if (ec) return inject::fail(inject::Errc::Io, "creating '" + dir + "': " + ec.message());
    std::filesystem::permissions(dir, perms, ec);
    return inject::ok();
}

struct Setup {
    DriverOptions driver;
    inject::discover::Options discover;
    std::string reg_path, dra_path;
};

inject::Result<Setup> setup(const DaemonOptions& o) {
    INJECT_TRY(auto cfg, inject::config::load_file(o.config_path, !o.config_path_given));
    if (!o.driver_root.empty()) cfg.cli.driver_root = o.driver_root;
    if (!o.dev_root.empty()) cfg.cli.dev_root = o.dev_root;
    if (!o.host_driver_root.empty()) cfg.cli.host_driver_root = o.host_driver_root;
    if (!o.host_dev_root.empty()) cfg.cli.host_dev_root = o.host_dev_root;
    Setup s;
    s.discover = inject::discover::options_from(cfg);
    INJECT_TRY(s.driver.cdi, inject::cdi::options_from(cfg));
    s.driver.cdi.ctk_path = o.ctk_path;
    s.driver.cdi_root = o.cdi_root;
    s.driver.node_name = o.node_name;
    const std::string name(kDriverName);
    const std::string own = o.plugins_dir + (o.plugins_dir.ends_with('/') ? "" : "/") + name;
    INJECT_TRY_CTX(
        make_dir(own, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                          std::filesystem::perms::group_exec),
        "--plugins-dir");
    INJECT_TRY_CTX(make_dir(o.cdi_root, std::filesystem::perms::owner_all |
                                            std::filesystem::perms::group_read |
                                            std::filesystem::perms::group_exec |
                                            std::filesystem::perms::others_read |
                                            std::filesystem::perms::others_exec),
                   "--cdi-root");
    s.driver.checkpoint_path = own + "/checkpoint.json";
    // DRS instances for placements, made and removed through efsmi as discovery finds it.
    const auto d = s.discover;
    s.driver.drs.list = [d](std::uint32_t card) { return inject::drs::list_instances(d, card); };
    s.driver.drs.create = [d](std::uint32_t card, const inject::device::DrsProfile& p) {
        return inject::drs::create_instance(d, card, p);
    };
    s.driver.drs.destroy = [d](std::uint32_t card, std::uint32_t id) {
        return inject::drs::destroy_instance(d, card, id);
    };
    INJECT_TRY(s.dra_path, k8s::socket_path(own, "dra.sock"));
    auto reg = k8s::socket_path(o.plugins_registry, name + "-reg.sock");
    if (!reg) return inject::fail(std::move(reg).error().context("--plugins-registry"));
    s.reg_path = std::move(*reg);
    return s;
}

class Daemon {
public:
    Daemon(Setup s, std::unique_ptr<Driver> d, Companion c)
        : s_(std::move(s)),
          driver_(std::move(d)),
          c_(std::move(c)),
          v1_(*driver_),
          v1beta1_(*driver_),
          reg_(plugin_info(std::string(kDriverName), s_.dra_path), [this] {
              if (c_.registered_again) c_.registered_again();
          }) {}

    /// `events` (may be null): the driver's events; each one publishes the slices at once.
    int loop(int sig_fd, k8s::KubeletWatcher& reg_watch, k8s::KubeletWatcher& dra_watch,
             k8s::EventWatcher* events);

private:
    inject::Result<void> serve_dra() {
        k8s::stop_unix(dra_server_, milliseconds(500));
        INJECT_TRY(dra_server_, k8s::serve_unix(s_.dra_path, {&v1_, &v1beta1_}));
        inject::log::info("serving DRAPlugin v1 and v1beta1 on {}", s_.dra_path);
        return inject::ok();
    }
    // Served after dra.sock: kubelet dials the endpoint as soon as it sees this socket.
    inject::Result<void> serve_reg() {
        k8s::stop_unix(reg_server_, milliseconds(500));
        INJECT_TRY(reg_server_, k8s::serve_unix(s_.reg_path, {&reg_}));
        inject::log::info("registration socket {} is up: waiting for kubelet's plugin watcher",
                          s_.reg_path);
        return inject::ok();
    }
    void stop() {
        k8s::stop_unix(reg_server_, milliseconds(1000));
        k8s::stop_unix(dra_server_, milliseconds(1000));
    }
    static bool gone(const k8s::UnixServer& s, const std::string& name) {
        return s.server && s.path.ends_with("/" + name) && !k8s::still_ours(s);
    }

    Setup s_;
    std::unique_ptr<Driver> driver_;
    Companion c_;
    DraV1 v1_;
    DraV1beta1 v1beta1_;
    Registration reg_;
    k8s::UnixServer dra_server_, reg_server_;
};

int Daemon::loop(int sig_fd, k8s::KubeletWatcher& reg_watch, k8s::KubeletWatcher& dra_watch,
                 k8s::EventWatcher* events) {
    if (auto r = serve_dra(); !r) return fail_with(r.error());
    if (auto r = serve_reg(); !r) {
        stop();
        return fail_with(r.error());
    }
    if (c_.start) c_.start();
    for (;;) {
        pollfd fds[4] = {{sig_fd, POLLIN, 0},
                         {reg_watch.fd(), POLLIN, 0},
                         {dra_watch.fd(), POLLIN, 0},
                         {events ? events->fd() : -1, POLLIN, 0}};
        const int n = ::poll(fds, 4, -1);
        if (n < 0 && errno != EINTR) {
            std::cerr << "error: poll: " << std::strerror(errno) << "\n";
            break;
        }
        if (n <= 0) continue;
        if (fds[0].revents & POLLIN) {
            signalfd_siginfo si{};
            if (::read(sig_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si) &&
                si.ssi_signo != SIGHUP) {
                inject::log::info("signal {}: stopping", si.ssi_signo);
                break;
            }
        }
        if (fds[3].revents & POLLIN) {
            // A driver event (a reset, an error) may change a card's health: the slices are
            // published again now (discovery asks libefml), not at the next resync.
            const auto notes = events->take();
            for (const auto& note : notes) {
                if (note)
                    inject::log::info(
                        "driver event on card {} (type {}{}{}): publishing ResourceSlices again",
                        note->id, note->type, note->message.empty() ? "" : ": ", note->message);
                else
                    inject::log::info(
                        "driver events: library opened again: publishing ResourceSlices again");
            }
            if (!notes.empty() && c_.registered_again) c_.registered_again();
        }
        // Each watcher's events are read whenever it is ready; a socket of ours that is no
        // longer ours is served again (dra.sock first: registration points at it).
        bool dra_gone = false, reg_gone = false;
        if (fds[2].revents & POLLIN) {
            auto r = dra_watch.restarted(
                [&](const std::string& name) { return gone(dra_server_, name); });
            if (!r) spdlog::error("{}", r.error().what());
            dra_gone = r && *r;
        }
        if (fds[1].revents & POLLIN) {
            auto r = reg_watch.restarted(
                [&](const std::string& name) { return gone(reg_server_, name); });
            if (!r) spdlog::error("{}", r.error().what());
            reg_gone = r && *r;
        }
        if (dra_gone) {
            inject::log::info("{} was removed (kubelet restarted?): serving it again", s_.dra_path);
            if (auto r = serve_dra(); !r) {
                spdlog::error("{}", r.error().what());
                break;
            }
            reg_gone = true;  // register again so kubelet dials the new socket
        }
        if (reg_gone) {
            inject::log::info("serving {} again: kubelet's plugin watcher registers us anew",
                              s_.reg_path);
            if (auto r = serve_reg(); !r) {
                spdlog::error("{}", r.error().what());
                break;
            }
        }
    }
    if (c_.stop) c_.stop();
    stop();
    return 0;
}

}  // namespace

int run(const DaemonOptions& o, ClaimSource claims, const MakeCompanion& make_companion) {
    // Before gRPC starts its threads, so only our signalfd sees these.
    auto sig_fd = k8s::signal_fd({SIGTERM, SIGINT, SIGHUP});
    if (!sig_fd) return fail_with(sig_fd.error());
    auto s = setup(o);
    if (!s) return fail_with(s.error());
    const auto dopts = s->discover;
    const Discoverer discover = [dopts] { return inject::discover::discover(dopts); };
    auto driver = Driver::create(s->driver, std::move(claims), discover);
    if (!driver) return fail_with(driver.error());
    (*driver)->converge();
    const auto own = s->dra_path.substr(0, s->dra_path.rfind('/'));
    // The watchers' "kubelet socket" is a name that never appears: only removals matter here.
    auto reg_watch = k8s::KubeletWatcher::create(o.plugins_registry, "/");
    if (!reg_watch) return fail_with(reg_watch.error());
    auto dra_watch = k8s::KubeletWatcher::create(own, "/");
    if (!dra_watch) return fail_with(dra_watch.error());
    Companion companion = make_companion ? make_companion(discover) : Companion{};
    // Driver events, as the device plugin watches them (libefml's EfmlGetEvent on a thread);
    // without them health changes reach the slices at the next resync.
    std::unique_ptr<k8s::EventWatcher> events;
    if (make_companion) {
        auto w = k8s::EventWatcher::start(dopts);
        if (w)
            events = std::move(*w);
        else
            spdlog::error(
                "driver events: {}; card health reaches the ResourceSlices at each resync only",
                w.error().what());
    }
    Daemon d(std::move(*s), std::move(*driver), std::move(companion));
    return d.loop(sig_fd->get(), *reg_watch, *dra_watch, events.get());
}

}  // namespace dra
