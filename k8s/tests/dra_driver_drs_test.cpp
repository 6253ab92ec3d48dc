// SPDX-License-Identifier: Apache-2.0
// The DRA plugin's node side with DRS placements (k8s/dra/driver.cpp): the instances a
// prepare makes and an unprepare destroys through a fake efsmi, failed and ambiguous creates,
// crashes between efsmi and the checkpoint, and what a restart makes again or gives up. The
// fixture: dra_driver_fixture.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "dra/driver.hpp"
#include "dra_driver_fixture.hpp"
#include "dra_fixture.hpp"
#include "inject/cdi_io.hpp"
#include "inject/cdi_registry.hpp"

namespace {

using dra::Json;
using edra_test::claim;
using edra_test::DraDriver;
using edra_test::host2;

// --- DRS placements against a fake efsmi (the instances a card holds, made and destroyed) ---

// efsmi as DrsOps: `cards` holds each card's instances. create takes the lowest free id (as
// efsmi does) and can fail after making the instance (a timeout, a read-back that failed) or
// make a second one for someone else at the same moment; destroy can fail once for one id.
struct FakeEfsmi {
    std::map<std::uint32_t, std::vector<inject::device::DrsInstance>> cards;
    bool fail_after_create = false;
    bool another_appears = false;  ///< an administrator's create lands with ours
    int fail_destroy_id = -1;
    std::string fail_create;  ///< non-empty: every create fails with this message, making nothing
    bool fail_list = false;   ///< every list fails (efsmi not answering)
    int lists = 0;

    std::uint32_t make(std::uint32_t card, const std::string& profile) {
        std::uint32_t id = 0;
        while (std::any_of(cards[card].begin(), cards[card].end(),
                           [&](const auto& in) { return in.instance_id == id; }))
            ++id;
        cards[card].push_back({card, id, profile, ""});
        return id;
    }
    bool has(std::uint32_t card, std::uint32_t id) {
        return std::any_of(cards[card].begin(), cards[card].end(),
                           [&](const auto& in) { return in.instance_id == id; });
    }
    dra::DrsOps ops() {
        dra::DrsOps o;
        o.list =
            [this](std::uint32_t c) -> inject::Result<std::vector<inject::device::DrsInstance>> {
            ++lists;
            if (fail_list)
                return inject::fail(inject::Errc::Io, "efsmi exited 1: 'driver not loaded'");
            return cards[c];
        };
        o.create = [this](std::uint32_t c, const inject::device::DrsProfile& p)
            -> inject::Result<inject::device::DrsInstance> {
            if (!fail_create.empty()) return inject::fail(inject::Errc::Io, fail_create);
            const auto id = make(c, p.name);
            if (another_appears) make(c, p.name);
            if (fail_after_create)
                return inject::fail(inject::Errc::Conflict, "efsmi timed out after making it");
            return inject::device::DrsInstance{c, id, p.name, ""};
        };
        o.destroy = [this](std::uint32_t c, std::uint32_t id) -> inject::Result<void> {
            if (static_cast<int>(id) == fail_destroy_id) {
                fail_destroy_id = -1;
                return inject::fail(inject::Errc::Io, "efsmi: device busy");
            }
            std::erase_if(cards[c], [&](const auto& in) { return in.instance_id == id; });
            return inject::ok();
        };
        return o;
    }
};

class DraDrs : public DraDriver {
protected:
    void SetUp() override {
        DraDriver::SetUp();
        host_.devices[1].drs_instances.clear();
        host_.drs_profiles.push_back({"1g.11gb", 0, 4, 10744ULL << 20, 6});
        host_.drs_profiles.push_back({"2g.22gb", 1, 2, 21488ULL << 20, 12});
    }
    dra::DriverOptions drs_options() {
        auto o = options();
        o.drs = efsmi_.ops();
        return o;
    }
    std::unique_ptr<dra::Driver> make_drs() { return make(drs_options()); }
    dra::Checkpoint on_disk() const {
        auto cp = dra::load_checkpoint(tmp_.path() + "/checkpoint.json");
        EXPECT_TRUE(cp) << cp.error().what();
        return cp ? *cp : dra::Checkpoint{};
    }

    FakeEfsmi efsmi_;
};

// Unprepare of a claim with two placements: the second destroy fails once. The first is no
// longer recorded (saved at once), so when a later prepare gets its freed id, kubelet's retry
// of the unprepare leaves that instance alone.
TEST_F(DraDrs, UnprepareRetryNeverDestroysAnInstanceThatGotAFreedId) {
    claims_["ns/a"] = claim("a", "uA", {"gcu-0-1g-11gb-0", "gcu-0-1g-11gb-1"});
    claims_["ns/b"] = claim("b", "uB", {"gcu-0-2g-22gb-0"});
    auto d = make_drs();
    ASSERT_EQ(d->prepare({{"ns", "a", "uA"}}).at("uA").error, "");
    ASSERT_EQ(efsmi_.cards[0].size(), 2u);
    efsmi_.fail_destroy_id = 1;
    EXPECT_EQ(d->unprepare({{"ns", "a", "uA"}}).at("uA"),
              "claim 'ns/a': device 'gcu-0-1g-11gb-1': efsmi: device busy");
    const auto kept = on_disk().claims.at("uA").devices;
    EXPECT_FALSE(kept[0].created) << "destroyed, but still recorded on disk";
    ASSERT_TRUE(kept[1].created);
    EXPECT_EQ(kept[1].created->id, 1u);
    ASSERT_EQ(d->prepare({{"ns", "b", "uB"}}).at("uB").error, "");
    ASSERT_EQ(d->checkpoint().claims.at("uB").devices[0].created->id, 0u);  // the freed id
    EXPECT_EQ(d->unprepare({{"ns", "a", "uA"}}).at("uA"), "");
    EXPECT_TRUE(efsmi_.has(0, 0)) << "claim B's instance was destroyed by A's unprepare";
    EXPECT_FALSE(efsmi_.has(0, 1));
    EXPECT_FALSE(d->checkpoint().claims.contains("uA"));
}

// A checkpoint where two claims record the same instance (the first's destroy done, the plugin
// killed before it saved that, the id made again for the second): unprepare of the first
// leaves it alone.
TEST_F(DraDrs, UnprepareLeavesAnInstanceAnotherClaimRecords) {
    dra::Checkpoint cp;
    const auto dev = [](const std::string& uid) {
        return dra::PreparedDevice{{"gpu"},
                                   "node1",
                                   "gcu-0-1g-11gb-0",
                                   {"k8s.gcu.enflame.com/claim=" + uid + "-gcu-0-1g-11gb-0"},
                                   dra::CreatedInstance{0, 0, "1g.11gb", ""}};
    };
    cp.claims["uA"] = {"ns", "a", {dev("uA")}};
    cp.claims["uB"] = {"ns", "b", {dev("uB")}};
    ASSERT_TRUE(dra::save_checkpoint(tmp_.path() + "/checkpoint.json", cp));
    efsmi_.make(0, "1g.11gb");
    auto d = make_drs();
    EXPECT_EQ(d->unprepare({{"ns", "a", "uA"}}).at("uA"), "");
    EXPECT_TRUE(efsmi_.has(0, 0));
    EXPECT_EQ(on_disk().claims.size(), 1u);
    EXPECT_EQ(d->unprepare({{"ns", "b", "uB"}}).at("uB"), "");
    EXPECT_FALSE(efsmi_.has(0, 0));
}

// A whole card whose card holds DRS instances (made by anyone) is not handed out whole; the
// other claim of the call is prepared.
TEST_F(DraDrs, WholeCardSplitIntoInstancesIsThatClaimsError) {
    efsmi_.make(0, "1g.11gb");
    efsmi_.make(0, "2g.22gb");
    claims_["ns/w"] = claim("w", "uW", {"gcu-1", "gcu-0"});
    claims_["ns/ok"] = claim("ok", "uO", {"gcu-1"});
    auto d = make_drs();
    const auto out = d->prepare({{"ns", "w", "uW"}, {"ns", "ok", "uO"}});
    EXPECT_EQ(out.at("uW").error,
              "claim 'ns/w': card 0 is split into DRS instances (0:1g.11gb:0 0:2g.22gb:1): not "
              "handed out whole");
    EXPECT_TRUE(out.at("uW").devices.empty());
    EXPECT_FALSE(has_spec("uW"));
    EXPECT_EQ(out.at("uO").error, "");
    EXPECT_TRUE(has_spec("uO"));
    EXPECT_EQ(on_disk().claims.size(), 1u);
    // efsmi that cannot answer: refused as well (fail closed)
    auto o = drs_options();
    o.drs.list = [](std::uint32_t) -> inject::Result<std::vector<inject::device::DrsInstance>> {
        return inject::fail(inject::Errc::Io, "efsmi: timed out");
    };
    claims_["ns/x"] = claim("x", "uX", {"gcu-1"});
    d.reset();
    auto d2 = make(o);
    EXPECT_EQ(d2->prepare({{"ns", "x", "uX"}}).at("uX").error,
              "claim 'ns/x': device 'gcu-1': efsmi: timed out");
}

// A placement on a card a checkpointed claim holds whole (both allocated while partitions were
// published without counters): refused, naming the card and the holder; no instance made.
TEST_F(DraDrs, PlacementOnACardHeldWholeIsRefused) {
    claims_["ns/w"] = claim("w", "uW", {"gcu-0"});
    claims_["ns/p"] = claim("p", "uP", {"gcu-0-1g-11gb-0"});
    claims_["ns/q"] = claim("q", "uQ", {"gcu-1-1g-11gb-0"});
    auto d = make_drs();
    ASSERT_EQ(d->prepare({{"ns", "w", "uW"}}).at("uW").error, "");
    const auto out = d->prepare({{"ns", "p", "uP"}, {"ns", "q", "uQ"}});
    EXPECT_EQ(out.at("uP").error,
              "claim 'ns/p': device 'gcu-0-1g-11gb-0': card 0 is prepared whole for claim "
              "'ns/w': no DRS instance made on it");
    EXPECT_FALSE(has_spec("uP"));
    EXPECT_TRUE(efsmi_.cards[0].empty());
    EXPECT_EQ(out.at("uQ").error, "");
    EXPECT_EQ(efsmi_.cards[1].size(), 1u);
}

// Without DRS profiles no card can be split: a whole card's prepare asks efsmi nothing.
TEST_F(DraDrs, WholeCardOnAHostWithoutDrsAsksEfsmiNothing) {
    host_.drs_profiles.clear();
    claims_["ns/w"] = claim("w", "uW", {"gcu-0"});
    auto d = make_drs();
    EXPECT_EQ(d->prepare({{"ns", "w", "uW"}}).at("uW").error, "");
    EXPECT_EQ(efsmi_.lists, 0);
}

// efsmi made the instance and then the create failed (a timeout, a read-back that failed):
// the one new unrecorded instance is taken back at once, nothing pending is left.
TEST_F(DraDrs, CreateThatFailsAfterMakingTheInstanceLeavesNothing) {
    efsmi_.make(0, "1g.11gb");  // an administrator's: stays
    efsmi_.fail_after_create = true;
    claims_["ns/c1"] = claim("c1", "uA", {"gcu-0-1g-11gb-0"});
    auto d = make_drs();
    const auto out = d->prepare({{"ns", "c1", "uA"}});
    EXPECT_EQ(out.at("uA").error,
              "claim 'ns/c1': device 'gcu-0-1g-11gb-0': efsmi timed out after making it");
    EXPECT_EQ(efsmi_.cards[0].size(), 1u) << "an instance left on the card with no record";
    EXPECT_TRUE(efsmi_.has(0, 0));
    EXPECT_TRUE(d->checkpoint().pending.empty());
    EXPECT_TRUE(on_disk().pending.empty());
    EXPECT_FALSE(has_spec("uA"));
}

// Two new instances after the failed create (someone else's landed too): neither destroyed,
// the pending entry kept for the next start, and a later successful prepare of the same claim
// does not drop it.
TEST_F(DraDrs, AmbiguousFailedCreateKeepsItsPendingEntryAcrossARetry) {
    efsmi_.fail_after_create = true;
    efsmi_.another_appears = true;
    claims_["ns/c1"] = claim("c1", "uA", {"gcu-0-1g-11gb-0"});
    auto d = make_drs();
    EXPECT_NE(d->prepare({{"ns", "c1", "uA"}}).at("uA").error, "");
    EXPECT_EQ(efsmi_.cards[0].size(), 2u);
    ASSERT_EQ(on_disk().pending.size(), 1u);
    efsmi_.fail_after_create = false;
    efsmi_.another_appears = false;
    ASSERT_EQ(d->prepare({{"ns", "c1", "uA"}}).at("uA").error, "");
    EXPECT_EQ(efsmi_.cards[0].size(), 3u);
    const auto cp = on_disk();
    ASSERT_EQ(cp.pending.size(), 1u) << "the retry dropped an entry it did not write";
    EXPECT_EQ(cp.pending[0].attempt, 1u);
    EXPECT_EQ(cp.claims.at("uA").devices[0].created->id, 2u);
}

// Two claims of one call, one placement each on card 0, the plugin killed (an exception stands
// in for SIGKILL) right after efsmi made the second claim's instance, before its id was saved:
// the first claim was not recorded by the second's pending save, and the restart destroys the
// first's instance (its entry has the id); the second's cannot be told from an administrator's
// and stays (logged).
TEST_F(DraDrs, KilledAfterTheSecondClaimsCreateRestartTakesBothBack) {
    claims_["ns/a"] = claim("a", "uA", {"gcu-0-1g-11gb-0"});
    claims_["ns/b"] = claim("b", "uB", {"gcu-0-1g-11gb-1"});
    auto o = drs_options();
    int creates = 0;
    o.drs.create = [&, real = o.drs.create](std::uint32_t c, const inject::device::DrsProfile& p) {
        auto r = real(c, p);
        if (++creates == 2) throw std::runtime_error("SIGKILL");
        return r;
    };
    {
        auto d = make(o);
        EXPECT_THROW((void)d->prepare({{"ns", "a", "uA"}, {"ns", "b", "uB"}}), std::runtime_error);
    }
    ASSERT_EQ(efsmi_.cards[0].size(), 2u);
    const auto cp = on_disk();
    EXPECT_TRUE(cp.claims.empty()) << "a claim recorded before its answer";
    ASSERT_EQ(cp.pending.size(), 2u);
    EXPECT_EQ(cp.pending[0].made, std::optional<std::uint32_t>(0));
    EXPECT_EQ(cp.pending[1].made, std::nullopt);
    auto d = make_drs();
    d->converge();
    EXPECT_FALSE(efsmi_.has(0, 0));
    EXPECT_TRUE(efsmi_.has(0, 1));
    EXPECT_TRUE(on_disk().pending.empty());
    EXPECT_FALSE(has_spec("uA"));
}

// Pending entries of one call on one card, each with the id efsmi made for it, and an
// administrator's instance of that profile made before the crash: only the recorded ids go.
TEST_F(DraDrs, ConvergeDestroysOnlyTheRecordedIds) {
    dra::Checkpoint cp;
    cp.pending.push_back({"uA", 0, "1g.11gb", {}, 1, 0u, ""});
    cp.pending.push_back({"uB", 0, "1g.11gb", {0}, 2, 1u, ""});
    ASSERT_TRUE(dra::save_checkpoint(tmp_.path() + "/checkpoint.json", cp));
    efsmi_.make(0, "1g.11gb");
    efsmi_.make(0, "1g.11gb");
    efsmi_.make(0, "1g.11gb");  // an administrator's, id 2: new since the entries, not ours
    efsmi_.make(1, "1g.11gb");  // another card's: not looked at
    auto d = make_drs();
    d->converge();
    EXPECT_EQ(efsmi_.cards[0].size(), 1u);
    EXPECT_TRUE(efsmi_.has(0, 2));
    EXPECT_EQ(efsmi_.cards[1].size(), 1u);
    EXPECT_TRUE(on_disk().pending.empty());
}

// An entry written, then the plugin killed before efsmi answered; an administrator makes an
// instance of that profile before the restart: it survives (the entry records no id).
TEST_F(DraDrs, AnAdministratorsInstanceMadeAfterAPendingEntrySurvives) {
    dra::Checkpoint cp;
    cp.pending.push_back({"uA", 0, "1g.11gb", {}, 1, std::nullopt, ""});
    ASSERT_TRUE(dra::save_checkpoint(tmp_.path() + "/checkpoint.json", cp));
    efsmi_.make(0, "1g.11gb");
    auto d = make_drs();
    d->converge();
    EXPECT_TRUE(efsmi_.has(0, 0));
    EXPECT_TRUE(on_disk().pending.empty());
}

// A placement whose recorded instance is gone (a reboot or driver reload; here its id even holds
// another profile now): the start makes it again through a pending entry, records the new id and
// writes the spec for the new instance; the instance that holds the old id is left alone.
TEST_F(DraDrs, StartMakesAGonePlacementsInstanceAgain) {
    claims_["ns/p"] = claim("p", "uP", {"gcu-0-1g-11gb-0"});
    {
        auto d = make_drs();
        ASSERT_EQ(d->prepare({{"ns", "p", "uP"}}).at("uP").error, "");
    }
    ASSERT_TRUE(efsmi_.has(0, 0));
    efsmi_.cards[0].clear();
    efsmi_.make(0, "2g.22gb");                         // an administrator's, id 0
    host_.devices[0].drs_instances = efsmi_.cards[0];  // what discovery finds now
    auto d = make_drs();
    d->converge();
    ASSERT_EQ(efsmi_.cards[0].size(), 2u);
    EXPECT_EQ(efsmi_.cards[0][0].profile, "2g.22gb");
    EXPECT_EQ(efsmi_.cards[0][1].profile, "1g.11gb");
    const auto rec = on_disk().claims.at("uP").devices.at(0).created;
    ASSERT_TRUE(rec);
    EXPECT_EQ(*rec, (dra::CreatedInstance{0, 1, "1g.11gb", ""}));
    EXPECT_TRUE(on_disk().pending.empty());
    ASSERT_TRUE(has_spec("uP"));
    auto spec = inject::cdi::load_spec(spec_path("uP"));
    ASSERT_TRUE(spec) << spec.error().what();
    auto edits = inject::cdi::resolve(*spec, {"k8s.gcu.enflame.com/claim=uP-gcu-0-1g-11gb-0"});
    ASSERT_TRUE(edits) << edits.error().what();
    EXPECT_NE(read(spec_path("uP")).find("TOPS_VISIBLE_DEVICES=0:1g.11gb:1\n"), std::string::npos)
        << read(spec_path("uP"));
    // kubelet's retry answers from the checkpoint; the unprepare destroys the new one only
    EXPECT_EQ(d->prepare({{"ns", "p", "uP"}}).at("uP").error, "");
    EXPECT_EQ(d->unprepare({{"ns", "p", "uP"}}).at("uP"), "");
    EXPECT_TRUE(efsmi_.has(0, 0));
    EXPECT_FALSE(efsmi_.has(0, 1));
}

// The same, but efsmi cannot make it: the spec goes (fail closed: no spec naming an instance
// that is not ours), the claim stays for its unprepare, and kubelet's retry gets the error.
TEST_F(DraDrs, AGonePlacementThatCannotBeMadeAgainLosesItsSpec) {
    claims_["ns/p"] = claim("p", "uP", {"gcu-0-1g-11gb-0"});
    {
        auto d = make_drs();
        ASSERT_EQ(d->prepare({{"ns", "p", "uP"}}).at("uP").error, "");
    }
    ASSERT_TRUE(has_spec("uP"));
    efsmi_.cards[0].clear();
    efsmi_.make(0, "2g.22gb");
    host_.devices[0].drs_instances = efsmi_.cards[0];
    efsmi_.fail_create = "efsmi exited 1: 'Error: too many instances'";
    auto d = make_drs();
    d->converge();
    EXPECT_FALSE(has_spec("uP"));
    EXPECT_TRUE(on_disk().claims.contains("uP"));
    EXPECT_TRUE(on_disk().pending.empty());
    EXPECT_EQ(
        d->prepare({{"ns", "p", "uP"}}).at("uP").error,
        "claim 'ns/p': device 'gcu-0-1g-11gb-0': card 0 instance 0 is now 2g.22gb, not the 1g.11gb "
        "instance made for it");
    EXPECT_FALSE(has_spec("uP"));
    EXPECT_EQ(d->unprepare({{"ns", "p", "uP"}}).at("uP"), "");
    EXPECT_TRUE(efsmi_.has(0, 0)) << "the administrator's instance that got the id was destroyed";
}

// efsmi that cannot list at start tells nothing gone: the spec stays, nothing is made.
TEST_F(DraDrs, AnEfsmiThatCannotListAtStartKeepsTheSpec) {
    claims_["ns/p"] = claim("p", "uP", {"gcu-0-1g-11gb-0"});
    {
        auto d = make_drs();
        ASSERT_EQ(d->prepare({{"ns", "p", "uP"}}).at("uP").error, "");
    }
    const auto before = read(spec_path("uP"));
    const auto cp = on_disk();
    efsmi_.fail_list = true;
    auto d = make_drs();
    d->converge();
    EXPECT_EQ(read(spec_path("uP")), before);
    EXPECT_EQ(on_disk(), cp);
    EXPECT_EQ(efsmi_.cards[0].size(), 1u);
}

}  // namespace
