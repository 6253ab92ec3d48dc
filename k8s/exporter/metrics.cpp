// SPDX-License-Identifier: Apache-2.0
#include "exporter/metrics.hpp"

#include <prometheus/text_serializer.h>

#include <functional>
#include <sstream>

namespace exporter {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;
using Reading = std::function<std::optional<double>(const inject::efml::Sample&)>;

template <typename T>
std::optional<double> as_double(const std::optional<T>& v) {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
}

// One gauge per card and holder: a name, its help, extra labels, and what it reads.
struct CardGauge {
    const char* name;
    const char* help;
    Labels extra;
    Reading read;
};

// What gcu-exporter writes in power_mode when libefml cannot tell (go-eflib's
// GetDevicePowerMode on ErrUnSupport). Our libefml binding has no power-mode call (its C name
// is not public), so the label is kept for dashboards that group by it, with this value.
constexpr const char* kPowerModeUnknown = "not supported";

// gcu-exporter's names. Units as gcu-exporter documents them: usage in percent, memory_usage
// as a fraction, power_usage as the percentage of the capability, power in watts, clocks in
// MHz, temperatures in degrees Celsius. The ECC counts keep gcu-exporter's `_total_count`
// names; they are gauges because the driver may reset them and promtool wants counters to end
// in `_total`.
const std::vector<CardGauge>& card_gauges() {
    using S = inject::efml::Sample;
    static const std::vector<CardGauge> gauges{
        {"enflame_gcu_usage",
         "GCU utilisation in percent (0-100).",
         {},
         [](const S& s) { return s.usage_percent; }},
        {"enflame_gcu_memory_usage",
         "Fraction of the device memory in use (0-1).",
         {},
         [](const S& s) -> std::optional<double> {
             if (!s.memory_used_bytes || !s.memory_total_bytes || *s.memory_total_bytes == 0)
                 return std::nullopt;
             return static_cast<double>(*s.memory_used_bytes) /
                    static_cast<double>(*s.memory_total_bytes);
         }},
        {"enflame_gcu_memory_used_bytes",
         "Device memory in use, in bytes.",
         {},
         [](const S& s) { return as_double(s.memory_used_bytes); }},
        {"enflame_gcu_memory_total_bytes",
         "Device memory, in bytes.",
         {},
         [](const S& s) { return as_double(s.memory_total_bytes); }},
        {"enflame_gcu_temperatures",
         "ASIC temperature in degrees Celsius (gcu-exporter's one series per card).",
         {},
         [](const S& s) { return s.temperature_c; }},
        {"enflame_gcu_memory_temperature",
         "Device memory (HBM) temperature in degrees Celsius.",
         {},
         [](const S& s) { return s.memory_temperature_c; }},
        {"enflame_gcu_board_temperature",
         "Board temperature in degrees Celsius.",
         {},
         [](const S& s) { return s.board_temperature_c; }},
        {"enflame_gcu_power_usage",
         "Power draw in percent of the power capability (0-100).",
         {},
         [](const S& s) -> std::optional<double> {
             if (!s.power_w || !s.power_capability_w || *s.power_capability_w <= 0)
                 return std::nullopt;
             return *s.power_w * 100.0 / *s.power_capability_w;
         }},
        {"enflame_gcu_power_consumption",
         "Power draw in watts.",
         {},
         [](const S& s) { return s.power_w; }},
        {"enflame_gcu_power_capability",
         "Power capability (limit) in watts.",
         {},
         [](const S& s) { return s.power_capability_w; }},
        {"enflame_gcu_clock",
         "DTU clock in MHz (gcu-exporter's one series per card, with its power_mode label).",
         {{"power_mode", kPowerModeUnknown}},
         [](const S& s) { return as_double(s.dtu_clock_mhz); }},
        {"enflame_gcu_hbm_clock",
         "Device memory (HBM) clock in MHz.",
         {},
         [](const S& s) { return as_double(s.hbm_clock_mhz); }},
        {"enflame_gcu_ecc_single_bit_error_total_count",
         "ECC single-bit errors the driver has counted.",
         {},
         [](const S& s) { return as_double(s.ecc_single_bit); }},
        {"enflame_gcu_ecc_double_bit_error_total_count",
         "ECC double-bit errors the driver has counted.",
         {},
         [](const S& s) { return as_double(s.ecc_double_bit); }},
        {"enflame_gcu_pcie_link_width",
         "Current PCIe link width (lanes).",
         {},
         [](const S& s) { return as_double(s.pcie_link_width); }},
        {"enflame_gcu_pcie_max_link_width",
         "Maximum PCIe link width (lanes).",
         {},
         [](const S& s) { return as_double(s.pcie_max_link_width); }},
        {"enflame_gcu_pcie_link_speed",
         "Current PCIe link speed (generation), as libefml reports it.",
         {},
         [](const S& s) { return as_double(s.pcie_link_speed); }},
        {"enflame_gcu_pcie_max_link_speed",
         "Maximum PCIe link speed (generation), as libefml reports it.",
         {},
         [](const S& s) { return as_double(s.pcie_max_link_speed); }},
    };
    return gauges;
}

// gcu-exporter writes "N/A" for a card whose slot name is empty.
constexpr const char* kSlotUnknown = "N/A";

Labels card_labels(const std::string& host, const CardIdentity& id) {
    return {{"host", host},
            {"minor_number", id.minor ? std::to_string(*id.minor) : std::string()},
            {"uuid", id.uuid},
            {"busid", id.busid},
            {"slot", id.slot.empty() ? std::string(kSlotUnknown) : id.slot},
            {"name", id.name}};
}

// The label sets of a card's series: one per holder, or one with empty pod labels.
std::vector<Labels> holder_label_sets(const std::string& host, const CardReading& c) {
    const Labels base = card_labels(host, c.id);
    std::vector<Labels> out;
    auto with = [&](const std::string& pod, const std::string& ns, const std::string& container) {
        Labels l = base;
        l.push_back({"pod_name", pod});
        l.push_back({"pod_namespace", ns});
        l.push_back({"container_name", container});
        out.push_back(std::move(l));
    };
    if (c.holders.empty()) with("", "", "");
    for (const auto& h : c.holders) with(h.pod, h.ns, h.container);
    return out;
}

ClientMetric gauge(Labels labels, double v) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = v;
    return m;
}

// Families in a fixed order; a name seen again (health's healthmsg) adds to the family already
// there.
class Builder {
public:
    MetricFamily& family(const std::string& name, const std::string& help) {
        for (auto& f : out_) {
            if (f.name == name) return f;
        }
        out_.push_back({name, help, MetricType::Gauge, {}});
        return out_.back();
    }
    std::vector<MetricFamily> take() {
        std::erase_if(out_, [](const MetricFamily& f) { return f.metric.empty(); });
        return std::move(out_);
    }

private:
    std::vector<MetricFamily> out_;
};

}  // namespace

int health_value(const std::optional<bool>& healthy) noexcept {
    if (!healthy) return 0;
    return *healthy ? 2 : 1;
}

std::vector<MetricFamily> families(const Snapshot& s) {
    Builder b;
    const Labels host{{"host", s.host}};
    b.family("enflame_gcu_exporter_up", "1 while the exporter serves metrics.")
        .metric.push_back(gauge(host, 1));
    b.family("enflame_gcu_count", "Number of GCUs the driver answered for in the last collection.")
        .metric.push_back(gauge(host, static_cast<double>(s.cards.size())));

    std::vector<std::vector<Labels>> sets;  // per card
    sets.reserve(s.cards.size());
    for (const auto& c : s.cards) sets.push_back(holder_label_sets(s.host, c));

    auto& info = b.family("enflame_gcu_info",
                          "Always 1: the card's identity, its holder and the driver version.");
    auto& health =
        b.family("enflame_gcu_health", "Card health: 2 healthy, 1 unhealthy, 0 unknown.");
    for (std::size_t i = 0; i < s.cards.size(); ++i) {
        const auto& healthy = s.cards[i].sample.healthy;
        const char* msg = !healthy ? "Unknown" : *healthy ? "Healthy" : "Unhealthy";
        for (const auto& l : sets[i]) {
            Labels il = l;
            il.push_back({"driver_version", s.driver_version});
            info.metric.push_back(gauge(std::move(il), 1));
            Labels hl = l;
            hl.push_back({"healthmsg", msg});
            health.metric.push_back(gauge(std::move(hl), health_value(healthy)));
        }
    }
    for (const auto& g : card_gauges()) {
        auto& f = b.family(g.name, g.help);
        for (std::size_t i = 0; i < s.cards.size(); ++i) {
            const auto v = g.read(s.cards[i].sample);
            if (!v) continue;
            for (const auto& l : sets[i]) {
                Labels gl = l;
                gl.insert(gl.end(), g.extra.begin(), g.extra.end());
                f.metric.push_back(gauge(std::move(gl), *v));
            }
        }
    }
    auto& drs = b.family("enflame_gcu_drs_instance_info",
                         "Always 1: a DRS instance on the card (drs_id is the device-plugin ID).");
    for (const auto& c : s.cards) {
        for (const auto& in : c.id.drs) {
            Labels l = card_labels(s.host, c.id);
            l.push_back({"drs_id", inject::device::drs_address(in)});
            l.push_back({"profile", in.profile});
            l.push_back({"instance_id", std::to_string(in.instance_id)});
            drs.metric.push_back(gauge(std::move(l), 1));
        }
    }
    auto& proc =
        b.family("enflame_gcu_process_memory_used_bytes",
                 "Device memory a process uses on the card, in bytes (as libefml reports it).");
    for (const auto& c : s.cards) {
        for (const auto& p : c.sample.processes) {
            Labels l = card_labels(s.host, c.id);
            l.push_back({"pid", std::to_string(p.pid)});
            proc.metric.push_back(gauge(std::move(l), static_cast<double>(p.device_memory_bytes)));
        }
    }
    return b.take();
}

std::string exposition(const Snapshot& s) {
    std::ostringstream out;
    prometheus::TextSerializer{}.Serialize(out, families(s));
    return out.str();
}

}  // namespace exporter
