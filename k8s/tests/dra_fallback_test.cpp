// SPDX-License-Identifier: Apache-2.0
// The DRA plugin's checkpoint fallback and pool check (k8s/dra/checkpoint.cpp, claims.cpp,
// driver.cpp): a claim kubelet unprepared never comes back from checkpoint.json.prev (its DRS
// instance made again, its spec written for nobody), and a claim allocated from another node's
// pool is refused with nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "dra/claim_cdi.hpp"
#include "dra/driver.hpp"
#include "dra_fixture.hpp"
#include "inject/fs.hpp"
#include "temp_dir.hpp"

namespace {

using dra::Json;
using edra_test::claim;
using Instances = std::vector<inject::device::DrsInstance>;

class DraFallback : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(cdi_);
        std::filesystem::create_directories(tmp_.path() + "/root");
        host_.devices[1].drs_instances.clear();
        host_.drs_profiles.push_back({"1g.11gb", 0, 4, 10744ULL << 20, 6});
    }

    // A driver whose efsmi is `cards_` (create takes the lowest free id) and whose discovery
    // finds what efsmi lists.
    std::unique_ptr<dra::Driver> make(const std::string& node = "node1") {
        dra::DriverOptions o;
        o.cdi_root = cdi_;
        o.checkpoint_path = cp_path_;
        o.node_name = node;
        o.cdi.driver_root = tmp_.path() + "/root";
        o.drs.list = [this](std::uint32_t c) -> inject::Result<Instances> { return cards_[c]; };
        o.drs.create = [this](std::uint32_t c, const inject::device::DrsProfile& p)
            -> inject::Result<inject::device::DrsInstance> {
            std::uint32_t id = 0;
            while (has(c, id)) ++id;
            cards_[c].push_back({c, id, p.name, ""});
            return cards_[c].back();
        };
        o.drs.destroy = [this](std::uint32_t c, std::uint32_t id) -> inject::Result<void> {
            std::erase_if(cards_[c], [&](const auto& in) { return in.instance_id == id; });
            return inject::ok();
        };
        auto d = dra::Driver::create(
            std::move(o),
            [this](const std::string& ns, const std::string& name) -> inject::Result<Json> {
                const auto it = claims_.find(ns + "/" + name);
                if (it == claims_.end()) return inject::fail(inject::Errc::NotFound, "404");
                return it->second;
            },
            [this] {
                auto h = host_;
                for (auto& dev : h.devices) dev.drs_instances = cards_[dev.index];
                return inject::Result<inject::device::Host>(h);
            });
        EXPECT_TRUE(d) << d.error().what();
        return d ? std::move(*d) : nullptr;
    }

    bool has(std::uint32_t card, std::uint32_t id) {
        return std::any_of(cards_[card].begin(), cards_[card].end(),
                           [&](const auto& in) { return in.instance_id == id; });
    }
    bool has_spec(const std::string& uid) const {
        return std::filesystem::exists(cdi_ + "/" + dra::spec_file_name(uid));
    }
    dra::Checkpoint load(const std::string& path) const {
        auto cp = dra::load_checkpoint(path);
        EXPECT_TRUE(cp) << cp.error().what();
        return cp ? *cp : dra::Checkpoint{};
    }

    k8s_test::TempDir tmp_;
    std::string cdi_ = tmp_.path() + "/cdi";
    std::string cp_path_ = tmp_.path() + "/checkpoint.json";
    inject::device::Host host_ = edra_test::host2();
    std::map<std::string, Json> claims_;
    std::map<std::uint32_t, Instances> cards_;
};

// Prepare A and B (a DRS placement each), unprepare A, then checkpoint.json goes corrupt: the
// restart falls back to .prev, which must not bring A back (its instance made again: a slice
// leaked for good; its spec written for a claim nobody holds). B is restored.
TEST_F(DraFallback, AnUnpreparedClaimNeverComesBackFromThePreviousCheckpoint) {
    claims_["ns/a"] = claim("a", "uA", {"gcu-0-1g-11gb-0"});
    claims_["ns/b"] = claim("b", "uB", {"gcu-1-1g-11gb-0"});
    {
        auto d = make();
        ASSERT_EQ(d->prepare({{"ns", "a", "uA"}, {"ns", "b", "uB"}}).at("uA").error, "");
        ASSERT_TRUE(has(0, 0));
        ASSERT_TRUE(has(1, 0));
        ASSERT_EQ(d->unprepare({{"ns", "a", "uA"}}).at("uA"), "");
        EXPECT_TRUE(cards_[0].empty());
        EXPECT_FALSE(has_spec("uA"));
    }
    EXPECT_FALSE(load(cp_path_ + ".prev").claims.contains("uA"));
    ASSERT_TRUE(
        inject::fs::atomic_write(cp_path_, "{\"version\": 1, \"claims\": {"));  // a disk fault
    auto d = make();
    d->converge();
    EXPECT_TRUE(std::filesystem::exists(cp_path_ + ".corrupt"));
    const auto cp = d->checkpoint();
    EXPECT_FALSE(cp.claims.contains("uA")) << "an unprepared claim came back from .prev";
    EXPECT_TRUE(cp.claims.contains("uB"));
    EXPECT_TRUE(cards_[0].empty()) << "claim A's DRS instance was made again";
    EXPECT_FALSE(has_spec("uA"));
    ASSERT_EQ(cards_[1].size(), 1u);
    EXPECT_TRUE(has_spec("uB"));
    // kubelet's retried unprepare of A succeeds; B's goes as usual.
    EXPECT_EQ(d->unprepare({{"ns", "a", "uA"}}).at("uA"), "");
    EXPECT_EQ(d->unprepare({{"ns", "b", "uB"}}).at("uB"), "");
    EXPECT_TRUE(cards_[1].empty());
    EXPECT_TRUE(std::filesystem::is_empty(cdi_));
}

// The save that drops a claim writes .prev first: both files lack it; a later save links the
// file as .prev again, as before.
TEST_F(DraFallback, ASaveThatDropsClaimsWritesThePreviousOneToo) {
    dra::Checkpoint two, one;
    two.claims["u1"] = {"ns", "a", {}};
    two.claims["u2"] = {"ns", "b", {}};
    one.claims["u2"] = two.claims["u2"];
    ASSERT_TRUE(dra::save_checkpoint(cp_path_, two));
    ASSERT_TRUE(dra::save_checkpoint(cp_path_, two));
    ASSERT_TRUE(dra::save_checkpoint(cp_path_, one, true));
    EXPECT_EQ(load(cp_path_), one);
    EXPECT_EQ(load(cp_path_ + ".prev"), one);
    ASSERT_TRUE(dra::save_checkpoint(cp_path_, two));
    EXPECT_EQ(load(cp_path_ + ".prev"), one);
    EXPECT_EQ(load(cp_path_), two);
}

// A claim allocated from another node's pool is that claim's error: no instance, no spec, no
// checkpoint entry; the other claim of the call is prepared.
TEST_F(DraFallback, AClaimFromAnotherNodesPoolIsRefused) {
    claims_["ns/x"] = claim("x", "uX", {"gcu-0-1g-11gb-0", "gcu-1"});
    claims_["ns/x"]["status"]["allocation"]["devices"]["results"][1]["pool"] = "node2";
    // another driver's result names its own pool: not ours to judge
    claims_["ns/ok"] = claim("ok", "uO", {"gcu-1"});
    claims_["ns/ok"]["status"]["allocation"]["devices"]["results"].push_back(
        {{"request", "nic"},
         {"driver", "net.example.com"},
         {"pool", "switch-7"},
         {"device", "eth0"}});
    auto d = make();
    const auto out = d->prepare({{"ns", "x", "uX"}, {"ns", "ok", "uO"}});
    EXPECT_EQ(out.at("uX").error,
              "claim 'ns/x': device 'gcu-1' is allocated from pool 'node2', not this node's "
              "('node1'): allocated for another node, not prepared here");
    EXPECT_TRUE(out.at("uX").devices.empty());
    EXPECT_FALSE(has_spec("uX"));
    EXPECT_TRUE(cards_[0].empty());
    EXPECT_EQ(out.at("uO").error, "");
    EXPECT_EQ(load(cp_path_).claims.size(), 1u);
    EXPECT_TRUE(load(cp_path_).pending.empty());
}

// Without a node name every claim is refused (fail closed).
TEST_F(DraFallback, NoNodeNameRefusesEveryClaim) {
    claims_["ns/ok"] = claim("ok", "uO", {"gcu-1"});
    auto d = make("");
    EXPECT_EQ(d->prepare({{"ns", "ok", "uO"}}).at("uO").error,
              "claim 'ns/ok': this plugin has no node name: not prepared");
    EXPECT_FALSE(has_spec("uO"));
    EXPECT_FALSE(std::filesystem::exists(cp_path_));
}

}  // namespace
