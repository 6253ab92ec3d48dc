// SPDX-License-Identifier: Apache-2.0
#pragma once

// Hosts for the ResourceSlice tests, with the values `enflame-sim-host example --drs` gives its
// S60 cards (driver 1.4.3.4, 42976 MiB each, profiles 1g.11gb x4 / 2g.22gb x2 / full, two
// 1g.11gb instances on card 0 and one 2g.22gb on card 1).

#include <cstdio>
#include <string>

#include "inject/device.hpp"

namespace k8s_test {

inline inject::device::Host s60_host(std::uint32_t cards, bool drs) {
    constexpr std::uint64_t kMiB = 1024ULL * 1024ULL;
    inject::device::Host h;
    h.driver_version = "1.4.3.4";
    h.backend = "efsmi-json";
    for (std::uint32_t i = 0; i < cards; ++i) {
        inject::device::Device d;
        d.index = i;
        d.minor = i;
        char buf[32];
        std::snprintf(buf, sizeof buf, "TR6Y4601%04u", i);
        d.uuid = buf;
        d.product = "S60";
        const auto info = inject::device::product_info("S60");
        d.architecture = info.architecture;
        d.family = info.family;
        d.memory_bytes = 42976 * kMiB;
        std::snprintf(buf, sizeof buf, "0000:%02x:00.0", (0x10 + i) % 256);
        d.pci_bus_id = buf;
        d.healthy = true;
        d.driver_version = "1.4.3.4";
        d.node.path = d.node.host_path = "/dev/gcu" + std::to_string(i);
        h.devices.push_back(d);
    }
    if (!drs) return h;
    h.drs_profiles = {{"1g.11gb", 0, 4, 10744 * kMiB},
                      {"2g.22gb", 1, 2, 21488 * kMiB},
                      {"full", 2, 1, 42976 * kMiB}};
    h.devices[0].drs_instances = {{0, 0, "1g.11gb", "4c1e9a52-0000-4000-8000-000000000000"},
                                  {0, 1, "1g.11gb", "4c1e9a52-0000-4000-8000-000000000001"}};
    if (cards > 1)
        h.devices[1].drs_instances = {{1, 0, "2g.22gb", "4c1e9a52-0000-4000-8000-000000000002"}};
    return h;
}

}  // namespace k8s_test
