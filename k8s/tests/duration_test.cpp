// k8s::parse_duration: the one parser behind --health-interval, --sleep-interval and
// --collect-interval.
#include "k8s/duration.hpp"

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

TEST(ParseDuration, GoodWithinBounds) {
    struct {
        const char* in;
        milliseconds want;
    } cases[] = {
        {"60s", 60s}, {"1m", 1min},     {"1m30s", 90s},
        {"1h", 1h},   {"2", 2s},        {"1500ms", 1500ms},
        {"24h", 24h}, {"100ms", 100ms}, {"1h1m1s1ms", 3661001ms},
        {"0m5s", 5s},
    };
    for (const auto& c : cases) {
        auto r = k8s::parse_duration("--x", c.in, 100ms, 24h);
        ASSERT_TRUE(r) << c.in << ": " << r.error().what();
        EXPECT_EQ(*r, c.want) << c.in;
    }
}

TEST(ParseDuration, BadNamesFlagValueAndBounds) {
    for (const char* in : {"", "0", "0s", "99ms", "5x", "s", "ms", "-5s", "1m-1s", "25h", "24h1ms",
                           "1.5s", "60 s", "1m30", " 5s", "5s ", "+5s", "99999999999999999999s"}) {
        auto r = k8s::parse_duration("--sleep-interval", in, 100ms, 24h);
        ASSERT_FALSE(r) << in;
        EXPECT_EQ(r.error().what(),
                  "--sleep-interval '" + std::string(in) +
                      "': want a duration from 100ms to 24h, such as 90s or 1m30s")
            << in;
    }
}

TEST(ParseDuration, LowerBoundIsTheFlagsOwn) {
    EXPECT_FALSE(k8s::parse_duration("--sleep-interval", "999ms", 1s, 24h));
    auto r = k8s::parse_duration("--sleep-interval", "500ms", 1s, 24h);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "--sleep-interval '500ms': want a duration from 1s to 24h, such as 90s or 1m30s");
    EXPECT_EQ(*k8s::parse_duration("--sleep-interval", "1000ms", 1s, 24h), 1s);
}

TEST(FormatDuration, LargestEvenUnit) {
    EXPECT_EQ(k8s::format_duration(24h), "24h");
    EXPECT_EQ(k8s::format_duration(90s), "90s");
    EXPECT_EQ(k8s::format_duration(2min), "2m");
    EXPECT_EQ(k8s::format_duration(100ms), "100ms");
    EXPECT_EQ(k8s::format_duration(1500ms), "1500ms");
    EXPECT_EQ(k8s::format_duration(0ms), "0ms");
}

}  // namespace
