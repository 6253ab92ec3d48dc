// SPDX-License-Identifier: Apache-2.0
#pragma once

// The exposition: Enflame gcu-exporter's metric names and labels (KUBERNETES.md section 5, so
// existing dashboards keep working), plus per-process device memory. Pure functions of a
// Snapshot; prometheus-cpp writes the text (escaping, HELP, TYPE).
//
// Labels on every card series: host, minor_number, uuid, busid, name, pod_name, pod_namespace,
// container_name. A card held by several containers has one series per holder; a card nobody
// holds has one series with the pod labels empty. Extra labels where one name carries several
// readings: enflame_gcu_temperatures{sensor="asic|memory|board"},
// enflame_gcu_clock{domain="dtu|hbm"}, enflame_gcu_health{healthmsg="Healthy|Unhealthy|Unknown"},
// enflame_gcu_process_memory_used_bytes{pid} (card labels without the pod labels: a process is
// not a holder). A reading the library cannot give has no series (gcu-exporter printed -1).

#include "snapshot.hpp"

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace exporter {

/// Every metric family of a snapshot, empty families left out. enflame_gcu_exporter_up (1)
/// and enflame_gcu_count (the cards in the snapshot) are always there.
[[nodiscard]] std::vector<prometheus::MetricFamily> families(const Snapshot& s);

/// The Prometheus text format (0.0.4) of `families(s)`.
[[nodiscard]] std::string exposition(const Snapshot& s);

/// enflame_gcu_health's value: 2 healthy, 1 unhealthy, 0 unknown.
[[nodiscard]] int health_value(const std::optional<bool>& healthy) noexcept;

}  // namespace exporter
