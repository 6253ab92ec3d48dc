// SPDX-License-Identifier: Apache-2.0
// The libefml discovery backend, on inject::efml::Library: name, UUID, serial, the PCI address
// (EfmlGetDevInfo), memory (EfmlGetDevMem), NUMA node and health. The library has no
// minor-number call: confirm() takes the minor from sysfs and the device node, exactly as for
// the efsmi backends.
#include "inject/efml.hpp"

#include <cstdio>
#include <utility>

#include "device/backends.hpp"

namespace inject::discover::detail {

Result<Report> query_efml(const Options& opts) {
    INJECT_TRY(auto lib, efml::Library::open(opts));
    INJECT_TRY(const std::uint32_t n, lib->count());
    Report rep;
    rep.driver_version = lib->driver_version();
    for (std::uint32_t i = 0; i < n; ++i) {
        INJECT_TRY(efml::Sample s, lib->sample(i));
        RawCard c;
        c.index = i;
        c.driver_version = rep.driver_version;
        c.product = std::move(s.name);
        c.uuid = std::move(s.uuid);
        c.serial = std::move(s.serial);
        c.pci_bus_id = std::move(s.pci_bus_id);
        if (s.pci_device_id) {
            char buf[8];
            (void)std::snprintf(buf, sizeof buf, "%04x", *s.pci_device_id & 0xffffU);
            c.pci_device_id = buf;
        }
        c.memory_bytes = s.memory_total_bytes.value_or(0);
        if (s.numa_node) c.numa_node = *s.numa_node;
        c.healthy = s.healthy;
        rep.cards.push_back(std::move(c));
    }
    return rep;
}

}  // namespace inject::discover::detail
