// SPDX-License-Identifier: Apache-2.0
#pragma once

// Keeps this node's ResourceSlices for our driver equal to what the cards are: lists the slices
// of (spec.nodeName, spec.driver), and when they differ from build_slices() writes every slice
// of the pool at the next pool.generation (creating the missing ones) and only then deletes the
// extra ones. The scheduler only considers a pool's highest generation, so at no moment are two
// pools' worth of devices offered. Kubelet deletes a node's slices when it starts: the next
// publish() puts them back. remove_all() is for a clean shutdown.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "dra/slices.hpp"
#include "k8s/apiserver.hpp"
#include "k8s/reflector.hpp"

namespace dra {

/// What one publish() did.
struct PublishStats {
    int created = 0;
    int updated = 0;
    int deleted = 0;
    int unchanged = 0;
    std::int64_t generation = 0;  ///< the pool's generation afterwards
};

class Publisher {
public:
    /// `opts.node_name`, `opts.api_version` ("v1"/"v1beta1", from Client::resource_api_version),
    /// `opts.drs` and `opts.driver` say what to publish; `opts.generation` is ignored (the
    /// publisher numbers generations itself). DrsMode::Auto asks the server (`GET /version`) on
    /// the first publish; before the first write with counters it creates one slice with
    /// `dryRun=All` (nothing stored) and publishes Instances from the first write when the
    /// answer lacks the counters (a server without the DRAPartitionableDevices gate drops the
    /// fields). Should a later write still come back without them, it falls back then and
    /// publishes again.
    Publisher(std::shared_ptr<k8s::api::Client> client, SliceOptions opts);

    /// Reconciles the pool with `host`. Errors name the slice and the call that failed; a failed
    /// publish leaves at worst a mix the next one repairs (old generations are never preferred).
    [[nodiscard]] inject::Result<PublishStats> publish(const inject::device::Host& host);

    /// Deletes every slice of this node and driver (clean shutdown). Returns how many went.
    [[nodiscard]] inject::Result<int> remove_all();

    /// The DrsMode in use: opts.drs, or what Auto settled on (Auto until the first publish).
    [[nodiscard]] DrsMode drs_mode() const { return opts_.drs; }

    /// "/apis/resource.k8s.io/<version>/resourceslices".
    [[nodiscard]] std::string collection() const;
    /// "spec.nodeName=<node>,spec.driver=<driver>".
    [[nodiscard]] std::string field_selector() const;

    /// True when a watch event (`type`, `object`) is the echo of one of our own writes: a
    /// create or update whose answer carried that resourceVersion, or a delete of that name.
    /// Each echo is recognised once. Thread-safe (the watch runs on its own thread).
    [[nodiscard]] bool own_write(const std::string& type, const Json& object);

private:
    void remember(const std::string& key);
    void remember_locked(const std::string& key);  ///< own_mu_ held
    [[nodiscard]] inject::Result<Json> write(const Json& slice, const Json* existing,
                                             PublishStats& st);
    [[nodiscard]] inject::Result<PublishStats> reconcile(const inject::device::Host& host);
    /// DrsMode::Auto, before its first write with counters: a dryRun=All create of one slice
    /// with counters; the answer without them switches to Instances (see publish()).
    [[nodiscard]] inject::Result<void> probe_counters(const inject::device::Host& host);

    std::shared_ptr<k8s::api::Client> client_;
    SliceOptions opts_;
    bool auto_ = false;            ///< opts_.drs came from DrsMode::Auto and may still fall back
    bool dropped_ = false;         ///< the last reconcile saw the server drop our counter sets
    bool probed_ = false;          ///< probe_counters() got its answer
    std::int64_t generation_ = 0;  ///< the highest generation we wrote
    std::mutex own_mu_;
    std::set<std::string> own_;  ///< "rv:<resourceVersion>" written, "del:<name>" deleted
};

/// Watches this node's slices of our driver (`fieldSelector` spec.nodeName and spec.driver)
/// through k8s/common's Reflector (list, then watch from its resourceVersion with bookmarks;
/// 410 Gone lists again; a dropped stream is watched again after a backoff: `retry`, doubling up
/// to 30 s, reset by a stream that worked). A change that is not the echo of the publisher's
/// own write (kubelet's startup wipe, `kubectl delete resourceslice`, an edit) calls `changed`
/// at once, and so does each list after the first (changes between two streams were not seen).
/// Between events the thread sleeps in the stream's poll: no CPU while idle.
class SliceWatch {
public:
    struct Options {
        std::chrono::milliseconds retry{500};  ///< first backoff after a failure
        int timeout_seconds = 300;             ///< the server rotates the stream this often
    };
    SliceWatch(std::shared_ptr<k8s::api::Client> client, Publisher& publisher,
               std::function<void()> changed, Options opts);
    ~SliceWatch();
    SliceWatch(const SliceWatch&) = delete;
    SliceWatch& operator=(const SliceWatch&) = delete;

    void start();
    /// Ends the stream (within a second) and joins the thread.
    void stop();

private:
    void on_event(const k8s::api::WatchEvent& ev);

    std::shared_ptr<k8s::api::Client> client_;
    Publisher& publisher_;
    std::function<void()> changed_;
    std::unique_ptr<k8s::Reflector> reflector_;
    std::thread thread_;
};

/// Runs publish() on a thread: at start, whenever trigger() is called (the plugin registered
/// again, a card changed health) and every `resync` (kubelet deleted the slices while we did
/// not look). Sleeps on a condition variable in between (no polling). After a failure it
/// tries again after `retry`, doubling up to `resync`.
class PublisherLoop {
public:
    using Discover = std::function<inject::Result<inject::device::Host>()>;
    using Report = std::function<void(const inject::Result<PublishStats>&)>;

    PublisherLoop(Publisher& publisher, Discover discover, std::chrono::milliseconds resync,
                  std::chrono::milliseconds retry = std::chrono::milliseconds(1000),
                  Report report = {});
    ~PublisherLoop();
    PublisherLoop(const PublisherLoop&) = delete;
    PublisherLoop& operator=(const PublisherLoop&) = delete;

    void start();
    void trigger();
    /// Stops the thread; with `remove`, deletes the node's slices afterwards.
    void stop(bool remove = true);

private:
    void run();

    Publisher& publisher_;
    Discover discover_;
    Report report_;
    std::chrono::milliseconds resync_, retry_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool pending_ = true;
    std::thread thread_;
};

}  // namespace dra
