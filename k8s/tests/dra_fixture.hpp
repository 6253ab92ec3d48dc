// SPDX-License-Identifier: Apache-2.0
#pragma once

// What the DRA plugin's tests share: a small host and an allocated claim as JSON.

#include <string>
#include <vector>

#include "dra/claims.hpp"
#include "inject/device.hpp"

namespace edra_test {

using dra::Json;

// Two cards; card 1 holds DRS instance 2 (profile 1g.11gb).
inline inject::device::Host host2() {
    inject::device::Host h;
    for (std::uint32_t i = 0; i < 2; ++i) {
        inject::device::Device d;
        d.index = d.minor = i;
        d.uuid = "UUID" + std::to_string(i);
        d.node.path = "/dev/gcu" + std::to_string(i);
        d.node.host_path = "/sim/dev/gcu" + std::to_string(i);
        d.node.major = 238;
        d.node.minor = i;
        h.devices.push_back(d);
    }
    h.devices[1].drs_instances.push_back({1, 2, "1g.11gb", "4c1e9a52-0000-4000-8000-000000000002"});
    inject::device::DeviceNode ctl;
    ctl.path = "/dev/gcuctl";
    ctl.host_path = "/sim/dev/gcuctl";
    ctl.major = 238;
    ctl.minor = 255;
    h.control = ctl;
    return h;
}

inline Json claim(const std::string& name, const std::string& uid,
                  const std::vector<std::string>& devices) {
    Json results = Json::array();
    for (const auto& d : devices)
        results.push_back(
            {{"request", "gpu"}, {"driver", "gcu.enflame.com"}, {"pool", "node1"}, {"device", d}});
    return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", uid}}},
            {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
}

}  // namespace edra_test
