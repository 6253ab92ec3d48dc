// SPDX-License-Identifier: Apache-2.0
#pragma once

// The DRA driver's node side, without gRPC: prepare and unprepare claims against the cards
// discovery found, writing per-claim CDI specs and the checkpoint. The API server is behind a
// ClaimSource (a function), so unit tests feed claim JSON without one.
//
// Order of writes, and what a crash in between leaves:
//   prepare:   spec file, then checkpoint, then the answer. Killed after the spec: a spec with
//              no checkpoint entry, which kubelet never saw answered; it retries the prepare.
//   unprepare: checkpoint, then spec file. Killed in between: the same leftover.
// On start (converge()): a spec with no checkpoint entry is removed (the retry writes it
// again); a checkpointed claim whose spec is missing gets it written again from the
// checkpoint. A prepare of a checkpointed claim answers from the checkpoint (no API call) and
// re-writes a missing spec.

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "claims.hpp"
#include "inject/cdi_generate.hpp"
#include "inject/device.hpp"
#include "inject/result.hpp"

namespace edra {

/// Fetches a ResourceClaim object by namespace and name.
using ClaimSource =
    std::function<inject::Result<Json>(const std::string& ns, const std::string& name)>;
/// Discovers the node's cards (again: DRS instances come and go).
using Discoverer = std::function<inject::Result<inject::device::Host>()>;

struct DriverOptions {
    std::string cdi_root = "/var/run/cdi";
    std::string checkpoint_path;
    inject::cdi::GenerateOptions cdi;  ///< roots, library paths, hook
    std::string driver_name = std::string(kDriverName);
};

/// One claim's answer: its devices, or one error line.
struct ClaimAnswer {
    std::vector<PreparedDevice> devices;
    std::string error;
};

class Driver {
public:
    /// Loads the checkpoint (an unreadable one is an error: we would forget prepared claims)
    /// and discovers the cards.
    [[nodiscard]] static inject::Result<std::unique_ptr<Driver>> create(DriverOptions o,
                                                                        ClaimSource claims,
                                                                        Discoverer discover);

    /// Brings the CDI folder and the checkpoint into agreement (see above). Lines logged.
    void converge();

    /// NodePrepareResources: every claim answered, keyed by UID.
    [[nodiscard]] std::map<std::string, ClaimAnswer> prepare(const std::vector<ClaimRef>& claims);
    /// NodeUnprepareResources: UID -> error ("" = done). Unknown claims succeed.
    [[nodiscard]] std::map<std::string, std::string> unprepare(const std::vector<ClaimRef>& claims);

    /// The checkpoint as it is now.
    [[nodiscard]] Checkpoint checkpoint() const;

private:
    Driver(DriverOptions o, ClaimSource claims, Discoverer discover, inject::device::Host host,
           Checkpoint cp)
        : o_(std::move(o)),
          claims_(std::move(claims)),
          discover_(std::move(discover)),
          host_(std::move(host)),
          cp_(std::move(cp)) {}

    /// The claim from the API server, checked, with the answer it will get (no files).
    inject::Result<PreparedClaim> fetch(const ClaimRef& ref) const;
    inject::Result<bool> write_spec(const std::string& uid, const std::vector<DeviceName>& devices,
                                    bool only_if_changed = false);
    /// The spec of a claim we know, from its answer (after a restart, or when it went missing).
    inject::Result<bool> write_spec(const std::string& uid, const PreparedClaim& c,
                                    bool only_if_changed = false);

    DriverOptions o_;
    ClaimSource claims_;
    Discoverer discover_;
    mutable std::mutex mu_;  ///< guards host_, cp_ and the files (not the API calls)
    inject::device::Host host_;
    Checkpoint cp_;
};

}  // namespace edra
