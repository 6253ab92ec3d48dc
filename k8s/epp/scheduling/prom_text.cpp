// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/prom_text.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "inject/text.hpp"

namespace epp {
namespace {

bool name_char(char c, bool first) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':') return true;
    return !first && c >= '0' && c <= '9';
}

std::optional<double> parse_value(std::string_view v) {
    if (v == "+Inf" || v == "Inf") return std::numeric_limits<double>::infinity();
    if (v == "-Inf") return -std::numeric_limits<double>::infinity();
    if (v == "NaN") return std::numeric_limits<double>::quiet_NaN();
    double d = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    return d;
}

// The label block after '{' up to and including '}'; `pos` ends past the '}'.
bool parse_labels(std::string_view line, size_t& pos, std::map<std::string, std::string>& out) {
    for (;;) {
        while (pos < line.size() && (line[pos] == ' ' || line[pos] == ',')) ++pos;
        if (pos >= line.size()) return false;
        if (line[pos] == '}') {
            ++pos;
            return true;
        }
        size_t start = pos;
        while (pos < line.size() && name_char(line[pos], pos == start)) ++pos;
        std::string key(line.substr(start, pos - start));
        while (pos < line.size() && line[pos] == ' ') ++pos;
        if (key.empty() || pos + 1 >= line.size() || line[pos] != '=' || line[pos + 1] != '"')
            return false;
        pos += 2;
        std::string val;
        for (;;) {
            if (pos >= line.size()) return false;
            char c = line[pos++];
            if (c == '"') break;
            if (c == '\\' && pos < line.size()) {
                char e = line[pos++];
                val.push_back(e == 'n' ? '\n' : e);
            } else {
                val.push_back(c);
            }
        }
        out[std::move(key)] = std::move(val);
    }
}

std::optional<Sample> parse_line(std::string_view line) {
    Sample s;
    size_t pos = 0;
    while (pos < line.size() && name_char(line[pos], pos == 0)) ++pos;
    if (pos == 0) return std::nullopt;
    s.name = std::string(line.substr(0, pos));
    if (pos < line.size() && line[pos] == '{') {
        ++pos;
        if (!parse_labels(line, pos, s.labels)) return std::nullopt;
    }
    std::string_view rest = inject::text::trim(line.substr(pos));
    size_t sp = rest.find_first_of(" \t");
    auto v = parse_value(rest.substr(0, sp));  // a trailing timestamp is ignored
    if (!v) return std::nullopt;
    s.value = *v;
    return s;
}

}  // namespace

std::vector<Sample> parse_prometheus_text(std::string_view text, int* bad) {
    std::vector<Sample> out;
    while (!text.empty()) {
        size_t nl = text.find('\n');
        std::string_view line = inject::text::trim(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        if (line.empty() || line.front() == '#') continue;
        if (auto s = parse_line(line)) {
            out.push_back(std::move(*s));
        } else if (bad) {
            ++*bad;
        }
    }
    return out;
}

}  // namespace epp
