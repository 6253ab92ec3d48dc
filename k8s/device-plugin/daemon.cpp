// SPDX-License-Identifier: Apache-2.0
#include "device-plugin/daemon.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>
#include <tuple>

#include "device-plugin/drs_wait.hpp"
#include "device-plugin/hami_mode.hpp"
#include "device-plugin/health.hpp"
#include "device-plugin/service.hpp"
#include "inject/config.hpp"
#include "inject/discover.hpp"
#include "inject/drs.hpp"
#include "inject/log.hpp"
#include "k8s/driver_events.hpp"
#include "k8s/drs_layout_state.hpp"
#include "k8s/file_watch.hpp"
#include "k8s/sharing.hpp"
#include "k8s/socket.hpp"
#include "k8s/watch.hpp"

namespace device_plugin {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kMaxBackoff{30000};

struct Loaded {
    Settings settings;  ///< resource_name is the whole cards' (after a sharing rename)
    std::vector<Resource> resources;
    inject::discover::Options discover;
    std::string scheduler;  ///< --scheduler / SCHEDULER, else the plugin config's, else ""
    hami::Names names;      ///< HAMi mode's resources
};

// The toolkit config, the plugin config, then discovery: what the plugin advertises.
inject::Result<Loaded> load(const DaemonOptions& o) {
    INJECT_TRY(auto cfg, inject::config::load_file(o.config_path, !o.config_path_given));
    INJECT_TRY(const auto sharing,
               k8s::load_plugin_config(o.plugin_config, o.settings.resource_name));
    Loaded l;
    l.settings = o.settings;
    l.settings.resource_name = sharing.resource_name;
    l.settings.cdi_kind = cfg.runtime.cdi_kind;
    l.settings.host_dev_root = cfg.cli.host_dev_root;
    l.discover = inject::discover::options_from(cfg);
    l.discover.with_drs = o.drs;
    l.scheduler = o.scheduler ? *o.scheduler : sharing.scheduler.value_or("");
    if (o.require_nri.value_or(sharing.require_nri.value_or(false)))
        l.settings.require_nri_lock = o.nri_lock;
    if (l.scheduler == "hami" && o.node_name.empty())
        return inject::fail(inject::Errc::InvalidInput,
                            "--scheduler=hami: --node-name missing (set it or NODE_NAME, e.g. from "
                            "the pod's spec.nodeName)");
    auto host = inject::discover::discover(l.discover);
    if (!host) return inject::fail(std::move(host).error().context("discovering Enflame cards"));
    if (l.scheduler == "hami") {
        // HAMi counts whole cards and slices; it decides which card a pod gets.
        l.names.cards = l.settings.resource_name;
        l.names.cards_socket = o.socket_name;
        l.names.drs = o.drs_resource;
        if (o.hami_legacy.value_or(sharing.hami_legacy.value_or(false)))
            l.names.legacy_slices =
                o.hami_slices.value_or(sharing.hami_slices.value_or(hami::kLegacySlices));
        INJECT_TRY(l.resources, hami::make_resources(*host, l.settings.id_strategy, l.names));
    } else {
        INJECT_TRY(l.resources, make_resources(*host, l.settings.id_strategy, sharing.replicas,
                                               l.settings.resource_name, o.socket_name, o.drs));
    }
    for (auto& r : l.resources) {
        // A DRS profile's socket name is longer than ours, which run() checked already.
        if (auto p = k8s::socket_path(o.kubelet_dir, r.socket); !p)
            return inject::fail(std::move(p).error());
        if (!o.health_checks) {
            // Health checks off means every card stays Healthy, whatever discovery saw.
            for (auto& d : r.inventory.devices) {
                d.healthy = true;
                d.why_unhealthy.clear();
            }
        }
    }
    return l;
}

inject::Result<void> register_with_kubelet(const std::string& kubelet_sock,
                                           const std::string& endpoint,
                                           const std::string& resource_name) {
    if (::access(kubelet_sock.c_str(), F_OK) != 0)
        return inject::fail(inject::sys_error("kubelet socket '" + kubelet_sock + "'"));
    auto ch = k8s::dial_unix(kubelet_sock, milliseconds(2000));
    if (!ch) return inject::fail(std::move(ch).error());
    auto stub = v1beta1::Registration::NewStub(*ch);
    v1beta1::RegisterRequest req;
    req.set_version("v1beta1");
    req.set_endpoint(endpoint);
    req.set_resource_name(resource_name);
    *req.mutable_options() = plugin_options();
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1beta1::Empty empty;
    const auto st = stub->Register(&ctx, req, &empty);
    if (!st.ok())
        return inject::fail(inject::Errc::Io,
                            "kubelet refused the registration: " + k8s::status_text(st));
    return inject::ok();
}

using FileId = std::tuple<dev_t, ino_t, std::int64_t, std::int64_t>;

// One advertised resource: its own socket, service and registration with kubelet.
struct Endpoint {
    std::string resource, socket, path;
    std::shared_ptr<State> state;
    std::unique_ptr<Service> service;
    k8s::UnixServer server;
    bool registered = false;
    FileId registered_with{};  ///< the kubelet.sock file we registered through
    int attempts = 0;
    Clock::time_point next_register{};
};

// The identity of a file (all zero when it is missing). The change time is part of it: an
// inode number freed by a deleted kubelet.sock may come back for the new one.
FileId file_id(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return {};
    return {st.st_dev, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

class Daemon {
public:
    Daemon(DaemonOptions o, Loaded l, std::string kubelet_path, std::shared_ptr<hami::Mode> hami)
        : o_(std::move(o)),
          discover_(std::move(l.discover)),
          kubelet_path_(std::move(kubelet_path)),
          hami_(std::move(hami)) {
        adopt(l);
    }
    ~Daemon() { stop_all(); }

    int loop(int sig_fd, k8s::KubeletWatcher& watcher, k8s::FileWatch* drs_state);

private:
    void adopt(Loaded& l);
    inject::Result<void> serve(Endpoint& e);
    inject::Result<void> serve_all();
    void stop_all();
    void try_register(Endpoint& e);
    bool current() const;
    bool reload(const std::string& why);  ///< false: the running configuration stays
    void follow_drs(k8s::FileWatch& w);
    void health();
    void on_event(const k8s::EventWatcher::Note& note);
    bool has_card(std::uint32_t index) const;
    void apply_all(const DriverHealth& driver);

    DaemonOptions o_;
    inject::discover::Options discover_;
    std::string kubelet_path_;
    std::vector<Endpoint> eps_;
    EventHolds holds_;  ///< cards driver events hold Unhealthy
    /// The DRS layout and state last re-listed for.
    std::optional<std::pair<std::string, std::string>> followed_;
    std::shared_ptr<hami::Mode> hami_;  ///< HAMi mode (null: off)
};

// Endpoints for the loaded resources (none serving yet).
void Daemon::adopt(Loaded& l) {
    eps_.clear();
    for (auto& r : l.resources) {
        Settings s = l.settings;
        s.resource_name = r.name;
        Endpoint e;
        e.resource = r.name;
        e.socket = r.socket;
        e.path = o_.kubelet_dir + (o_.kubelet_dir.ends_with('/') ? "" : "/") + r.socket;
        e.state = std::make_shared<State>(std::move(s), std::move(r.inventory));
        eps_.push_back(std::move(e));
    }
    if (!hami_ || eps_.empty()) return;
    // HAMi mode: the whole cards first (hami::make_resources), then the others, whose Allocate
    // gives the card HAMi chose from the whole cards' inventory.
    auto cards = eps_[0].state;
    eps_[0].state->set_allocator([h = hami_](const Inventory& inv, const Settings& s,
                                             const v1beta1::AllocateRequest& req,
                                             v1beta1::AllocateResponse* out) {
        return h->allocate_cards(inv, s, req, out);
    });
    eps_[0].state->set_preferrer([h = hami_](const Inventory& inv,
                                             const v1beta1::PreferredAllocationRequest& req,
                                             v1beta1::PreferredAllocationResponse* out) {
        return h->preferred_cards(inv, req, out);
    });
    for (std::size_t i = 1; i < eps_.size(); ++i) {
        eps_[i].state->set_allocator(
            [h = hami_, cards, name = eps_[i].resource](const Inventory&, const Settings& s,
                                                        const v1beta1::AllocateRequest& req,
                                                        v1beta1::AllocateResponse* out) {
                return h->allocate_other(name, cards->inventory(), s, req, out);
            });
    }
}

inject::Result<void> Daemon::serve(Endpoint& e) {
    // A new epoch first: it ends the old service's ListAndWatch streams at once, so stopping
    // its server does not wait for them.
    e.state->next_epoch();
    if (e.server.server) k8s::stop_unix(e.server, milliseconds(500));
    e.service = std::make_unique<Service>(e.state);
    INJECT_TRY(e.server, k8s::serve_unix(e.path, {e.service.get()}));
    inject::log::info("serving {} ({} devices) on {}", e.resource,
                      e.state->inventory().devices.size(), e.path);
    e.registered = false;
    e.attempts = 0;
    e.next_register = Clock::now();
    return inject::ok();
}

inject::Result<void> Daemon::serve_all() {
    for (auto& e : eps_) INJECT_TRY_VOID(serve(e));
    return inject::ok();
}

void Daemon::stop_all() {
    for (auto& e : eps_) {
        e.state->next_epoch();  // ends the ListAndWatch streams
        k8s::stop_unix(e.server, milliseconds(1000));
    }
}

void Daemon::try_register(Endpoint& e) {
    auto r = register_with_kubelet(kubelet_path_, e.socket, e.resource);
    if (r) {
        e.registered = true;
        e.registered_with = file_id(kubelet_path_);
        e.attempts = 0;
        inject::log::info("registered {} with kubelet at {}", e.resource, kubelet_path_);
        return;
    }
    const milliseconds delay =
        std::min(kMaxBackoff, milliseconds(1000) * (1 << std::min(e.attempts, 5)));
    ++e.attempts;
    e.next_register = Clock::now() + delay;
    inject::log::warn(
        "registering {} with kubelet (attempt {}): {}; retrying in {} s, or when {} appears",
        e.resource, e.attempts, r.error().what(), delay.count() / 1000, kubelet_path_);
}

// True when every endpoint is registered through the kubelet.sock there is now and still
// serves its own socket: a "kubelet.sock created" event read after we already registered
// with that kubelet needs no second round.
bool Daemon::current() const {
    const auto kubelet = file_id(kubelet_path_);
    return kubelet != FileId{} && std::all_of(eps_.begin(), eps_.end(), [&](const Endpoint& e) {
               return e.registered && e.registered_with == kubelet && e.server.server &&
                      k8s::still_ours(e.server);
           });
}

bool Daemon::reload(const std::string& why) {
    auto l = load(o_);
    if (!l) {
        spdlog::error("{}: keeping the running configuration: {}", why, l.error().what());
        return false;
    }
    if ((l->scheduler == "hami") != (hami_ != nullptr)) {
        spdlog::error(
            "{}: keeping the running configuration: scheduler '{}' in {}: changing "
            "the scheduler needs a restart",
            why, l->scheduler, o_.plugin_config);
        return false;
    }
    discover_ = l->discover;
    const auto driver = o_.health_checks ? driver_health(discover_) : DriverHealth{};
    bool same = l->resources.size() == eps_.size();
    for (std::size_t i = 0; same && i < eps_.size(); ++i)
        same = l->resources[i].name == eps_[i].resource && l->resources[i].socket == eps_[i].socket;
    if (same) {
        for (std::size_t i = 0; i < eps_.size(); ++i) {
            auto& inv = l->resources[i].inventory;
            if (o_.health_checks) apply_health(driver, inv, holds_);
            Settings s = l->settings;
            s.resource_name = eps_[i].resource;
            eps_[i].state->update(std::move(s), std::move(inv));
        }
        inject::log::info("{}: configuration re-read", why);
        return true;
    }
    // kubelet knows a plugin by its resource name: new names are new registrations.
    stop_all();
    for (auto& r : l->resources) {
        if (o_.health_checks) apply_health(driver, r.inventory, holds_);
    }
    adopt(*l);
    inject::log::info("{}: configuration re-read; the resources changed, registering again", why);
    if (auto r = serve_all(); !r) spdlog::error("{}: serving again: {}", why, r.error().what());
    return true;
}

// One pass over every resource; ListAndWatch gets a new list where anything changed.
void Daemon::apply_all(const DriverHealth& driver) {
    for (auto& e : eps_) {
        auto inv = e.state->inventory();
        if (apply_health(driver, inv, holds_)) e.state->update(e.state->settings(), std::move(inv));
    }
}

void Daemon::health() {
    apply_all(driver_health(discover_));
}

bool Daemon::has_card(std::uint32_t index) const {
    return std::any_of(eps_.begin(), eps_.end(), [&](const Endpoint& e) {
        const auto& devs = e.state->inventory().devices;
        return std::any_of(devs.begin(), devs.end(),
                           [&](const PluginDevice& d) { return d.index == index; });
    });
}

void Daemon::on_event(const k8s::EventWatcher::Note& note) {
    if (!note) {
        inject::log::info("health: driver events are back; checking every card");
        health();
        return;
    }
    const auto& ev = *note;
    const std::string what = "driver event " + event_name(ev.type) + " (" +
                             std::to_string(ev.type) + ") for card " + std::to_string(ev.id) +
                             (ev.message.empty() ? "" : ": " + ev.message);
    if (!has_card(ev.id)) {
        inject::log::warn("health: ignoring {}: no such card here", what);
        return;
    }
    switch (note_event(ev, holds_)) {
        case EventAction::Ignore:
            inject::log::info("health: ignoring {}", what);
            break;
        case EventAction::Log:
            inject::log::info("health: {}", what);
            break;
        case EventAction::Hold:
            inject::log::info("health: {}", what);
            apply_all(DriverHealth{});  // no need to ask the driver: the event decides
            break;
        case EventAction::Recheck:
            inject::log::info("health: {}; checking the cards again", what);
            health();
            break;
    }
}

// The DRS manager's state file changed (k8s/drs_layout_state.hpp). The node's device plugin
// config (its label, passed on by the manager) is put in force, and a layout done makes the
// instances listed again and kubelet told, each as a SIGHUP would; while the manager is at
// work, no re-list.
void Daemon::follow_drs(k8s::FileWatch& w) {
    auto changed = w.changed();
    if (!changed) {
        spdlog::error("DRS layouts: {}", changed.error().what());
        return;
    }
    if (!*changed) return;
    auto st = k8s::drs::read_layout_state(o_.drs_state_file);
    if (!st) {
        spdlog::error("DRS layouts: {}", st.error().what());
        return;
    }
    bool reloaded = false;
    auto config = k8s::drs::plugin_config_path(*st, o_.plugin_config_dir, o_.plugin_config_default);
    if (!config) {
        spdlog::error("{}; keeping {}", config.error().what(),
                      o_.plugin_config.empty() ? "no plugin config" : o_.plugin_config);
    } else if (*config != o_.plugin_config) {
        const auto before = o_.plugin_config;
        o_.plugin_config = *config;
        reloaded = reload("device plugin config " + (*config).substr((*config).rfind('/') + 1));
        if (!reloaded) o_.plugin_config = before;
    }
    if (!o_.drs || hami_ || !*st || !(*st)->settled()) return;
    std::pair<std::string, std::string> layout{(*st)->layout, (*st)->state};
    if (layout == followed_) return;
    followed_ = std::move(layout);
    if (!reloaded) reload("DRS layout '" + (*st)->layout + "' " + (*st)->state);
}

int Daemon::loop(int sig_fd, k8s::KubeletWatcher& watcher, k8s::FileWatch* drs_state) {
    if (auto r = serve_all(); !r) {
        std::cerr << "error: " << r.error().what() << "\n";
        return 1;
    }
    std::unique_ptr<k8s::EventWatcher> events;
    if (o_.health_checks) {
        auto w = k8s::EventWatcher::start(discover_);
        if (w)
            events = std::move(*w);
        else
            spdlog::error("health: {}; periodic checks only", w.error().what());
    }
    auto next_health = Clock::now() + o_.health_interval;
    auto next_sweep = Clock::now() + o_.sweep_interval;
    int sweeps = 0;
    for (;;) {
        auto wake = o_.health_checks ? next_health : Clock::now() + std::chrono::hours(1);
        if (hami_) {
            if (Clock::now() >= next_sweep) {
                // Every 15th sweep (30 s by default, as HAMi's own plugins re-register) looks
                // at the cards again for the node annotations.
                hami_->sweep(++sweeps % 15 == 0);
                next_sweep = Clock::now() + o_.sweep_interval;
            }
            wake = std::min(wake, next_sweep);
        }
        for (auto& e : eps_) {
            if (!e.registered && Clock::now() >= e.next_register) try_register(e);
            if (!e.registered) wake = std::min(wake, e.next_register);
        }
        if (o_.health_checks && Clock::now() >= next_health) {
            health();
            next_health = Clock::now() + o_.health_interval;
            continue;
        }
        const auto wait = std::chrono::duration_cast<milliseconds>(wake - Clock::now()).count();
        pollfd fds[4] = {{sig_fd, POLLIN, 0},
                         {watcher.fd(), POLLIN, 0},
                         {events ? events->fd() : -1, POLLIN, 0},
                         {drs_state ? drs_state->fd() : -1, POLLIN, 0}};
        const int n = ::poll(fds, 4, static_cast<int>(std::clamp<long long>(wait + 1, 0, 3600000)));
        if (n < 0 && errno != EINTR) {
            std::cerr << "error: poll: " << std::strerror(errno) << "\n";
            return 1;
        }
        if (n <= 0) continue;
        if (fds[2].revents & POLLIN) {
            for (const auto& note : events->take()) on_event(note);
        }
        if (fds[0].revents & POLLIN) {
            signalfd_siginfo si{};
            if (::read(sig_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                if (si.ssi_signo == SIGHUP) {
                    reload("SIGHUP");
                } else {
                    inject::log::info("signal {}: stopping", si.ssi_signo);
                    stop_all();
                    return 0;
                }
            }
        }
        if (fds[3].revents & POLLIN) follow_drs(*drs_state);
        if (fds[1].revents & POLLIN) {
            auto restarted = watcher.restarted([this](const std::string& name) {
                return std::any_of(eps_.begin(), eps_.end(), [&](const Endpoint& e) {
                    return e.socket == name && e.server.server && !k8s::still_ours(e.server);
                });
            });
            if (!restarted) {
                spdlog::error("{}", restarted.error().what());
            } else if (*restarted && !current()) {
                inject::log::info("kubelet restarted: serving and registering again");
                if (auto r = serve_all(); !r) {
                    std::cerr << "error: " << r.error().what() << "\n";
                    return 1;
                }
            }
        }
    }
}

// HAMi mode's API client (token reload, retries) and efsmi's DRS commands, as the DRA driver
// runs them.
inject::Result<std::shared_ptr<hami::Mode>> start_hami(const DaemonOptions& o,
                                                       const inject::discover::Options& disc,
                                                       const hami::Names& names) {
    auto cfg = o.kubeconfig.empty() ? k8s::api::in_cluster_config()
                                    : k8s::api::load_kubeconfig(o.kubeconfig);
    if (!cfg) return inject::fail(std::move(cfg).error().context("--scheduler=hami"));
    INJECT_TRY(auto client, k8s::api::Client::create(std::move(*cfg)));
    hami::Deps deps;
    deps.api = std::shared_ptr<k8s::api::Client>(std::move(client));
    deps.node = o.node_name;
    deps.names = names;
    deps.scheduler = o.hami_scheduler;
    deps.discover = [disc] { return inject::discover::discover(disc); };
    deps.create = [disc](std::uint32_t card, const inject::device::DrsProfile& p) {
        return inject::drs::create_instance(disc, card, p);
    };
    deps.destroy = [disc](std::uint32_t card, std::uint32_t id) {
        return inject::drs::destroy_instance(disc, card, id);
    };
    // In a folder of its own: kubelet deletes the files (not the folders) it finds in its
    // device-plugin folder when it starts.
    deps.checkpoint = o.kubelet_dir + (o.kubelet_dir.ends_with('/') ? "" : "/") +
                      "enflame-device-plugin/hami-instances.json";
    INJECT_TRY(auto m, hami::Mode::create(std::move(deps)));
    return std::shared_ptr<hami::Mode>(std::move(m));
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
    if (auto r = k8s::check_resource_name(o.settings.resource_name); !r)
        return fail_with(r.error());
    auto our_path = k8s::socket_path(o.kubelet_dir, o.socket_name);
    if (!our_path) return fail_with(our_path.error().context("--kubelet-dir"));
    auto kubelet_path = k8s::socket_path(o.kubelet_dir, o.kubelet_socket);
    if (!kubelet_path) return fail_with(kubelet_path.error().context("--kubelet-dir"));
    o.plugin_config_default = o.plugin_config;
    // The node's own config from the start, when the manager has named one; then the cards.
    auto load_for_node = [&o]() -> inject::Result<Loaded> {
        if (!o.plugin_config_dir.empty() && !o.drs_state_file.empty()) {
            INJECT_TRY(const auto st, k8s::drs::read_layout_state(o.drs_state_file));
            INJECT_TRY(o.plugin_config, k8s::drs::plugin_config_path(st, o.plugin_config_dir,
                                                                     o.plugin_config_default));
        }
        return load(o);
    };
    auto loaded = load_for_node();
    if (!loaded) return fail_with(loaded.error());
    auto watcher = k8s::KubeletWatcher::create(o.kubelet_dir, o.kubelet_socket);
    if (!watcher) return fail_with(watcher.error());
    std::optional<k8s::FileWatch> drs_state;
    if (!o.drs_state_file.empty() &&
        ((o.drs && loaded->scheduler != "hami") || !o.plugin_config_dir.empty())) {
        auto w = k8s::FileWatch::create(o.drs_state_file);
        if (!w) return fail_with(w.error().context("--drs-state-file"));
        drs_state = std::move(*w);
    }
    if (drs_state && o.drs && loaded->scheduler != "hami") {
        auto waited = wait_for_layout(*drs_state, o.drs_state_file, k8s::drs::kBootIdPath,
                                      o.drs_wait, sig_fd.get());
        if (!waited) spdlog::error("waiting for the DRS layout: {}", waited.error().what());
        if (waited && *waited == LayoutWait::Stopped) return 0;
        if (!waited || *waited != LayoutWait::NotNeeded) loaded = load_for_node();
        if (!loaded) return fail_with(loaded.error());
    }
    if (loaded->resources.front().inventory.devices.empty() && loaded->resources.size() == 1)
        inject::log::warn("no Enflame cards found: advertising none");
    if (!loaded->settings.require_nri_lock.empty())
        inject::log::info("Allocate answers only while enflame-nri-plugin holds {}",
                          loaded->settings.require_nri_lock);
    std::shared_ptr<hami::Mode> hami;
    if (loaded->scheduler == "hami") {
        auto h = start_hami(o, loaded->discover, loaded->names);
        if (!h) return fail_with(h.error());
        hami = std::move(*h);
    }
    Daemon d(std::move(o), std::move(*loaded), std::move(*kubelet_path), std::move(hami));
    return d.loop(sig_fd.get(), *watcher, drs_state ? &*drs_state : nullptr);
}

}  // namespace device_plugin
