// SPDX-License-Identifier: Apache-2.0
#pragma once

// HAMi mode (--scheduler=hami), the pure half: what HAMi's Enflame backend (v2.10) writes on a
// pod and reads from a node, as data. HAMi's scheduler extender picks the card (whole cards:
// `hami.io/enflame-gcu-devices-to-allocate`; DRS: `enflame.com/gcu-assigned-*` and
// `assigned-containers`), the device plugin on the node finds that pod in Allocate and honours
// the decision (gcushare's annotation protocol). No API calls, no efsmi here:
// hami_mode.cpp does those.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device-plugin/plugin.hpp"
#include "inject/device.hpp"
#include "inject/result.hpp"
#include "k8s/drs_ledger.hpp"

namespace device_plugin::hami {

using Json = nlohmann::json;

// Pod annotations (HAMi pkg/device/enflame, gcushare).
inline constexpr const char* kAssigned = "enflame.com/gcu-assigned";  ///< "false" until done
inline constexpr const char* kAssignedTime = "enflame.com/gcu-assigned-time";    ///< UnixNano
inline constexpr const char* kAssignedIndex = "enflame.com/gcu-assigned-index";  ///< the card
inline constexpr const char* kAssignedMinor =
    "enflame.com/gcu-assigned-minor";                              ///< /dev/gcu<minor>
inline constexpr const char* kContainers = "assigned-containers";  ///< JSON per container
inline constexpr const char* kCardsToAllocate = "hami.io/enflame-gcu-devices-to-allocate";
inline constexpr const char* kBindPhase = "hami.io/bind-phase";  ///< allocating, success, failed
inline constexpr const char* kBindTime = "hami.io/bind-time";    ///< Unix seconds
/// HAMi <= 2.9 (gcushare shared mode): the card(s) chosen, as indexes ("1" or "0,1").
inline constexpr const char* kAssignedId = "enflame.com/gcu-assigned-id";
/// Ours, HAMi <= 2.9: the containers served so far (JSON list of names); that protocol has no
/// assigned-containers to record it in.
inline constexpr const char* kSharedServed = "enflame.com/gcu-shared-served";
/// Ours: why the plugin could not honour HAMi's decision (the pod's Allocate failed).
inline constexpr const char* kError = "enflame.com/gcu-allocate-error";
// Node annotations.
inline constexpr const char* kDrsCapacity = "enflame.com/gcu-drs-capacity";
inline constexpr const char* kSharedCapacity = "enflame.com/gcu-shared-capacity";
/// Node status capacity: the number of cards (gcushare, HAMi <= 2.9).
inline constexpr const char* kCountResource = "enflame.com/gcu-count";

/// One container's part of a DRS decision (an entry of `assigned-containers`).
struct DrsContainer {
    std::string name;
    bool allocated = false;
    std::uint32_t request = 0;  ///< slices = the device IDs kubelet hands us
    std::string profile_id, profile_name;
    std::string instance_id, instance_uuid;  ///< ours, once made
};

/// HAMi's DRS decision for one pod.
struct DrsDecision {
    std::string ns, name, uid;
    std::int64_t assigned_time = 0;
    std::uint32_t index = 0;  ///< the card (efsmi's DEV ID)
    std::optional<std::uint32_t> minor;
    std::vector<DrsContainer> containers;  ///< sorted by name
};

/// Annotation `key` of `pod` (a Pod object) when it is there as a string.
[[nodiscard]] std::optional<std::string> annotation(const Json& pod, const char* key);
/// Whether `pod` has ended (Succeeded, Failed) or is being deleted: it holds nothing and waits
/// for nothing.
[[nodiscard]] bool finished(const Json& pod);

/// The decision in `pod` (a Pod object). Errors name the annotation and the value:
/// "annotation enflame.com/gcu-assigned-index '-1': want a card index".
[[nodiscard]] inject::Result<DrsDecision> parse_drs_decision(const Json& pod);
/// `assigned-containers` for `d`, as HAMi wrote it plus what we add (kubeletAllocated,
/// instanceID, instanceUUID).
[[nodiscard]] Json containers_json(const DrsDecision& d);

/// HAMi's whole-card decision for one pod: per container (in HAMi's order, init containers
/// first) the card ordinals `<node>-GCU-<i>` it chose; an empty entry is a container with none
/// or one already served.
struct CardDecision {
    std::string ns, name, uid;
    std::int64_t bind_time = 0;
    std::vector<std::vector<std::uint32_t>> containers;
};

/// The decision in `pod` for `node`. A device of another node or of another shape is an error
/// naming it.
[[nodiscard]] inject::Result<CardDecision> parse_card_decision(const Json& pod,
                                                               const std::string& node);
/// The to-allocate annotation for `d` (what HAMi's EncodePodSingleDevice writes).
[[nodiscard]] std::string encode_cards(const CardDecision& d, const std::string& node);

/// Why a pod HAMi assigned could not be used (its annotations do not parse).
struct Broken {
    std::string ns, name, uid, why;
};

/// The pod Allocate serves: among the pods on the node that wait for us, the oldest whose
/// next unserved container asks `request` devices. Pods whose annotations do not parse are
/// in `broken` (and skipped).
template <class D>
struct Pick {
    std::optional<D> decision;
    std::size_t container = 0;  ///< index into decision->containers
    std::vector<Broken> broken;
};
/// `by` empty: the container whose slices (assigned-containers' request) are `request`; else
/// the one whose limit of resource `by` (gcu-memory, gcu-core) is `request`.
[[nodiscard]] Pick<DrsDecision> pick_drs(const Json& pods, std::size_t request,
                                         const std::string& by = {});
/// The count of `resource` that container `ctr` of `pod` asks (its limits; init containers
/// too), 0 when none.
[[nodiscard]] std::uint32_t container_request(const Json& pod, const std::string& ctr,
                                              const std::string& resource);

/// HAMi <= 2.9's decision (gcushare shared mode: no DRS instance, the card shared by slices):
/// the cards in `enflame.com/gcu-assigned-id`, and the pod's containers asking `resource`
/// (what HAMi's webhook injected, `enflame.com/shared-gcu: <slices>`), init containers first.
struct SharedDecision {
    struct Container {
        std::string name;
        std::uint32_t request = 0;  ///< slices
        bool served = false;        ///< in kSharedServed
    };
    std::string ns, name, uid;
    std::int64_t assigned_time = 0;
    std::vector<std::uint32_t> cards;
    std::vector<Container> containers;
};
[[nodiscard]] inject::Result<SharedDecision> parse_shared_decision(const Json& pod,
                                                                   const std::string& resource);
/// The oldest waiting pod (gcu-assigned=false, no assigned-containers: that is v2.10's DRS)
/// whose first unserved container asking `resource` asks `request` slices.
[[nodiscard]] Pick<SharedDecision> pick_shared(const Json& pods, const std::string& resource,
                                               std::size_t request);
/// kSharedServed for `d`.
[[nodiscard]] std::string served_json(const SharedDecision& d);
/// `by` empty: the container whose decision has `request` cards; else the one whose limit of
/// resource `by` (kubelet's count, which the decision is checked against) is `request`.
[[nodiscard]] Pick<CardDecision> pick_cards(const Json& pods, const std::string& node,
                                            std::size_t request, const std::string& by = {});

/// The node annotations HAMi's backend parses, for `host` with `profiles`: the capacity of a
/// card is its slices less the slices of instances not in `ours` (made by someone else).
struct NodeAnnotations {
    std::string
        drs_capacity;  ///< {"devices":[{"index":"0","minor":"0","capacity":4}],"profiles":{...}}
    std::string shared_capacity;  ///< {"0":4,...} (minor -> slices)
    std::size_t cards = 0;
};
struct OwnInstance {
    std::uint32_t card = 0, instance_id = 0;
};
/// `legacy_slices` > 0 (HAMi <= 2.9): shared_capacity is every card with that many slices.
[[nodiscard]] NodeAnnotations node_annotations(const inject::device::Host& host,
                                               const std::vector<OwnInstance>& ours,
                                               std::uint32_t legacy_slices = 0);

/// A DRS instance this plugin made for a pod, as its checkpoint records it (so an instance
/// whose pod is deleted while the plugin is down is still destroyed when it is back).
struct Recorded {
    std::string uid, ns, pod;  ///< the pod's
    std::uint32_t card = 0, instance_id = 0;
    std::string uuid;     ///< as efsmi printed it at creation ("" when it prints none)
    std::string profile;  ///< "" in checkpoints from before it was recorded
};
/// The checkpoint: the DRS ledger (k8s/drs_ledger.hpp) of HAMi mode, its records and the
/// instances being made (owner: the pod's UID).
struct Ledger {
    std::vector<Recorded> instances;
    std::vector<k8s::drs::Pending> pending;
};

/// The checkpoint's text: {"version":1,"instances":[{"podUID","namespace","pod","card",
/// "instance","uuid","profile"}],"pending":[...]} (deterministic; "pending" only when some).
[[nodiscard]] std::string checkpoint_text(const Ledger& l);
/// Parses checkpoint text; errors name `source` and the entry.
[[nodiscard]] inject::Result<Ledger> parse_checkpoint(std::string_view text,
                                                      const std::string& source);
/// Whether `host` still has the instance `r` recorded (k8s::drs::seen_in: the same id on the
/// same card, with the recorded profile and UUID where recorded: an id freed and reused by an
/// administrator is not ours).
[[nodiscard]] bool still_there(const inject::device::Host& host, const Recorded& r);

/// The resources HAMi mode registers, and their sockets' names.
struct Names {
    std::string cards = "enflame.com/gcu", cards_socket = "enflame-gcu.sock";
    std::string drs = "enflame.com/drs-gcu";
    std::string memory = "enflame.com/gcu-memory", core = "enflame.com/gcu-core";
    std::string shared = "enflame.com/shared-gcu";
    /// > 0: HAMi <= 2.9 (gcushare shared mode): `shared` with this many slices per card
    /// instead of `drs`, `memory` and `core`.
    std::uint32_t legacy_slices = 0;
};
/// gcushare's slices per card in shared mode (its SliceCountDRS).
inline constexpr std::uint32_t kLegacySlices = 6;

/// The resources HAMi's Enflame backend counts: `cards` (every card whole) and, per card,
/// device IDs `<minor>-<n>`: for `drs` inject::drs::card_slices() of them, for `memory` one per GiB
/// of the card's memory, for `core` 100 (HAMi's percent); or, legacy, `shared` with legacy_slices.
/// kubelet hands Allocate as many IDs as the container asks; which ones does not matter
/// (HAMi chose the card). Sockets: names.cards_socket, else enflame-<name after '/'>.sock.
[[nodiscard]] inject::Result<std::vector<Resource>> make_resources(const inject::device::Host& host,
                                                                   IdStrategy strategy,
                                                                   const Names& names);

}  // namespace device_plugin::hami
