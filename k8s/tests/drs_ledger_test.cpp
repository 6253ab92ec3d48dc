// SPDX-License-Identifier: Apache-2.0
// The DRS ledger (k8s/drs_ledger.hpp) the DRA driver and HAMi mode share: which instance is
// still ours, the crash rule for pending entries, taking back a failed create, and the ledger
// file with its .prev.
#include "k8s/drs_ledger.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "api_client_util.hpp"
#include "inject/fs.hpp"
#include "temp_dir.hpp"

namespace {

using inject::device::DrsInstance;
using k8s::drs::Made;
using k8s::drs::Pending;
using k8s::drs::Seen;

TEST(DrsLedger, SeenInTellsOursFromAnId) {
    const std::vector<DrsInstance> card{{0, 1, "1g.11gb", "DRS-aaaa"}, {0, 2, "2g.22gb", ""}};
    const struct {
        const char* name;
        Made rec;
        Seen want;
    } cases[] = {
        {"SameIdProfileUuid", {0, 1, "1g.11gb", "DRS-aaaa"}, Seen::Ours},
        {"UuidWithoutPrefix", {0, 1, "1g.11gb", "aaaa"}, Seen::Ours},
        {"NoUuidRecorded", {0, 1, "1g.11gb", ""}, Seen::Ours},
        {"NoProfileRecorded", {0, 1, "", "DRS-aaaa"}, Seen::Ours},
        {"EfsmiPrintsNoUuid", {0, 2, "2g.22gb", "DRS-bbbb"}, Seen::Ours},
        {"AnotherUuid", {0, 1, "1g.11gb", "DRS-cccc"}, Seen::Other},
        {"AnotherProfile", {0, 2, "1g.11gb", ""}, Seen::Other},
        {"IdGone", {0, 3, "1g.11gb", ""}, Seen::Gone},
    };
    for (const auto& c : cases) EXPECT_EQ(k8s::drs::seen_in(card, c.rec), c.want) << c.name;
}

// efsmi as the ledger sees it: instances per card, every destroy logged; a card can refuse
// to list or to destroy.
struct FakeEfsmi {
    std::map<std::uint32_t, std::vector<DrsInstance>> cards;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> destroyed;
    std::set<std::uint32_t> list_fails, destroy_fails;
    k8s::drs::Ops ops() {
        return {[this](std::uint32_t c) -> inject::Result<std::vector<DrsInstance>> {
                    if (list_fails.contains(c))
                        return inject::fail(inject::Errc::Io, "efsmi timed out");
                    return cards[c];
                },
                [this](std::uint32_t c, std::uint32_t id) -> inject::Result<void> {
                    if (destroy_fails.contains(c))
                        return inject::fail(inject::Errc::Io, "efsmi exited 1");
                    destroyed.emplace_back(c, id);
                    std::erase_if(cards[c],
                                  [&](const DrsInstance& in) { return in.instance_id == id; });
                    return inject::ok();
                }};
    }
};

const auto kNothingRecorded = [](std::uint32_t, std::uint32_t) { return false; };

// The crash rule: only an entry's made id, still as made, unrecorded, is destroyed; an entry
// without one destroys nothing (the instance new since `before` may be an administrator's).
TEST(DrsLedger, ConvergeDestroysOnlyTheMadeIdStillAsMade) {
    FakeEfsmi e;
    e.cards[0] = {{0, 0, "1g.11gb", "u0"},
                  {0, 1, "1g.11gb", "u1"},
                  {0, 2, "1g.11gb", "admin"},
                  {0, 3, "2g.22gb", "u3"},
                  {0, 4, "1g.11gb", "u4"}};
    const std::vector<Pending> pending{
        {"a", 0, "1g.11gb", {0}, 1, 1u, "u1"},             // made, still there: destroyed
        {"b", 0, "1g.11gb", {0, 1}, 2, std::nullopt, ""},  // no id: nothing destroyed
        {"c", 0, "1g.11gb", {0}, 3, 3u, "u3x"},            // id 3 is another instance now
        {"d", 0, "1g.11gb", {0}, 4, 9u, "u9"},             // gone already
        {"e", 0, "1g.11gb", {0}, 5, 4u, "u4"},             // a record holds it
    };
    std::vector<Made> heard;
    const auto kept = k8s::drs::converge(
        pending, "claim", e.ops(),
        [](std::uint32_t c, std::uint32_t id) { return c == 0 && id == 4; },
        [&](const Made& m) { heard.push_back(m); });
    EXPECT_TRUE(kept.empty());
    EXPECT_EQ(e.destroyed, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 1}}));
    EXPECT_EQ(heard, (std::vector<Made>{{0, 1, "1g.11gb", "u1"}}));
    EXPECT_EQ(e.cards[0].size(), 4u);
}

// efsmi that cannot list or destroy keeps the entry for the next start.
TEST(DrsLedger, ConvergeKeepsWhatItCouldNotCheck) {
    FakeEfsmi e;
    e.cards[0] = {{0, 1, "1g.11gb", ""}};
    e.cards[1] = {{1, 1, "1g.11gb", ""}};
    e.list_fails = {0};
    e.destroy_fails = {1};
    const std::vector<Pending> pending{{"a", 0, "1g.11gb", {}, 1, 1u, ""},
                                       {"b", 1, "1g.11gb", {}, 1, 1u, ""}};
    EXPECT_EQ(k8s::drs::converge(pending, "pod", e.ops(), kNothingRecorded, {}), pending);
    EXPECT_TRUE(e.destroyed.empty());
}

TEST(DrsLedger, TakeBackAFailedCreateOnlyWhenItCanTellWhich) {
    FakeEfsmi e;
    e.cards[0] = {{0, 0, "1g.11gb", ""}};
    auto ops = e.ops();
    // nothing new: nothing to take back, the entry can go
    EXPECT_TRUE(k8s::drs::take_back_failed_create(ops, "t", 0, "1g.11gb", {0}, kNothingRecorded));
    // one new instance of that profile: destroyed
    e.cards[0].push_back({0, 1, "1g.11gb", ""});
    e.cards[0].push_back({0, 2, "2g.22gb", ""});  // another profile: never ours
    EXPECT_TRUE(k8s::drs::take_back_failed_create(ops, "t", 0, "1g.11gb", {0}, kNothingRecorded));
    EXPECT_EQ(e.destroyed, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 1}}));
    // two new ones: cannot tell which, none destroyed, the entry stays
    e.cards[0].push_back({0, 3, "1g.11gb", ""});
    e.cards[0].push_back({0, 4, "1g.11gb", ""});
    EXPECT_FALSE(k8s::drs::take_back_failed_create(ops, "t", 0, "1g.11gb", {0}, kNothingRecorded));
    // ... unless a record holds one of them
    EXPECT_TRUE(k8s::drs::take_back_failed_create(
        ops, "t", 0, "1g.11gb", {0}, [](std::uint32_t, std::uint32_t id) { return id == 3; }));
    EXPECT_EQ(e.destroyed.back(), (std::pair<std::uint32_t, std::uint32_t>{0, 4}));
}

TEST(DrsLedger, ReleaseDestroysOnlyOurs) {
    FakeEfsmi e;
    e.cards[0] = {{0, 1, "1g.11gb", "u1"}, {0, 2, "1g.11gb", "other"}};
    auto ops = e.ops();
    EXPECT_EQ(*k8s::drs::release(ops, {0, 1, "1g.11gb", "u1"}), Seen::Ours);
    EXPECT_EQ(*k8s::drs::release(ops, {0, 2, "1g.11gb", "u2"}), Seen::Other);
    EXPECT_EQ(*k8s::drs::release(ops, {0, 7, "1g.11gb", ""}), Seen::Gone);
    EXPECT_EQ(e.destroyed, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 1}}));
    e.list_fails = {0};
    EXPECT_FALSE(k8s::drs::release(ops, {0, 2, "1g.11gb", ""}));
}

TEST(DrsLedger, PendingEntriesReadBackAsWritten) {
    const std::vector<Pending> p{{"a", 1, "1g.11gb", {0, 2}, 7, 3u, "u3"}, {"b", 0, "full", {}, 0}};
    EXPECT_EQ(k8s::drs::pending_from_json(k8s::drs::pending_json(p, "podUID"), "podUID"), p);
    EXPECT_THROW((void)k8s::drs::pending_from_json(k8s::drs::pending_json(p, "podUID"), "claim"),
                 std::exception);
}

inject::Result<void> accept_json(const std::string& text, const std::string& source) {
    if (text.empty() || text.front() != '{')
        return inject::fail(inject::Errc::InvalidInput, "checkpoint '" + source + "': not JSON");
    return inject::ok();
}

// The file: each save keeps the last as .prev; a corrupt file is moved aside and .prev used; a
// save that drops records writes .prev first, so the fallback never holds a dropped record.
TEST(DrsLedger, FileFallsBackToPrevAndNeverBringsBackADroppedRecord) {
    k8s_test::TempDir tmp;
    const std::string f = tmp.path() + "/ledger.json";
    auto none = k8s::drs::load_file(f, accept_json);
    EXPECT_FALSE(none.text);
    EXPECT_TRUE(none.problem.empty());
    ASSERT_TRUE(k8s::drs::save_file(f, "{\"a\":1,\"b\":1}", false));
    ASSERT_TRUE(k8s::drs::save_file(f, "{\"a\":1,\"b\":2}", false));
    EXPECT_EQ(k8s_test::slurp(f + ".prev"), "{\"a\":1,\"b\":1}");
    EXPECT_EQ(std::filesystem::status(f).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    ASSERT_TRUE(k8s::drs::save_file(f, "{\"b\":2}", true));  // record a dropped
    EXPECT_EQ(k8s_test::slurp(f + ".prev"), "{\"b\":2}");
    ASSERT_TRUE(inject::fs::atomic_write(f, "garbage"));
    auto back = k8s::drs::load_file(f, accept_json);
    ASSERT_TRUE(back.text);
    EXPECT_EQ(*back.text, "{\"b\":2}");
    EXPECT_FALSE(back.lost);
    EXPECT_NE(back.problem.find("not JSON (kept as '" + f + ".corrupt'); using the previous one"),
              std::string::npos)
        << back.problem;
    EXPECT_EQ(k8s_test::slurp(f + ".corrupt"), "garbage");
    // both bad: lost, and said so
    ASSERT_TRUE(inject::fs::atomic_write(f, "garbage"));
    ASSERT_TRUE(inject::fs::atomic_write(f + ".prev", "garbage"));
    auto lost = k8s::drs::load_file(f, accept_json);
    EXPECT_FALSE(lost.text);
    EXPECT_TRUE(lost.lost);
    EXPECT_NE(lost.problem.find("the previous one is bad too"), std::string::npos);
}

}  // namespace
