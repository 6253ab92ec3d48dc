// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The endpoints the scheduler may route to and what was last scraped from each. The scrape
/// thread writes, the streams' threads take snapshots; one mutex, short holds.

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "epp/scheduling/server_metrics.hpp"
#include "epp/target.hpp"

namespace epp {

using Clock = std::chrono::steady_clock;

/// What the P/D filters read from the llm-d.ai/role label.
struct Roles {
    bool decode = true;
    bool prefill = false;
};
inline constexpr const char* kRoleLabel = "llm-d.ai/role";
/// decode, prefill, prefill-decode, both, encode-* as llm-d names them; no label: decode only.
[[nodiscard]] Roles roles_of(const Target& t);

/// One endpoint as the scheduler knows it at one moment.
struct Endpoint {
    Target target;
    Roles roles;
    /// From the engine-type label or the config; Unknown: found by probing the first scrape.
    Engine engine = Engine::Unknown;
    std::optional<ServerMetrics> metrics;  ///< the last good scrape (llama.cpp: with /slots kv)
    Clock::time_point scraped{};           ///< when it was taken; epoch: never
    std::optional<GcuMemory> gcu;          ///< free device memory of its pod, when known
    Clock::time_point gcu_scraped{};
};

/// Thread-safe endpoint table keyed by address.
class Datastore {
public:
    explicit Datastore(std::optional<Engine> default_engine) : default_engine_(default_engine) {}

    /// Replaces the endpoints; those that stay keep their metrics. Returns the addresses now held.
    std::set<std::string> set_targets(std::vector<Target> targets);
    [[nodiscard]] std::vector<Endpoint> snapshot() const;
    [[nodiscard]] size_t size() const;

    /// A scrape of `address`'s metrics: `text` parsed, the engine probed if unknown. Returns
    /// an empty string, or why the scrape is no good (the endpoint keeps its old metrics,
    /// which go stale).
    std::string put_metrics(const std::string& address, std::string_view text,
                            Clock::time_point at);
    /// A llama.cpp /slots answer: the KV usage of the next metrics.
    std::string put_slots(const std::string& address, std::string_view json);
    /// A gcu-exporter scrape of `url`: the memory of every endpoint whose gcu_metrics_url it is.
    std::string put_gcu(const std::string& url, std::string_view text, Clock::time_point at);

private:
    mutable std::mutex mu_;
    std::optional<Engine> default_engine_;
    std::map<std::string, Endpoint> endpoints_;
    std::map<std::string, double> slots_kv_;  // llama.cpp: from /slots, by address
};

}  // namespace epp
