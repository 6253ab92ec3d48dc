// SPDX-License-Identifier: Apache-2.0
// inject::health: the line NPD keeps (fit_line), an unknown check's error, and against the
// simulated host the checks that remember their last run (ecc: a rise, its hold, a reset;
// devices: a card gone from the bus, a card the driver left unbound). The host builder makes
// device nodes with mknod, so the simulator tests need root; without it they skip.
#include "inject/health.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "sim_host.hpp"
#include "test_util.hpp"

namespace {

using namespace inject::health;
using testutil::kSimHost;
using testutil::TempDir;

struct FitCase {
    const char* name;
    std::string in;
    std::string want;
};

TEST(HealthFitLine, Table) {
    const std::string a79(79, 'a');
    const FitCase cases[] = {
        {"Short", "GCU 2 is unhealthy (libefml)", "GCU 2 is unhealthy (libefml)"},
        {"Exactly79", a79, a79},
        {"Eighty", a79 + "b", std::string(76, 'a') + "..."},
        {"FirstLineOnly", "one\ntwo", "one"},
        // "é" is two bytes at 75-76: the cut steps back to a whole character
        {"NotMidUtf8", std::string(75, 'x') + "\xc3\xa9" + std::string(10, 'y'),
         std::string(75, 'x') + "..."},
    };
    for (const auto& c : cases) {
        const auto got = fit_line(c.in);
        EXPECT_EQ(got, c.want) << c.name;
        EXPECT_LT(got.size(), 80u) << c.name;
    }
}

TEST(Health, UnknownCheckNamesTheChecks) {
    auto r = run("thermal", Options{});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "unknown check 'thermal': want one of driver, devices, health, ecc, temperature, "
              "pcie, cdi");
}

const char* kCards = R"(driver_version: "1.4.3.4"
cards:
  - {index: 0, minor: 0, product: S60, uuid: TR6Y46010302, serial: A0A1650510676, bus_id: "0000:17:00.0", numa_node: 0}
  - {index: 1, minor: 3, product: S60, uuid: TR1V57100501, serial: A0A1650510677, bus_id: "0000:b1:00.0", numa_node: 1}
faults: {}
)";

class HealthSim : public testing::Test {
protected:
    bool build(const std::string& desc = kCards) {
        if (::geteuid() != 0 || ::access(kSimHost.c_str(), X_OK) != 0) return false;
        testutil::write_file(t_ / "desc.yaml", desc);
        return sim({"build", "--desc", t_ / "desc.yaml", "--root", t_ / "root"}) == "";
    }
    std::string sim(const std::vector<std::string>& args) {
        const std::string err = testutil::sim_host(args);
        EXPECT_EQ(err, "");
        return err.empty() ? "" : "failed";
    }
    Options opts(std::chrono::seconds later = std::chrono::seconds(0)) {
        Options o;
        o.cfg.cli.driver_root = o.cfg.cli.dev_root = t_ / "root";
        o.state_dir = t_ / "state";
        o.now = start_ + later;
        return o;
    }
    Verdict check(const std::string& name, std::chrono::seconds later = std::chrono::seconds(0)) {
        auto r = run(name, opts(later));
        EXPECT_TRUE(r) << r.error().what();
        return r ? *r : Verdict{Code::Unknown, "error"};
    }
    TempDir t_;
    std::chrono::system_clock::time_point start_ = std::chrono::system_clock::now();
};

#define BUILD_OR_SKIP(...) \
    if (!build(__VA_ARGS__)) GTEST_SKIP() << "needs root and " << kSimHost

TEST_F(HealthSim, EccARiseIsAProblemForTheHoldThenClears) {
    BUILD_OR_SKIP();
    EXPECT_EQ(check("ecc").code, Code::Ok);  // first sight: the counts are recorded
    sim({"telemetry", "--root", t_ / "root", "--card", "1", "ecc_double_bit=2"});
    auto v = check("ecc", std::chrono::seconds(30));
    EXPECT_EQ(v.code, Code::Problem);
    EXPECT_EQ(v.line, "GCU 1 (0000:b1:00.0) ECC double-bit errors rose 0 -> 2");
    EXPECT_EQ(check("ecc", std::chrono::seconds(30 + 3599)).code, Code::Problem);  // held an hour
    v = check("ecc", std::chrono::seconds(30 + 3600));
    EXPECT_EQ(v.code, Code::Ok);
    EXPECT_EQ(v.line, "no GCU's ECC double-bit count rose");
    // a non-zero count at first sight (a new state folder) is no rise
    std::filesystem::remove_all(t_ / "state");
    EXPECT_EQ(check("ecc").code, Code::Ok);
    sim({"telemetry", "--root", t_ / "root", "--card", "1", "ecc_double_bit=0"});  // driver reload
    EXPECT_EQ(check("ecc", std::chrono::seconds(60)).code, Code::Ok);
}

TEST_F(HealthSim, DevicesACardGoneFromTheBusStaysMissing) {
    BUILD_OR_SKIP();
    auto v = check("devices");
    EXPECT_EQ(v.code, Code::Ok) << v.line;
    EXPECT_EQ(v.line, "all 2 GCUs present with their device nodes");
    std::string one = kCards;
    one.erase(one.find("  - {index: 1"), one.find("faults:") - one.find("  - {index: 1"));
    ASSERT_TRUE(build(one));
    v = check("devices");
    EXPECT_EQ(v.code, Code::Problem);
    EXPECT_EQ(v.line, "GCU 0000:b1:00.0 is gone from the PCI bus");
    ASSERT_TRUE(build());
    EXPECT_EQ(check("devices").code, Code::Ok);
}

TEST_F(HealthSim, DevicesACardWithoutItsDriverOrNode) {
    BUILD_OR_SKIP();
    std::filesystem::remove_all(t_ / "root/sys/bus/pci/devices/0000:17:00.0/enflame");
    auto v = check("devices");
    EXPECT_EQ(v.code, Code::Problem);
    EXPECT_EQ(v.line, "GCU 0000:17:00.0 is on the PCI bus but no driver is bound");
    ASSERT_TRUE(build());
    std::filesystem::remove(t_ / "root/dev/gcu3");
    v = check("devices");
    EXPECT_EQ(v.code, Code::Problem);
    EXPECT_EQ(v.line.substr(0, 50), "GCU 0000:b1:00.0: '/dev/gcu3' is missing (sysfs sa");
}

}  // namespace
