// SPDX-License-Identifier: Apache-2.0
#pragma once

// HAMi mode (--scheduler=hami), the effectful half: Allocate finds the pod HAMi bound to this
// node (pods on the node by fieldSelector spec.nodeName), honours its decision (the card; for
// DRS an instance of the chosen profile made through efsmi), writes the completion
// annotations, or on failure the reason (annotation enflame.com/gcu-allocate-error and a
// Warning event) and leaves no instance. The instances it made are remembered in a checkpoint
// (Deps::checkpoint, written atomically before the pod is told) and, at start, also taken from
// live pods' assigned-containers; a periodic pod sweep destroys them once their pod is gone or
// has ended, also when the pod went while the plugin was down. Only recorded ids are
// destroyed, and only while efsmi still lists them with the recorded UUID. The node annotations
// HAMi parses are written at start, after every instance made or destroyed, and when re-discovery
// sees another picture.

#include <grpcpp/support/status.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "device-plugin/hami.hpp"
#include "device-plugin/hami_trust.hpp"
#include "device-plugin/plugin.hpp"
#include "inject/discover.hpp"
#include "k8s/apiserver.hpp"
#include "k8s/proto/deviceplugin_v1beta1.pb.h"

namespace device_plugin::hami {

/// What HAMi mode talks to; functions so tests could stand in (the bats tests use the real ones).
struct Deps {
    std::shared_ptr<k8s::api::Client> api;
    std::string node;
    std::function<inject::Result<inject::device::Host>()> discover;
    std::function<inject::Result<inject::device::DrsInstance>(std::uint32_t,
                                                              const inject::device::DrsProfile&)>
        create;
    std::function<inject::Result<void>(std::uint32_t, std::uint32_t)> destroy;
    /// The instances' checkpoint (hami::checkpoint_text); empty: in memory only.
    std::string checkpoint;
    Names names;  ///< what is registered (legacy_slices > 0: HAMi <= 2.9)
    /// HAMi's scheduler's name: only pods it placed are served (hami_trust.hpp).
    std::string scheduler = kDefaultScheduler;
};

class Mode {
public:
    /// Remembers the instances live pods on the node hold and publishes the node annotations.
    [[nodiscard]] static inject::Result<std::unique_ptr<Mode>> create(Deps deps);

    /// Allocate for `enflame.com/gcu` (whole cards, inventory `cards`).
    grpc::Status allocate_cards(const Inventory& cards, const Settings& s,
                                const v1beta1::AllocateRequest& req,
                                v1beta1::AllocateResponse* out);
    /// GetPreferredAllocation for `enflame.com/gcu`: the cards HAMi chose for the pod Allocate
    /// will serve next, so kubelet's own count of the cards agrees with HAMi's; the plugin's
    /// usual preference when no pod HAMi bound waits.
    grpc::Status preferred_cards(const Inventory& cards,
                                 const v1beta1::PreferredAllocationRequest& req,
                                 v1beta1::PreferredAllocationResponse* out);
    /// Allocate for the other resources of Names (`cards` is the whole cards' inventory):
    /// drs-gcu, gcu-memory and gcu-core get the DRS instance HAMi chose (a container asking
    /// both memory and core gets it in the first of the two Allocates kubelet makes, an empty
    /// answer in the second); legacy shared-gcu gets the card(s) HAMi chose, shared.
    grpc::Status allocate_other(const std::string& resource, const Inventory& cards,
                                const Settings& s, const v1beta1::AllocateRequest& req,
                                v1beta1::AllocateResponse* out);
    /// Destroys the instances of pods that are gone or ended; re-publishes the node
    /// annotations when `rediscover` or anything changed.
    void sweep(bool rediscover);

private:
    explicit Mode(Deps d) : d_(std::move(d)) {}
    inject::Result<Json> pods_on_node();
    /// The pods on the node Allocate may serve (hami::screen); the others logged once each.
    inject::Result<Json> waiting();
    inject::Result<v1beta1::ContainerAllocateResponse> one_card_container(const Inventory& cards,
                                                                          const Settings& s,
                                                                          std::size_t n_ids,
                                                                          bool& served);
    inject::Result<v1beta1::ContainerAllocateResponse> one_drs_container(const Inventory& cards,
                                                                         const Settings& s,
                                                                         std::size_t n_ids,
                                                                         const std::string& by);
    inject::Result<v1beta1::ContainerAllocateResponse> one_shared_container(const Inventory& cards,
                                                                            const Settings& s,
                                                                            std::size_t n_ids);
    void report(const std::string& ns, const std::string& name, const std::string& uid,
                const std::string& why, bool card_protocol);
    /// The device IDs and minors of the whole cards HAMi chose (`indexes`) for pod ns/name; a
    /// card gone or unhealthy is reported on the pod (as `report`) and is the error.
    struct Chosen {
        std::vector<std::string> ids;
        std::vector<std::uint32_t> minors;
    };
    inject::Result<Chosen> chosen_cards(const Inventory& cards,
                                        const std::vector<std::uint32_t>& indexes,
                                        const std::string& ns, const std::string& name,
                                        const std::string& uid, bool card_protocol);
    void publish(const inject::device::Host& host);
    /// `drops_records`: own_ lost records since the last save (k8s::drs::save_file).
    inject::Result<void> save(bool drops_records = false);
    void load_checkpoint();
    /// The DRS ledger's crash rule for pending_ (k8s/drs_ledger.hpp), at start.
    void converge_pending();
    k8s::drs::Ops ledger_ops();
    bool recorded(std::uint32_t card, std::uint32_t id) const;

    Deps d_;
    std::mutex mu_;  ///< one Allocate or sweep at a time
    std::vector<Recorded> own_;
    std::vector<k8s::drs::Pending>
        pending_;                    ///< instances being made (saved before efsmi is asked)
    std::uint64_t attempt_ = 0;      ///< tags this process' pending entries
    std::string published_;          ///< the last node annotations written
    std::set<std::string> skipped_;  ///< the pods logged as not placed by HAMi (uids)
    /// The container served by a gcu-memory or gcu-core Allocate that also asks the other one:
    /// kubelet's next Allocate for it (same resource and count, within a minute) gets an empty
    /// answer, the instance made once.
    struct Pair {
        std::string resource;
        std::size_t count = 0;
        std::chrono::steady_clock::time_point at;
    };
    std::optional<Pair> pair_;
};

}  // namespace device_plugin::hami
