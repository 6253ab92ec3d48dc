// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it:
/// expiry judged by our own clock (when the record last changed as we saw it), a 409 on a
/// race, the Lease given up on the way out.

#include <chrono>
#include <string>

#include "inject/result.hpp"
#include "k8s/apiserver.hpp"

namespace k8s {

/// RFC 3339 with microseconds, UTC (a Lease's MicroTime; conditions take it too).
[[nodiscard]] std::string micro_time(std::chrono::system_clock::time_point t);

struct LeaderOptions {
    std::string ns, name, identity;
    std::chrono::seconds lease_duration{15}, renew_deadline{10};
    std::chrono::milliseconds retry_period{2000};
};

/// Blocks until this process holds the Lease, then renews it on a thread of its own; if a
/// renewal has not succeeded within renew_deadline the process exits (as client-go's
/// OnStoppedLeading does in most operators): another replica takes over.
[[nodiscard]] inject::Result<void> lead(api::Client& client, const LeaderOptions& o);

/// Gives the Lease up when `o.identity` holds it (client-go's ReleaseOnCancel: no holder, a
/// duration of 1 s), so the other replica leads at its next try instead of after the lease's
/// 15 s; called when the process is told to stop. False when it was not ours.
[[nodiscard]] inject::Result<bool> release(api::Client& client, const LeaderOptions& o);

}  // namespace k8s
