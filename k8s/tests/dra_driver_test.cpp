// SPDX-License-Identifier: Apache-2.0
// The DRA plugin's node side without gRPC (k8s/dra/driver.cpp, claim_cdi.cpp, checkpoint.cpp):
// prepare / unprepare against a hand-built host, claims fed as JSON, specs and checkpoint in a
// fresh temp folder; the per-claim spec read back with libinject's parser and validator.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
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
    auto spec = edra::claim_spec(host, {}, "uid-1", {placement}, {{"gcu-1-1g-11gb-0", 2}});
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
    auto gone = edra::claim_spec(host, {}, "uid-1", {placement}, {{"gcu-1-1g-11gb-0", 5}});
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().what(), "device 'gcu-1-1g-11gb-0': card 1 has no DRS instance 5");
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
    // The restarted plugin answers a retried prepare from the checkpoint.
    fetches_ = 0;
    EXPECT_EQ(d->prepare({{"ns", "kept", "uid-k"}}).at("uid-k").devices.size(), 1u);
    EXPECT_EQ(fetches_, 0);
}

TEST_F(DraDriver, BadCheckpointIsAnErrorNamingTheFile) {
    const auto path = tmp_.path() + "/checkpoint.json";
    ASSERT_TRUE(
        inject::fs::atomic_write(path, "{\"version\":1,\"claims\":{\"u\":{\"namespace\":\"n\"}}}"));
    auto o = options();
    auto d = edra::Driver::create(o, nullptr,
                                  [this] { return inject::Result<inject::device::Host>(host_); });
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().what().rfind("checkpoint '" + path + "': ", 0), 0u) << d.error().what();
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
    cp.pending.push_back({"u3", 0, "2g.22gb", {0, 2}});
    auto back = edra::parse_checkpoint(edra::to_text(cp), "x");
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(*back, cp);
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
    EXPECT_EQ(edra::cdi_device_id("u", {3, 1}), "k8s.gcu.enflame.com/claim=u-gcu-3-drs-1");
}

}  // namespace
