// SPDX-License-Identifier: Apache-2.0
// The DRA plugin's node side without gRPC (k8s/dra/driver.cpp, claim_cdi.cpp, checkpoint.cpp):
// prepare / unprepare against a hand-built host, claims fed as JSON, specs and checkpoint in a
// fresh temp folder; the per-claim spec read back with libinject's parser and validator.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "claim_cdi.hpp"
#include "dra_fixture.hpp"
#include "driver.hpp"
#include "inject/cdi_io.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/cdi_validate.hpp"
#include "inject/fs.hpp"
#include "temp_dir.hpp"

namespace {

using edra::Json;
using edra_test::claim;
using edra_test::host2;

class DraDriver : public ::testing::Test {
protected:
    void SetUp() override {
        cdi_ = tmp_.path() + "/cdi";
        std::filesystem::create_directories(cdi_);
        std::filesystem::create_directories(tmp_.path() + "/root");
    }

    edra::DriverOptions options() const {
        edra::DriverOptions o;
        o.cdi_root = cdi_;
        o.checkpoint_path = tmp_.path() + "/checkpoint.json";
        o.node_name = "node1";
        o.cdi.driver_root = tmp_.path() + "/root";
        return o;
    }

    std::unique_ptr<edra::Driver> make(edra::DriverOptions o) {
        auto d = edra::Driver::create(
            std::move(o),
            [this](const std::string& ns, const std::string& name) -> inject::Result<Json> {
                ++fetches_;
                const auto it = claims_.find(ns + "/" + name);
                if (it == claims_.end())
                    return inject::fail(inject::Errc::NotFound,
                                        "GET /apis/resource.k8s.io/v1/namespaces/" + ns +
                                            "/resourceclaims/" + name + ": 404 Not Found");
                return it->second;
            },
            [this] {
                ++discoveries_;
                return inject::Result<inject::device::Host>(host_);
            });
        EXPECT_TRUE(d) << d.error().what();
        return d ? std::move(*d) : nullptr;
    }
    std::unique_ptr<edra::Driver> make() { return make(options()); }

    std::string spec_path(const std::string& uid) const {
        return cdi_ + "/" + edra::spec_file_name(uid);
    }
    bool has_spec(const std::string& uid) const { return std::filesystem::exists(spec_path(uid)); }
    std::string read(const std::string& path) const {
        auto t = inject::fs::read_file(path, 1 << 20);
        return t ? *t : std::string();
    }

    k8s_test::TempDir tmp_;
    std::string cdi_;
    inject::device::Host host_ = host2();
    std::map<std::string, Json> claims_;
    int fetches_ = 0, discoveries_ = 0;
};

TEST_F(DraDriver, PrepareWritesAValidSpecForExactlyTheCard) {
    claims_["ns/c1"] = claim("c1", "uid-1", {"gcu-1"});
    auto d = make();
    const auto out = d->prepare({{"ns", "c1", "uid-1"}});
    ASSERT_EQ(out.size(), 1u);
    const auto& a = out.at("uid-1");
    EXPECT_EQ(a.error, "");
    ASSERT_EQ(a.devices.size(), 1u);
    EXPECT_EQ(a.devices[0],
              (edra::PreparedDevice{
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
    auto cp = edra::load_checkpoint(tmp_.path() + "/checkpoint.json");
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
    const edra::DeviceName placement{1, std::nullopt, edra::Placement{"1g-11gb", 0}};
    const edra::CreatedInstance made{1, 2, "1g.11gb", "4c1e9a52-0000-4000-8000-000000000002"};
    auto spec = edra::claim_spec(host, {}, "uid-1", {placement}, {{"gcu-1-1g-11gb-0", made}});
    ASSERT_TRUE(spec) << spec.error().what();
    ASSERT_EQ(spec->devices.size(), 1u);
    EXPECT_EQ(spec->devices[0].name, "uid-1-gcu-1-1g-11gb-0");
    EXPECT_EQ(spec->devices[0].edits.env,
              std::vector<std::string>{"TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000002"});
    ASSERT_EQ(spec->devices[0].edits.device_nodes.size(), 1u);
    EXPECT_EQ(spec->devices[0].edits.device_nodes[0].path, "/dev/gcu1");
    auto none = edra::claim_spec(host, {}, "uid-1", {placement});
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().what(), "device 'gcu-1-1g-11gb-0': no DRS instance was made for it");
    auto gone = edra::claim_spec(host, {}, "uid-1", {placement},
                                 {{"gcu-1-1g-11gb-0", edra::CreatedInstance{1, 5, "1g.11gb", ""}}});
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().what(), "device 'gcu-1-1g-11gb-0': card 1 has no DRS instance 5");
    // The id now held by another instance (ours destroyed behind our back, the id reused): refused.
    auto other = edra::claim_spec(host, {}, "uid-1", {placement},
                                  {{"gcu-1-1g-11gb-0", edra::CreatedInstance{1, 2, "2g.22gb", ""}}});
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error().what(),
              "device 'gcu-1-1g-11gb-0': card 1 instance 2 is now 1g.11gb 4c1e9a52-0000-4000-8000-000000000002, "
              "not the 2g.22gb instance made for it");
    auto uuid = edra::claim_spec(host, {}, "uid-1", {placement},
                                 {{"gcu-1-1g-11gb-0", edra::CreatedInstance{1, 2, "1g.11gb", "another-uuid"}}});
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
    auto cp = edra::load_checkpoint(tmp_.path() + "/checkpoint.json");
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
    ASSERT_EQ(edra::load_checkpoint(path + ".prev")->claims.size(), 1u);
    const auto bad = read(path).substr(0, 30);
    ASSERT_TRUE(inject::fs::atomic_write(path, bad));
    auto loaded = edra::load_checkpoint_or_previous(path);
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
    auto loaded = edra::load_checkpoint_or_previous(path);
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
    EXPECT_TRUE(edra::load_checkpoint(path)->claims.contains("uid-a"));
}

// kubelet gives up on a prepare whose claim fetch hangs and unprepares the claim; the fetch
// then returns: the late prepare commits nothing. A prepare after the unprepare is not refused.
TEST_F(DraDriver, APrepareThatOutlivesItsUnprepareCommitsNothing) {
    claims_["ns/c"] = claim("c", "uid-c", {"gcu-0"});
    std::promise<void> release, asked;
    auto released = release.get_future().share();
    std::atomic<bool> hold{true};
    auto d = edra::Driver::create(
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
    auto late = std::async(std::launch::async, [&] { return (*d)->prepare({{"ns", "c", "uid-c"}}); });
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
    auto d = edra::Driver::create(
        options(),
        [&](const std::string& ns, const std::string& name) -> inject::Result<Json> {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            return claims_.at(ns + "/" + name);
        },
        [this] { return inject::Result<inject::device::Host>(host_); });
    ASSERT_TRUE(d);
    edra::CallLimits limits;
    limits.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(150);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ((*d)->prepare({{"ns", "c", "uid-c"}}, limits).at("uid-c").error,
              "claim 'ns/c': fetching it: no answer from the API server in time (before kubelet's deadline)");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
    edra::CallLimits cancelled;
    cancelled.cancelled = [] { return true; };
    EXPECT_EQ((*d)->prepare({{"ns", "c", "uid-c"}}, cancelled).at("uid-c").error,
              "claim 'ns/c': the call was cancelled or its deadline passed before the claim was prepared: not "
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
    auto d = edra::Driver::create(
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
        while (std::any_of(cards[card].begin(), cards[card].end(), [&](const auto& in) { return in.instance_id == id; }))
            ++id;
        cards[card].push_back({card, id, profile, ""});
        return id;
    }
    bool has(std::uint32_t card, std::uint32_t id) {
        return std::any_of(cards[card].begin(), cards[card].end(), [&](const auto& in) { return in.instance_id == id; });
    }
    edra::DrsOps ops() {
        edra::DrsOps o;
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
    edra::DriverOptions drs_options() {
        auto o = options();
        o.drs = efsmi_.ops();
        return o;
    }
    std::unique_ptr<edra::Driver> make_drs() { return make(drs_options()); }
    edra::Checkpoint on_disk() const {
        auto cp = edra::load_checkpoint(tmp_.path() + "/checkpoint.json");
        EXPECT_TRUE(cp) << cp.error().what();
        return cp ? *cp : edra::Checkpoint{};
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
    EXPECT_EQ(d->unprepare({{"ns", "a", "uA"}}).at("uA"), "claim 'ns/a': device 'gcu-0-1g-11gb-1': efsmi: device busy");
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
    edra::Checkpoint cp;
    const auto dev = [](const std::string& uid) {
        return edra::PreparedDevice{{"gpu"},
                                    "node1",
                                    "gcu-0-1g-11gb-0",
                                    {"k8s.gcu.enflame.com/claim=" + uid + "-gcu-0-1g-11gb-0"},
                                    edra::CreatedInstance{0, 0, "1g.11gb", ""}};
    };
    cp.claims["uA"] = {"ns", "a", {dev("uA")}};
    cp.claims["uB"] = {"ns", "b", {dev("uB")}};
    ASSERT_TRUE(edra::save_checkpoint(tmp_.path() + "/checkpoint.json", cp));
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
              "claim 'ns/w': card 0 is split into DRS instances (0:1g.11gb:0 0:2g.22gb:1): not handed out whole");
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
    EXPECT_EQ(d2->prepare({{"ns", "x", "uX"}}).at("uX").error, "claim 'ns/x': device 'gcu-1': efsmi: timed out");
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
    EXPECT_EQ(out.at("uP").error, "claim 'ns/p': device 'gcu-0-1g-11gb-0': card 0 is prepared whole for claim "
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
    EXPECT_EQ(out.at("uA").error, "claim 'ns/c1': device 'gcu-0-1g-11gb-0': efsmi timed out after making it");
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
    edra::Checkpoint cp;
    cp.pending.push_back({"uA", 0, "1g.11gb", {}, 1, 0u, ""});
    cp.pending.push_back({"uB", 0, "1g.11gb", {0}, 2, 1u, ""});
    ASSERT_TRUE(edra::save_checkpoint(tmp_.path() + "/checkpoint.json", cp));
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
    edra::Checkpoint cp;
    cp.pending.push_back({"uA", 0, "1g.11gb", {}, 1, std::nullopt, ""});
    ASSERT_TRUE(edra::save_checkpoint(tmp_.path() + "/checkpoint.json", cp));
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
    EXPECT_EQ(*rec, (edra::CreatedInstance{0, 1, "1g.11gb", ""}));
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
    EXPECT_EQ(d->prepare({{"ns", "p", "uP"}}).at("uP").error,
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

TEST(DraCheckpoint, RoundTrip) {
    edra::Checkpoint cp;
    cp.claims["u1"] = {
        "ns", "c", {{{"a", "b"}, "node1", "gcu-0", {"k8s.gcu.enflame.com/claim=u1-gcu-0"}}}};
    cp.claims["u2"] = {"ns2", "d", {}};
    auto back = edra::parse_checkpoint(edra::to_text(cp), "x");
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(*back, cp);
    EXPECT_EQ(edra::to_text(*back), edra::to_text(cp));
    auto bad = edra::parse_checkpoint("{\"version\":2,\"claims\":{}}", "cp.json");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(), "checkpoint 'cp.json': version 2: want 1");
}

// A placement's made instance and the pending creates survive the round trip; without them
// the text is what version 1 always was (no new keys).
TEST(DraCheckpoint, RoundTripWithDrsInstances) {
    edra::Checkpoint cp;
    cp.claims["u1"] = {"ns", "c", {{{"gpu"}, "node1", "gcu-0", {"k8s.gcu.enflame.com/claim=u1-gcu-0"}}}};
    const std::string plain = edra::to_text(cp);
    EXPECT_EQ(plain.find("createdInstance"), std::string::npos);
    EXPECT_EQ(plain.find("pending"), std::string::npos);
    cp.claims["u2"] = {"ns",
                       "d",
                       {{{"gpu"},
                         "node1",
                         "gcu-1-1g-11gb-2",
                         {"k8s.gcu.enflame.com/claim=u2-gcu-1-1g-11gb-2"},
                         edra::CreatedInstance{1, 3, "1g.11gb", "4c1e9a52-0001-4000-9000-000000000007"}}}};
    cp.pending.push_back({"u3", 0, "2g.22gb", {0, 2}, 7});
    auto back = edra::parse_checkpoint(edra::to_text(cp), "x");
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(*back, cp);
    // An entry written before attempts were tagged reads as attempt 0.
    auto old = edra::parse_checkpoint(
        R"({"version":1,"claims":{},"pending":[{"claim":"u","card":0,"profile":"1g.11gb","before":[1]}]})", "x");
    ASSERT_TRUE(old) << old.error().what();
    EXPECT_EQ(old->pending, (std::vector<edra::PendingCreate>{{"u", 0, "1g.11gb", {1}, 0}}));
    auto bad = edra::parse_checkpoint(
        R"({"version":1,"claims":{},"pending":[{"claim":"u","card":0,"profile":"1g.11gb"}]})", "cp.json");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().what().find("checkpoint 'cp.json': "), std::string::npos);
    EXPECT_NE(bad.error().what().find("'before' not found"), std::string::npos) << bad.error().what();
}

TEST(DraCdi, FileNames) {
    EXPECT_EQ(edra::spec_file_name("abc"), "k8s.gcu.enflame.com-claim_abc.yaml");
    EXPECT_EQ(edra::claim_uid_of("k8s.gcu.enflame.com-claim_abc.yaml"), "abc");
    EXPECT_EQ(edra::claim_uid_of("k8s.gcu.enflame.com-claim_.yaml"), "");
    EXPECT_EQ(edra::claim_uid_of("enflame.com-gpu.yaml"), "");
    EXPECT_EQ(edra::claim_uid_of("k8s.gcu.enflame.com-claim_abc.yaml.tmp.Q1w2E3"), "");
    EXPECT_TRUE(edra::is_temp_spec("k8s.gcu.enflame.com-claim_abc.yaml.tmp.Q1w2E3"));
    EXPECT_FALSE(edra::is_temp_spec("k8s.gcu.enflame.com-claim_abc.yaml"));
    EXPECT_FALSE(edra::is_temp_spec("enflame.com-gpu.yaml.tmp.Q1w2E3"));
    EXPECT_EQ(edra::cdi_device_id("u", {3, 1}), "k8s.gcu.enflame.com/claim=u-gcu-3-drs-1");
}

}  // namespace
