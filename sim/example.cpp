// SPDX-License-Identifier: Apache-2.0
#include "example.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdio>

namespace sim {

namespace {

using inject::Errc;

constexpr std::uint32_t kMaxCards = 128;

std::string fmt_uuid(std::uint32_t i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "TR6Y4601%04u", i);
    return buf;
}

std::string fmt_bus(std::uint32_t i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0000:%02x:00.0", 0x10U + i);
    return buf;
}

std::string fmt_drs_uuid(std::uint32_t n) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "4c1e9a52-0000-4000-8000-%012u", n);
    return buf;
}

void emit_card(YAML::Emitter& out, const ExampleOptions& o, std::uint32_t i) {
    out << YAML::BeginMap;
    out << YAML::Key << "index" << YAML::Value << i;
    out << YAML::Key << "minor" << YAML::Value << i;
    out << YAML::Key << "product" << YAML::Value << YAML::DoubleQuoted << o.product;
    out << YAML::Key << "uuid" << YAML::Value << YAML::DoubleQuoted << fmt_uuid(i);
    out << YAML::Key << "serial" << YAML::Value << YAML::DoubleQuoted
        << "A0A16505" + std::to_string(10676 + i);
    out << YAML::Key << "bus_id" << YAML::Value << YAML::DoubleQuoted << fmt_bus(i);
    out << YAML::Key << "numa_node" << YAML::Value << (i < (o.cards + 1) / 2 ? 0 : 1);
    out << YAML::Key << "healthy" << YAML::Value << (o.unhealthy != i);
    out << YAML::EndMap;
}

void emit_profile(YAML::Emitter& out, std::uint32_t id, const char* name, int max, int mib) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "id" << YAML::Value << id << YAML::Key
        << "name" << YAML::Value << YAML::DoubleQuoted << name << YAML::Key << "max_instances"
        << YAML::Value << max << YAML::Key << "memory_mib" << YAML::Value << mib << YAML::EndMap;
}

void emit_instance(YAML::Emitter& out, std::uint32_t card, std::uint32_t id, const char* profile,
                   std::uint32_t n) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "card" << YAML::Value << card << YAML::Key
        << "instance_id" << YAML::Value << id << YAML::Key << "profile" << YAML::Value
        << YAML::DoubleQuoted << profile << YAML::Key << "uuid" << YAML::Value << YAML::DoubleQuoted
        << fmt_drs_uuid(n) << YAML::EndMap;
}

// Enflame's S60 profiles; two 1g.11gb instances on card 0 and one 2g.22gb on card 1.
void emit_drs(YAML::Emitter& out, std::uint32_t cards) {
    out << YAML::Key << "drs" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "profiles" << YAML::Value << YAML::BeginSeq;
    emit_profile(out, 0, "1g.11gb", 4, 10744);
    emit_profile(out, 1, "2g.22gb", 2, 21488);
    emit_profile(out, 2, "full", 1, 42976);
    out << YAML::EndSeq << YAML::Key << "instances" << YAML::Value << YAML::BeginSeq;
    emit_instance(out, 0, 0, "1g.11gb", 0);
    emit_instance(out, 0, 1, "1g.11gb", 1);
    if (cards > 1) emit_instance(out, 1, 0, "2g.22gb", 2);
    out << YAML::EndSeq << YAML::EndMap;
}

}  // namespace

inject::Result<std::string> example_description(const ExampleOptions& o) {
    if (o.cards < 1 || o.cards > kMaxCards) {
        return inject::fail(Errc::InvalidInput, "--cards: want 1.." + std::to_string(kMaxCards) +
                                                    ", got " + std::to_string(o.cards));
    }
    if (o.product != "S60" && o.product != "T10") {
        return inject::fail(Errc::InvalidInput,
                            "--product: want S60 or T10, got '" + o.product + "'");
    }
    if (o.drs && o.product != "S60") {
        return inject::fail(Errc::Unsupported, "--drs: only the S60 has DRS profiles");
    }
    if (o.unhealthy && *o.unhealthy >= o.cards) {
        return inject::fail(Errc::InvalidInput, "--unhealthy: no card " +
                                                    std::to_string(*o.unhealthy) + " among " +
                                                    std::to_string(o.cards));
    }
    YAML::Emitter out;
    out << YAML::Comment("simulated Enflame host: " + std::to_string(o.cards) + " " + o.product +
                         " card(s), from enflame-sim-host example");
    out << YAML::BeginMap;
    out << YAML::Key << "driver_version" << YAML::Value << YAML::DoubleQuoted << "1.4.3.4";
    out << YAML::Key << "major" << YAML::Value << 238;
    out << YAML::Key << "cards" << YAML::Value << YAML::BeginSeq;
    for (std::uint32_t i = 0; i < o.cards; ++i) emit_card(out, o, i);
    out << YAML::EndSeq;
    if (o.drs) emit_drs(out, o.cards);
    out << YAML::Key << "runtime_libraries" << YAML::Value << YAML::BeginSeq << "libtopsrt.so.2.1.0"
        << "libefrt.so.1.0.0"
        << "libeccl.so.1.0.0" << YAML::EndSeq;
    out << YAML::EndMap;
    if (!out.good()) return inject::fail(Errc::Internal, "emitting yaml: " + out.GetLastError());
    return std::string(out.c_str()) + "\n";
}

}  // namespace sim
