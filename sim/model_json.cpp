// SPDX-License-Identifier: Apache-2.0
#include "model_json.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sim {

namespace {

// S60 figures are Enflame's; the others are our model (the description may override them).
constexpr std::array<ProductDefaults, 5> kProducts{{
    {"S60", "c035", 42976},
    {"T10", "c011", 16384},
    {"I20", "c012", 16384},
    {"T20", "c021", 32768},
    {"T21", "c022", 32768},
}};

using ojson = nlohmann::ordered_json;

constexpr std::string_view kMagic = "ENFLAME-SIM-DESC ";
constexpr std::size_t kLenDigits = 16;
constexpr std::size_t kTrailerSize = kMagic.size() + kLenDigits + 1;  // + "\n"

Host parse_named(const std::string& text, const std::string& name) {
    try {
        return host_from_json(nlohmann::json::parse(text));
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error("simulated host description " + name + ": " + e.what());
    }
}

// The description embedded at the end of `path`, or nullopt when there is none.
std::optional<std::string> read_embedded(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in || !in.seekg(-static_cast<std::streamoff>(kTrailerSize), std::ios::end))
        return std::nullopt;
    std::string trailer(kTrailerSize, '\0');
    if (!in.read(trailer.data(), static_cast<std::streamsize>(kTrailerSize)) ||
        !trailer.starts_with(kMagic)) {
        return std::nullopt;
    }
    const auto len = std::strtoull(trailer.c_str() + kMagic.size(), nullptr, 16);
    std::string json(len, '\0');
    const auto back = static_cast<std::streamoff>(kTrailerSize + len);
    if (!in.seekg(-back, std::ios::end) ||
        !in.read(json.data(), static_cast<std::streamsize>(len))) {
        return std::nullopt;
    }
    return json;
}

ojson card_json(const Card& c) {
    return {{"index", c.index},         {"minor", c.minor},           {"product", c.product},
            {"uuid", c.uuid},           {"serial", c.serial},         {"bus_id", c.bus_id},
            {"device_id", c.device_id}, {"memory_mib", c.memory_mib}, {"used_mib", c.used_mib},
            {"numa_node", c.numa_node}, {"healthy", c.healthy}};
}

ojson drs_json(const Host& h) {
    ojson profiles = ojson::array();
    for (const auto& p : h.profiles) {
        profiles.push_back({{"id", p.id},
                            {"name", p.name},
                            {"max_instances", p.max_instances},
                            {"memory_mib", p.memory_mib},
                            {"product", p.product},
                            {"sips", p.sips}});
    }
    ojson instances = ojson::array();
    for (const auto& i : h.instances) {
        instances.push_back({{"card", i.card},
                             {"instance_id", i.instance_id},
                             {"profile", i.profile},
                             {"uuid", i.uuid},
                             {"placement", i.placement}});
    }
    return {{"profiles", profiles}, {"instances", instances}};
}

ojson faults_json(const Faults& f) {
    return {
        {"efsmi_absent", f.efsmi_absent},       {"efsmi_exit_code", f.efsmi_exit_code},
        {"efsmi_sleep_ms", f.efsmi_sleep_ms},   {"json_unsupported", f.json_unsupported},
        {"efsmi_output", f.efsmi_output},       {"efsmi_flood", f.efsmi_flood},
        {"efsmi_signal", f.efsmi_signal},       {"old_keys", f.old_keys},
        {"efml_absent", f.efml_absent},         {"efml_missing_symbols", f.efml_missing_symbols},
        {"efml_init_fails", f.efml_init_fails}, {"drs_instance_layout", f.drs_instance_layout},
        {"drs_needs_card", f.drs_needs_card}};
}

Card card_from(const nlohmann::json& j) {
    Card c;
    j.at("index").get_to(c.index);
    j.at("minor").get_to(c.minor);
    j.at("product").get_to(c.product);
    j.at("uuid").get_to(c.uuid);
    j.at("serial").get_to(c.serial);
    j.at("bus_id").get_to(c.bus_id);
    j.at("device_id").get_to(c.device_id);
    j.at("memory_mib").get_to(c.memory_mib);
    j.at("used_mib").get_to(c.used_mib);
    j.at("numa_node").get_to(c.numa_node);
    j.at("healthy").get_to(c.healthy);
    return c;
}

void drs_from(const nlohmann::json& j, Host& h) {
    for (const auto& p : j.at("profiles")) {
        h.profiles.push_back(
            {p.at("id").get<std::uint32_t>(), p.at("name").get<std::string>(),
             p.at("max_instances").get<std::uint32_t>(), p.at("memory_mib").get<std::uint64_t>(),
             p.at("product").get<std::string>(), p.value("sips", std::uint32_t{0})});
    }
    for (const auto& i : j.at("instances")) {
        h.instances.push_back({i.at("card").get<std::uint32_t>(),
                               i.at("instance_id").get<std::uint32_t>(),
                               i.at("profile").get<std::string>(), i.at("uuid").get<std::string>(),
                               i.value("placement", std::string())});
    }
}

Faults faults_from(const nlohmann::json& j) {
    Faults f;
    j.at("efsmi_absent").get_to(f.efsmi_absent);
    j.at("efsmi_exit_code").get_to(f.efsmi_exit_code);
    j.at("efsmi_sleep_ms").get_to(f.efsmi_sleep_ms);
    j.at("json_unsupported").get_to(f.json_unsupported);
    j.at("efsmi_output").get_to(f.efsmi_output);
    f.efsmi_flood = j.value("efsmi_flood", false);
    f.efsmi_signal = j.value("efsmi_signal", 0);
    j.at("old_keys").get_to(f.old_keys);
    j.at("efml_absent").get_to(f.efml_absent);
    j.at("efml_missing_symbols").get_to(f.efml_missing_symbols);
    j.at("efml_init_fails").get_to(f.efml_init_fails);
    f.drs_instance_layout = j.value("drs_instance_layout", std::string("uuid"));
    f.drs_needs_card = j.value("drs_needs_card", false);
    return f;
}

}  // namespace

std::optional<ProductDefaults> product_defaults(std::string_view product) {
    for (const auto& p : kProducts) {
        if (p.name == product) return p;
    }
    return std::nullopt;
}

std::string known_products() {
    std::string out;
    for (std::size_t i = 0; i < kProducts.size(); ++i) {
        if (i > 0) out += i + 1 == kProducts.size() ? " or " : ", ";
        out += kProducts[i].name;
    }
    return out;
}

std::vector<const Profile*> profiles_of(const Host& h, const Card& c) {
    std::vector<const Profile*> out;
    for (const auto& p : h.profiles) {
        if (p.product.empty() || p.product == c.product) out.push_back(&p);
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> library_links(const std::string& file) {
    std::vector<std::pair<std::string, std::string>> out;
    const auto so = file.find(".so");
    if (so == std::string::npos) return out;
    const std::string base = file.substr(0, so + 3);  // "libtopsrt.so"
    if (file.size() == base.size()) return out;
    const auto major_end = file.find('.', base.size() + 1);
    const std::string soname = file.substr(0, major_end);  // "libtopsrt.so.2"
    if (soname != file) out.emplace_back(soname, file);
    out.emplace_back(base, soname);
    return out;
}

nlohmann::ordered_json to_json(const Host& h) {
    ojson cards = ojson::array();
    for (const auto& c : h.cards) cards.push_back(card_json(c));
    return {{"driver_version", h.driver_version},
            {"major", h.major},
            {"control", {{"major", h.control_major}, {"minor", h.control_minor}}},
            {"class_dir", h.class_dir},
            {"cards", cards},
            {"drs", drs_json(h)},
            {"runtime_libraries", h.runtime_libraries},
            {"faults", faults_json(h.faults)}};
}

Host host_from_json(const nlohmann::json& j) {
    Host h;
    j.at("driver_version").get_to(h.driver_version);
    j.at("major").get_to(h.major);
    j.at("control").at("major").get_to(h.control_major);
    j.at("control").at("minor").get_to(h.control_minor);
    j.at("class_dir").get_to(h.class_dir);
    for (const auto& c : j.at("cards")) h.cards.push_back(card_from(c));
    drs_from(j.at("drs"), h);
    j.at("runtime_libraries").get_to(h.runtime_libraries);
    h.faults = faults_from(j.at("faults"));
    return h;
}

Host load_host_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open simulated host description '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_named(ss.str(), "'" + path + "'");
}

std::string embedded_description(const std::string& json) {
    char len[kLenDigits + 1];
    std::snprintf(len, sizeof len, "%016zx", json.size());
    return json + std::string(kMagic) + len + "\n";
}

void apply_health_switch(Host& h, const std::string& dir) {
    std::ifstream in(dir + "/" + std::string(kHealthSwitchFile));
    if (!in) return;
    std::vector<std::string> bad;
    for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
        if (!line.empty()) bad.push_back(line);
    }
    for (auto& c : h.cards) {
        c.healthy = true;
        for (const auto& b : bad) {
            if (b == c.uuid || b == std::to_string(c.index)) c.healthy = false;
        }
    }
}

Host load_host(const std::string& desc_path, const std::string& self_path) {
    const std::string dir =
        desc_path.substr(0, desc_path.rfind('/') == std::string::npos ? 0 : desc_path.rfind('/'));
    if (std::ifstream(desc_path)) {
        Host h = load_host_json(desc_path);
        apply_health_switch(h, dir);
        return h;
    }
    if (auto json = read_embedded(self_path)) {
        Host h = parse_named(*json, "embedded in '" + self_path + "'");
        apply_health_switch(h, dir);
        return h;
    }
    throw std::runtime_error("cannot open simulated host description '" + desc_path +
                             "' and none is embedded in '" + self_path + "'");
}

}  // namespace sim
