// SPDX-License-Identifier: Apache-2.0
// enflame-drs-manager running a plan through the DRS ledger against a stand-in efsmi: the
// pending entry is on disk before each create, the made instance right after; a create that
// fails is taken back; a start after a crash between two creates destroys nothing; a destroy
// checks the instance is still the one planned.
#include <gtest/gtest.h>

#include <map>

#include "drs-manager/apply.hpp"
#include "drs_manager_fixture.hpp"
#include "inject/fs.hpp"
#include "temp_dir.hpp"

namespace {

using drs_test::instance;
using inject::device::DrsInstance;
using inject::device::DrsProfile;

const DrsProfile k1g{"1g.11gb", 0, 4, 0, 0};

// A card set efsmi would keep: create takes the lowest free id.
struct FakeEfsmi {
    std::map<std::uint32_t, std::vector<DrsInstance>> cards;
    std::vector<std::string> calls;
    std::function<void()> before_create;  // what the test checks at that moment
    bool fail_create = false;

    drs_manager::Efsmi ops() {
        return {[this](std::uint32_t c) -> inject::Result<std::vector<DrsInstance>> {
                    calls.push_back("list " + std::to_string(c));
                    return cards[c];
                },
                [this](std::uint32_t c, const DrsProfile& p) -> inject::Result<DrsInstance> {
                    calls.push_back("create " + std::to_string(c) + " " + p.name);
                    if (before_create) before_create();
                    if (fail_create)
                        return inject::fail(inject::Errc::Io,
                                            "card " + std::to_string(c) + ": efsmi exited 1");
                    std::uint32_t id = 0;
                    while (std::any_of(cards[c].begin(), cards[c].end(),
                                       [&](const auto& in) { return in.instance_id == id; }))
                        ++id;
                    auto in = instance(c, p.name, id);
                    in.uuid = "uuid-" + std::to_string(c) + "-" + std::to_string(id);
                    cards[c].push_back(in);
                    return in;
                },
                [this](std::uint32_t c, std::uint32_t id) -> inject::Result<void> {
                    calls.push_back("destroy " + std::to_string(c) + " " + std::to_string(id));
                    std::erase_if(cards[c], [&](const auto& in) { return in.instance_id == id; });
                    return inject::ok();
                }};
    }
};

drs_manager::Ledger on_disk(const std::string& path) {
    auto text = inject::fs::read_file(path, 1 << 20);
    EXPECT_TRUE(text) << text.error().what();
    auto l = drs_manager::parse_ledger(text ? *text : "", path);
    EXPECT_TRUE(l) << l.error().what();
    return l ? *l : drs_manager::Ledger{};
}

drs_manager::Plan creates(std::uint32_t card, std::size_t n) {
    drs_manager::Plan p;
    p.cards.push_back({card, {}, std::vector<DrsProfile>(n, k1g), {}});
    return p;
}

const auto kNothingHeld = [](std::uint32_t, std::uint32_t) { return false; };

TEST(DrsApplier, EachCreateIsPendingOnDiskBeforeEfsmiIsAskedAndMadeRightAfter) {
    k8s_test::TempDir tmp;
    const auto path = tmp.path() + "/sub/ledger.json";
    FakeEfsmi efsmi;
    drs_manager::Applier a(path, efsmi.ops());
    ASSERT_TRUE(a.start(kNothingHeld));
    std::vector<std::size_t> pending_seen, made_seen;
    efsmi.before_create = [&] {
        const auto l = on_disk(path);
        pending_seen.push_back(l.pending.size());
        made_seen.push_back(l.made.size());
    };
    ASSERT_TRUE(a.run(creates(0, 2), "all-1g"));
    EXPECT_EQ(pending_seen, (std::vector<std::size_t>{1, 1}));
    EXPECT_EQ(made_seen, (std::vector<std::size_t>{0, 1}));
    const auto l = on_disk(path);
    EXPECT_TRUE(l.pending.empty());
    EXPECT_EQ(l.made, (std::vector<k8s::drs::Made>{{0, 0, "1g.11gb", "uuid-0-0"},
                                                   {0, 1, "1g.11gb", "uuid-0-1"}}));
}

TEST(DrsApplier, AStartAfterACrashBetweenTwoCreatesDestroysNothing) {
    k8s_test::TempDir tmp;
    const auto path = tmp.path() + "/ledger.json";
    FakeEfsmi efsmi;
    efsmi.cards[0] = {instance(0, "1g.11gb", 0),
                      instance(0, "1g.11gb", 1)};  // the second: made, unanswered
    drs_manager::Ledger crashed{{{0, 0, "1g.11gb", ""}},
                                {{"all-1g", 0, "1g.11gb", {0}, 2, std::nullopt, {}}}};
    ASSERT_TRUE(k8s::drs::save_file(path, drs_manager::ledger_text(crashed), false));
    drs_manager::Applier a(path, efsmi.ops());
    ASSERT_TRUE(a.start(kNothingHeld));
    EXPECT_EQ(efsmi.cards[0].size(), 2U);
    EXPECT_TRUE(std::none_of(efsmi.calls.begin(), efsmi.calls.end(),
                             [](const auto& c) { return c.starts_with("destroy"); }));
    EXPECT_TRUE(on_disk(path).pending.empty());
    EXPECT_EQ(on_disk(path).made.size(), 1U);
}

TEST(DrsApplier, AFailedCreateLeavesNoPendingEntryAndNamesTheCard) {
    k8s_test::TempDir tmp;
    const auto path = tmp.path() + "/ledger.json";
    FakeEfsmi efsmi;
    efsmi.fail_create = true;
    drs_manager::Applier a(path, efsmi.ops());
    ASSERT_TRUE(a.start(kNothingHeld));
    const auto r = a.run(creates(1, 3), "all-1g");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "card 1: efsmi exited 1");
    EXPECT_TRUE(on_disk(path).pending.empty());
    EXPECT_EQ(std::count(efsmi.calls.begin(), efsmi.calls.end(), "create 1 1g.11gb"), 1);
}

TEST(DrsApplier, ADestroyLeavesAnInstanceThatChangedSincePlanned) {
    k8s_test::TempDir tmp;
    FakeEfsmi efsmi;
    auto planned = instance(0, "1g.11gb", 0);
    planned.uuid = "old";
    auto now = planned;
    now.uuid = "new";  // destroyed and made again by someone else meanwhile
    efsmi.cards[0] = {now};
    drs_manager::Applier a(tmp.path() + "/ledger.json", efsmi.ops());
    ASSERT_TRUE(a.start(kNothingHeld));
    drs_manager::Plan p;
    p.cards.push_back({0, {planned}, {}, {}});
    const auto r = a.run(p, "all-full");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "card 0: instance 0:1g.11gb:0 changed since it was planned: left alone");
    EXPECT_EQ(efsmi.cards[0].size(), 1U);
}

TEST(DrsApplier, TheLedgerTextReadsBack) {
    const drs_manager::Ledger l{{{0, 1, "1g.11gb", "u"}},
                                {{"all-1g", 2, "2g.22gb", {0, 1}, 7, 3U, "v"}}};
    const auto back = drs_manager::parse_ledger(drs_manager::ledger_text(l), "x");
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(*back, l);
    const auto bad = drs_manager::parse_ledger(R"({"version": 2, "made": []})", "ledger.json");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(), "ledger.json: version 2: want 1");
}

}  // namespace
