// SPDX-License-Identifier: Apache-2.0
// HAMi mode's start on the DRS ledger (k8s/drs_ledger.hpp), as the DRA driver starts: an
// instance a killed Allocate made is destroyed, and only that one; a corrupt checkpoint falls
// back to its .prev, whose records are still destroyed once their pods are gone. The API server
// is the fake one (no pods on the node), efsmi a map the test reads.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "api_client_util.hpp"
#include "device-plugin/hami_mode.hpp"
#include "fake_apiserver.hpp"
#include "inject/fs.hpp"

namespace {

using inject::device::DrsInstance;

class HamiLedger : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(api_.up());
        cards_[0] = {{0, 0, "1g.11gb", "u0"}, {0, 1, "1g.11gb", "u1"}, {0, 2, "1g.11gb", "admin"}};
    }

    device_plugin::hami::Deps deps() {
        device_plugin::hami::Deps d;
        d.api = k8s_test::client(api_.config());
        d.node = "test";
        d.checkpoint = cp_;
        d.discover = [this]() -> inject::Result<inject::device::Host> {
            inject::device::Host h;
            inject::device::Device card;
            card.index = 0;
            card.drs_instances = cards_[0];
            h.devices.push_back(card);
            h.drs_profiles = {{"1g.11gb", 1, 4, 11ull << 30, 0}};
            return h;
        };
        d.create = [](std::uint32_t,
                      const inject::device::DrsProfile&) -> inject::Result<DrsInstance> {
            return inject::fail(inject::Errc::Io, "not here");
        };
        d.destroy = [this](std::uint32_t c, std::uint32_t id) -> inject::Result<void> {
            destroyed_.push_back(id);
            std::erase_if(cards_[c], [&](const DrsInstance& in) { return in.instance_id == id; });
            return inject::ok();
        };
        return d;
    }

    k8s_test::FakeApiServer api_;
    k8s_test::TempDir tmp_;
    std::string cp_ = tmp_.path() + "/hami/checkpoint.json";
    std::map<std::uint32_t, std::vector<DrsInstance>> cards_;
    std::vector<std::uint32_t> destroyed_;
};

// Killed after efsmi made instance 1 for pod-a (its id saved), and while pod-b's create was
// still running (no id): 1 goes, 2 (new since pod-b's entry, but whose?) stays.
TEST_F(HamiLedger, AKilledAllocatesInstanceIsDestroyedAtStartAndOnlyIt) {
    const device_plugin::hami::Ledger l{{},
                                        {{"pod-a", 0, "1g.11gb", {0}, 1, 1u, "u1"},
                                         {"pod-b", 0, "1g.11gb", {0, 1}, 2, std::nullopt, ""}}};
    std::filesystem::create_directories(tmp_.path() + "/hami");
    ASSERT_TRUE(inject::fs::atomic_write(cp_, device_plugin::hami::checkpoint_text(l)));
    auto m = device_plugin::hami::Mode::create(deps());
    ASSERT_TRUE(m) << m.error().what();
    EXPECT_EQ(destroyed_, std::vector<std::uint32_t>{1});
    auto back = device_plugin::hami::parse_checkpoint(k8s_test::slurp(cp_), cp_);
    ASSERT_TRUE(back);
    EXPECT_TRUE(back->pending.empty());
}

// The checkpoint went corrupt after it recorded instance 2 for a pod that is gone now: the
// .prev still names it, so it is destroyed instead of leaking.
TEST_F(HamiLedger, ACorruptCheckpointFallsBackToPrev) {
    const device_plugin::hami::Ledger l{{{"pod-gone", "default", "gone", 0, 2, "admin", "1g.11gb"}},
                                        {}};
    std::filesystem::create_directories(tmp_.path() + "/hami");
    ASSERT_TRUE(k8s::drs::save_file(cp_, device_plugin::hami::checkpoint_text(l), false));
    ASSERT_TRUE(k8s::drs::save_file(cp_, device_plugin::hami::checkpoint_text(l), false));
    ASSERT_TRUE(inject::fs::atomic_write(cp_, "{\"version\":"));
    auto m = device_plugin::hami::Mode::create(deps());
    ASSERT_TRUE(m) << m.error().what();
    EXPECT_EQ(destroyed_, std::vector<std::uint32_t>{2});
    EXPECT_EQ(k8s_test::slurp(cp_ + ".corrupt"), "{\"version\":");
    auto back = device_plugin::hami::parse_checkpoint(k8s_test::slurp(cp_), cp_);
    ASSERT_TRUE(back);
    EXPECT_TRUE(back->instances.empty());
    // the dropped record is gone from .prev too: a later fallback cannot bring it back
    auto prev = device_plugin::hami::parse_checkpoint(k8s_test::slurp(cp_ + ".prev"), cp_);
    ASSERT_TRUE(prev);
    EXPECT_TRUE(prev->instances.empty());
}

}  // namespace
