// SPDX-License-Identifier: Apache-2.0
// One scheduling profile: the filters, each scorer's formula, the weighted sum and the pickers.
#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "epp/scheduling/pipeline.hpp"

namespace {

using epp::Candidate;
using epp::Endpoint;

Endpoint endpoint(const std::string& address, double waiting, std::optional<double> kv) {
    Endpoint e;
    e.target.address = address;
    e.metrics = epp::ServerMetrics{};
    e.metrics->waiting = waiting;
    e.metrics->kv = kv;
    return e;
}

Candidate fresh(const Endpoint& e) {
    Candidate c;
    c.endpoint = &e;
    c.stale = false;
    return c;
}

std::vector<std::string> addresses(const std::vector<Candidate>& c) {
    std::vector<std::string> out;
    for (const auto& x : c) out.push_back(x.endpoint->target.address);
    return out;
}

std::vector<std::string> addresses(const std::vector<const Endpoint*>& c) {
    std::vector<std::string> out;
    for (const auto* x : c) out.push_back(x->target.address);
    return out;
}

TEST(Scorers, QueueIsMinMaxNormalizedAndAllEqualScoreOne) {
    Endpoint a = endpoint("a", 0, {}), b = endpoint("b", 5, {}), c = endpoint("c", 10, {});
    EXPECT_EQ(epp::score_queue({fresh(a), fresh(b), fresh(c)}), (std::vector<double>{1, 0.5, 0}));
    EXPECT_EQ(epp::score_queue({fresh(b), fresh(b)}), (std::vector<double>{1, 1}));
}

TEST(Scorers, ActiveRequestsOverTheMostAnyCandidateHasNoneAnywhereScoresOne) {
    Endpoint a = endpoint("a", 0, {}), b = endpoint("b", 0, {}), c = endpoint("c", 0, {});
    auto with = [](const Endpoint& e, size_t n) {
        auto x = fresh(e);
        x.active = n;
        return x;
    };
    EXPECT_EQ(epp::score_active({with(a, 0), with(b, 2), with(c, 4)}),
              (std::vector<double>{1, 0.5, 0}));
    EXPECT_EQ(epp::score_active({with(a, 0), with(b, 0)}), (std::vector<double>{1, 1}));
    EXPECT_EQ(epp::score_active({with(a, 3), with(b, 3)}), (std::vector<double>{0, 0}));
}

TEST(Scorers, KvIsOneMinusUsage) {
    Endpoint a = endpoint("a", 0, 0.3), unknown = endpoint("b", 0, {});
    EXPECT_DOUBLE_EQ(epp::score_kv(fresh(a)), 0.7);
    EXPECT_DOUBLE_EQ(epp::score_kv(fresh(unknown)), 1.0);
}

TEST(Scorers, PrefixIsMatchedOverPromptBlocks) {
    Endpoint a = endpoint("a", 0, {});
    Candidate c = fresh(a);
    c.prefix_blocks = 3;
    EXPECT_DOUBLE_EQ(epp::score_prefix(c, {"m", 4}), 0.75);
    EXPECT_DOUBLE_EQ(epp::score_prefix(c, {"m", 0}), 0.0);
}

TEST(Scorers, LoraAffinity) {
    struct Case {
        std::optional<epp::LoraState> lora;
        double want;
    };
    const Case cases[] = {
        {epp::LoraState{2, {"sql"}, {}}, 1.0},     // loaded
        {epp::LoraState{2, {"x"}, {"sql"}}, 0.6},  // waiting to load
        {epp::LoraState{2, {"x"}, {}}, 0.8},       // room to load it
        {epp::LoraState{2, {"x"}, {"y"}}, 0.0},    // no room
        {std::nullopt, 0.8},                       // no LoRA state reported
    };
    for (const auto& c : cases) {
        Endpoint e = endpoint("a", 0, {});
        e.metrics->lora = c.lora;
        EXPECT_DOUBLE_EQ(epp::score_lora(fresh(e), "sql"), c.want);
    }
}

TEST(Scorers, GcuMemoryIsFreeFractionOfTheFullestCard) {
    Endpoint e = endpoint("a", 0, {});
    Candidate c = fresh(e);
    EXPECT_DOUBLE_EQ(epp::score_gcu_memory(c), 0.5);  // unknown: neutral
    c.gcu = epp::GcuMemory{30, 100, 0.3};
    EXPECT_DOUBLE_EQ(epp::score_gcu_memory(c), 0.3);
}

TEST(Profile, DefaultWeightsSumQueueKvPrefixGcuActive) {
    const auto cfg = epp::default_config();
    epp::Profile p(cfg.profiles.front(), cfg);
    Endpoint a = endpoint("a", 0, 0.5), b = endpoint("b", 4, 0.0);
    Candidate ca = fresh(a), cb = fresh(b);
    ca.prefix_blocks = 1;
    cb.gcu = epp::GcuMemory{50, 100, 0.5};
    cb.prefix_blocks = 4;
    cb.active = 2;
    auto scored = p.score({ca, cb}, {"m", 4});
    ASSERT_EQ(scored.size(), 2u);
    // a: 2*1 + 2*0.5 + 3*0.25 + 1*0.5 (gcu unknown) + 1*1 (none active);
    // b: 2*0 + 2*1 + 3*1 + 1*0.5 + 1*0 (the most active)
    EXPECT_DOUBLE_EQ(scored[0].score, 5.25);
    EXPECT_DOUBLE_EQ(scored[1].score, 5.5);
}

TEST(Filters, SaturatedAndStaleDroppedUnlessAllAre) {
    epp::SaturationConfig s;  // queue 5, kv 0.8, no headroom
    Endpoint ok = endpoint("ok", 5, 0.8), queued = endpoint("queued", 6, 0.1),
             full = endpoint("full", 0, 0.81), old = endpoint("old", 0, 0);
    Candidate stale = fresh(old);
    stale.stale = true;
    EXPECT_EQ(addresses(epp::filter_saturated({fresh(ok), fresh(queued), fresh(full), stale}, s)),
              (std::vector<std::string>{"ok"}));
    // Fail open: when every endpoint is saturated or stale, all stay.
    EXPECT_EQ(addresses(epp::filter_saturated({fresh(queued), stale}, s)),
              (std::vector<std::string>{"queued", "old"}));
    s.headroom = 0.2;  // 6 <= 5 x 1.2
    EXPECT_EQ(addresses(epp::filter_saturated({fresh(queued), fresh(full)}, s)),
              (std::vector<std::string>{"queued", "full"}));
}

TEST(Filters, SaturationOfOneEndpoint) {
    epp::SaturationConfig s;
    Endpoint a = endpoint("a", 2.5, 0.2), b = endpoint("b", 1, 0.6);
    EXPECT_DOUBLE_EQ(epp::endpoint_saturation(fresh(a), s), 0.5);
    EXPECT_DOUBLE_EQ(epp::endpoint_saturation(fresh(b), s), 0.75);
    Candidate stale = fresh(a);
    stale.stale = true;
    EXPECT_DOUBLE_EQ(epp::endpoint_saturation(stale, s), 1.0);
}

TEST(Filters, GcuMemoryBelowThresholdDroppedUnlessAllAre) {
    Endpoint a = endpoint("a", 0, {}), b = endpoint("b", 0, {}), c = endpoint("c", 0, {});
    Candidate low = fresh(a), enough = fresh(b), unknown = fresh(c);
    low.gcu = epp::GcuMemory{4, 100, 0.04};
    enough.gcu = epp::GcuMemory{5, 100, 0.05};
    EXPECT_EQ(addresses(epp::filter_gcu_memory({low, enough, unknown}, 0.05)),
              (std::vector<std::string>{"b", "c"}));
    EXPECT_EQ(addresses(epp::filter_gcu_memory({low}, 0.05)), (std::vector<std::string>{"a"}));
}

TEST(Filters, RolesFromTheLlmdLabel) {
    struct Case {
        std::optional<std::string> label;
        bool decode, prefill;
    };
    const Case cases[] = {
        {std::nullopt, true, false}, {"decode", true, false},        {"prefill", false, true},
        {"both", true, true},        {"prefill-decode", true, true}, {"encode", false, false},
    };
    for (const auto& c : cases) {
        epp::Target t;
        if (c.label) t.labels[epp::kRoleLabel] = *c.label;
        auto r = epp::roles_of(t);
        EXPECT_EQ(r.decode, c.decode) << c.label.value_or("(none)");
        EXPECT_EQ(r.prefill, c.prefill) << c.label.value_or("(none)");
    }
    Endpoint d = endpoint("d", 0, {}), p = endpoint("p", 0, {});
    p.roles = {false, true};
    EXPECT_EQ(addresses(epp::filter_role({fresh(d), fresh(p)}, true)),
              (std::vector<std::string>{"p"}));
    EXPECT_EQ(addresses(epp::filter_role({fresh(d), fresh(p)}, false)),
              (std::vector<std::string>{"d"}));
}

TEST(Pickers, MaxScoreBestFirstTiesBrokenAtRandom) {
    Endpoint a = endpoint("a", 0, {}), b = endpoint("b", 0, {}), c = endpoint("c", 0, {}),
             d = endpoint("d", 0, {});
    std::vector<Candidate> cs{fresh(a), fresh(b), fresh(c), fresh(d)};
    cs[0].score = 1, cs[1].score = 3, cs[2].score = 3, cs[3].score = 2;
    std::mt19937_64 rng(7);
    std::map<std::string, int> primary;
    for (int i = 0; i < 200; ++i) {
        auto picked = addresses(epp::pick_max_score(cs, 3, rng));
        ASSERT_EQ(picked.size(), 3u);
        EXPECT_EQ(picked[2], "d");  // fallbacks in score order
        ++primary[picked[0]];
    }
    EXPECT_EQ(primary.size(), 2u);  // only the two best, each sometimes
    EXPECT_GT(primary["b"], 50);
    EXPECT_GT(primary["c"], 50);
}

epp::SchedulerConfig with_picker(const std::string& type, int n) {
    auto cfg = epp::default_config();
    cfg.profiles.front().picker = {type, n};
    return cfg;
}

TEST(Pickers, RoundRobinCyclesByAddressWhateverTheScores) {
    auto cfg = with_picker("round-robin-picker", 1);
    epp::Profile p(cfg.profiles.front(), cfg);
    Endpoint a = endpoint("10.0.0.1:8000", 4, 0.7), b = endpoint("10.0.0.2:8000", 0, 0),
             c = endpoint("10.0.0.3:8000", 0, 0);
    std::mt19937_64 rng(1);
    std::vector<std::string> order;
    for (int i = 0; i < 4; ++i)
        order.push_back(addresses(p.run({fresh(c), fresh(a), fresh(b)}, {"m", 0}, rng))[0]);
    EXPECT_EQ(order, (std::vector<std::string>{"10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000",
                                               "10.0.0.1:8000"}));
}

TEST(Pickers, RandomPicksEveryEndpointWhateverTheScores) {
    auto cfg = with_picker("random-picker", 2);
    epp::Profile p(cfg.profiles.front(), cfg);
    Endpoint a = endpoint("a", 0, 0), b = endpoint("b", 4, 0.7);
    std::mt19937_64 rng(3);
    std::map<std::string, int> primary;
    for (int i = 0; i < 100; ++i) {
        auto picked = addresses(p.run({fresh(a), fresh(b)}, {"m", 0}, rng));
        ASSERT_EQ(picked.size(), 2u);
        ++primary[picked[0]];
    }
    EXPECT_GT(primary["a"], 20);
    EXPECT_GT(primary["b"], 20);
}

TEST(Pickers, MaxScoreProfileRoutesToTheLeastLoaded) {
    auto cfg = epp::default_config();
    epp::Profile p(cfg.profiles.front(), cfg);
    Endpoint busy = endpoint("busy", 4, 0.7), idle = endpoint("idle", 0, 0.1);
    std::mt19937_64 rng(5);
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(addresses(p.run({fresh(busy), fresh(idle)}, {"m", 0}, rng))[0], "idle");
}

}  // namespace
