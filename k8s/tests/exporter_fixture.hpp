// SPDX-License-Identifier: Apache-2.0
#pragma once

// What enflame-gcu-exporter's tests share (exporter_collector_test.cpp,
// exporter_attribution_test.cpp, exporter_http_test.cpp): a driver whose answers the test sets,
// two cards, a collector on them, and the sample lines of an exposition.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "exporter/attribution.hpp"
#include "exporter/collector.hpp"
#include "exporter/metrics.hpp"

namespace exporter_test {

using exporter::CardIdentity;
using exporter::Collector;
using exporter::CollectorOptions;
using exporter::Holder;
using inject::efml::Sample;

// A driver whose answers the test sets.
struct FakeDriver {
    std::optional<std::uint32_t> count;       ///< nullopt = the driver is gone
    std::map<std::uint32_t, Sample> samples;  ///< a card missing here fails its sample
    inject::device::Host host;
    bool discovery_fails = false;
    int discoveries = 0;
    std::map<std::string, std::string> slots;  ///< /sys/bus/pci/slots: address -> name
};

class FakeSource final : public exporter::Source {
public:
    explicit FakeSource(FakeDriver& d) : d_(d) {}
    inject::Result<std::uint32_t> count() override {
        if (!d_.count)
            return inject::fail(inject::Errc::Io, "EfmlGetDevCount: driver not loaded (6)");
        return *d_.count;
    }
    inject::Result<Sample> sample(std::uint32_t i) override {
        auto it = d_.samples.find(i);
        if (it == d_.samples.end())
            return inject::fail(inject::Errc::Io, "card " + std::to_string(i) + ": error (1)");
        return it->second;
    }
    inject::Result<inject::device::Host> discover() override {
        ++d_.discoveries;
        if (d_.discovery_fails) return inject::fail(inject::Errc::NotFound, "no efsmi");
        return d_.host;
    }
    std::map<std::string, std::string> pci_slots() override { return d_.slots; }

private:
    FakeDriver& d_;
};

inline Sample full_sample(std::uint32_t i) {
    Sample s;
    s.index = i;
    s.name = "Enflame S60";
    s.uuid = "EFML-U" + std::to_string(i);
    s.pci_bus_id = "0000:9" + std::to_string(i) + ":00.0";
    s.memory_total_bytes = 48ULL << 30;
    s.memory_used_bytes = 12ULL << 30;
    s.usage_percent = 42;
    s.temperature_c = 51.5;
    s.memory_temperature_c = 47;
    s.board_temperature_c = 39;
    s.power_w = 75;
    s.power_capability_w = 300;
    s.dtu_clock_mhz = 1400;
    s.hbm_clock_mhz = 1600;
    s.ecc_single_bit = 3;
    s.ecc_double_bit = 1;
    s.pcie_link_width = 8;
    s.pcie_max_link_width = 16;
    s.pcie_link_speed = 4;
    s.pcie_max_link_speed = 5;
    s.healthy = true;
    s.processes = {{4242, 1ULL << 30}};
    return s;
}

inline inject::device::Device card(std::uint32_t i, std::uint32_t minor) {
    inject::device::Device d;
    d.index = i;
    d.minor = minor;
    d.uuid = "TR6Y4601000" + std::to_string(i);
    d.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
    d.product = "S60";
    return d;
}

// Two cards: discovery names them (minors 4 and 7), libefml reads them.
inline FakeDriver two_cards() {
    FakeDriver d;
    d.count = 2;
    d.host.driver_version = "1.4.3.4";
    d.host.devices = {card(0, 4), card(1, 7)};
    d.samples = {{0, full_sample(0)}, {1, full_sample(1)}};
    d.slots = {{"0000:10:00", "PCIE3_GPU"}, {"0000:99:00", "PCIE9"}};  // card 1's slot unnamed
    return d;
}

inline std::unique_ptr<Collector> collector(FakeDriver& d, std::string socket = "") {
    CollectorOptions o;
    o.host = "node-a";
    o.pod_resources_socket = std::move(socket);
    o.pod_resources_timeout = std::chrono::milliseconds(1000);
    return std::make_unique<Collector>(std::make_unique<FakeSource>(d), o);
}

inline const char* kCard0 =
    R"(host="node-a",minor_number="4",uuid="TR6Y46010000",busid="0000:10:00.0",slot="PCIE3_GPU",name="S60")";
inline const char* kCard1 =
    R"(host="node-a",minor_number="7",uuid="TR6Y46010001",busid="0000:11:00.0",slot="N/A",name="S60")";
inline const char* kNobody = R"(pod_name="",pod_namespace="",container_name="")";

// The sample lines of metric `name` in an exposition.
inline std::vector<std::string> series(const std::string& text, const std::string& name) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with(name + "{") || line.starts_with(name + " ")) out.push_back(line);
    }
    return out;
}

inline std::string line(const std::string& name, const std::string& labels,
                        const std::string& value) {
    return name + "{" + labels + "} " + value;
}

}  // namespace exporter_test
