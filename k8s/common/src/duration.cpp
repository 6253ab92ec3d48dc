#include "k8s/duration.hpp"

#include <array>
#include <charconv>

namespace k8s {

namespace {

struct Unit {
    std::string_view suffix;
    long long ms;
};
// "ms" before "m", so a part ending in "ms" is not read as minutes followed by "s".
constexpr std::array<Unit, 4> kUnits{{{"ms", 1}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}}};

}  // namespace

std::string format_duration(std::chrono::milliseconds d) {
    const long long ms = d.count();
    for (const auto& u : {Unit{"h", 3'600'000}, Unit{"m", 60'000}, Unit{"s", 1'000}})
        if (ms != 0 && ms % u.ms == 0) return std::to_string(ms / u.ms).append(u.suffix);
    return std::to_string(ms) + "ms";
}

inject::Result<std::chrono::milliseconds> parse_duration(std::string_view flag,
                                                         std::string_view text,
                                                         std::chrono::milliseconds min,
                                                         std::chrono::milliseconds max) {
    auto bad = [&] {
        std::string msg(flag);
        msg.append(" '")
            .append(text)
            .append("': want a duration from ")
            .append(format_duration(min));
        msg.append(" to ").append(format_duration(max)).append(", such as 90s or 1m30s");
        return inject::fail(inject::Errc::InvalidInput, std::move(msg));
    };
    std::string_view v = text;
    if (v.empty()) return bad();
    long long total = 0;
    bool first = true;
    while (!v.empty()) {
        long long n = 0;
        const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc{} || n < 0 || n > max.count()) return bad();
        v.remove_prefix(static_cast<std::size_t>(p - v.data()));
        long long scale = 0;
        if (v.empty() && first) {
            scale = 1'000;  // a bare number: seconds
        } else {
            for (const auto& u : kUnits) {
                if (v.starts_with(u.suffix)) {
                    scale = u.ms;
                    v.remove_prefix(u.suffix.size());
                    break;
                }
            }
        }
        if (scale == 0) return bad();
        total += n * scale;  // n <= max and scale <= 1h: no overflow for any sane max
        if (total > max.count()) return bad();
        first = false;
    }
    if (total < min.count()) return bad();
    return std::chrono::milliseconds(total);
}

}  // namespace k8s
