// SPDX-License-Identifier: Apache-2.0
// Informers, the work queue, the Lease and the GpuResource reconciler (controller.hpp).
#include "operator/controller.hpp"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <random>
#include <thread>
#include <utility>

#include "inject/log.hpp"
#include "k8s/apiserver.hpp"
#include "operator/drs_status.hpp"

namespace gpu_operator {

using inject::Errc;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kFinalizer = "enflame.com/gpu-operator";
constexpr const char* kGroupVersion = "enflame.com/v1";
const std::string kCrs = "/apis/enflame.com/v1/gpuresources";
const std::string kMonitorGroup = "monitoring.coreos.com";

using k8s::api::str;
std::string rv_of(const Json& obj) {
    return str(obj.value("metadata", Json::object()), "resourceVersion");
}

/// An informer on `collection` (objects labelled `labels`, and `fields` when given).
std::unique_ptr<k8s::Informer> informer(k8s::api::Client& c, std::string collection,
                                        std::string api_version, std::string kind,
                                        std::string labels,
                                        std::function<void(const Json&)> on_change,
                                        std::string fields = {}) {
    k8s::ReflectorOptions o;
    o.collection = std::move(collection);
    o.label_selector = std::move(labels);
    o.field_selector = std::move(fields);
    return std::make_unique<k8s::Informer>(c, std::move(o), std::move(api_version), std::move(kind),
                                           std::move(on_change));
}

/// The informer an object is kept in: one per kind and namespace ("apiVersion/kind/namespace",
/// the namespace empty for a cluster-scoped kind), as the operator's Roles are per namespace.
std::string informer_id(const Json& obj) {
    return str(obj, "apiVersion") + "/" + str(obj, "kind") + "/" +
           str(obj.value("metadata", Json::object()), "namespace");
}

}  // namespace

// --- Controller ------------------------------------------------------------------------------

void Writes::add(std::string_view w) {
    ++n;
    if (what.size() > 400) return;  // a log line, not a list: the count says the rest
    if (!what.empty()) what += ", ";
    what += w;
}

Controller::Controller(k8s::api::Client& client, Options o) : client_(client), o_(std::move(o)) {}

void Controller::enqueue_all() {
    if (!crs_) return;
    for (const auto& cr : crs_->items()) queue_.add(str(cr["metadata"], "name"));
}

std::vector<Json> Controller::items_of(const std::string& kind) const {
    std::vector<Json> out;
    for (const auto& [id, inf] : owned_)
        if (id.find("/" + kind + "/") != std::string::npos)
            for (auto& o : inf->items()) out.push_back(std::move(o));
    return out;
}

std::optional<Json> Controller::live(const Json& obj) const {
    const auto it = owned_.find(informer_id(obj));
    if (it == owned_.end()) return std::nullopt;
    return it->second->get(key_of(obj));
}

void Controller::discover_monitoring() {
    auto d = client_.get(std::string("/apis/") + kMonitoringGroupVersion);
    std::set<std::string> served;
    if (d)
        for (const auto& r : d->value("resources", Json::array()))
            for (const auto& kind : kMonitoringKinds)
                if (str(r, "name") == plural_of(kind)) served.insert(kind);
    std::string names;
    for (const auto& k : served) names += " " + k;
    {
        const std::lock_guard lock(monitoring_mu_);
        monitoring_ = served;
    }
    inject::log::info(
        "discovery: {} serves{}", kMonitoringGroupVersion,
        names.empty() ? " none of ServiceMonitor, PodMonitor, PrometheusRule" : names);
}

void Controller::monitoring_crd_changed() {
    std::set<std::string> served;
    for (const auto& inf : monitoring_crds_)
        for (const auto& crd : inf->items()) {
            const Json spec = crd.value("spec", Json::object());
            bool established = false;
            for (const auto& c :
                 crd.value("status", Json::object()).value("conditions", Json::array()))
                established =
                    established || (str(c, "type") == "Established" && str(c, "status") == "True");
            for (const auto& v : spec.value("versions", Json::array()))
                if (established && str(v, "name") == "v1" && v.value("served", false))
                    served.insert(str(spec.value("names", Json::object()), "kind"));
        }
    std::set<std::string> was;
    {
        const std::lock_guard lock(monitoring_mu_);
        was = std::exchange(monitoring_, served);
    }
    for (const auto& k : kMonitoringKinds)
        if (served.count(k) != was.count(k))
            inject::log::info("{}.{}: {} {}", plural_of(k), kMonitorGroup, k,
                              served.count(k) ? "served" : "no longer served");
    enqueue_all();
}

std::set<std::string> Controller::monitoring_served() const {
    const std::lock_guard lock(monitoring_mu_);
    return monitoring_;
}

void Controller::watch_monitoring() {
    const auto served = monitoring_served();
    for (const auto& [id, where] : monitoring_objs_) {
        const std::string kind = str(where, "kind");
        const bool on = served.count(kind) != 0, was = monitoring_watched_.count(kind) != 0;
        if (const auto it = owned_.find(id); it != owned_.end()) {
            if (on && !was) it->second->kick();  // back: list it now, not in 5 min
            continue;
        }
        if (!on) continue;
        auto inf = informer(client_, path_of(where, true), kMonitoringGroupVersion, kind,
                            std::string(kManagedBy) + "=" + kManagerName,
                            [this](const Json&) { enqueue_all(); });
        std::thread([p = inf.get()] { p->run(); }).detach();
        owned_[id] = std::move(inf);
        inject::log::info("watching {}s in {}", kind, str(where["metadata"], "namespace"));
    }
    monitoring_watched_ = served;
}

inject::Result<void> Controller::run() {
    if (auto v = client_.resource_api_version()) dra_version_ = *v;
    discover_monitoring();
    // Every kind any component can apply, in each namespace it goes to (the operator's Roles
    // are per namespace): render with everything on. A monitoring kind's informers start when
    // the kind is served (watch_monitoring).
    std::set<std::string> all_monitoring(kMonitoringKinds.begin(), kMonitoringKinds.end());
    INJECT_TRY(auto objs,
               render(o_.manifests, everything_on(), Served{dra_version_, all_monitoring}));
    crs_ = informer(client_, kCrs, kGroupVersion, "GpuResource", "",
                    [this](const Json&) { enqueue_all(); });
    for (const auto& ob : objs) {
        const std::string id = informer_id(ob.obj);
        if (str(ob.obj, "apiVersion") == kMonitoringGroupVersion) {
            monitoring_objs_.emplace(id, ob.obj);
            continue;
        }
        if (owned_.count(id)) continue;
        owned_[id] = informer(client_, path_of(ob.obj, true), str(ob.obj, "apiVersion"),
                              str(ob.obj, "kind"), std::string(kManagedBy) + "=" + kManagerName,
                              [this](const Json&) { enqueue_all(); });
    }
    // Nodes (NFD's labels, cordons) and the rolled DaemonSets' pods, in their namespace.
    nodes_ = informer(client_, "/api/v1/nodes", "v1", "Node", "",
                      [this](const Json&) { enqueue_all(); });
    std::string pods_ns = "enflame-system";
    for (const auto& ob : objs)
        if (rolled(ob.obj)) pods_ns = str(ob.obj["metadata"], "namespace");
    pods_ = informer(client_, "/api/v1/namespaces/" + pods_ns + "/pods", "v1", "Pod",
                     std::string(kManagedBy) + "=" + kManagerName,
                     [this](const Json&) { enqueue_all(); });
    for (const auto& kind : kMonitoringKinds)
        monitoring_crds_.push_back(informer(
            client_, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
            [this](const Json&) { monitoring_crd_changed(); },
            "metadata.name=" + plural_of(kind) + "." + kMonitorGroup));
    std::vector<std::thread> threads;
    threads.emplace_back([this] { crs_->run(); });
    for (auto& inf : monitoring_crds_) threads.emplace_back([p = inf.get()] { p->run(); });
    threads.emplace_back([this] { nodes_->run(); });
    threads.emplace_back([this] { pods_->run(); });
    for (auto& [_, inf] : owned_) threads.emplace_back([p = inf.get()] { p->run(); });
    for (auto& t : threads) t.detach();
    while (!crs_->synced() || !nodes_->synced() || !pods_->synced())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    inject::log::info("watching GpuResources and {} kinds it applies; reconciling", owned_.size());
    enqueue_all();
    while (const auto next = queue_.get()) {  // never shut down: the process ends
        const std::string& key = *next;
        auto r = reconcile(key);
        if (r) {
            queue_.forget(key);
        } else {
            inject::log::warn("reconciling GpuResource {}: {}", key, r.error().what());
            queue_.add_rate_limited(key);
        }
        queue_.done(key);
    }
    return inject::ok();
}

namespace {

/// The oldest GpuResource (name breaks a tie) is the one in effect.
bool is_active(const Json& cr, const std::vector<Json>& all) {
    auto order = [](const Json& c) {
        return std::make_pair(str(c["metadata"], "creationTimestamp"), str(c["metadata"], "name"));
    };
    return std::none_of(all.begin(), all.end(), [&](const Json& o) {
        return !o["metadata"].contains("deletionTimestamp") && order(o) < order(cr);
    });
}

Json owner_ref(const Json& cr) {
    return Json::array({{{"apiVersion", kGroupVersion},
                         {"kind", "GpuResource"},
                         {"name", str(cr["metadata"], "name")},
                         {"uid", str(cr["metadata"], "uid")},
                         {"controller", true},
                         {"blockOwnerDeletion", true}}});
}

bool owned_by(const Json& obj, const std::string& uid) {
    for (const auto& r : obj["metadata"].value("ownerReferences", Json::array()))
        if (str(r, "uid") == uid && r.value("controller", false)) return true;
    return false;
}

Json condition(const Json& old_conds, const std::string& type, bool status,
               const std::string& reason, const std::string& message, long long gen) {
    const std::string s = status ? "True" : "False";
    std::string since = k8s::micro_time(std::chrono::system_clock::now()).substr(0, 19) + "Z";
    for (const auto& c : old_conds)
        if (str(c, "type") == type && str(c, "status") == s) since = str(c, "lastTransitionTime");
    return {{"type", type},
            {"status", s},
            {"reason", reason},
            {"message", message},
            {"lastTransitionTime", since},
            {"observedGeneration", gen}};
}

}  // namespace

Json Controller::stack_status(const Json& cr, const std::vector<Object>& objs,
                              const std::string& error,
                              const std::vector<MonitorStatus>& monitors) const {
    std::map<std::string, Json> comps;
    for (const auto& o : objs) {
        if (o.component == "base") continue;
        Json& c = comps[o.component];
        if (c.is_null())
            c = {{"name", o.component}, {"ready", true}, {"objects", Json::array()}, {"desired", 0},
                 {"readyPods", 0},      {"updated", 0},  {"message", "applied"}};
        c["objects"].push_back(key_of(o.obj));
        const std::string kind = str(o.obj, "kind");
        if (kind != "DaemonSet" && kind != "Deployment") continue;
        const auto l = live(o.obj);
        const Json st = l ? l->value("status", Json::object()) : Json::object();
        // a Deployment (NFD's master): its replicas as a DaemonSet's pods
        const bool ds = kind == "DaemonSet";
        const long long want = ds  ? st.value("desiredNumberScheduled", 0LL)
                               : l ? (*l)["spec"].value("replicas", 1LL)
                                   : 0LL,
                        ready = st.value(ds ? "numberReady" : "readyReplicas", 0LL),
                        upd = st.value(ds ? "updatedNumberScheduled" : "updatedReplicas", 0LL),
                        avail = st.value(ds ? "numberAvailable" : "availableReplicas", 0LL);
        c["desired"] = c["desired"].get<long long>() + want;
        c["readyPods"] = c["readyPods"].get<long long>() + ready;
        c["updated"] = c["updated"].get<long long>() + upd;
        const bool current =
            l && st.value("observedGeneration", 0LL) >= (*l)["metadata"].value("generation", 0LL);
        const std::string name = str(o.obj["metadata"], "name");
        if (!l || !current || want == 0 || upd < want || avail < want) {
            c["ready"] = false;
            c["message"] = !l          ? kind + " " + name + " not created yet"
                           : want == 0 ? kind + " " + name + ": no node selected"
                                       : kind + " " + name + ": " + std::to_string(avail) + "/" +
                                             std::to_string(want) + " available, " +
                                             std::to_string(upd) + " updated";
        } else if (c["ready"].get<bool>()) {
            c["message"] = std::to_string(ready) + "/" + std::to_string(want) + " pods ready";
        }
    }
    Json list = Json::array();
    int n = 0, ready = 0;
    bool progressing = false;
    std::string not_ready;
    for (const auto& m : monitors)
        if (comps.count(m.component)) comps[m.component][m.field] = m.message;
    std::string drs;  // each labelled node's layout and state, counted by state
    if (comps.count("drsManager")) {
        auto d = drs_status(nodes_->items());
        comps["drsManager"]["nodes"] = std::move(d.nodes);
        drs = std::move(d.summary);
    }
    for (auto& [name, c] : comps) {
        ++n;
        if (c["ready"].get<bool>())
            ++ready;
        else
            not_ready += (not_ready.empty() ? "" : ", ") + name;
        if (c["updated"] < c["desired"]) progressing = true;
        list.push_back(c);
    }
    const long long gen = cr["metadata"].value("generation", 0LL);
    const Json old = cr.value("status", Json::object()).value("conditions", Json::array());
    const bool all = ready == n && error.empty();
    Json out = {
        {"state", all ? "ready" : "notReady"},
        {"readyResource", std::to_string(ready) + "/" + std::to_string(n)},
        {"observedGeneration", gen},
        {"components", list},
        {"conditions",
         {condition(old, "Ready", all, all ? "AllComponentsReady" : "ComponentsNotReady",
                    all ? "every enabled component is ready" : "not ready: " + not_ready, gen),
          condition(old, "Progressing", progressing, progressing ? "RollingOut" : "Stable",
                    progressing ? "pods are being updated" : "no rollout in progress", gen),
          condition(old, "Degraded", !error.empty(), error.empty() ? "Reconciled" : "ApplyFailed",
                    error.empty() ? "every object applied" : error, gen)}}};
    if (!drs.empty()) out["drs"] = drs;
    return out;
}

inject::Result<void> Controller::write_status(const Json& cr, Json status, Writes& writes) {
    const Json have = cr.value("status", Json::object());
    if (have == status) return inject::ok();
    const Json patch = merge_patch(have, status);
    std::string fields;
    for (const auto& [k, _] : patch.items()) fields += (fields.empty() ? "" : " ") + k;
    INJECT_TRY(Json r, client_.patch_merge(path_of(cr) + "/status", {{"status", patch}}));
    (void)r;
    writes.add("status: " + fields);
    return inject::ok();
}

inject::Result<void> Controller::remove_stack(const Json& cr, Writes& writes) {
    const std::string uid = str(cr["metadata"], "uid");
    // In order: what hands out cards, then the toolkit (its pods' preStop uninstalls it from
    // the node), then everything else through the garbage collector.
    for (const std::set<std::string>& stage :
         {std::set<std::string>{"enflame-device-plugin", "enflame-dra-plugin"},
          std::set<std::string>{"enflame-toolkit-installer"}}) {
        bool waiting = false;
        for (const auto& ds : items_of("DaemonSet")) {
            if (!owned_by(ds, uid) || !stage.count(str(ds["metadata"], "name"))) continue;
            waiting = true;
            if (ds["metadata"].contains("deletionTimestamp")) continue;
            INJECT_TRY_VOID(client_.remove(path_of(ds) + "?propagationPolicy=Foreground"));
            writes.add("delete " + key_of(ds));
            inject::log::info("GpuResource {} deleted: removing {}", str(cr["metadata"], "name"),
                              key_of(ds));
        }
        if (waiting) return inject::ok();  // the DaemonSet's watch events bring us back
    }
    // then the node labels it set (the garbage collector cannot)
    INJECT_TRY_VOID(label_nodes(false, writes));
    Json fins = Json::array();
    for (const auto& f : cr["metadata"].value("finalizers", Json::array()))
        if (f != kFinalizer) fins.push_back(f);
    INJECT_TRY(Json r, client_.patch_merge(
                           path_of(cr),
                           {{"metadata", {{"finalizers", fins}, {"resourceVersion", rv_of(cr)}}}}));
    (void)r;
    writes.add("finalizer off");
    inject::log::info(
        "GpuResource {}: plugins, toolkit and node labels removed; the garbage collector removes "
        "the rest",
        str(cr["metadata"], "name"));
    return inject::ok();
}

inject::Result<void> Controller::label_nodes(bool active, Writes& writes) {
    for (const auto& [node, set] : plan_node_labels(nodes_->items(), active)) {
        INJECT_TRY(Json r, client_.apply("/api/v1/nodes/" + node, node_label_body(node, set),
                                         kNodeLabelManager));
        (void)r;
        writes.add("labels node/" + node);
        inject::log::info("node {}: {} {}", node, set ? "labelled" : "removed the label",
                          std::string(kGpuPresent) + (set ? "=true (NFD: PCI vendor 1e36)" : ""));
    }
    return inject::ok();
}

inject::Result<Json> Controller::roll(const Json& spec, const std::vector<Object>& objs,
                                      Writes& writes) {
    // Only once every rolled DaemonSet in the cache carries its new template: the DaemonSet's
    // own watch event brings us back when it does.
    std::map<std::string, std::string> want;
    Json toolkit_command;
    for (const auto& o : objs) {
        if (!rolled(o.obj)) continue;
        if (str(o.obj["metadata"], "name") == kToolkitDs)
            toolkit_command =
                o.obj["spec"]["template"]["spec"]["containers"][0].value("command", Json());
        const auto l = live(o.obj);
        if (!l || !contains(*l, o.obj)) return Json{{"message", "DaemonSets being applied"}};
        want[str(o.obj["metadata"], "name")] =
            str(o.obj["spec"]["template"]["metadata"]["annotations"], kTemplateHash);
    }
    const auto pods = pods_->items();
    std::set<std::string> seen;
    for (const auto& p : pods)
        if (!p["metadata"].contains("deletionTimestamp")) seen.insert(str(p["metadata"], "uid"));
    std::erase_if(deleting_, [&](const std::string& uid) { return !seen.count(uid); });
    std::map<std::string, Json> nodes;
    for (const auto& n : nodes_->items()) nodes[str(n["metadata"], "name")] = n;
    const Json ds = spec.value("daemonsets", Json::object());
    const RollPlan plan =
        plan_roll(want, pods, nodes, ds.contains("maxUnavailable") ? ds["maxUnavailable"] : Json(1),
                  deleting_, toolkit_command);
    for (const auto& p : plan.mark_pods) {
        INJECT_TRY(Json r,
                   client_.patch_merge(path_of(p),
                                       {{"metadata", {{"annotations", {{kHandover, "true"}}}}}}));
        (void)r;
        writes.add("handover mark pod/" + str(p["metadata"], "name"));
        inject::log::info(
            "upgrade: node {}: marked pod {} for handover (same install flags: the new installer "
            "takes the toolkit over as it is)",
            str(p["spec"], "nodeName"), str(p["metadata"], "name"));
    }
    for (const auto& p : plan.delete_pods) {
        INJECT_TRY_VOID(client_.remove(path_of(p)));
        writes.add("delete pod/" + str(p["metadata"], "name"));
        deleting_.insert(str(p["metadata"], "uid"));
        inject::log::info("upgrade: node {}: deleted pod {} (DaemonSet {})",
                          str(p["spec"], "nodeName"), str(p["metadata"], "name"),
                          str(p["metadata"]["labels"], "app.kubernetes.io/name"));
    }
    return Json{{"nodes", plan.nodes},
                {"updatedNodes", plan.updated},
                {"totalNodes", plan.total},
                {"cordonedNodes", plan.cordoned}};
}

inject::Result<void> Controller::reconcile(const std::string& name) {
    const auto t0 = Clock::now();
    auto found = crs_->get("GpuResource//" + name);
    if (!found) return inject::ok();
    Json cr = *found;
    cr["apiVersion"] = kGroupVersion;
    Writes writes;
    auto finish = [&](const char* what) {
        inject::log::info(
            "reconciled GpuResource {} ({}): {} writes{}, {} ms", name, what, writes.n,
            writes.what.empty() ? "" : " (" + writes.what + ")",
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
    };
    if (cr["metadata"].contains("deletionTimestamp")) {
        const auto fins = cr["metadata"].value("finalizers", Json::array());
        if (std::find(fins.begin(), fins.end(), kFinalizer) != fins.end())
            INJECT_TRY_VOID(remove_stack(cr, writes));
        finish("deleting");
        return inject::ok();
    }
    if (!is_active(cr, crs_->items())) {
        const long long gen = cr["metadata"].value("generation", 0LL);
        Json st = {
            {"state", "ignored"},
            {"observedGeneration", gen},
            {"conditions",
             {condition(cr.value("status", Json::object()).value("conditions", Json::array()),
                        "Ready", false, "Ignored",
                        "another GpuResource is older and in effect; this one is ignored", gen)}}};
        INJECT_TRY_VOID(write_status(cr, st, writes));
        finish("ignored");
        return inject::ok();
    }
    const auto fins = cr["metadata"].value("finalizers", Json::array());
    if (std::find(fins.begin(), fins.end(), kFinalizer) == fins.end()) {
        Json f = fins;
        f.push_back(kFinalizer);
        INJECT_TRY(
            Json r,
            client_.patch_merge(
                path_of(cr), {{"metadata", {{"finalizers", f}, {"resourceVersion", rv_of(cr)}}}}));
        (void)r;
        writes.add("finalizer on");
    }
    const Json spec = cr.value("spec", Json::object());
    std::string dra = dra_version_;
    if (spec.contains("draDriver") && str(spec["draDriver"], "apiVersion") != "" &&
        str(spec["draDriver"], "apiVersion") != "auto")
        dra = str(spec["draDriver"], "apiVersion");
    watch_monitoring();
    const Served served{dra, monitoring_served()};
    INJECT_TRY(auto objs, render(o_.manifests, spec, served));
    prepare_roll(objs);
    INJECT_TRY_VOID(label_nodes(true, writes));
    std::string error;
    std::set<std::string> want;
    const std::string uid = str(cr["metadata"], "uid");
    for (auto& o : objs) {
        o.obj["metadata"]["ownerReferences"] = owner_ref(cr);
        want.insert(key_of(o.obj));
        const auto l = live(o.obj);
        if (l && contains(*l, o.obj)) continue;
        auto r = client_.apply(path_of(o.obj), o.obj, kManagerName);
        writes.add("apply " + key_of(o.obj));
        if (!r) {
            error = r.error().what();
            continue;
        }
        inject::log::info("applied {}{}", key_of(o.obj), l ? " (it had drifted)" : "");
    }
    // What a component no longer on (or a manifest no longer in the tree) left behind.
    for (const auto& [_, inf] : owned_)
        for (const auto& l : inf->items()) {
            if (!owned_by(l, uid) || want.count(key_of(l)) ||
                l["metadata"].contains("deletionTimestamp"))
                continue;
            INJECT_TRY_VOID(client_.remove(path_of(l)));
            inf->erase(key_of(l));
            writes.add("delete " + key_of(l));
            inject::log::info("removed {}: its component is off", key_of(l));
        }
    Json status = stack_status(cr, objs, error, monitoring_status(spec, served, objs));
    INJECT_TRY(status["upgrade"], roll(spec, objs, writes));
    int gcu_nodes = 0;
    for (const auto& n : nodes_->items())
        gcu_nodes += str(n["metadata"].value("labels", Json::object()), kGpuPresent) == "true";
    status["clusterGCUNodes"] = gcu_nodes;
    INJECT_TRY_VOID(write_status(cr, std::move(status), writes));
    finish("active");
    if (!error.empty()) return inject::fail(Errc::Io, error);
    return inject::ok();
}

}  // namespace gpu_operator
