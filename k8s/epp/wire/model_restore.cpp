// SPDX-License-Identifier: Apache-2.0
#include "epp/wire/model_restore.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace epp {
namespace {

enum class Fit { No, Partial, Full };

bool json_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Does `s` start with "model" <ws> : <ws> `value`? Partial: `s` ends before it could tell.
// On Full, `value_at` is where `value` starts and `end` just after it.
Fit fit(std::string_view s, std::string_view value, std::size_t& value_at, std::size_t& end) {
    constexpr std::string_view kKey = "\"model\"";
    const auto prefix = [](std::string_view have, std::string_view want) {
        const auto n = std::min(have.size(), want.size());
        if (have.substr(0, n) != want.substr(0, n)) return Fit::No;
        return n < want.size() ? Fit::Partial : Fit::Full;
    };
    if (auto f = prefix(s, kKey); f != Fit::Full) return f;
    std::size_t i = kKey.size();
    while (i < s.size() && json_space(s[i])) ++i;
    if (i == s.size()) return Fit::Partial;
    if (s[i++] != ':') return Fit::No;
    while (i < s.size() && json_space(s[i])) ++i;
    const auto f = prefix(s.substr(i), value);
    value_at = i;
    end = i + value.size();
    return f;
}

}  // namespace

ModelRestorer::ModelRestorer(const std::string& target, const std::string& client)
    : from_(nlohmann::json(target).dump()), to_(nlohmann::json(client).dump()) {}

std::string ModelRestorer::feed(std::string_view chunk, bool last) {
    std::string buf = std::move(held_);
    held_.clear();
    buf.append(chunk);
    std::string out;
    out.reserve(buf.size());
    std::size_t copied = 0;
    for (auto q = buf.find('"'); q != std::string::npos; q = buf.find('"', q + 1)) {
        std::size_t value_at = 0, end = 0;
        const Fit f = fit(std::string_view(buf).substr(q), from_, value_at, end);
        if (f == Fit::Partial && !last) {
            held_ = buf.substr(q);
            buf.resize(q);
            break;
        }
        if (f != Fit::Full) continue;
        out.append(buf, copied, q + value_at - copied);
        out += to_;
        copied = q + end;
        q = copied - 1;  // the target's closing quote: the next search starts after it
    }
    out.append(buf, copied, std::string::npos);
    return out;
}

}  // namespace epp
