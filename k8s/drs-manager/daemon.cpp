// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/daemon.hpp"

#include <poll.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "drs-manager/apply.hpp"
#include "drs-manager/cdi_spec.hpp"
#include "drs-manager/decide.hpp"
#include "drs-manager/holders.hpp"
#include "drs-manager/layout.hpp"
#include "inject/config.hpp"
#include "inject/discover.hpp"
#include "inject/drs.hpp"
#include "inject/log.hpp"
#include "k8s/daemon_setup.hpp"
#include "k8s/driver_events.hpp"
#include "k8s/events.hpp"
#include "k8s/reflector.hpp"

namespace drs_manager {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;
using O = Decision::Outcome;

// What wakes the loop, under one mutex.
struct Wake {
    std::mutex mu;
    std::condition_variable cv;
    bool changed = false, stop = false, recheck = false;
    void notify(bool stopping) {
        {
            const std::lock_guard l(mu);
            (stopping ? stop : changed) = true;
        }
        cv.notify_all();
    }
    void notify_recheck() {
        {
            const std::lock_guard l(mu);
            recheck = changed = true;
        }
        cv.notify_all();
    }
};

class Manager {
public:
    Manager(const DaemonOptions& o, k8s::api::Client& api, inject::discover::Options disc)
        : o_(o),
          api_(api),
          disc_(std::move(disc)),
          applier_(o.checkpoint, efsmi_ops(disc_)),
          node_key_("Node//" + o.node_name),
          cm_key_("ConfigMap/" + o.layouts_namespace + "/" + o.layouts_name),
          source_("configmap " + o.layouts_namespace + "/" + o.layouts_name + " " +
                  std::string(kLayoutsKey)) {}

    static Efsmi efsmi_ops(const inject::discover::Options& d) {
        return {[d](std::uint32_t card) { return inject::drs::list_instances(d, card); },
                [d](std::uint32_t card, const inject::device::DrsProfile& p) {
                    return inject::drs::create_instance(d, card, p);
                },
                [d](std::uint32_t card, std::uint32_t id) {
                    return inject::drs::destroy_instance(d, card, id);
                }};
    }

    inject::Result<void> start() {
        // A restart with the layout in force rewrites nothing (the plugin would re-list); after
        // a reboot the file is another boot's, so the first state of this one is written.
        if (auto f = k8s::drs::read_layout_state(o_.state_file); f && *f) written_ = **f;
        if (auto id = k8s::drs::read_boot_id(o_.boot_id_file); id)
            boot_id_ = std::move(*id);
        else
            inject::log::warn("{}; the state file names no boot", id.error().what());
        auto held = read_holder_files(o_.holders_checkpoints);
        if (!held) return inject::fail(std::move(held).error());
        return applier_.start([h = *held](std::uint32_t card, std::uint32_t id) {
            return std::any_of(h.begin(), h.end(),
                               [&](const Held& x) { return x.card == card && x.id == id; });
        });
    }

    /// One wake of the loop: acts only when the layout's inputs changed or a retry is due
    /// (`timer`). Returns when to wake next without a change (none: only on a change).
    std::optional<Clock::time_point> step(const std::optional<Json>& node,
                                          const std::optional<Json>& cm, bool timer) {
        retry_at_ = pass(node, cm, timer);
        return retry_at_;
    }

    [[nodiscard]] const std::string& node_key() const { return node_key_; }
    [[nodiscard]] const std::string& configmap_key() const { return cm_key_; }

private:
    std::optional<Clock::time_point> pass(const std::optional<Json>& node,
                                          const std::optional<Json>& cm, bool timer);
    void set_state(std::string_view s);
    /// Who holds what: the plugins' checkpoints and kubelet's pods.
    inject::Result<std::vector<Held>> holders(const inject::device::Host& host);
    void write_state_file(k8s::drs::LayoutState now);
    /// The state file is another boot's (one without bootId, an older manager's, is this one's).
    [[nodiscard]] bool written_in_earlier_boot() const {
        return written_ && !written_->boot_id.empty() && written_->boot_id != boot_id_;
    }
    void report(const std::string& reason, const std::string& why);
    void post_event(const char* type, const std::string& reason, const std::string& why);
    /// The evict policy: evicts the pods blocking `plan` not yet evicted.
    void evict_blocking(const std::string& layout, const Plan& plan);
    std::optional<Clock::time_point> retry_later(const std::string& why);

    const DaemonOptions& o_;
    k8s::api::Client& api_;
    inject::discover::Options disc_;
    Applier applier_;
    CdiSpec cdi_{o_.host_root, o_.toolkit_dir};
    std::string node_key_, cm_key_, source_;
    std::string node_uid_;
    std::optional<std::string> state_;              // the state label as we last saw or wrote it
    std::optional<k8s::drs::LayoutState> written_;  // the state file as we last wrote it
    std::string boot_id_;                           // this boot's, written with every state
    std::string plugin_config_;  // the node's device plugin config (label, or the default)
    k8s::PodResourcesClient pods_{o_.pod_resources_socket, std::chrono::seconds(5)};
    std::optional<inject::device::Host> last_host_;  // the last pass's discovery
    std::optional<std::string> last_name_;           // the layout of the last pass
    std::optional<std::string> settled_;           // inputs whose outcome stands until they change
    std::optional<std::vector<Held>> waiting_on_;  // holders while blocked
    std::string last_event_;
    std::set<std::string> evicted_;               // "ns/name" of pods whose eviction was accepted
    std::map<std::string, std::string> refused_;  // "ns/name" -> why its eviction was refused
    std::optional<Clock::time_point> retry_at_;   // the wake a pass asked for
    k8s::Backoff backoff_{std::chrono::seconds(5), std::chrono::minutes(5)};
};

void Manager::set_state(std::string_view s) {
    write_state_file({last_name_.value_or(""), std::string(s), plugin_config_});
    if (state_ == s) return;
    const Json patch{{"metadata", {{"labels", {{std::string(kStateLabel), std::string(s)}}}}}};
    if (auto r = api_.patch_merge("/api/v1/nodes/" + o_.node_name, patch); !r) {
        inject::log::warn("setting {}={}: {}", kStateLabel, s, r.error().what());
        return;
    }
    inject::log::info("{}={}", kStateLabel, s);
    state_ = std::string(s);
}

inject::Result<std::vector<Held>> Manager::holders(const inject::device::Host& host) {
    INJECT_TRY(auto held, read_holder_files(o_.holders_checkpoints));
    if (o_.pod_resources_socket.empty()) return held;
    auto pods = pods_.list();
    if (!pods && pods.error().code() == inject::Errc::NotFound) return held;  // no kubelet here
    if (!pods) return inject::fail(std::move(pods).error());
    const auto more = pod_resource_holders(*pods, host);
    held.insert(held.end(), more.begin(), more.end());
    return held;
}

// The device plugin's cue (k8s/drs_layout_state.hpp), written when it differs.
void Manager::write_state_file(k8s::drs::LayoutState now) {
    now.boot_id = boot_id_;
    if (written_ == now) return;
    if (auto r = k8s::drs::write_layout_state(o_.state_file, now); !r)
        inject::log::warn("{}", r.error().what());
    else
        written_ = now;
}

// A Warning Event on the node, once per distinct message.
void Manager::report(const std::string& reason, const std::string& why) {
    if (why == last_event_) return;
    last_event_ = why;
    post_event("Warning", reason, why);
}

void Manager::post_event(const char* type, const std::string& reason, const std::string& why) {
    const k8s::EventReport ev{
        o_.layouts_namespace,
        {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", o_.node_name}, {"uid", node_uid_}},
        type,
        reason,
        why,
        "enflame-drs-manager",
        o_.node_name};
    if (auto r = k8s::post_event(api_, ev); !r)
        inject::log::warn("event {}: {}", reason, r.error().what());
}

void Manager::evict_blocking(const std::string& layout, const Plan& plan) {
    const auto pods = blocking_pods(plan);
    std::set<std::string> blocking;
    for (const auto& p : pods) {
        const auto key = p.ns + "/" + p.name;
        blocking.insert(key);
        if (evicted_.count(key)) continue;
        std::string holds;
        for (const auto& h : p.holds) holds += (holds.empty() ? "" : ", ") + h;
        if (auto r = evict_pod(api_, p); !r) {
            const auto why = "layout '" + layout + "': evicting pod " + key + " (holding " + holds +
                             "): " + r.error().what();
            if (refused_[key] == why) continue;
            refused_[key] = why;
            inject::log::warn("{}", why);
            post_event("Warning", "DrsLayoutEvictionRefused", why);
            continue;
        }
        refused_.erase(key);
        evicted_.insert(key);
        const auto why = "layout '" + layout + "': evicted pod " + key + " (holding " + holds + ")";
        inject::log::info("{}", why);
        post_event("Normal", "DrsLayoutEvicting", why);
    }
    // A pod that no longer blocks is forgotten: one of the same name later is evicted again.
    std::erase_if(evicted_, [&](const std::string& k) { return !blocking.count(k); });
    std::erase_if(refused_, [&](const auto& kv) { return !blocking.count(kv.first); });
}

std::optional<Clock::time_point> Manager::retry_later(const std::string& why) {
    const auto wait = backoff_.next();
    spdlog::error("{} (again in {} s)", why,
                  std::chrono::duration_cast<std::chrono::seconds>(wait).count());
    return Clock::now() + wait;
}

std::optional<Clock::time_point> Manager::pass(const std::optional<Json>& node,
                                               const std::optional<Json>& cm, bool timer) {
    if (!node) return retry_at_;  // not listed yet, or deleted: nothing to report on
    const Json& meta = node->value("metadata", Json::object());
    node_uid_ = k8s::api::str(meta, "uid");
    const Json labels = meta.value("labels", Json::object());
    if (!state_) state_ = k8s::api::str(labels, kStateLabel);
    const auto name = wanted_layout(k8s::api::str(labels, kLayoutLabel), o_.default_layout);
    std::optional<std::string> text;
    if (cm) {
        const Json data = cm->value("data", Json::object());
        const std::string key(kLayoutsKey);
        if (data.contains(key) && data[key].is_string()) text = data[key].get<std::string>();
    }
    // The device plugin config label is only passed on: no efsmi call, no API write.
    plugin_config_ = k8s::api::str(labels, k8s::drs::kPluginConfigLabel);
    if (plugin_config_.empty()) plugin_config_ = o_.default_plugin_config;
    if (!written_ || written_->device_plugin_config != plugin_config_) {
        std::string state = written_ ? written_->state : "";
        // Another boot's state is not this boot's: pending until this pass has seen the cards.
        if (written_in_earlier_boot() && !state.empty()) state = kPending;
        write_state_file(
            {written_ ? written_->layout : last_name_.value_or(""), state, plugin_config_});
    }
    const auto inputs = name + '\n' + (text ? "1" + *text : "0");
    if (settled_ == inputs && !timer) return retry_at_;  // our own label write, another label
    if (waiting_on_ && timer && settled_ == inputs) {
        // Waiting for holders: their files and kubelet only, until they change.
        auto held = holders(*last_host_);
        // (an eviction a disruption budget refused is asked again)
        if (held && *held == *waiting_on_ && refused_.empty()) return Clock::now() + o_.retry;
    }
    settled_.reset();
    waiting_on_.reset();
    // A new label is acknowledged at once (not at start: a restart with the layout in force
    // writes nothing).
    const bool relabelled = last_name_ && *last_name_ != name;
    last_name_ = name;
    if (name.empty()) {  // no label and no default: not ours to touch
        // After a reboot: this boot has no layout, which the device plugin waits to read.
        if (written_in_earlier_boot()) write_state_file({"", "", plugin_config_});
        settled_ = inputs;
        return std::nullopt;
    }
    if (relabelled) {
        set_state(kPending);
        last_event_.clear();
    }

    auto host = inject::discover::discover(disc_);
    if (!host) {
        set_state(kFailed);
        const auto why = "layout '" + name + "': discovering the cards: " + host.error().what();
        report("DrsLayoutFailed", why);
        return retry_later(why);
    }
    last_host_ = *host;
    auto held = holders(*host);
    if (!held) {
        set_state(kPending);
        const auto why =
            "layout '" + name + "': cannot tell which instances are held: " + held.error().what();
        report("DrsLayoutWaiting", why);
        return retry_later(why);
    }
    auto d = decide(name, text, source_, *host, held_on(*host, *held));
    if (d.outcome != O::Blocked) evicted_.clear(), refused_.clear();
    switch (d.outcome) {
        case O::Failed:
            set_state(kFailed);
            spdlog::error("{}", d.reason);
            report("DrsLayoutFailed", d.reason);
            settled_ = inputs;  // a layout this node cannot hold: until the label or layouts change
            return std::nullopt;
        case O::Blocked:
            set_state(kPending);
            inject::log::warn("{}", d.reason);
            report("DrsLayoutWaiting", d.reason);
            settled_ = inputs;
            waiting_on_ = std::move(*held);
            if (o_.eviction == EvictionPolicy::Evict) evict_blocking(name, d.plan);
            return Clock::now() + o_.retry;
        case O::Done: {
            // before `success`, on which the device plugin hands the new instances out
            const auto stale = cdi_.refresh(*host);
            set_state(kSuccess);
            settled_ = inputs;
            backoff_.reset();
            if (stale) {
                report("DrsCdiSpecStale", *stale);
                return Clock::now() + o_.retry;  // the layout stands; the refresh is tried again
            }
            last_event_.clear();
            return std::nullopt;
        }
        case O::Apply:
            break;
    }
    set_state(kApplying);
    const auto t0 = Clock::now();
    if (auto r = applier_.run(d.plan, name); !r) {
        set_state(kFailed);
        const auto why = "layout '" + name + "': " + r.error().what();
        report("DrsLayoutFailed", why);
        return retry_later(why);
    }
    inject::log::info(
        "layout {}: {} efsmi operation(s) in {} ms", name, d.plan.operations(),
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
    return Clock::now();  // discover again at once: success once the node shows the layout
}

}  // namespace

inject::Result<void> run(const DaemonOptions& o, std::shared_ptr<k8s::api::Client> client) {
    INJECT_TRY(const auto cfg, inject::config::load_file(o.config_path, !o.config_path_given));
    auto disc = inject::discover::options_from(cfg);
    disc.with_drs = true;
    Manager m(o, *client, disc);
    INJECT_TRY_VOID(m.start());

    const sigset_t stop_signals = k8s::block_stop_signals();
    Wake wake;
    auto on_change = [&wake](const Json&) { wake.notify(false); };
    k8s::ReflectorOptions node_o, cm_o;
    node_o.collection = "/api/v1/nodes";
    node_o.field_selector = "metadata.name=" + o.node_name;
    cm_o.collection = "/api/v1/namespaces/" + o.layouts_namespace + "/configmaps";
    cm_o.field_selector = "metadata.name=" + o.layouts_name;
    k8s::Informer nodes(*client, node_o, "v1", "Node", on_change);
    k8s::Informer cms(*client, cm_o, "v1", "ConfigMap", on_change);
    std::thread node_thread([&] { nodes.run(); });
    std::thread cm_thread([&] { cms.run(); });
    // A driver reload (the driver gone and back, or a card reset) may take the instances with
    // it: each such note makes the next pass look at the cards again, as a retry does.
    std::unique_ptr<k8s::EventWatcher> events;
    if (auto w = k8s::EventWatcher::start(disc); w)
        events = std::move(*w);
    else
        inject::log::warn("driver events: {}; a driver reload is seen at the next change only",
                          w.error().what());
    std::jthread event_thread([&wake, &events](const std::stop_token& st) {
        while (events && !st.stop_requested()) {
            pollfd p{events->fd(), POLLIN, 0};
            if (::poll(&p, 1, 200) <= 0) continue;
            for (const auto& note : events->take()) {
                inject::log::info("{}: checking the layout again",
                                  note ? "driver event " + std::to_string(note->type) +
                                             " on card " + std::to_string(note->id)
                                       : std::string("the driver is back"));
                wake.notify_recheck();
            }
        }
    });
    std::thread([&wake, stop_signals] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        inject::log::info("{}: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        wake.notify(true);
    }).detach();

    inject::log::info("watching node {} and configmap {}/{}", o.node_name, o.layouts_namespace,
                      o.layouts_name);
    // Both caches listed before the first pass (an empty list calls no handler).
    {
        std::unique_lock l(wake.mu);
        while (!wake.stop && !(nodes.synced() && cms.synced()))
            wake.cv.wait_for(l, std::chrono::milliseconds(50));
        wake.changed = true;
    }
    std::optional<Clock::time_point> next;
    for (;;) {
        bool timer = false;
        {
            std::unique_lock l(wake.mu);
            const auto ready = [&] { return wake.stop || wake.changed; };
            if (next) {
                timer = !wake.cv.wait_until(l, *next, ready);
            } else {
                wake.cv.wait(l, ready);
            }
            if (wake.stop) break;
            wake.changed = false;
            timer = timer || wake.recheck;
            wake.recheck = false;
        }
        next = m.step(nodes.get(m.node_key()), cms.get(m.configmap_key()), timer);
    }
    event_thread.request_stop();
    event_thread.join();
    nodes.stop();
    cms.stop();
    node_thread.join();
    cm_thread.join();
    return inject::ok();
}

}  // namespace drs_manager
