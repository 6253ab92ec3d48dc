// SPDX-License-Identifier: Apache-2.0
#pragma once

// The exposition: Enflame gcu-exporter's metric names and labels (docs/kubelet-wire.md, metrics;
// so existing dashboards keep working), plus per-process device memory. Pure functions of a
// Snapshot; prometheus-cpp writes the text (escaping, HELP, TYPE).
//
// Labels on every card series: host, minor_number, uuid, busid, slot, name, pod_name,
// pod_namespace, container_name (slot: the kernel's PCI slot name of the card, "N/A" when the
// host names none, as gcu-exporter writes for an empty slot). A card held by several
// containers has one series per holder; a card nobody holds has one series with the pod labels
// empty. As gcu-exporter: one enflame_gcu_temperatures (the ASIC) and one enflame_gcu_clock
// (the DTU, with power_mode) per card and holder; the other sensors and the HBM clock under
// names of their own (enflame_gcu_memory_temperature, _board_temperature, _hbm_clock).
// Extra labels: enflame_gcu_health{healthmsg="Healthy|Unhealthy|Unknown"},
// enflame_gcu_process_memory_used_bytes{pid} (card labels without the pod labels: a process is
// not a holder), enflame_gcu_drs_instance_info{drs_id,profile,instance_id} (card labels, one per
// DRS instance discovery found; its holder is the card's). A reading the library cannot give
// has no series (gcu-exporter printed -1).

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "exporter/snapshot.hpp"

namespace exporter {

/// Every metric family of a snapshot, empty families left out. enflame_gcu_exporter_up (1)
/// and enflame_gcu_count (the cards in the snapshot) are always there.
[[nodiscard]] std::vector<prometheus::MetricFamily> families(const Snapshot& s);

/// The Prometheus text format (0.0.4) of `families(s)`.
[[nodiscard]] std::string exposition(const Snapshot& s);

/// enflame_gcu_health's value: 2 healthy, 1 unhealthy, 0 unknown.
[[nodiscard]] int health_value(const std::optional<bool>& healthy) noexcept;

}  // namespace exporter
