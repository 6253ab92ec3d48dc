// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/scheduler.hpp"

#include <CLI/CLI.hpp>
#include <mutex>

namespace epp {

// A first cut: round-robin over the targets, no metrics yet (the pipeline replaces it).
struct Scheduler::State {
    SchedulingOptions opts;
    mutable std::mutex mu;
    std::vector<Target> targets;
    size_t next = 0;
};

void add_scheduling_flags(CLI::App& app, SchedulingOptions& o) {
    app.add_option("--config-file", o.config_file, "EndpointPickerConfig YAML");
}

Scheduler::Scheduler(SchedulingOptions o, prometheus::Registry&) : s_(std::make_unique<State>()) {
    s_->opts = std::move(o);
}
Scheduler::~Scheduler() = default;

void Scheduler::set_targets(std::vector<Target> targets) {
    std::lock_guard l(s_->mu);
    s_->targets = std::move(targets);
}
void Scheduler::start() {}
void Scheduler::stop() {}
bool Scheduler::ready() const {
    std::lock_guard l(s_->mu);
    return !s_->targets.empty();
}

Decision Scheduler::decide(const Request&) {
    std::lock_guard l(s_->mu);
    if (s_->targets.empty()) return {503, "no ready endpoint", {}, {}};
    Decision d;
    d.endpoints.push_back(s_->targets[s_->next++ % s_->targets.size()].address);
    return d;
}
void Scheduler::served(const Request&, const std::string&) {}
void Scheduler::finished(const Request&) {}

}  // namespace epp
