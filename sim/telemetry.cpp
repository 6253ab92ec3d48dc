// SPDX-License-Identifier: Apache-2.0
#include "telemetry.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace sim {
namespace {

using json = nlohmann::json;

std::string path_in(const std::string& dir, std::string_view file) {
    return dir + "/" + std::string(file);
}

std::optional<std::string> read_text(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// A JSON object from `text`; anything else (not JSON, not an object) is an empty object.
json object_of(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    return j.is_object() ? j : json::object();
}

json read_json_file(const std::string& path) {
    auto text = read_text(path);
    return text ? object_of(*text) : json::object();
}

/// The telemetry file as last parsed, reused while its text is the same: reading a small file
/// is cheap, parsing it on every call was not (about 110 ms per 64-card pass). The text, not
/// inode and mtime, is the key: ext4 reuses inode numbers and mtime moves once per tick, so two
/// quick writes of one size could otherwise look like one.
json read_telemetry_cached(const std::string& path) {
    auto text = read_text(path);
    if (!text) return json::object();
    static std::mutex mu;
    static std::optional<std::pair<std::string, json>> last;
    {
        const std::lock_guard lock(mu);
        if (last && last->first == *text) return last->second;
    }
    json j = object_of(*text);
    const std::lock_guard lock(mu);
    last.emplace(std::move(*text), j);
    return j;
}

template <typename T>
std::optional<T> parse_int(std::string_view s) {
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
}

std::optional<double> parse_real(std::string_view s, double lo, double hi) {
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v) || v < lo || v > hi)
        return std::nullopt;
    return v;
}

enum class Kind { Percent, Real, U32, U64, Int };

struct Key {
    std::string_view name;
    Kind kind;
};

constexpr Key kKeys[] = {
    {"usage", Kind::Percent},          {"memory_used_mib", Kind::U64},
    {"temperature", Kind::Real},       {"memory_temperature", Kind::Real},
    {"board_temperature", Kind::Real}, {"power", Kind::Real},
    {"power_capability", Kind::Real},  {"dtu_clock", Kind::U32},
    {"hbm_clock", Kind::U32},          {"ecc_single_bit", Kind::U64},
    {"ecc_double_bit", Kind::U64},     {"pcie_link_width", Kind::Int},
    {"pcie_link_speed", Kind::Int},
};

// The JSON value of `value` for `k`, or null when it is not one.
json value_of(const Key& k, std::string_view value) {
    switch (k.kind) {
        case Kind::Percent:
            if (auto v = parse_real(value, 0, 100)) return *v;
            break;
        case Kind::Real:
            if (auto v = parse_real(value, -273, 1e6)) return *v;
            break;
        case Kind::U32:
            if (auto v = parse_int<std::uint32_t>(value)) return *v;
            break;
        case Kind::U64:
            if (auto v = parse_int<std::uint64_t>(value)) return *v;
            break;
        case Kind::Int:
            if (auto v = parse_int<int>(value); v && *v >= 0) return *v;
            break;
    }
    return nullptr;
}

template <typename T>
void take(const json& j, std::string_view key, T& out) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || !it->is_number()) return;
    out = it->get<T>();
}

// Writes `text` to `path` through a temp file in the same folder, fsync and rename.
std::string write_atomic(const std::string& path, const std::string& text) {
    std::string tmp = path + ".XXXXXX";
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) return "cannot create a temp file next to '" + path + "'";
    bool ok = ::fchmod(fd, 0644) == 0;
    for (std::size_t done = 0; ok && done < text.size();) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n <= 0)
            ok = false;
        else
            done += static_cast<std::size_t>(n);
    }
    ok = ok && ::fsync(fd) == 0;
    ok = ::close(fd) == 0 && ok;
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
        ::unlink(tmp.c_str());
        return "cannot write '" + path + "'";
    }
    return {};
}

}  // namespace

std::string write_file_atomic(const std::string& path, const std::string& text) {
    return write_atomic(path, text);
}

Telemetry telemetry_of(const Card& c, const std::string& dir) {
    Telemetry t;
    t.memory_used_mib = c.used_mib;
    if (dir.empty()) return t;
    const json all = read_telemetry_cached(path_in(dir, kTelemetryFile));
    const auto it = all.find(std::to_string(c.index));
    if (it == all.end() || !it->is_object()) return t;
    const json& j = *it;
    take(j, "usage", t.usage);
    take(j, "memory_used_mib", t.memory_used_mib);
    take(j, "temperature", t.temperature);
    take(j, "memory_temperature", t.memory_temperature);
    take(j, "board_temperature", t.board_temperature);
    take(j, "power", t.power);
    take(j, "power_capability", t.power_capability);
    take(j, "dtu_clock", t.dtu_clock);
    take(j, "hbm_clock", t.hbm_clock);
    take(j, "ecc_single_bit", t.ecc_single_bit);
    take(j, "ecc_double_bit", t.ecc_double_bit);
    take(j, "pcie_link_width", t.pcie_link_width);
    take(j, "pcie_link_speed", t.pcie_link_speed);
    if (auto p = j.find("processes"); p != j.end() && p->is_array()) {
        for (const auto& e : *p) {
            if (e.is_array() && e.size() == 2 && e[0].is_number_unsigned() &&
                e[1].is_number_unsigned())
                t.processes.emplace_back(e[0].get<std::uint32_t>(), e[1].get<std::uint64_t>());
        }
    }
    return t;
}

std::string set_telemetry(const std::string& dir, std::uint32_t card,
                          const std::vector<std::string>& settings) {
    const std::string path = path_in(dir, kTelemetryFile);
    json all = read_json_file(path);
    json& mine = all[std::to_string(card)];
    if (!mine.is_object()) mine = json::object();
    bool procs_named = false;
    for (const auto& s : settings) {
        const auto eq = s.find('=');
        if (eq == std::string::npos) return "'" + s + "': expected key=value";
        const std::string_view key = std::string_view(s).substr(0, eq);
        const std::string_view value = std::string_view(s).substr(eq + 1);
        if (key == "process") {
            if (!procs_named) mine["processes"] = json::array();
            procs_named = true;
            if (value == "none") continue;
            const auto colon = value.find(':');
            const auto pid = colon == std::string_view::npos
                                 ? std::nullopt
                                 : parse_int<std::uint32_t>(value.substr(0, colon));
            const auto mib = colon == std::string_view::npos
                                 ? std::nullopt
                                 : parse_int<std::uint64_t>(value.substr(colon + 1));
            if (!pid || !mib || *pid == 0)
                return "'" + s + "': expected process=PID:MIB or process=none";
            mine["processes"].push_back({*pid, *mib});
            continue;
        }
        const Key* k = nullptr;
        for (const auto& cand : kKeys) {
            if (cand.name == key) k = &cand;
        }
        if (k == nullptr) return "'" + s + "': unknown key '" + std::string(key) + "'";
        json v = value_of(*k, value);
        if (v.is_null())
            return "'" + s + "': bad value '" + std::string(value) + "' for " + std::string(key);
        mine[std::string(key)] = std::move(v);
    }
    return write_atomic(path, all.dump(2) + "\n");
}

std::optional<int> event_type(std::string_view s) {
    if (s == "suspend") return 3;
    if (s == "reset-start") return 10;
    if (s == "reset-finish") return 11;
    if (s == "eid") return 20;
    return parse_int<int>(s);
}

std::string append_event(const std::string& dir, const SimEvent& e) {
    const std::string path = path_in(dir, kEventsFile);
    const std::string line =
        json{{"card", e.card}, {"type", e.type}, {"message", e.message}}.dump() + "\n";
    // One write(2) of one short line with O_APPEND: a reader sees the whole line or none of it.
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return "cannot open '" + path + "'";
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    if (::close(fd) != 0 || !ok) return "cannot append to '" + path + "'";
    return {};
}

std::vector<SimEvent> read_events(const std::string& dir) {
    std::vector<SimEvent> out;
    std::ifstream in(path_in(dir, kEventsFile));
    for (std::string line; std::getline(in, line);) {
        const json j = json::parse(line, nullptr, false);
        if (!j.is_object()) continue;
        SimEvent e;
        e.card = j.value("card", 0U);
        e.type = j.value("type", 0);
        e.message = j.value("message", std::string());
        out.push_back(std::move(e));
    }
    return out;
}

bool driver_gone(const std::string& dir) {
    struct stat st {};
    return ::stat(path_in(dir, kDriverGoneFile).c_str(), &st) == 0;
}

void efml_stall(const std::string& dir) {
    std::ifstream in(path_in(dir, kEfmlStallFile));
    long ms = 0;
    if (in >> ms && ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace sim
