// SPDX-License-Identifier: Apache-2.0
// The DRA plugin's node side without gRPC (k8s/dra/driver.cpp, claim_cdi.cpp, checkpoint.cpp):
// prepare / unprepare against a hand-built host, claims fed as JSON, specs and checkpoint in a
// fresh temp folder (dra_driver_fixture.hpp); the per-claim spec read back with libinject's parser
// and validator; restarts, corrupt checkpoints, deadlines and cancellation; the checkpoint's
// text. DRS placements against a fake efsmi: dra_driver_drs_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "dra/claim_cdi.hpp"
#include "dra/driver.hpp"
#include "dra_driver_fixture.hpp"
#include "dra_fixture.hpp"
#include "inject/cdi_io.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/cdi_validate.hpp"
#include "inject/fs.hpp"

namespace {

using dra::Json;
using edra_test::claim;
using edra_test::DraDriver;
using edra_test::host2;

TEST_F(DraDriver, PrepareWritesAValidSpecForExactlyTheCard) {
    claims_["ns/c1"] = claim("c1", "uid-1", {"gcu-1"});
    auto d = make();
    const auto out = d->prepare({{"ns", "c1", "uid-1"}});
    ASSERT_EQ(out.size(), 1u);
    const auto& a = out.at("uid-1");
    EXPECT_EQ(a.error, "");
    ASSERT_EQ(a.devices.size(), 1u);
    EXPECT_EQ(a.devices[0],
              (dra::PreparedDevice{
                  {"gpu"}, "node1", "gcu-1", {"k8s.gcu.enflame.com/claim=uid-1-gcu-1"}}));

    auto spec = inject::cdi::load_spec(spec_path("uid-1"));
    ASSERT_TRUE(spec) << spec.error().what();
    EXPECT_TRUE(inject::cdi::validate(*spec, "spec").empty());
    EXPECT_EQ(spec->kind, "k8s.gcu.enflame.com/claim");
    ASSERT_EQ(spec->devices.size(), 1u);
    EXPECT_EQ(spec->devices[0].name, "uid-1-gcu-1");
    ASSERT_EQ(spec->devices[0].edits.device_nodes.size(), 1u);
    EXPECT_EQ(spec->devices[0].edits.device_nodes[0].path, "/dev/gcu1");
    EXPECT_EQ(spec->devices[0].edits.device_nodes[0].host_path, "/sim/dev/gcu1");
    EXPECT_TRUE(spec->devices[0].edits.env.empty());
    EXPECT_EQ(spec->edits.env, std::vector<std::string>{"ENFLAME_VISIBLE_DEVICES=void"});
    ASSERT_EQ(spec->edits.device_nodes.size(), 1u);
    EXPECT_EQ(spec->edits.device_nodes[0].path, "/dev/gcuctl");
    // The registry resolves the name kubelet hands the runtime.
    auto edits = inject::cdi::resolve(*spec, {"k8s.gcu.enflame.com/claim=uid-1-gcu-1"});
    EXPECT_TRUE(edits) << edits.error().what();

    struct stat st {};
    ASSERT_EQ(::stat(spec_path("uid-1").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    auto cp = dra::load_checkpoint(tmp_.path() + "/checkpoint.json");
    ASSERT_TRUE(cp) << cp.error().what();
    EXPECT_EQ(*cp, d->checkpoint());
    EXPECT_EQ(cp->claims.at("uid-1").devices, a.devices);
}

TEST_F(DraDriver, DrsInstanceGetsItsParentCardAndTopsEnv) {
    claims_["ns/c1"] = claim("c1", "uid-1", {"gcu-1-drs-2"});
    auto d = make();
    const auto out = d->prepare({{"ns", "c1", "uid-1"}});
    ASSERT_EQ(out.at("uid-1").error, "");
    EXPECT_EQ(out.at("uid-1").devices[0].cdi_ids,
              std::vector<std::string>{"k8s.gcu.enflame.com/claim=uid-1-gcu-1-drs-2"});
    auto spec = inject::cdi::load_spec(spec_path("uid-1"));
    ASSERT_TRUE(spec) << spec.error().what();
    ASSERT_EQ(spec->devices.size(), 1u);  // the parent card is not a device of its own here
    EXPECT_EQ(spec->devices[0].name, "uid-1-gcu-1-drs-2");
    EXPECT_EQ(
        spec->devices[0].edits.env,
        std::vector<std::string>{"TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000002"});
    ASSERT_EQ(spec->devices[0].edits.device_nodes.size(), 1u);
    EXPECT_EQ(spec->devices[0].edits.device_nodes[0].path, "/dev/gcu1");
}

// A placement is the instance made for it: the same edits as that instance, under the
// placement's name; without one, a clear NotFound (never a spec for the whole card).
TEST(DraCdi, PlacementIsTheInstanceMadeForIt) {
    const auto host = host2();
    const dra::DeviceName placement{1, std::nullopt, dra::Placement{"1g-11gb", 0}};
    const dra::CreatedInstance made{1, 2, "1g.11gb", "4c1e9a52-0000-4000-8000-000000000002"};
    auto spec = dra::claim_spec(host, {}, "uid-1", {placement}, {{"gcu-1-1g-11gb-0", made}});
    ASSERT_TRUE(spec) << spec.error().what();
    ASSERT_EQ(spec->devices.size(), 1u);
    EXPECT_EQ(spec->devices[0].name, "uid-1-gcu-1-1g-11gb-0");
    EXPECT_EQ(
        spec->devices[0].edits.env,
        std::vector<std::string>{"TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000002"});
    ASSERT_EQ(spec->devices[0].edits.device_nodes.size(), 1u);
    EXPECT_EQ(spec->devices[0].edits.device_nodes[0].path, "/dev/gcu1");
    auto none = dra::claim_spec(host, {}, "uid-1", {placement});
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().what(), "device 'gcu-1-1g-11gb-0': no DRS instance was made for it");
    auto gone = dra::claim_spec(host, {}, "uid-1", {placement},
                                {{"gcu-1-1g-11gb-0", dra::CreatedInstance{1, 5, "1g.11gb", ""}}});
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().what(), "device 'gcu-1-1g-11gb-0': card 1 has no DRS instance 5");
    // The id now held by another instance (ours destroyed behind our back, the id reused): refused.
    auto other = dra::claim_spec(host, {}, "uid-1", {placement},
                                 {{"gcu-1-1g-11gb-0", dra::CreatedInstance{1, 2, "2g.22gb", ""}}});
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error().what(),
              "device 'gcu-1-1g-11gb-0': card 1 instance 2 is now 1g.11gb "
              "4c1e9a52-0000-4000-8000-000000000002, "
              "not the 2g.22gb instance made for it");
    auto uuid = dra::claim_spec(
        host, {}, "uid-1", {placement},
        {{"gcu-1-1g-11gb-0", dra::CreatedInstance{1, 2, "1g.11gb", "another-uuid"}}});
    ASSERT_FALSE(uuid);
    EXPECT_EQ(uuid.error().code(), inject::Errc::NotFound);
}

// Without a way to make instances (DriverOptions::drs empty), a placement is that claim's error.
TEST_F(DraDriver, PlacementWithoutDrsOpsIsTheClaimsError) {
    host_.drs_profiles.push_back({"1g.11gb", 0, 4, 10744ULL << 20, 6});
    claims_["ns/c1"] = claim("c1", "uid-1", {"gcu-0-1g-11gb-0"});
    claims_["ns/c2"] = claim("c2", "uid-2", {"gcu-0-2g-22gb-0"});
    auto d = make();
    const auto out = d->prepare({{"ns", "c1", "uid-1"}, {"ns", "c2", "uid-2"}});
    EXPECT_EQ(out.at("uid-1").error,
              "claim 'ns/c1': device 'gcu-0-1g-11gb-0': this plugin cannot create DRS instances");
    EXPECT_EQ(out.at("uid-2").error,
              "claim 'ns/c2': device 'gcu-0-2g-22gb-0': no DRS profile of this node has that name");
    EXPECT_FALSE(has_spec("uid-1"));
    EXPECT_TRUE(d->checkpoint().claims.empty());
    EXPECT_TRUE(d->checkpoint().pending.empty());
}

TEST_F(DraDriver, RetryGivesTheSameAnswerAndFileWithoutAnotherFetch) {
    claims_["ns/c1"] = claim("c1", "uid-1", {"gcu-0", "gcu-1"});
    auto d = make();
    const auto first = d->prepare({{"ns", "c1", "uid-1"}});
    const auto bytes = read(spec_path("uid-1"));
    ASSERT_FALSE(bytes.empty());
    const auto again = d->prepare({{"ns", "c1", "uid-1"}});
    EXPECT_EQ(again.at("uid-1").devices, first.at("uid-1").devices);
    EXPECT_EQ(read(spec_path("uid-1")), bytes);
    EXPECT_EQ(fetches_, 1);
    // A spec deleted behind our back is written again, byte for byte.
    std::filesystem::remove(spec_path("uid-1"));
    const auto third = d->prepare({{"ns", "c1", "uid-1"}});
    EXPECT_EQ(third.at("uid-1").devices, first.at("uid-1").devices);
    EXPECT_EQ(read(spec_path("uid-1")), bytes);
}

TEST_F(DraDriver, EveryClaimAnsweredOneErrorEachNothingLeftBehind) {
    claims_["ns/good"] = claim("good", "uid-g", {"gcu-0"});
    claims_["ns/moved"] = claim("moved", "uid-new", {"gcu-1"});
    claims_["ns/far"] = claim("far", "uid-f", {"gcu-7"});
    auto d = make();
    const auto out = d->prepare({{"ns", "good", "uid-g"},
                                 {"ns", "moved", "uid-old"},
                                 {"ns", "gone", "uid-x"},
                                 {"ns", "far", "uid-f"}});
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out.at("uid-g").error, "");
    EXPECT_EQ(out.at("uid-g").devices.size(), 1u);
    EXPECT_EQ(out.at("uid-old").error,
              "claim 'ns/moved': metadata.uid is 'uid-new', kubelet asked for 'uid-old' (the claim "
              "was deleted and "
              "created again)");
    EXPECT_EQ(out.at("uid-x").error,
              "claim 'ns/gone': fetching it: GET "
              "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/gone: 404 Not Found");
    EXPECT_EQ(out.at("uid-f").error, "claim 'ns/far': device 'gcu-7' is not on this node");
    EXPECT_EQ(discoveries_, 2);  // the unknown card made it look again once
    EXPECT_TRUE(has_spec("uid-g"));
    for (const char* uid : {"uid-old", "uid-new", "uid-x", "uid-f"})
        EXPECT_FALSE(has_spec(uid)) << uid;
    EXPECT_EQ(d->checkpoint().claims.size(), 1u);
}

TEST_F(DraDriver, UnprepareRemovesSpecAndEntryUnknownSucceeds) {
    claims_["ns/c1"] = claim("c1", "uid-1", {"gcu-0"});
    auto d = make();
    ASSERT_EQ(d->prepare({{"ns", "c1", "uid-1"}}).at("uid-1").error, "");
    const auto out = d->unprepare({{"ns", "c1", "uid-1"}, {"ns", "never", "uid-never"}});
    EXPECT_EQ(out, (std::map<std::string, std::string>{{"uid-1", ""}, {"uid-never", ""}}));
    EXPECT_FALSE(has_spec("uid-1"));
    EXPECT_TRUE(d->checkpoint().claims.empty());
    auto cp = dra::load_checkpoint(tmp_.path() + "/checkpoint.json");
    ASSERT_TRUE(cp);
    EXPECT_TRUE(cp->claims.empty());
    // twice is fine
    EXPECT_EQ(d->unprepare({{"ns", "c1", "uid-1"}}).at("uid-1"), "");
}

TEST_F(DraDriver, CheckpointUnwritableMeansNotPrepared) {
    auto o = options();
    claims_["ns/c1"] = claim("c1", "uid-1", {"gcu-0"});
    auto d = make(o);
    ASSERT_TRUE(d);
    // A folder where the checkpoint goes: atomic_write refuses to replace it.
    std::filesystem::create_directories(o.checkpoint_path);
    const auto out = d->prepare({{"ns", "c1", "uid-1"}});
    EXPECT_NE(out.at("uid-1").error.find("writing checkpoint '" + o.checkpoint_path + "'"),
              std::string::npos)
        << out.at("uid-1").error;
    EXPECT_TRUE(out.at("uid-1").devices.empty());
    EXPECT_FALSE(has_spec("uid-1"));
}

TEST_F(DraDriver, RestartConvergesSpecsWithTheCheckpoint) {
    claims_["ns/kept"] = claim("kept", "uid-k", {"gcu-0"});
    claims_["ns/lost"] = claim("lost", "uid-l", {"gcu-1"});
    {
        auto d = make();
        ASSERT_EQ(d->prepare({{"ns", "kept", "uid-k"}, {"ns", "lost", "uid-l"}}).at("uid-l").error,
                  "");
    }
    const auto kept_bytes = read(spec_path("uid-k"));
    // Killed between spec and checkpoint: a spec the checkpoint does not know.
    ASSERT_TRUE(inject::fs::atomic_write(spec_path("uid-orphan"), read(spec_path("uid-l"))));
    // And a checkpointed claim whose spec went missing, and one cut short (specs are not
    // fsynced: a power loss may leave that).
    std::filesystem::remove(spec_path("uid-k"));
    const auto lost_bytes = read(spec_path("uid-l"));
    ASSERT_TRUE(inject::fs::atomic_write(spec_path("uid-l"), lost_bytes.substr(0, 20)));
    auto d = make();
    d->converge();
    EXPECT_FALSE(has_spec("uid-orphan"));
    EXPECT_EQ(read(spec_path("uid-k")), kept_bytes);
    EXPECT_EQ(read(spec_path("uid-l")), lost_bytes);
    // A file that is not ours stays.
    ASSERT_TRUE(inject::fs::atomic_write(cdi_ + "/other.yaml", "x"));
    d->converge();
    EXPECT_TRUE(std::filesystem::exists(cdi_ + "/other.yaml"));
    // A crash in the middle of a spec write leaves atomic_write's temporary file: removed at
    // start; another program's temporary files stay.
    const std::string temp = spec_path("uid-k") + ".tmp.Ab3xYz";
    for (const auto& f :
         {temp, cdi_ + "/other.yaml.tmp.Ab3xYz", spec_path("uid-k") + ".tmp.long123"})
        std::ofstream(f) << "half";
    d->converge();
    EXPECT_FALSE(std::filesystem::exists(temp));
    EXPECT_TRUE(std::filesystem::exists(cdi_ + "/other.yaml.tmp.Ab3xYz"));
    EXPECT_TRUE(std::filesystem::exists(spec_path("uid-k") + ".tmp.long123"));
    EXPECT_EQ(read(spec_path("uid-k")), kept_bytes);
    // The restarted plugin answers a retried prepare from the checkpoint.
    fetches_ = 0;
    EXPECT_EQ(d->prepare({{"ns", "kept", "uid-k"}}).at("uid-k").devices.size(), 1u);
    EXPECT_EQ(fetches_, 0);
}

TEST_F(DraDriver, ACorruptCheckpointFallsBackToThePreviousOneAndKeepsTheSpecs) {
    claims_["ns/a"] = claim("a", "uid-a", {"gcu-0"});
    claims_["ns/b"] = claim("b", "uid-b", {"gcu-1"});
    const auto path = options().checkpoint_path;
    {
        auto d = make();
        ASSERT_EQ(d->prepare({{"ns", "a", "uid-a"}}).at("uid-a").error, "");
        ASSERT_EQ(d->prepare({{"ns", "b", "uid-b"}}).at("uid-b").error, "");
    }
    // Each save kept the file it replaced.
    ASSERT_EQ(dra::load_checkpoint(path + ".prev")->claims.size(), 1u);
    const auto bad = read(path).substr(0, 30);
    ASSERT_TRUE(inject::fs::atomic_write(path, bad));
    auto loaded = dra::load_checkpoint_or_previous(path);
    EXPECT_FALSE(loaded.lost);
    EXPECT_EQ(loaded.problem.rfind("checkpoint '" + path + "': ", 0), 0u) << loaded.problem;
    EXPECT_TRUE(loaded.problem.ends_with("(kept as '" + path +
                                         ".corrupt'); using the previous one, '" + path + ".prev'"))
        << loaded.problem;
    EXPECT_EQ(read(path + ".corrupt"), bad);
    EXPECT_FALSE(std::filesystem::exists(path));
    // A restart now (a crash right after the fallback) starts from .prev again.
    auto d = make();
    d->converge();
    EXPECT_EQ(d->checkpoint().claims.size(), 1u);
    EXPECT_TRUE(d->checkpoint().claims.contains("uid-a"));
    // uid-b's spec stays (its containers may run): kubelet's unprepare removes it.
    EXPECT_TRUE(has_spec("uid-b"));
    EXPECT_EQ(d->unprepare({{"ns", "b", "uid-b"}}).at("uid-b"), "");
    EXPECT_FALSE(has_spec("uid-b"));
    EXPECT_EQ(d->unprepare({{"ns", "a", "uid-a"}}).at("uid-a"), "");
    EXPECT_FALSE(has_spec("uid-a"));
    EXPECT_TRUE(d->checkpoint().claims.empty());
}

TEST_F(DraDriver, BothCheckpointsBadStartsWithoutClaimsAndKeepsTheSpecs) {
    claims_["ns/a"] = claim("a", "uid-a", {"gcu-0"});
    const auto path = options().checkpoint_path;
    {
        auto d = make();
        ASSERT_EQ(d->prepare({{"ns", "a", "uid-a"}}).at("uid-a").error, "");
    }
    ASSERT_TRUE(
        inject::fs::atomic_write(path, "{\"version\":1,\"claims\":{\"u\":{\"namespace\":\"n\"}}}"));
    ASSERT_TRUE(inject::fs::atomic_write(path + ".prev", "{"));
    auto loaded = dra::load_checkpoint_or_previous(path);
    EXPECT_TRUE(loaded.lost);
    EXPECT_TRUE(loaded.problem.ends_with(": starting without prepared claims")) << loaded.problem;
    EXPECT_NE(loaded.problem.find("the previous one is bad too: checkpoint '" + path + ".prev': "),
              std::string::npos)
        << loaded.problem;
    auto d = make();
    d->converge();
    EXPECT_TRUE(d->checkpoint().claims.empty());
    EXPECT_TRUE(has_spec("uid-a"));
    // A new prepare works and is remembered.
    EXPECT_EQ(d->prepare({{"ns", "a", "uid-a"}}).at("uid-a").error, "");
    EXPECT_TRUE(dra::load_checkpoint(path)->claims.contains("uid-a"));
}

// kubelet gives up on a prepare whose claim fetch hangs and unprepares the claim; the fetch
// then returns: the late prepare commits nothing. A prepare after the unprepare is not refused.
TEST_F(DraDriver, APrepareThatOutlivesItsUnprepareCommitsNothing) {
    claims_["ns/c"] = claim("c", "uid-c", {"gcu-0"});
    std::promise<void> release, asked;
    auto released = release.get_future().share();
    std::atomic<bool> hold{true};
    auto d = dra::Driver::create(
        options(),
        [&](const std::string& ns, const std::string& name) -> inject::Result<Json> {
            if (hold.exchange(false)) {
                asked.set_value();
                released.wait();
            }
            return claims_.at(ns + "/" + name);
        },
        [this] { return inject::Result<inject::device::Host>(host_); });
    ASSERT_TRUE(d);
    auto late = std::async(std::launch::async, [&] {
        return (*d)->prepare({{"ns", "c", "uid-c"}});
    });
    asked.get_future().wait();
    EXPECT_EQ((*d)->unprepare({{"ns", "c", "uid-c"}}).at("uid-c"), "");
    release.set_value();
    EXPECT_EQ(late.get().at("uid-c").error,
              "claim 'ns/c': unprepared while this prepare was running: not prepared");
    EXPECT_FALSE(has_spec("uid-c"));
    EXPECT_TRUE((*d)->checkpoint().claims.empty());
    EXPECT_EQ((*d)->prepare({{"ns", "c", "uid-c"}}).at("uid-c").error, "");
    EXPECT_TRUE(has_spec("uid-c"));
}

// A call past its deadline gets an answer before it (the claim not fetched in time), one
// cancelled while its claim was fetched commits nothing.
TEST_F(DraDriver, DeadlineAndCancellationCommitNothing) {
    claims_["ns/c"] = claim("c", "uid-c", {"gcu-0"});
    auto d = dra::Driver::create(
        options(),
        [&](const std::string& ns, const std::string& name) -> inject::Result<Json> {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            return claims_.at(ns + "/" + name);
        },
        [this] { return inject::Result<inject::device::Host>(host_); });
    ASSERT_TRUE(d);
    dra::CallLimits limits;
    limits.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(150);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ((*d)->prepare({{"ns", "c", "uid-c"}}, limits).at("uid-c").error,
              "claim 'ns/c': fetching it: no answer from the API server in time (before kubelet's "
              "deadline)");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
    dra::CallLimits cancelled;
    cancelled.cancelled = [] { return true; };
    EXPECT_EQ((*d)->prepare({{"ns", "c", "uid-c"}}, cancelled).at("uid-c").error,
              "claim 'ns/c': the call was cancelled or its deadline passed before the claim was "
              "prepared: not "
              "prepared");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the first fetch ends too
    EXPECT_FALSE(has_spec("uid-c"));
    EXPECT_TRUE((*d)->checkpoint().claims.empty());
    EXPECT_FALSE(std::filesystem::exists(options().checkpoint_path));
}

TEST_F(DraDriver, ASlowApiServerDelaysOnlyTheClaimsWaitingForIt) {
    claims_["ns/fast"] = claim("fast", "uid-f", {"gcu-0"});
    std::promise<void> release;
    auto released = release.get_future().share();
    std::atomic<bool> slow_asked{false};
    auto d = dra::Driver::create(
        options(),
        [&](const std::string& ns, const std::string& name) -> inject::Result<Json> {
            if (name == "slow") {
                slow_asked = true;
                released.wait();
                return claim("slow", "uid-s", {"gcu-1"});
            }
            return claims_.at(ns + "/" + name);
        },
        [this] { return inject::Result<inject::device::Host>(host_); });
    ASSERT_TRUE(d);
    auto slow = std::async(std::launch::async, [&] {
        return (*d)->prepare({{"ns", "slow", "uid-s"}});
    });
    while (!slow_asked) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto fast = std::async(std::launch::async, [&] {
        return (*d)->prepare({{"ns", "fast", "uid-f"}});
    });
    const bool fast_done = fast.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    release.set_value();
    ASSERT_TRUE(fast_done) << "a prepare waited for another claim's API call";
    EXPECT_EQ(fast.get().at("uid-f").error, "");
    EXPECT_EQ(slow.get().at("uid-s").error, "");
    EXPECT_EQ((*d)->checkpoint().claims.size(), 2u);
}

TEST(DraCheckpoint, RoundTrip) {
    dra::Checkpoint cp;
    cp.claims["u1"] = {
        "ns", "c", {{{"a", "b"}, "node1", "gcu-0", {"k8s.gcu.enflame.com/claim=u1-gcu-0"}}}};
    cp.claims["u2"] = {"ns2", "d", {}};
    auto back = dra::parse_checkpoint(dra::to_text(cp), "x");
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(*back, cp);
    EXPECT_EQ(dra::to_text(*back), dra::to_text(cp));
    auto bad = dra::parse_checkpoint("{\"version\":2,\"claims\":{}}", "cp.json");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(), "checkpoint 'cp.json': version 2: want 1");
}

// A placement's made instance and the pending creates survive the round trip; without them
// the text is what version 1 always was (no new keys).
TEST(DraCheckpoint, RoundTripWithDrsInstances) {
    dra::Checkpoint cp;
    cp.claims["u1"] = {
        "ns", "c", {{{"gpu"}, "node1", "gcu-0", {"k8s.gcu.enflame.com/claim=u1-gcu-0"}}}};
    const std::string plain = dra::to_text(cp);
    EXPECT_EQ(plain.find("createdInstance"), std::string::npos);
    EXPECT_EQ(plain.find("pending"), std::string::npos);
    cp.claims["u2"] = {
        "ns",
        "d",
        {{{"gpu"},
          "node1",
          "gcu-1-1g-11gb-2",
          {"k8s.gcu.enflame.com/claim=u2-gcu-1-1g-11gb-2"},
          dra::CreatedInstance{1, 3, "1g.11gb", "4c1e9a52-0001-4000-9000-000000000007"}}}};
    cp.pending.push_back({"u3", 0, "2g.22gb", {0, 2}, 7});
    auto back = dra::parse_checkpoint(dra::to_text(cp), "x");
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(*back, cp);
    // An entry written before attempts were tagged reads as attempt 0.
    auto old = dra::parse_checkpoint(
        R"({"version":1,"claims":{},"pending":[{"claim":"u","card":0,"profile":"1g.11gb","before":[1]}]})",
        "x");
    ASSERT_TRUE(old) << old.error().what();
    EXPECT_EQ(old->pending, (std::vector<dra::PendingCreate>{{"u", 0, "1g.11gb", {1}, 0}}));
    auto bad = dra::parse_checkpoint(
        R"({"version":1,"claims":{},"pending":[{"claim":"u","card":0,"profile":"1g.11gb"}]})",
        "cp.json");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().what().find("checkpoint 'cp.json': "), std::string::npos);
    EXPECT_NE(bad.error().what().find("'before' not found"), std::string::npos)
        << bad.error().what();
}

TEST(DraCdi, FileNames) {
    EXPECT_EQ(dra::spec_file_name("abc"), "k8s.gcu.enflame.com-claim_abc.yaml");
    EXPECT_EQ(dra::claim_uid_of("k8s.gcu.enflame.com-claim_abc.yaml"), "abc");
    EXPECT_EQ(dra::claim_uid_of("k8s.gcu.enflame.com-claim_.yaml"), "");
    EXPECT_EQ(dra::claim_uid_of("enflame.com-gpu.yaml"), "");
    EXPECT_EQ(dra::claim_uid_of("k8s.gcu.enflame.com-claim_abc.yaml.tmp.Q1w2E3"), "");
    EXPECT_TRUE(dra::is_temp_spec("k8s.gcu.enflame.com-claim_abc.yaml.tmp.Q1w2E3"));
    EXPECT_FALSE(dra::is_temp_spec("k8s.gcu.enflame.com-claim_abc.yaml"));
    EXPECT_FALSE(dra::is_temp_spec("enflame.com-gpu.yaml.tmp.Q1w2E3"));
    EXPECT_EQ(dra::cdi_device_id("u", {3, 1}), "k8s.gcu.enflame.com/claim=u-gcu-3-drs-1");
}

}  // namespace
