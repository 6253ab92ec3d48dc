// SPDX-License-Identifier: Apache-2.0
#include "exporter/collector.hpp"

#include <algorithm>

#include "exporter/attribution.hpp"
#include "exporter/metrics.hpp"
#include "inject/log.hpp"

namespace exporter {
namespace {

using Clock = std::chrono::steady_clock;

CardIdentity identity(std::uint32_t index, const inject::efml::Sample& s,
                      const inject::device::Host* host) {
    CardIdentity id;
    id.index = index;
    const inject::device::Device* d = nullptr;
    if (host) {
        for (const auto& dev : host->devices) {
            if (dev.index == index) d = &dev;
        }
    }
    if (!d) {
        // Without discovery: what libefml says, and no minor (libefml has no call for it).
        id.uuid = s.uuid;
        id.busid = s.pci_bus_id;
        id.name = s.name;
        return id;
    }
    id.minor = d->minor;
    id.uuid = d->uuid.empty() ? s.uuid : d->uuid;
    id.busid = d->pci_bus_id.empty() ? s.pci_bus_id : d->pci_bus_id;
    id.name = d->product.empty() ? s.name : d->product;
    id.drs = d->drs_instances;
    return id;
}

}  // namespace

Collector::Collector(std::unique_ptr<Source> source, CollectorOptions opts)
    : source_(std::move(source)), opts_(std::move(opts)) {
    if (!opts_.pod_resources_socket.empty())
        kubelet_.emplace(opts_.pod_resources_socket, opts_.pod_resources_timeout);
}

Collector::~Collector() {
    stop();
}

std::vector<CardReading> Collector::read_cards() {
    auto n = source_->count();
    if (!n) {
        if (!driver_down_)
            inject::log::warn("driver gone: {}; the cards' series are dropped until it is back",
                              n.error().what());
        driver_down_ = true;
        host_.reset();
        return {};
    }
    if (driver_down_) inject::log::info("driver back: {} cards", *n);
    driver_down_ = false;
    if (!host_ || discovered_for_ != *n) {
        auto h = source_->discover();
        discovered_for_ = *n;
        if (h) {
            if (discovery_failed_) inject::log::info("discovery works again");
            inject::log::info("discovered {} cards ({}); libefml reports {}", h->devices.size(),
                              h->backend, *n);
            discovery_failed_ = false;
            host_ = std::move(*h);
            slots_ = source_->pci_slots();
        } else {
            if (!discovery_failed_)
                inject::log::warn(
                    "discovering cards: {}; labelling them from libefml alone (no minor_number)",
                    h.error().what());
            discovery_failed_ = true;
            host_.reset();
        }
    }
    std::vector<CardReading> cards;
    std::vector<std::uint32_t> unreadable;
    for (std::uint32_t i = 0; i < *n; ++i) {
        auto s = source_->sample(i);
        if (!s) {
            if (std::find(unreadable_.begin(), unreadable_.end(), i) == unreadable_.end())
                inject::log::warn("card {}: {}; its series are dropped until it answers", i,
                                  s.error().what());
            unreadable.push_back(i);
            continue;
        }
        if (std::find(unreadable_.begin(), unreadable_.end(), i) != unreadable_.end())
            inject::log::info("card {} answers again", i);
        auto id = identity(i, *s, host_ ? &*host_ : nullptr);
        // The slot's address is the bus id without its function ("0000:17:00" of "0000:17:00.0").
        if (const auto it = slots_.find(id.busid.substr(0, id.busid.rfind('.')));
            it != slots_.end())
            id.slot = it->second;
        cards.push_back({std::move(id), std::move(*s), {}});
    }
    unreadable_ = std::move(unreadable);
    return cards;
}

void Collector::attribute_holders(std::vector<CardReading>& cards) {
    if (!kubelet_) return;
    auto r = kubelet_->list();
    if (!r) {
        if (!kubelet_down_) inject::log::warn("pod attribution off: {}", r.error().what());
        kubelet_down_ = true;
        return;
    }
    if (kubelet_down_)
        inject::log::info("pod attribution on: kubelet answers on {}", opts_.pod_resources_socket);
    kubelet_down_ = false;
    std::vector<CardIdentity> ids;
    ids.reserve(cards.size());
    for (const auto& c : cards) ids.push_back(c.id);
    auto holders = attribute(*r, ids);
    for (auto& c : cards) {
        if (auto it = holders.find(c.id.index); it != holders.end())
            c.holders = std::move(it->second);
    }
}

Snapshot Collector::collect() {
    const auto start = Clock::now();
    Snapshot s;
    s.host = opts_.host;
    s.cards = read_cards();
    if (host_) s.driver_version = host_->driver_version;
    attribute_holders(s.cards);
    auto text = std::make_shared<const std::string>(exposition(s));
    const auto bytes = text->size();
    {
        const std::lock_guard lock(mu_);
        text_ = std::move(text);
    }
    const auto end = Clock::now();
    last_pass_ns_ = end.time_since_epoch().count();
    inject::log::debug("pass: {} cards, {} bytes, {} us", s.cards.size(), bytes,
                       std::chrono::duration_cast<std::chrono::microseconds>(end - start).count());
    return s;
}

void Collector::start() {
    thread_ = std::thread([this] {
        auto next = Clock::now() + opts_.interval;
        std::unique_lock lock(stop_mu_);
        while (!stop_cv_.wait_until(lock, next, [this] { return stopping_; })) {
            lock.unlock();
            collect();
            lock.lock();
            next += opts_.interval;
            if (const auto now = Clock::now(); next < now)
                next = now + opts_.interval;  // fell behind
        }
    });
}

void Collector::stop() {
    {
        const std::lock_guard lock(stop_mu_);
        stopping_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const std::string> Collector::text() const {
    const std::lock_guard lock(mu_);
    return text_;
}

std::optional<std::chrono::milliseconds> Collector::since_last() const {
    const auto ns = last_pass_ns_.load();
    if (ns == 0) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        Clock::now() - Clock::time_point(Clock::duration(ns)));
}

}  // namespace exporter
