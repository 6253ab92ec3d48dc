// SPDX-License-Identifier: Apache-2.0
// DRS operations (inject/drs.hpp) against the simulated efsmi (sim/drs.cpp keeps the instances
// in a state file, as a card keeps them): create learns the new instance from --list-instance,
// destroy removes it, and efsmi's refusals come back naming the card, the profile and efsmi's
// message. The host builder makes real device nodes with mknod: needs root and the built
// simulator, else every test skips with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include "inject/drs.hpp"
#include "sim_host.hpp"
#include "test_util.hpp"

namespace {

using inject::device::DrsInstance;
using inject::device::DrsProfile;
using testutil::TempDir;

// Two S60 cards with 1g (4 per card) and 2g (2 per card) profiles; card 1 already holds
// instance 0, made by someone else.
std::string desc(const std::string& layout) {
    return R"(driver_version: "1.4.3.4"
cards:
  - {index: 0, minor: 0, product: S60, uuid: TR6Y46010302, serial: A0A1650510676, bus_id: "0000:17:00.0", numa_node: 0}
  - {index: 1, minor: 1, product: S60, uuid: TR1V57100501, serial: A0A1650510677, bus_id: "0000:b1:00.0", numa_node: 1}
drs:
  profiles:
    - {id: 0, name: 1g.11gb, max_instances: 4, memory_mib: 10744}
    - {id: 1, name: 2g.22gb, max_instances: 2, memory_mib: 21488}
  instances:
    - {card: 1, instance_id: 0, profile: 1g.11gb, uuid: 4c1e9a52-0001-4000-8000-000000000000}
faults: {drs_instance_layout: )" +
           layout + "}\n";
}

const DrsProfile k1g{"1g.11gb", 0, 4, 10744ULL << 20, 0};
const DrsProfile k2g{"2g.22gb", 1, 2, 21488ULL << 20, 0};

class DrsOps : public testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        if (auto why = testutil::sim_host_unusable(); !why.empty()) GTEST_SKIP() << why;
        testutil::write_file(t_ / "desc.yaml", desc(GetParam()));
        ASSERT_EQ(testutil::sim_host({"build", "--desc", t_ / "desc.yaml", "--root", t_ / "root"}),
                  "");
        o_.driver_root = o_.dev_root = t_ / "root";
    }
    [[nodiscard]] std::vector<std::uint32_t> ids(std::uint32_t card) const {
        auto l = inject::drs::list_instances(o_, card);
        EXPECT_TRUE(l) << l.error().what();
        std::vector<std::uint32_t> out;
        if (l)
            for (const auto& in : *l) out.push_back(in.instance_id);
        return out;
    }

    TempDir t_;
    inject::discover::Options o_;
};

TEST_P(DrsOps, CreateReturnsTheNewInstanceAndDestroyRemovesIt) {
    auto a = inject::drs::create_instance(o_, 1, k1g);
    ASSERT_TRUE(a) << a.error().what();
    EXPECT_EQ(a->parent_index, 1U);
    EXPECT_EQ(a->instance_id, 1U) << "the lowest free id: 0 was taken";
    EXPECT_EQ(a->profile, "1g.11gb");
    if (std::string(GetParam()) == "uuid") {
        EXPECT_FALSE(a->uuid.empty());
    } else {
        EXPECT_EQ(a->profile_id, std::optional<std::uint32_t>(0));
        EXPECT_FALSE(a->placement.empty());
    }
    auto b = inject::drs::create_instance(o_, 1, k2g);
    ASSERT_TRUE(b) << b.error().what();
    EXPECT_EQ(b->instance_id, 2U);
    EXPECT_EQ(b->profile, "2g.22gb");
    EXPECT_EQ(ids(1), (std::vector<std::uint32_t>{0, 1, 2}));
    EXPECT_TRUE(ids(0).empty()) << "card 0 untouched";
    ASSERT_TRUE(inject::drs::destroy_instance(o_, 1, a->instance_id));
    EXPECT_EQ(ids(1), (std::vector<std::uint32_t>{0, 2}));
}

TEST_P(DrsOps, NoRoomIsEfsmisMessageNamingCardAndProfile) {
    // 4 slices per card: 2g + 2g fill card 0; a third 2g has no room, and neither has a 1g.
    ASSERT_TRUE(inject::drs::create_instance(o_, 0, k2g));
    ASSERT_TRUE(inject::drs::create_instance(o_, 0, k2g));
    auto r = inject::drs::create_instance(o_, 0, k2g);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "card 0: creating a DRS instance of profile '2g.22gb' (efsmi -i 0 --drs "
              "--create-instance 1): "
              "efsmi exited 1: 'Error: too many instances: GCU 0 has 2 of 2 '2g.22gb' instan...'")
        << "efsmi's first line, cut at 60 characters as discovery quotes it";
    r = inject::drs::create_instance(o_, 0, k1g);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "card 0: creating a DRS instance of profile '1g.11gb' (efsmi -i 0 --drs "
              "--create-instance 0): "
              "efsmi exited 1: 'Error: too many instances: 1 free slice(s) needed on GCU 0'");
    EXPECT_EQ(ids(0).size(), 2U) << "a refused create made nothing";
}

TEST_P(DrsOps, DestroyOfAnUnknownInstanceNamesIt) {
    auto r = inject::drs::destroy_instance(o_, 0, 3);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "card 0: destroying DRS instance 3 (efsmi -i 0 --drs --destroy-instance 3): "
              "efsmi exited 1: 'Error: no DRS instance '3' on GCU 0'");
    EXPECT_EQ(ids(1), (std::vector<std::uint32_t>{0})) << "someone else's instance is left alone";
}

TEST_P(DrsOps, NoEfsmiIsNotFound) {
    o_.driver_root = t_ / "nowhere";
    auto r = inject::drs::create_instance(o_, 0, k1g);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::NotFound);
    EXPECT_EQ(r.error().what(),
              "no efsmi under driver-root '" + t_ / "nowhere" +
                  "' (tried /usr/bin/efsmi, /usr/sbin/efsmi, /usr/local/bin/efsmi)");
}

// efsmi answering a create without making exactly one instance of the profile (it made none,
// or someone else made one at the same moment): create cannot tell which is its own, so it is a
// Conflict and it destroys nothing. A wrapper in place of /usr/bin/efsmi runs the real
// simulator's create `times` times (0 or 2) and passes everything else through.
void wrap_efsmi_create(const std::string& root, int times) {
    const std::string real = root + "/usr/local/efsmi/efsmi-1.4.3.4/efsmi";
    ASSERT_EQ(::access(real.c_str(), X_OK), 0) << real;
    const std::string bin = root + "/usr/bin/efsmi";
    ::unlink(bin.c_str());
    testutil::write_file(bin,
                         "#!/bin/sh\ncase \" $* \" in *\" --create-instance \"*)\n"
                         "  i=0; while [ $i -lt " +
                             std::to_string(times) + " ]; do \"" + real +
                             "\" \"$@\" || exit $?; i=$((i+1)); done; exit 0;;\nesac\nexec \"" +
                             real + "\" \"$@\"\n");
    ASSERT_EQ(::chmod(bin.c_str(), 0755), 0);
}

TEST_P(DrsOps, CreateThatMadeNoInstanceIsAConflict) {
    wrap_efsmi_create(t_ / "root", 0);
    auto r = inject::drs::create_instance(o_, 0, k1g);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::Conflict);
    EXPECT_EQ(r.error().what(),
              "card 0: creating a DRS instance of profile '1g.11gb': efsmi answered, but the "
              "card shows 0 new instance(s) of that profile, not 1 (someone else creating "
              "or destroying instances at the same time?)");
    EXPECT_TRUE(ids(0).empty());
}

TEST_P(DrsOps, CreateThatSawTwoNewInstancesIsAConflictAndDestroysNeither) {
    wrap_efsmi_create(t_ / "root", 2);
    auto r = inject::drs::create_instance(o_, 0, k1g);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::Conflict);
    EXPECT_NE(r.error().what().find("the card shows 2 new instance(s) of that profile, not 1"),
              std::string::npos)
        << r.error().what();
    EXPECT_EQ(ids(0), (std::vector<std::uint32_t>{0, 1}))
        << "both stay: neither is known to be ours";
}

INSTANTIATE_TEST_SUITE_P(Layouts, DrsOps, testing::Values("uuid", "placement"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
