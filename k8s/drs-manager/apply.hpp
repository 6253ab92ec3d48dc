// SPDX-License-Identifier: Apache-2.0
#pragma once

// Running a plan through efsmi with the DRS instance ledger (k8s/drs_ledger.hpp): before each
// create a Pending entry is saved; right after it, in one save, the entry goes and the made
// instance is recorded. A crash in between leaves the entry without a made id: converge() at
// start destroys nothing for it and the next plan counts whatever efsmi made, so no instance
// leaks and none is made twice. Each destroy first checks the instance is still the one planned
// (k8s::drs::release). docs/drs-manager.md, "The daemon".

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "drs-manager/plan.hpp"
#include "inject/device.hpp"
#include "inject/result.hpp"
#include "k8s/drs_ledger.hpp"

namespace drs_manager {

/// efsmi's instance operations (inject::drs), as functions so tests can stand in.
struct Efsmi {
    std::function<inject::Result<std::vector<inject::device::DrsInstance>>(std::uint32_t)> list;
    std::function<inject::Result<inject::device::DrsInstance>(std::uint32_t,
                                                              const inject::device::DrsProfile&)>
        create;
    std::function<inject::Result<void>(std::uint32_t, std::uint32_t)> destroy;
    [[nodiscard]] k8s::drs::Ops ops() const { return {list, destroy}; }
};

/// The manager's ledger file: {"version":1,"made":[{card,id,profile,uuid}],"pending":[...]}
/// (the pending entries' owner key is "layout").
struct Ledger {
    std::vector<k8s::drs::Made> made;
    std::vector<k8s::drs::Pending> pending;
    friend bool operator==(const Ledger&, const Ledger&) = default;
};
[[nodiscard]] std::string ledger_text(const Ledger& l);
[[nodiscard]] inject::Result<Ledger> parse_ledger(const std::string& text,
                                                  const std::string& source);

class Applier {
public:
    Applier(std::string path, Efsmi efsmi) : path_(std::move(path)), efsmi_(std::move(efsmi)) {}

    /// Reads the ledger (a corrupt one falls back to `.prev`, logged) and converges its pending
    /// creates; `held` says which instances a plugin's checkpoint records (never destroyed).
    [[nodiscard]] inject::Result<void> start(const k8s::drs::IsRecorded& held);
    /// Runs `plan` (not blocked) for layout `layout`: per card its destroys, then its creates.
    /// Stops at the first efsmi error, which names the card, the instance or profile.
    [[nodiscard]] inject::Result<void> run(const Plan& plan, const std::string& layout);
    [[nodiscard]] const Ledger& ledger() const { return ledger_; }

private:
    [[nodiscard]] inject::Result<void> save(bool drops_records);
    [[nodiscard]] inject::Result<void> destroy(const inject::device::DrsInstance& in);
    [[nodiscard]] inject::Result<void> create(std::uint32_t card,
                                              const inject::device::DrsProfile& profile,
                                              const std::string& layout);

    std::string path_;
    Efsmi efsmi_;
    Ledger ledger_;
    std::uint64_t attempt_ = 0;
};

}  // namespace drs_manager
