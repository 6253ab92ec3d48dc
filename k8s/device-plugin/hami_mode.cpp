// SPDX-License-Identifier: Apache-2.0
#include "device-plugin/hami_mode.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>

#include "inject/fs.hpp"
#include "inject/log.hpp"
#include "k8s/events.hpp"

namespace device_plugin::hami {

using inject::Errc;
using inject::fail;

namespace {

constexpr std::string_view kVisibleEnv = "ENFLAME_VISIBLE_DEVICES";
constexpr std::string_view kTopsEnv = "TOPS_VISIBLE_DEVICES";

std::string pod_path(const std::string& ns, const std::string& name) {
    return "/api/v1/namespaces/" + ns + "/pods/" + name;
}

grpc::Status to_status(const inject::Error& e) {
    return {e.code() == Errc::NotFound ? grpc::StatusCode::NOT_FOUND
                                       : grpc::StatusCode::FAILED_PRECONDITION,
            e.what()};
}

const inject::device::Device* card_of(const inject::device::Host& h, std::uint32_t index) {
    for (const auto& c : h.devices)
        if (c.index == index) return &c;
    return nullptr;
}

const PluginDevice* whole(const Inventory& inv, std::uint32_t index) {
    for (const auto& d : inv.devices)
        if (!d.drs && d.index == index) return &d;
    return nullptr;
}

// gcushare answers ENFLAME_VISIBLE_DEVICES=<minor> (HAMi's pods expect it), not our card IDs.
void minors_env(v1beta1::ContainerAllocateResponse& r, const Settings& s,
                const std::vector<std::uint32_t>& minors) {
    if (!s.lists.envvar) return;
    std::string v;
    for (auto m : minors) v += (v.empty() ? "" : ",") + std::to_string(m);
    (*r.mutable_envs())[std::string(kVisibleEnv)] = v;
}

}  // namespace

inject::Result<std::unique_ptr<Mode>> Mode::create(Deps deps) {
    std::unique_ptr<Mode> m(new Mode(std::move(deps)));
    INJECT_TRY(auto pods, m->pods_on_node());
    // The instances we recorded before a restart (their pods may have gone meanwhile), and
    // those live pods hold (a checkpoint lost or from before there was one).
    m->load_checkpoint();
    m->converge_pending();
    for (const auto& pod : pods["items"]) {
        auto d = parse_drs_decision(pod);
        // a pod HAMi did not place names no instance of ours (it could name anyone's)
        if (!d || !not_placed_by(pod, m->d_.scheduler).empty()) continue;
        for (const auto& c : d->containers) {
            std::uint32_t id = 0;
            if (c.instance_id.empty()) continue;
            try {
                id = static_cast<std::uint32_t>(std::stoul(c.instance_id));
            } catch (const std::exception&) {
                continue;
            }
            const bool known = std::any_of(m->own_.begin(), m->own_.end(), [&](const auto& o) {
                return o.card == d->index && o.instance_id == id;
            });
            if (known) continue;
            m->own_.push_back(
                {d->uid, d->ns, d->name, d->index, id, c.instance_uuid, c.profile_name});
            inject::log::info("hami: pod {}/{} holds DRS instance {} of card {}", d->ns, d->name,
                              id, d->index);
        }
    }
    if (auto r = m->save(true); !r) inject::log::warn("hami: {}", r.error().what());
    m->sweep(true);
    return m;
}

void Mode::load_checkpoint() {
    if (d_.checkpoint.empty()) return;
    // Not fatal when both it and its .prev are bad: the live pods' annotations still name
    // their instances; the next save writes a good one.
    auto f = k8s::drs::load_file(
        d_.checkpoint,
        [](const std::string& text, const std::string& source) -> inject::Result<void> {
            INJECT_TRY_VOID(parse_checkpoint(text, source));
            return inject::ok();
        });
    if (!f.problem.empty()) inject::log::warn("hami: {}", f.problem);
    if (!f.text) return;
    auto l = parse_checkpoint(*f.text, d_.checkpoint);
    own_ = std::move(l->instances);
    pending_ = std::move(l->pending);
    for (const auto& o : own_)
        inject::log::info("hami: checkpoint: DRS instance {} of card {} for pod {}/{} ({})",
                          o.instance_id, o.card, o.ns, o.pod, o.uid);
}

k8s::drs::Ops Mode::ledger_ops() {
    // efsmi's listing through discovery: HAMi mode has no per-card list of its own
    return {[this](std::uint32_t card) -> inject::Result<std::vector<inject::device::DrsInstance>> {
                INJECT_TRY(auto host, d_.discover());
                for (auto& c : host.devices)
                    if (c.index == card) return std::move(c.drs_instances);
                return std::vector<inject::device::DrsInstance>{};
            },
            d_.destroy};
}

bool Mode::recorded(std::uint32_t card, std::uint32_t id) const {
    return std::any_of(own_.begin(), own_.end(),
                       [&](const Recorded& o) { return o.card == card && o.instance_id == id; });
}

void Mode::converge_pending() {
    if (pending_.empty()) return;
    pending_ = k8s::drs::converge(
        pending_, "pod", ledger_ops(),
        [this](std::uint32_t card, std::uint32_t id) { return recorded(card, id); }, {});
}

inject::Result<void> Mode::save(bool drops_records) {
    if (d_.checkpoint.empty()) return inject::ok();
    const auto dir = std::filesystem::path(d_.checkpoint).parent_path();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail(Errc::Io, "checkpoint: creating " + dir.string() + ": " + ec.message());
    return k8s::drs::save_file(d_.checkpoint, checkpoint_text({own_, pending_}), drops_records);
}

inject::Result<Json> Mode::pods_on_node() {
    INJECT_TRY(auto pods, d_.api->list("/api/v1/pods", {}, "spec.nodeName=" + d_.node));
    if (!pods.contains("items") || !pods["items"].is_array()) pods["items"] = Json::array();
    return pods;
}

inject::Result<Json> Mode::waiting() {
    INJECT_TRY(auto pods, pods_on_node());
    auto sc = screen(pods, d_.scheduler, static_cast<std::int64_t>(std::time(nullptr)));
    if (skipped_.size() > 4096) skipped_.clear();
    for (const auto& b : sc.skipped)
        if (skipped_.insert(b.uid).second)
            inject::log::warn("hami: pod {}/{} skipped, its annotations not honoured: {}", b.ns,
                              b.name, b.why);
    return std::move(sc.pods);
}

namespace {
// Pod `uid` of `pods` (a list); null when gone.
const Json& pod_of(const Json& pods, const std::string& uid) {
    static const Json none;
    if (!pods.contains("items")) return none;
    for (const auto& p : pods.at("items")) {
        const auto m = p.find("metadata");
        if (m != p.end() && m->is_object() && m->value("uid", "") == uid) return p;
    }
    return none;
}
}  // namespace

// The pod cannot have what HAMi chose: say why on the pod (annotation and Warning event), so
// `kubectl describe` shows it and no later Allocate takes the decision again.
void Mode::report(const std::string& ns, const std::string& name, const std::string& uid,
                  const std::string& why, bool card_protocol) {
    inject::log::warn("hami: pod {}/{}: {}", ns, name, why);
    Json ann{{kError, why}};
    if (card_protocol) ann[kBindPhase] = "failed";
    if (auto r =
            d_.api->patch_merge(pod_path(ns, name), Json{{"metadata", {{"annotations", ann}}}});
        !r)
        inject::log::warn("hami: marking pod {}/{} failed: {}", ns, name, r.error().what());
    const k8s::EventReport ev{
        ns,
        {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", ns}, {"name", name}, {"uid", uid}},
        "Warning",
        "EnflameAllocateFailed",
        why,
        "enflame-device-plugin",
        d_.node};
    if (auto r = k8s::post_event(*d_.api, ev); !r)
        inject::log::warn("hami: event for pod {}/{}: {}", ns, name, r.error().what());
}

inject::Result<Mode::Chosen> Mode::chosen_cards(const Inventory& cards,
                                                const std::vector<std::uint32_t>& indexes,
                                                const std::string& ns, const std::string& name,
                                                const std::string& uid, bool card_protocol) {
    Chosen c;
    for (auto i : indexes) {
        const auto* dev = whole(cards, i);
        if (!dev || !dev->healthy) {
            // the whole-card protocol names its devices <node>-GCU-<index>: say which
            const std::string named =
                card_protocol ? " (" + d_.node + "-GCU-" + std::to_string(i) + ")" : "";
            const std::string why = "card " + std::to_string(i) + " that HAMi chose" + named +
                                    " is " + (dev ? "unhealthy" : "not on this node");
            report(ns, name, uid, why, card_protocol);
            return fail(Errc::NotFound, "pod " + ns + "/" + name + ": " + why);
        }
        c.ids.push_back(dev->id);
        c.minors.push_back(dev->minor);
    }
    return c;
}

inject::Result<v1beta1::ContainerAllocateResponse> Mode::one_card_container(const Inventory& cards,
                                                                            const Settings& s,
                                                                            std::size_t n_ids,
                                                                            bool& served) {
    served = false;
    INJECT_TRY(auto pods, waiting());
    auto p = pick_cards(pods, d_.node, n_ids, d_.names.cards);
    for (const auto& b : p.broken) report(b.ns, b.name, b.uid, b.why, true);
    if (!p.decision) return fail(Errc::NotFound, "no pod HAMi bound waits");
    served = true;
    auto& d = *p.decision;
    if (auto why = check_cards(pod_of(pods, d.uid), d, p.container, d_.names.cards); !why.empty()) {
        report(d.ns, d.name, d.uid, why, true);
        return fail(Errc::InvalidInput, "pod " + d.ns + "/" + d.name + ": " + why);
    }
    INJECT_TRY(const auto chosen,
               chosen_cards(cards, d.containers[p.container], d.ns, d.name, d.uid, true));
    INJECT_TRY(auto r, allocate(cards, s, chosen.ids));
    minors_env(r, s, chosen.minors);
    d.containers[p.container].clear();
    const bool done = std::all_of(d.containers.begin(), d.containers.end(),
                                  [](const auto& c) { return c.empty(); });
    Json ann{{kCardsToAllocate, encode_cards(d, d_.node)}};
    if (done) ann[kBindPhase] = "success";
    if (auto w =
            d_.api->patch_merge(pod_path(d.ns, d.name), Json{{"metadata", {{"annotations", ann}}}});
        !w)
        return fail(std::move(w).error().context("pod " + d.ns + "/" + d.name +
                                                 ": recording the allocation"));
    inject::log::info("hami: pod {}/{} container {}: cards {}", d.ns, d.name, p.container,
                      (*r.mutable_envs())[std::string(kVisibleEnv)]);
    return r;
}

grpc::Status Mode::allocate_cards(const Inventory& cards, const Settings& s,
                                  const v1beta1::AllocateRequest& req,
                                  v1beta1::AllocateResponse* out) {
    const std::lock_guard lock(mu_);
    for (const auto& c : req.container_requests()) {
        bool served = false;
        auto r =
            one_card_container(cards, s, static_cast<std::size_t>(c.devices_ids_size()), served);
        if (!r && !served && r.error().code() == Errc::NotFound) {
            // A pod HAMi did not schedule: kubelet's choice, as without HAMi.
            const std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
            r = allocate(cards, s, ids);
        }
        if (!r) {
            inject::log::warn("Allocate refused: {}", r.error().what());
            return to_status(r.error());
        }
        *out->add_container_responses() = std::move(*r);
    }
    return grpc::Status::OK;
}

grpc::Status Mode::preferred_cards(const Inventory& cards,
                                   const v1beta1::PreferredAllocationRequest& req,
                                   v1beta1::PreferredAllocationResponse* out) {
    const std::lock_guard lock(mu_);
    auto pods = waiting();
    for (const auto& c : req.container_requests()) {
        const std::vector<std::string> avail(c.available_deviceids().begin(),
                                             c.available_deviceids().end());
        const std::vector<std::string> must(c.must_include_deviceids().begin(),
                                            c.must_include_deviceids().end());
        const auto size = static_cast<std::size_t>(std::max(0, c.allocation_size()));
        std::vector<std::string> ids;
        if (pods) {
            const auto p = pick_cards(*pods, d_.node, size, d_.names.cards);
            if (p.decision && check_cards(pod_of(*pods, p.decision->uid), *p.decision, p.container,
                                          d_.names.cards)
                                  .empty()) {
                for (auto i : p.decision->containers[p.container]) {
                    const auto* dev = whole(cards, i);
                    if (dev && std::find(avail.begin(), avail.end(), dev->id) != avail.end())
                        ids.push_back(dev->id);
                }
            }
        }
        if (ids.size() != size || !must.empty()) ids = preferred(cards, avail, must, size);
        auto* r = out->add_container_responses();
        for (auto& id : ids) r->add_deviceids(std::move(id));
    }
    return grpc::Status::OK;
}

inject::Result<v1beta1::ContainerAllocateResponse> Mode::one_drs_container(const Inventory& cards,
                                                                           const Settings& s,
                                                                           std::size_t n_ids,
                                                                           const std::string& by) {
    INJECT_TRY(auto pods, waiting());
    // by kubelet's count (the container's limit), not assigned-containers' (checked below)
    auto p = pick_drs(pods, n_ids, by.empty() ? d_.names.drs : by);
    for (const auto& b : p.broken) report(b.ns, b.name, b.uid, b.why, false);
    if (!p.decision)
        return fail(Errc::NotFound,
                    "no pod on node " + d_.node + " waits for " + std::to_string(n_ids) + " " +
                        (by.empty() ? "DRS slices" : by) + " (HAMi's " + kAssigned + "=false)");
    auto& d = *p.decision;
    auto& c = d.containers[p.container];
    const std::string who = "pod " + d.ns + "/" + d.name + " container " + c.name;
    auto failed = [&](const std::string& why) {
        report(d.ns, d.name, d.uid, why, false);
        return inject::Error(Errc::NotFound, who + ": " + why);
    };
    auto host = d_.discover();
    if (!host) return failed("discovering the cards: " + std::string(host.error().what()));
    const auto* card = card_of(*host, d.index);
    const auto* dev = whole(cards, d.index);
    if (!card || !dev)
        return failed("card " + std::to_string(d.index) + " that HAMi chose is not on this node");
    if (!dev->healthy)
        return failed("card " + std::to_string(d.index) + " that HAMi chose is unhealthy");
    const auto prof =
        std::find_if(host->drs_profiles.begin(), host->drs_profiles.end(), [&](const auto& pr) {
            return c.profile_name.empty() ? std::to_string(pr.id) == c.profile_id
                                          : pr.name == c.profile_name;
        });
    if (prof == host->drs_profiles.end())
        return failed("DRS profile '" + (c.profile_name.empty() ? c.profile_id : c.profile_name) +
                      "' that HAMi chose is not offered by card " + std::to_string(d.index));
    if (auto why = check_drs(pod_of(pods, d.uid), c, prof->name, host->drs_profiles, d_.names);
        !why.empty())
        return failed(why);
    if (d.minor && *d.minor != card->minor)
        return failed(std::string(kAssignedMinor) + " " + std::to_string(*d.minor) +
                      " is not the minor of card " + std::to_string(d.index));
    // The DRS ledger's rule (k8s/drs_ledger.hpp): an entry durable before efsmi is asked; the
    // id it made recorded in the save right after.
    std::vector<std::uint32_t> before;
    for (const auto& x : card->drs_instances) before.push_back(x.instance_id);
    const std::uint64_t attempt = ++attempt_;
    pending_.push_back({d.uid, d.index, prof->name, before, attempt, std::nullopt, {}});
    auto drop_pending = [&] {
        std::erase_if(pending_, [&](const k8s::drs::Pending& e) {
            return e.owner == d.uid && e.attempt == attempt;
        });
    };
    if (auto w = save(); !w) {
        drop_pending();
        return failed(w.error().what());
    }
    auto in = d_.create(d.index, *prof);
    if (!in) {
        // efsmi may have made it anyway: taken back when it can be told apart, else the entry
        // stays for the next start
        if (k8s::drs::take_back_failed_create(
                ledger_ops(), "hami: pod " + d.ns + "/" + d.name, d.index, prof->name, before,
                [this](std::uint32_t c2, std::uint32_t id) { return recorded(c2, id); }))
            drop_pending();
        if (auto w = save(); !w) inject::log::warn("hami: {}", w.error().what());
        return failed(in.error().what());
    }
    const std::string name = inject::device::drs_address(*in);
    // Recorded before anyone hears of it: a plugin stopped from here on still finds it.
    own_.push_back({d.uid, d.ns, d.name, d.index, in->instance_id, in->uuid, in->profile});
    drop_pending();
    auto undo = [&](inject::Error e) {
        if (auto x = d_.destroy(d.index, in->instance_id); !x)
            inject::log::warn("hami: destroying DRS instance {} of card {}: {}", in->instance_id,
                              d.index, x.error().what());
        else
            own_.pop_back();
        if (auto w = save(true); !w) inject::log::warn("hami: {}", w.error().what());
        return failed(e.what());
    };
    if (auto w = save(); !w) return undo(std::move(w).error());
    auto r = allocate(cards, s, {dev->id});
    if (!r) return undo(std::move(r).error());
    minors_env(*r, s, {d.minor.value_or(card->minor)});
    (*r->mutable_envs())[std::string(kTopsEnv)] = name;
    c.allocated = true;
    c.instance_id = std::to_string(in->instance_id);
    c.instance_uuid = in->uuid;
    const bool done = std::all_of(d.containers.begin(), d.containers.end(),
                                  [](const auto& x) { return x.allocated; });
    Json ann{{kContainers, containers_json(d).dump()}};
    if (done) ann[kAssigned] = "true";
    if (auto w =
            d_.api->patch_merge(pod_path(d.ns, d.name), Json{{"metadata", {{"annotations", ann}}}});
        !w)
        return undo(std::move(w).error().context("recording the allocation"));
    inject::log::info("hami: {}: card {} DRS instance {} ({}, profile {})", who, d.index,
                      in->instance_id, name, prof->name);
    if (!by.empty()) {
        // kubelet's Allocate for the container's other resource of the two comes next.
        const auto& other = by == d_.names.memory ? d_.names.core : d_.names.memory;
        for (const auto& pod : pods["items"]) {
            if (!pod.contains("metadata") || !pod["metadata"].contains("uid") ||
                pod["metadata"]["uid"] != d.uid)
                continue;
            if (const auto n = container_request(pod, c.name, other))
                pair_ = Pair{other, n, std::chrono::steady_clock::now()};
        }
    }
    if (auto h = d_.discover()) publish(*h);
    return std::move(*r);
}

inject::Result<v1beta1::ContainerAllocateResponse> Mode::one_shared_container(
    const Inventory& cards, const Settings& s, std::size_t n_ids) {
    INJECT_TRY(auto pods, waiting());
    auto p = pick_shared(pods, d_.names.shared, n_ids);
    for (const auto& b : p.broken) report(b.ns, b.name, b.uid, b.why, false);
    if (!p.decision)
        return fail(Errc::NotFound, "no pod on node " + d_.node + " waits for " +
                                        std::to_string(n_ids) + " " + d_.names.shared +
                                        " (HAMi's " + kAssigned + "=false)");
    auto& d = *p.decision;
    auto& c = d.containers[p.container];
    if (auto why = check_shared(d, p.container, d_.names.legacy_slices); !why.empty()) {
        report(d.ns, d.name, d.uid, why, false);
        return fail(Errc::InvalidInput, "pod " + d.ns + "/" + d.name + ": " + why);
    }
    INJECT_TRY(const auto chosen, chosen_cards(cards, d.cards, d.ns, d.name, d.uid, false));
    // Shared, no DRS instance: the card whole to every container on it (gcushare's
    // ENFLAME_CONTAINER_USABLE_* limits are not known, so not given).
    INJECT_TRY(auto r, allocate(cards, s, chosen.ids));
    minors_env(r, s, chosen.minors);
    c.served = true;
    const bool done = std::all_of(d.containers.begin(), d.containers.end(),
                                  [](const auto& x) { return x.served; });
    Json ann{{kSharedServed, served_json(d)}};
    if (done) ann[kAssigned] = "true";
    if (auto w =
            d_.api->patch_merge(pod_path(d.ns, d.name), Json{{"metadata", {{"annotations", ann}}}});
        !w)
        return fail(std::move(w).error().context("pod " + d.ns + "/" + d.name +
                                                 ": recording the allocation"));
    inject::log::info("hami: pod {}/{} container {}: {} slices of card(s) {}", d.ns, d.name, c.name,
                      c.request, (*r.mutable_envs())[std::string(kVisibleEnv)]);
    return r;
}

grpc::Status Mode::allocate_other(const std::string& resource, const Inventory& cards,
                                  const Settings& s, const v1beta1::AllocateRequest& req,
                                  v1beta1::AllocateResponse* out) {
    const std::lock_guard lock(mu_);
    const bool by_size = resource == d_.names.memory || resource == d_.names.core;
    for (const auto& c : req.container_requests()) {
        const auto n = static_cast<std::size_t>(c.devices_ids_size());
        if (by_size && pair_ && pair_->resource == resource && pair_->count == n &&
            std::chrono::steady_clock::now() - pair_->at < std::chrono::minutes(1)) {
            pair_.reset();
            out->add_container_responses();  // the instance came with the other resource
            continue;
        }
        auto r = resource == d_.names.shared
                     ? one_shared_container(cards, s, n)
                     : one_drs_container(cards, s, n, by_size ? resource : std::string());
        if (!r) {
            inject::log::warn("Allocate refused: {}", r.error().what());
            return to_status(r.error());
        }
        *out->add_container_responses() = std::move(*r);
    }
    return grpc::Status::OK;
}

namespace {

bool pod_live(const Json& pods, const std::string& uid) {
    const auto& items = pods["items"];
    return std::any_of(items.begin(), items.end(), [&](const Json& p) {
        const auto& m = p["metadata"];
        if (!m.contains("uid") || m["uid"] != uid) return false;
        const auto phase = p.contains("status") ? p["status"].value("phase", "") : "";
        return phase != "Succeeded" && phase != "Failed";
    });
}

}  // namespace

void Mode::sweep(bool rediscover) {
    const std::lock_guard lock(mu_);
    bool changed = false;
    std::optional<inject::device::Host> host;
    if (!own_.empty()) {
        auto pods = pods_on_node();
        const bool any_gone = pods && std::any_of(own_.begin(), own_.end(), [&](const Recorded& o) {
                                  return !pod_live(*pods, o.uid);
                              });
        if (any_gone) {
            // Destroy only what efsmi still lists as we recorded it: an id freed meanwhile may
            // be an administrator's instance now.
            auto h = d_.discover();
            if (!h) {
                inject::log::warn("hami: discovering the cards: {}", h.error().what());
                return;
            }
            host = std::move(*h);
        }
        if (!pods) {
            inject::log::warn("hami: listing the pods on {}: {}", d_.node, pods.error().what());
        } else if (any_gone) {
            std::erase_if(own_, [&](const Recorded& o) {
                if (pod_live(*pods, o.uid)) return false;
                if (!still_there(*host, o)) {
                    inject::log::info(
                        "hami: pod {}/{} is gone; its DRS instance {} of card {} is no longer "
                        "there as recorded: forgotten, not destroyed",
                        o.ns, o.pod, o.instance_id, o.card);
                    changed = true;
                    return true;
                }
                auto r = d_.destroy(o.card, o.instance_id);
                if (!r) {
                    inject::log::warn(
                        "hami: pod {}/{} is gone; destroying its DRS instance {} of card {}: {}",
                        o.ns, o.pod, o.instance_id, o.card, r.error().what());
                    return false;
                }
                inject::log::info(
                    "hami: pod {}/{} is gone: destroyed its DRS instance {} of card {}", o.ns,
                    o.pod, o.instance_id, o.card);
                changed = true;
                return true;
            });
        }
    }
    if (changed) {
        if (auto r = save(true); !r) inject::log::warn("hami: {}", r.error().what());
    }
    if (!changed && !rediscover) return;
    auto h = d_.discover();
    if (!h) {
        inject::log::warn("hami: discovering the cards: {}", h.error().what());
        return;
    }
    publish(*h);
}

void Mode::publish(const inject::device::Host& host) {
    std::vector<OwnInstance> ours;
    for (const auto& o : own_) ours.push_back({o.card, o.instance_id});
    const auto a = node_annotations(host, ours, d_.names.legacy_slices);
    const std::string key = a.drs_capacity + a.shared_capacity + std::to_string(a.cards);
    if (key == published_) return;
    const std::string path = "/api/v1/nodes/" + d_.node;
    auto r = d_.api->patch_merge(
        path, Json{{"metadata",
                    {{"annotations",
                      {{kDrsCapacity, a.drs_capacity}, {kSharedCapacity, a.shared_capacity}}}}}});
    if (r)
        r = d_.api->patch_merge(
            path + "/status",
            Json{{"status", {{"capacity", {{kCountResource, std::to_string(a.cards)}}}}}});
    if (!r) {
        inject::log::warn("hami: publishing node {}'s annotations: {}", d_.node, r.error().what());
        return;
    }
    published_ = key;
    inject::log::info("hami: node {}: {}={} {}={}", d_.node, kDrsCapacity, a.drs_capacity,
                      kSharedCapacity, a.shared_capacity);
}

}  // namespace device_plugin::hami
