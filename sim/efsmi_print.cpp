// SPDX-License-Identifier: Apache-2.0
#include "efsmi_print.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "telemetry.hpp"

namespace sim {

namespace {

// One `Key : value` line; `sub_header` lines ("Link Info") print the key alone, as efsmi does.
struct Field {
    std::string key;
    std::string value;
    bool numeric = false;     // JSON: a number rather than a string
    bool sub_header = false;  // text only
};

struct Section {
    std::string name;
    std::vector<Field> fields;
};

constexpr const char* kBanner =
    "-------------------------------------------------------------------------------\n"
    "---------------------- Enflame System Management Interface ----------------------\n"
    "--------- Enflame Tech, All Rights Reserved. 2024-2025 Copyright (C) ----------\n"
    "--------------------------------------------------------------------------------\n";

// Values efsmi reports that the description does not model: the fixture's.
constexpr std::uint64_t kReservedMib = 1129;

std::string mib(std::uint64_t v) {
    return std::to_string(v) + " MiB";
}

struct BusParts {
    std::string domain, bus, dev, func;
};

BusParts split_bus(const std::string& id) {  // "0000:17:00.0", validated by the builder
    if (id.size() != 12) return {id, "", "", ""};
    return {id.substr(0, 4), id.substr(5, 2), id.substr(8, 2), id.substr(11, 1)};
}

Section pcie_section(const Card& c, const Telemetry& t) {
    const auto b = split_bus(c.bus_id);
    return {"PCIe Info",
            {{"Vendor ID", "1e36"},
             {"Device ID", c.device_id},
             {"Domain", b.domain},
             {"Bus", b.bus},
             {"Dev", b.dev},
             {"Func", b.func, true},
             {"Link Info", "", false, true},
             {"Max Link Speed", "Gen5"},
             {"Max Link Width", "X16"},
             {"Cur Link Speed", "Gen" + std::to_string(t.pcie_link_speed)},
             {"Cur Link Width", "X" + std::to_string(t.pcie_link_width)},
             {"Tx Throughput", "0 MiB/s"},
             {"Rx Throughput", "0 MiB/s"}}};
}

Section mem_section(const Host& h, const Card& c, const Telemetry& t) {
    const std::uint64_t taken = kReservedMib + t.memory_used_mib;
    const std::uint64_t free_mib = c.memory_mib > taken ? c.memory_mib - taken : 0;
    const bool old = h.faults.old_keys;
    return {"Device Mem Info",
            {{old ? "Mem Size" : "Total Size", mib(c.memory_mib)},
             {"Reserved Size", mib(kReservedMib)},
             {old ? "Mem Usage" : "Used Size", mib(t.memory_used_mib)},
             {"Free Size", mib(free_mib)}}};
}

// A reading as efsmi prints it: whole numbers without a fraction, others with one digit.
std::string reading(double v) {
    char buf[32];
    if (v == static_cast<double>(static_cast<long long>(v))) {
        (void)std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else {
        (void)std::snprintf(buf, sizeof buf, "%.1f", v);
    }
    return buf;
}

std::vector<Section> card_sections(const Host& h, const Card& c, const std::string& dir) {
    const Telemetry t = telemetry_of(c, dir);
    char usage[32];
    (void)std::snprintf(usage, sizeof usage, "%.1f %%", t.usage);
    return {
        {"Driver Info", {{"Ver", h.driver_version}}},
        {"Device Info",
         {{"Dev Name", c.product},
          {"Dev UUID", c.uuid},
          {"Dev SN", c.serial},
          {"Dev PN", "EFB-0088000-00"},
          {"Dev MFD", "2025-1-6"},
          {"Health", c.healthy ? "True" : "False"}}},
        pcie_section(c, t),
        {"Clock Info", {{"Mem CLK", std::to_string(t.hbm_clock) + " MHz"}}},
        {"Power Info",
         {{"Power Capa", reading(t.power_capability) + " W"},
          {"Cur Power", reading(t.power) + " W"},
          {"Dpm Level", "Sleep"}}},
        mem_section(h, c, t),
        {"Temperature Info", {{"GCU Temp", reading(t.temperature) + " \u2103"}}},
        {"Voltage Info",
         {{"VDD GCU", "0.702 V"}, {"VDD SOC", "0.743 V"}, {"VDD MEMQC", "1.349 V"}}},
        {"Device Usage Info", {{"GCU Usage", usage}}},
        {"ECC Mode", {{"Current", "Enable"}, {"Pending", "Enable"}}},
        {"RMA Info", {{"Flags", "False"}, {"Total DBE", std::to_string(t.ecc_double_bit), true}}},
        {"Power Cable", {{"Status", "Normal"}}},
        {"VPU Info", {{"Encoder Usage", "0 %"}, {"Decoder Usage", "0 %"}}},
    };
}

std::string field_line(const Field& f) {
    if (f.sub_header) return "        " + f.key + "\n";
    std::string key = f.key;
    if (key.size() < 24) key.resize(24, ' ');
    return "        " + key + ": " + f.value + "\n";
}

nlohmann::ordered_json json_value(const Field& f) {
    if (f.numeric) return std::stoll(f.value);
    return f.value;
}

}  // namespace

std::string efsmi_query_text(const Host& h, const std::string& dir) {
    std::string out = kBanner;
    for (const auto& c : h.cards) {
        out += "DEV ID " + std::to_string(c.index) + "\n";
        for (const auto& s : card_sections(h, c, dir)) {
            out += "    " + s.name + "\n";
            for (const auto& f : s.fields) out += field_line(f);
        }
    }
    return out;
}

std::string efsmi_query_json(const Host& h, const std::string& dir) {
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    for (const auto& c : h.cards) {
        nlohmann::ordered_json dev;
        dev["id"] = c.index;
        for (const auto& s : card_sections(h, c, dir)) {
            nlohmann::ordered_json sec = nlohmann::ordered_json::object();
            for (const auto& f : s.fields) {
                if (!f.sub_header) sec[f.key] = json_value(f);
            }
            dev[s.name] = std::move(sec);
        }
        devices.push_back(std::move(dev));
    }
    return nlohmann::ordered_json{{"devices", devices}}.dump(4) + "\n";
}

std::string efsmi_usage() {
    return "Usage: efsmi [options]\n"
           "\n"
           "Options:\n"
           "  -h, --help              show this help and exit\n"
           "  -q, --query             show the information of every device\n"
           "      --json-format       with -q: print the information as JSON\n"
           "  -i <card>               with --drs: only this device\n"
           "      --drs on|off        switch DRS on or off\n"
           "      --drs --list-profile\n"
           "                          list the DRS profiles\n"
           "      --drs --list-instance\n"
           "                          list the DRS instances\n"
           "      --drs --create-instance <profile-id>\n"
           "                          create a DRS instance (with -i)\n"
           "      --drs --destroy-instance <instance-id>\n"
           "                          destroy a DRS instance (with -i)\n";
}

std::string efsmi_garbage(const Host& h) {
    std::string out = "\x01\x02#@!efsmi\xff\xfe internal error 0x1e36 \x7f\n";
    for (const auto& c : h.cards) {
        out += "DEV ID ??" + std::to_string(c.index * 7919U) + "\n";
        out += "    \t:::: " + c.uuid.substr(0, c.uuid.size() / 2) + " {[<\x03\n";
        out += "        : : Total Size  :\n";
    }
    return out;
}

}  // namespace sim
