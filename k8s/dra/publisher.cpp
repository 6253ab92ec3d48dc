// SPDX-License-Identifier: Apache-2.0
#include "dra/publisher.hpp"

#include <algorithm>
#include <map>

#include "inject/log.hpp"

namespace dra {

using inject::Errc;

namespace {

/// A slice's spec without pool.generation: what decides whether the pool changed.
Json content(const Json& slice) {
    Json spec = slice.value("spec", Json::object());
    if (spec.contains("pool") && spec["pool"].is_object()) spec["pool"].erase("generation");
    return spec;
}

std::int64_t generation_of(const Json& slice) {
    const Json* g = nullptr;
    if (slice.contains("spec") && slice["spec"].contains("pool") &&
        slice["spec"]["pool"].contains("generation"))
        g = &slice["spec"]["pool"]["generation"];
    return g && g->is_number_integer() ? g->get<std::int64_t>() : 0;
}

std::string name_of(const Json& slice) {
    return slice["metadata"]["name"].get<std::string>();
}

/// Whether a slice has counter sets or a device consuming counters (v1: the device itself,
/// v1beta1: its "basic").
bool has_counters(const Json& slice) {
    const Json spec = slice.value("spec", Json::object());
    if (spec.contains("sharedCounters")) return true;
    for (const auto& d : spec.value("devices", Json::array())) {
        const Json& body = d.contains("basic") ? d["basic"] : d;
        if (body.contains("consumesCounters")) return true;
    }
    return false;
}

/// True when the server kept none of the counter fields `sent` had: the DRAPartitionableDevices
/// feature gate is off (or the server predates the fields) and the API server dropped them.
bool counters_dropped(const Json& sent, const Json& stored) {
    return has_counters(sent) && !has_counters(stored);
}

}  // namespace

Publisher::Publisher(std::shared_ptr<k8s::api::Client> client, SliceOptions opts)
    : client_(std::move(client)), opts_(std::move(opts)), auto_(opts_.drs == DrsMode::Auto) {}

std::string Publisher::collection() const {
    return "/apis/resource.k8s.io/" + opts_.api_version + "/resourceslices";
}

std::string Publisher::field_selector() const {
    return "spec.nodeName=" + opts_.node_name + ",spec.driver=" + opts_.driver;
}

inject::Result<Json> Publisher::write(const Json& slice, const Json* existing, PublishStats& st) {
    const std::string path = collection() + "/" + name_of(slice);
    // Held until the answer's resourceVersion is remembered: the watch thread, which may see
    // the echo first, waits in own_write() instead of taking it for someone else's change.
    const std::lock_guard lock(own_mu_);
    inject::Result<Json> r = Json();
    if (existing) {
        Json obj = slice;
        obj["metadata"]["resourceVersion"] = (*existing)["metadata"].value("resourceVersion", "");
        r = client_->update(path, obj);
    } else {
        r = client_->create(collection(), slice);
    }
    if (!r && r.error().code() == Errc::Conflict) {
        // Changed since the LIST, or AlreadyExists (a create retried after a lost answer):
        // re-read it and put our spec in.
        r = client_->update_with_retry(path, [&](Json& cur) {
            cur["spec"] = slice["spec"];
            return true;
        });
    }
    if (!r) return inject::fail(std::move(r).error());
    if ((*r).contains("metadata"))
        remember_locked("rv:" + (*r)["metadata"].value("resourceVersion", ""));
    ++(existing ? st.updated : st.created);
    return std::move(*r);
}

inject::Result<PublishStats> Publisher::publish(const inject::device::Host& host) {
    if (opts_.drs == DrsMode::Auto) {
        auto minor = client_->server_minor();
        if (!minor)
            return inject::fail(
                std::move(minor).error().context("choosing how to publish DRS partitions"));
        opts_.drs = drs_mode_for_minor(*minor);
        inject::log::info(
            "Kubernetes 1.{}: DRS partitions published as {}", *minor,
            opts_.drs == DrsMode::Instances ? "existing instances" : "partitionable devices");
    }
    if (opts_.owned_by_node && opts_.node_uid.empty()) {
        // Once: the Node's uid makes the garbage collector delete our slices with the Node.
        opts_.owned_by_node = false;
        auto node = client_->get("/api/v1/nodes/" + opts_.node_name);
        if (node && (*node)["metadata"].contains("uid"))
            opts_.node_uid = (*node)["metadata"]["uid"].get<std::string>();
        else
            inject::log::warn("ResourceSlices go out without an owner: {}",
                              node ? "the Node has no uid" : node.error().what());
    }
    if (auto_ && !probed_ && opts_.drs != DrsMode::Instances) INJECT_TRY_VOID(probe_counters(host));
    INJECT_TRY(PublishStats st, reconcile(host));
    if (dropped_ && !auto_)
        inject::log::warn(
            "the API server dropped our counter sets: is the DRAPartitionableDevices feature gate "
            "on? "
            "(hint: DRS mode auto falls back to existing instances by itself)");
    if (!auto_ || opts_.drs == DrsMode::Instances || !dropped_) return st;
    inject::log::info(
        "the API server dropped our counter sets (DRAPartitionableDevices off): publishing DRS "
        "instances");
    opts_.drs = DrsMode::Instances;
    dropped_ = false;
    INJECT_TRY(PublishStats again, reconcile(host));
    again.created += st.created;
    again.updated += st.updated;
    again.deleted += st.deleted;
    return again;
}

inject::Result<void> Publisher::probe_counters(const inject::device::Host& host) {
    // One slice with counters, created with dryRun=All: the server validates and answers what
    // it would store, and stores nothing. Fields a server without the feature gate does not
    // know come back dropped; then no partition is ever written without its counters.
    const Json desired = build_slices(host, opts_);
    const auto it =
        std::find_if(desired.begin(), desired.end(), [](const Json& d) { return has_counters(d); });
    if (it == desired.end()) return inject::ok();  // no card with DRS profiles: nothing to ask
    Json probe = *it;
    // generateName: a dry run of an existing name would be AlreadyExists.
    probe["metadata"].erase("name");
    probe["metadata"]["generateName"] = opts_.node_name + "-" + opts_.driver + "-probe-";
    auto r = client_->create(collection() + "?dryRun=All", probe);
    if (!r)
        return inject::fail(std::move(r).error().context(
            "asking the API server (dryRun=All) whether it keeps DRS counters"));
    probed_ = true;
    if (!counters_dropped(probe, *r)) return inject::ok();
    inject::log::info(
        "the API server drops counter sets (a dryRun=All create; DRAPartitionableDevices off): "
        "publishing DRS instances");
    opts_.drs = DrsMode::Instances;
    return inject::ok();
}

inject::Result<PublishStats> Publisher::reconcile(const inject::device::Host& host) {
    auto listed = client_->list(collection(), "", field_selector());
    if (!listed)
        return inject::fail(
            std::move(listed).error().context("listing this node's ResourceSlices"));
    std::map<std::string, Json> existing;
    std::int64_t seen_generation = 0;
    for (auto& item : (*listed)["items"]) {
        seen_generation = std::max(seen_generation, generation_of(item));
        existing.emplace(name_of(item), std::move(item));
    }
    Json desired = build_slices(host, opts_);
    PublishStats st;
    const bool same = existing.size() == desired.size() &&
                      std::all_of(desired.begin(), desired.end(), [&](const Json& d) {
                          const auto it = existing.find(name_of(d));
                          return it != existing.end() && content(it->second) == content(d) &&
                                 generation_of(it->second) == seen_generation;
                      });
    if (same) {
        st.unchanged = static_cast<int>(existing.size());
        st.generation = generation_ = seen_generation;
        return st;
    }
    st.generation = generation_ = std::max(generation_, seen_generation) + 1;
    for (auto& d : desired) {
        d["spec"]["pool"]["generation"] = st.generation;
        const auto it = existing.find(name_of(d));
        auto r = write(d, it == existing.end() ? nullptr : &it->second, st);
        if (!r)
            return inject::fail(
                std::move(r).error().context("publishing ResourceSlice '" + name_of(d) + "'"));
        if (counters_dropped(d, *r)) dropped_ = true;
        if (it != existing.end()) existing.erase(it);
    }
    // Only now: the new generation is complete, so the scheduler already ignores these.
    for (const auto& [name, obj] : existing) {
        remember("del:" + name);
        auto r = client_->remove(collection() + "/" + name);
        if (!r)
            return inject::fail(
                std::move(r).error().context("deleting stale ResourceSlice '" + name + "'"));
        ++st.deleted;
    }
    return st;
}

inject::Result<int> Publisher::remove_all() {
    auto listed = client_->list(collection(), "", field_selector());
    if (!listed)
        return inject::fail(
            std::move(listed).error().context("listing this node's ResourceSlices"));
    int n = 0;
    for (const auto& item : (*listed)["items"]) {
        remember("del:" + name_of(item));
        INJECT_TRY_CTX(client_->remove(collection() + "/" + name_of(item)),
                       "deleting ResourceSlice '" + name_of(item) + "'");
        ++n;
    }
    return n;
}

void Publisher::remember(const std::string& key) {
    const std::lock_guard lock(own_mu_);
    remember_locked(key);
}

void Publisher::remember_locked(const std::string& key) {
    // Echoes that never came (a watch that was down) must not pile up.
    if (own_.size() > 4096) own_.clear();
    own_.insert(key);
}

bool Publisher::own_write(const std::string& type, const Json& object) {
    const Json meta = object.value("metadata", Json::object());
    const std::string key = type == "DELETED" ? "del:" + meta.value("name", "")
                                              : "rv:" + meta.value("resourceVersion", "");
    const std::lock_guard lock(own_mu_);
    return own_.erase(key) > 0;
}

SliceWatch::SliceWatch(std::shared_ptr<k8s::api::Client> client, Publisher& publisher,
                       std::function<void()> changed, Options opts)
    : client_(std::move(client)), publisher_(publisher), changed_(std::move(changed)) {
    k8s::ReflectorOptions o;
    o.name = "ResourceSlice watch";
    o.collection = publisher_.collection();
    o.field_selector = publisher_.field_selector();
    o.min_timeout_seconds = o.max_timeout_seconds = opts.timeout_seconds;
    o.backoff = opts.retry;
    o.max_backoff = std::chrono::seconds(30);
    reflector_ = std::make_unique<k8s::Reflector>(
        *client_, std::move(o),
        k8s::ReflectorHandlers{[this](std::vector<Json>, bool relist) {
                                   if (relist) changed_();  // what happened between two streams
                               },
                               [this](const k8s::api::WatchEvent& ev) { on_event(ev); }});
}

SliceWatch::~SliceWatch() {
    try {
        stop();
    } catch (const std::exception& e) {
        inject::log::warn("stopping the ResourceSlice watch: {}", e.what());
    }
}

void SliceWatch::start() {
    if (thread_.joinable()) return;
    thread_ = std::thread([this] { reflector_->run(); });
}

void SliceWatch::stop() {
    reflector_->stop();
    if (thread_.joinable()) thread_.join();
}

void SliceWatch::on_event(const k8s::api::WatchEvent& ev) {
    if (publisher_.own_write(ev.type, ev.object)) return;
    const Json meta =
        ev.object.is_object() ? ev.object.value("metadata", Json::object()) : Json::object();
    inject::log::info("ResourceSlice '{}' {} by someone else: publishing again",
                      meta.value("name", "?"),
                      ev.type == "DELETED" ? "deleted"
                      : ev.type == "ADDED" ? "created"
                                           : "changed");
    changed_();
}

PublisherLoop::PublisherLoop(Publisher& publisher, Discover discover,
                             std::chrono::milliseconds resync, std::chrono::milliseconds retry,
                             Report report)
    : publisher_(publisher),
      discover_(std::move(discover)),
      report_(std::move(report)),
      resync_(resync),
      retry_(retry) {}

PublisherLoop::~PublisherLoop() {
    try {
        stop(false);
    } catch (const std::exception& e) {  // std::thread::join: nothing to do but say so
        inject::log::warn("stopping the ResourceSlice loop: {}", e.what());
    }
}

void PublisherLoop::start() {
    const std::lock_guard lock(mu_);
    if (thread_.joinable()) return;
    stop_ = false;
    pending_ = true;
    thread_ = std::thread([this] { run(); });
}

void PublisherLoop::trigger() {
    {
        const std::lock_guard lock(mu_);
        pending_ = true;
    }
    cv_.notify_all();
}

void PublisherLoop::stop(bool remove) {
    {
        const std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (!remove) return;
    if (auto r = publisher_.remove_all(); !r)
        inject::log::warn("removing ResourceSlices on shutdown: {}", r.error().what());
    else
        inject::log::info("removed {} ResourceSlice(s) on shutdown", *r);
}

void PublisherLoop::run() {
    auto wait = resync_;
    std::unique_lock lock(mu_);
    for (;;) {
        cv_.wait_for(lock, wait, [this] { return stop_ || pending_; });
        if (stop_) return;
        pending_ = false;
        lock.unlock();
        inject::Result<PublishStats> r = inject::Error(Errc::Internal, "not run");
        if (auto host = discover_(); !host)
            r = inject::fail(std::move(host).error().context("discovering the cards"));
        else
            r = publisher_.publish(*host);
        if (report_) report_(r);
        if (!r) {
            inject::log::warn("ResourceSlices: {}", r.error().what());
            wait = std::min(wait == resync_ ? retry_ : wait * 2, resync_);
        } else {
            if (r->created + r->updated + r->deleted > 0)
                inject::log::info(
                    "ResourceSlices at generation {}: {} created, {} updated, {} deleted",
                    r->generation, r->created, r->updated, r->deleted);
            wait = resync_;
        }
        lock.lock();
    }
}

}  // namespace dra
