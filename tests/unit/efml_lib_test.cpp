// SPDX-License-Identifier: Apache-2.0
// inject::efml::Library: the ABI structs against the C layout of efml.h (offsets written by
// hand from the C rules), and the library against the simulated host (sim/): every known
// call missing in turn, telemetry changed while the library stays open, events, the driver
// going away and coming back. The host builder makes device nodes with mknod, so the
// simulator tests need root; without it they skip with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <ctime>
#include <functional>
#include <regex>
#include <set>
#include <thread>

#include "inject/discover.hpp"
#include "inject/efml.hpp"
#include "sim_host.hpp"
#include "test_util.hpp"

namespace {

using namespace inject::efml;
namespace abi = inject::efml::abi;
using testutil::kSimHost;
using testutil::TempDir;

// --- the ABI: sizes and offsets as the C compiler lays efml.h's structs out on x86-64/arm64.
TEST(EfmlAbi, DeviceInfoIs128CharsAndSevenU32) {
    EXPECT_EQ(sizeof(abi::DeviceInfo), 128u + 7 * 4);
    EXPECT_EQ(offsetof(abi::DeviceInfo, vendor_id), 128u);
    EXPECT_EQ(offsetof(abi::DeviceInfo, device_id), 132u);
    EXPECT_EQ(offsetof(abi::DeviceInfo, domain_id), 136u);
    EXPECT_EQ(offsetof(abi::DeviceInfo, bus_id), 140u);
    EXPECT_EQ(offsetof(abi::DeviceInfo, dev_id), 144u);
    EXPECT_EQ(offsetof(abi::DeviceInfo, func_id), 148u);
    EXPECT_EQ(offsetof(abi::DeviceInfo, logic_id), 152u);
}

TEST(EfmlAbi, MemInfoPadsTheU32ToEight) {
    EXPECT_EQ(offsetof(abi::DevMemInfo, mem_used), 8u);
    EXPECT_EQ(sizeof(abi::DevMemInfo), 16u);
}

TEST(EfmlAbi, FloatAndIntStructs) {
    EXPECT_EQ(sizeof(abi::PwrInfo), 8u);
    EXPECT_EQ(offsetof(abi::PwrInfo, cur_pwr_consumption), 4u);
    EXPECT_EQ(sizeof(abi::TempInfo), 12u);
    EXPECT_EQ(offsetof(abi::TempInfo, cur_hbm1_temp), 8u);
    EXPECT_EQ(sizeof(abi::TempInfoV2), 12u);
    EXPECT_EQ(offsetof(abi::TempInfoV2, cur_mem_temp), 4u);
    EXPECT_EQ(offsetof(abi::TempInfoV2, cur_board_temp), 8u);
    EXPECT_EQ(sizeof(abi::ClkInfo), 8u);
    EXPECT_EQ(offsetof(abi::ClkInfo, cur_dtu_clock), 4u);
    EXPECT_EQ(sizeof(abi::PcieLinkInfo), 16u);
    EXPECT_EQ(offsetof(abi::PcieLinkInfo, max_link_speed), 4u);
    EXPECT_EQ(offsetof(abi::PcieLinkInfo, link_width), 8u);
    EXPECT_EQ(offsetof(abi::PcieLinkInfo, max_link_width), 12u);
}

TEST(EfmlAbi, EccStatusThreeBoolsThenAlignedCounters) {
    EXPECT_EQ(offsetof(abi::EccStatus, pending), 1u);
    EXPECT_EQ(offsetof(abi::EccStatus, pdblack), 2u);
    EXPECT_EQ(offsetof(abi::EccStatus, ecnt_sb), 4u);
    EXPECT_EQ(offsetof(abi::EccStatus, ecnt_db), 8u);
    EXPECT_EQ(sizeof(abi::EccStatus), 12u);
}

TEST(EfmlAbi, ProcessInfoAndEvent) {
    EXPECT_EQ(offsetof(abi::ProcessInfo, dev_mem_usage), 8u);
    EXPECT_EQ(offsetof(abi::ProcessInfo, sys_mem_usage), 16u);
    EXPECT_EQ(sizeof(abi::ProcessInfo), 24u);
    EXPECT_EQ(offsetof(abi::Event, event_type), 4u);
    EXPECT_EQ(offsetof(abi::Event, event_msg), 8u);
    EXPECT_EQ(sizeof(abi::Event), 136u);
}

TEST(EfmlAbi, MemoryTotalUnitByMagnitude) {
    EXPECT_EQ(memory_total_bytes(42976), 42976ULL << 20);  // MiB
    EXPECT_EQ(memory_total_bytes(0xffffffffULL), 0xffffffffULL << 20);
    EXPECT_EQ(memory_total_bytes(42976ULL << 20), 42976ULL << 20);  // bytes
    EXPECT_EQ(memory_total_bytes(1ULL << 32), 1ULL << 32);
}

// --- against the simulator.
const char* kCards = R"(driver_version: "1.4.3.4"
cards:
  - {index: 0, minor: 0, product: S60, uuid: TR6Y46010302, serial: A0A1650510676, bus_id: "0000:17:00.0", numa_node: 0}
  - {index: 1, minor: 3, product: S60, uuid: TR1V57100501, serial: A0A1650510677, bus_id: "0000:b1:00.0", numa_node: 1}
)";

// Runs enflame-sim-host with `args`; its stderr when it failed, else "".
std::string sim(const std::vector<std::string>& args) {
    return testutil::sim_host(args);
}

class SimLib : public testing::Test {
protected:
    // Builds the host (faults YAML under `faults:`); false (and skips) when it cannot.
    bool build(const std::string& faults = "{}") {
        if (::geteuid() != 0) return false;
        if (::access(kSimHost.c_str(), X_OK) != 0) return false;
        testutil::write_file(t_ / "desc.yaml", std::string(kCards) + "faults: " + faults + "\n");
        const std::string err = sim({"build", "--desc", t_ / "desc.yaml", "--root", root()});
        EXPECT_EQ(err, "");
        return err.empty();
    }
    std::string root() const { return t_ / "root"; }
    inject::discover::Options opts() const {
        inject::discover::Options o;
        o.driver_root = o.dev_root = root();
        return o;
    }
    std::unique_ptr<Library> open() {
        auto lib = Library::open(opts());
        EXPECT_TRUE(lib) << lib.error().what();
        return lib ? std::move(*lib) : nullptr;
    }
    std::string efsmi_q() {
        inject::process::Command cmd;
        cmd.path = root() + "/usr/local/efsmi/efsmi-1.4.3.4/efsmi";
        cmd.argv = {cmd.path, "-q"};
        auto r = inject::process::run(cmd);
        EXPECT_TRUE(r && r->exit_code == 0);
        return r ? r->out : "";
    }
    TempDir t_;
};

#define BUILD_OR_SKIP(...) \
    if (!build(__VA_ARGS__)) GTEST_SKIP() << "needs root and " << kSimHost

// The n-th "Key : value" of efsmi -q for `key`, as text.
std::string efsmi_value(const std::string& out, const std::string& key, int n) {
    const std::regex re("\\n\\s+" + key + "\\s*: ([^\\n]*)");
    auto it = std::sregex_iterator(out.begin(), out.end(), re);
    for (int i = 0; i < n && it != std::sregex_iterator(); ++i) ++it;
    return it == std::sregex_iterator() ? "" : (*it)[1].str();
}

TEST_F(SimLib, SampleReadsEveryCallAndEfsmiAgrees) {
    BUILD_OR_SKIP();
    auto lib = open();
    ASSERT_TRUE(lib);
    EXPECT_TRUE(lib->missing().empty());
    EXPECT_EQ(lib->driver_version(), "1.4.3.4");
    auto s = lib->sample(1);
    ASSERT_TRUE(s) << s.error().what();
    EXPECT_EQ(s->name, "S60");
    EXPECT_EQ(s->uuid, "TR1V57100501");
    EXPECT_EQ(s->serial, "A0A1650510677");
    EXPECT_EQ(s->pci_bus_id, "0000:b1:00.0");
    EXPECT_EQ(s->pci_device_id, std::optional<std::uint32_t>(0xc035));
    EXPECT_EQ(s->numa_node, std::optional<std::int32_t>(1));
    EXPECT_EQ(s->healthy, std::optional<bool>(true));
    // mem_total_size comes as MiB from the simulator; efsmi prints the same number.
    ASSERT_TRUE(s->memory_total_bytes);
    const std::string q = efsmi_q();
    EXPECT_EQ(efsmi_value(q, "Total Size", 1),
              std::to_string(*s->memory_total_bytes >> 20) + " MiB");
    EXPECT_EQ(s->temperature_c, std::optional<double>(35));
    EXPECT_EQ(s->power_w, std::optional<double>(96));
    EXPECT_EQ(s->power_capability_w, std::optional<double>(300));
    EXPECT_EQ(s->hbm_clock_mhz, std::optional<std::uint32_t>(7000));
    EXPECT_EQ(s->usage_percent, std::optional<double>(0));
    EXPECT_EQ(s->pcie_link_width, std::optional<int>(8));
    EXPECT_EQ(s->pcie_link_speed, std::optional<int>(3));
    EXPECT_TRUE(s->processes.empty());
    auto none = lib->sample(2);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().what(), "card 2 does not exist (libefml counts 2)");
}

TEST_F(SimLib, TelemetryChangesWhileTheLibraryStaysOpen) {
    BUILD_OR_SKIP();
    auto lib = open();
    ASSERT_TRUE(lib);
    ASSERT_EQ(sim({"telemetry",
                   "--root",
                   root(),
                   "--card",
                   "1",
                   "usage=42.5",
                   "memory_used_mib=2048",
                   "temperature=71",
                   "memory_temperature=66",
                   "board_temperature=50",
                   "power=212.5",
                   "power_capability=280",
                   "dtu_clock=1500",
                   "hbm_clock=6400",
                   "ecc_single_bit=7",
                   "ecc_double_bit=2",
                   "pcie_link_width=16",
                   "pcie_link_speed=5",
                   "process=4242:1024",
                   "process=77:5"}),
              "");
    auto s = lib->sample(1);
    ASSERT_TRUE(s) << s.error().what();
    EXPECT_EQ(s->usage_percent, std::optional<double>(42.5));
    EXPECT_EQ(s->memory_used_bytes, std::optional<std::uint64_t>(2048ULL << 20));
    EXPECT_EQ(s->temperature_c, std::optional<double>(71));
    EXPECT_EQ(s->memory_temperature_c, std::optional<double>(66));
    EXPECT_EQ(s->board_temperature_c, std::optional<double>(50));
    EXPECT_EQ(s->power_w, std::optional<double>(212.5));
    EXPECT_EQ(s->power_capability_w, std::optional<double>(280));
    EXPECT_EQ(s->dtu_clock_mhz, std::optional<std::uint32_t>(1500));
    EXPECT_EQ(s->hbm_clock_mhz, std::optional<std::uint32_t>(6400));
    EXPECT_EQ(s->ecc_single_bit, std::optional<std::uint64_t>(7));
    EXPECT_EQ(s->ecc_double_bit, std::optional<std::uint64_t>(2));
    EXPECT_EQ(s->pcie_link_width, std::optional<int>(16));
    EXPECT_EQ(s->pcie_link_speed, std::optional<int>(5));
    ASSERT_EQ(s->processes.size(), 2u);
    EXPECT_EQ(s->processes[0].pid, 4242u);
    EXPECT_EQ(s->processes[0].device_memory_bytes, 1024ULL << 20);
    EXPECT_EQ(s->processes[1].pid, 77u);
    // The other card keeps the defaults; efsmi prints the new values.
    auto other = lib->sample(0);
    ASSERT_TRUE(other);
    EXPECT_EQ(other->temperature_c, std::optional<double>(35));
    const std::string q = efsmi_q();
    EXPECT_EQ(efsmi_value(q, "GCU Temp", 1), "71 \u2103");
    EXPECT_EQ(efsmi_value(q, "Cur Power", 1), "212.5 W");
    EXPECT_EQ(efsmi_value(q, "Used Size", 1), "2048 MiB");
    EXPECT_EQ(efsmi_value(q, "GCU Usage", 1), "42.5 %");
    // A later command merges; process=none clears the list.
    ASSERT_EQ(sim({"telemetry", "--root", root(), "--card", "1", "temperature=40", "process=none"}),
              "");
    s = lib->sample(1);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->temperature_c, std::optional<double>(40));
    EXPECT_EQ(s->power_w, std::optional<double>(212.5));
    EXPECT_TRUE(s->processes.empty());
}

TEST_F(SimLib, TelemetryRejectsBadInputAndWritesNothing) {
    BUILD_OR_SKIP();
    const std::string file = root() + "/usr/local/efsmi/efsmi-1.4.3.4/enflame-sim-telemetry.json";
    EXPECT_EQ(sim({"telemetry", "--root", root(), "--card", "0", "usage=5", "fan=3"}),
              "exit 1: error: 'fan=3': unknown key 'fan'\n");
    EXPECT_EQ(sim({"telemetry", "--root", root(), "--card", "0", "usage=150"}),
              "exit 1: error: 'usage=150': bad value '150' for usage\n");
    EXPECT_EQ(sim({"telemetry", "--root", root(), "--card", "5", "usage=1"}),
              "exit 1: error: --card 5: the host has 2 cards\n");
    EXPECT_NE(::access(file.c_str(), F_OK), 0);
}

TEST_F(SimLib, ManyProcessesNeedTheRetry) {
    BUILD_OR_SKIP();
    std::vector<std::string> args{"telemetry", "--root", root(), "--card", "0"};
    for (int i = 1; i <= 40; ++i)
        args.push_back("process=" + std::to_string(1000 + i) + ":" + std::to_string(i));
    ASSERT_EQ(sim(args), "");
    auto lib = open();
    ASSERT_TRUE(lib);
    auto s = lib->sample(0);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->processes.size(), 40u);
    EXPECT_EQ(s->processes[39].pid, 1040u);
    EXPECT_EQ(s->processes[39].device_memory_bytes, 40ULL << 20);
}

TEST_F(SimLib, EventsAfterInitOnly) {
    BUILD_OR_SKIP();
    ASSERT_EQ(sim({"event", "--root", root(), "--card", "0", "--type", "suspend"}), "");
    auto lib = open();
    ASSERT_TRUE(lib);
    EXPECT_TRUE(lib->has_events());
    EXPECT_FALSE(lib->wait_event(50));  // the one before EfmlInit is not news
    std::thread later([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_EQ(sim({"event", "--root", root(), "--card", "1", "--type", "reset-start",
                       "--message", "hot reset"}),
                  "");
    });
    auto ev = lib->wait_event(5000);
    later.join();
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->id, 1u);
    EXPECT_EQ(ev->type, 10);
    EXPECT_EQ(ev->message, "hot reset");
    EXPECT_FALSE(lib->wait_event(20));
    EXPECT_EQ(sim({"event", "--root", root(), "--card", "1", "--type", "boom"}),
              "exit 1: error: --type 'boom': expected suspend, reset-start, reset-finish, eid or a "
              "number\n");
}

// A wait with nothing to report sleeps (in poll on an inotify watch): a daemon that waits for
// driver events all day costs no CPU in the simulator either (the DRA plugin's idle budget is
// 0-1 clock tick in 30 s). Looking every 10 ms costs several ms a second.
TEST_F(SimLib, AnIdleEventWaitUsesNoCpu) {
    BUILD_OR_SKIP();
    auto lib = open();
    ASSERT_TRUE(lib);
    const auto cpu = [] {
        timespec t{};
        ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
    };
    const auto t0 = cpu();
    const auto w0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(lib->wait_event(1000));
    EXPECT_GE(std::chrono::steady_clock::now() - w0, std::chrono::milliseconds(990));
    EXPECT_LT(cpu() - t0, 2000) << "microseconds of CPU for one idle second";
}

TEST_F(SimLib, DriverGoneAndBack) {
    BUILD_OR_SKIP();
    auto lib = open();
    ASSERT_TRUE(lib);
    ASSERT_EQ(sim({"driver", "--root", root(), "gone"}), "");
    auto n = lib->count();
    ASSERT_FALSE(n);
    EXPECT_EQ(n.error().what(), "EfmlGetDevCount returned 6 (driver not loaded)");
    EXPECT_FALSE(lib->sample(0));
    EXPECT_FALSE(lib->healthy(0));
    auto fresh = Library::open(opts());
    ASSERT_FALSE(fresh);
    EXPECT_EQ(fresh.error().what(), "EfmlInit failed with 6");
    EXPECT_FALSE(inject::discover::discover(opts()));  // efsmi fails too
    ASSERT_EQ(sim({"driver", "--root", root(), "back"}), "");
    auto s = lib->sample(0);
    ASSERT_TRUE(s) << s.error().what();
    EXPECT_EQ(s->uuid, "TR6Y46010302");
}

// Discovery inside a daemon that keeps its own Library open must not shut the library down
// under it: only the last Library of a file calls EfmlShutdown.
TEST_F(SimLib, OnlyTheLastLibraryShutsDown) {
    BUILD_OR_SKIP();
    auto kept = open();
    ASSERT_TRUE(kept);
    {
        auto other = open();
        ASSERT_TRUE(other);
        auto host = inject::discover::discover_with(opts(), inject::discover::Backend::Efml);
        ASSERT_TRUE(host) << host.error().what();
    }
    auto s = kept->sample(1);
    ASSERT_TRUE(s) << s.error().what();
    EXPECT_EQ(s->uuid, "TR1V57100501");
}

// --- each known call missing in turn: its fields unknown, the rest and discovery unharmed.
struct Missing {
    const char* name;
    std::vector<std::string> drop;
    std::function<void(Library&, const Sample&)> check;
    bool efml_discovery = true;  // whether the libefml backend alone still finds the cards
};

const Missing kMissing[] = {
    {"DriverVer",
     {"EfmlGetDriverVer"},
     [](Library& l, const Sample&) { EXPECT_EQ(l.driver_version(), ""); }},
    {"Shutdown", {"EfmlShutdown"}, [](Library&, const Sample& s) { EXPECT_EQ(s.name, "S60"); }},
    {"NameFallsBackToNvml",
     {"EfmlGetDevName"},
     [](Library&, const Sample& s) { EXPECT_EQ(s.name, "S60"); }},
    {"Name",
     {"EfmlGetDevName", "efmlDeviceGetName"},
     [](Library&, const Sample& s) { EXPECT_EQ(s.name, ""); }},
    {"Uuid", {"EfmlGetDevUuid"}, [](Library&, const Sample& s) { EXPECT_EQ(s.uuid, ""); }},
    {"Sn", {"EfmlGetDevSn"}, [](Library&, const Sample& s) { EXPECT_EQ(s.serial, ""); }},
    {"Info",
     {"EfmlGetDevInfo"},
     [](Library&, const Sample& s) {
         EXPECT_EQ(s.pci_bus_id, "");
         EXPECT_FALSE(s.pci_device_id);
     },
     false},
    {"MemFallsBackToNvml",
     {"EfmlGetDevMem"},
     [](Library&, const Sample& s) {
         EXPECT_EQ(s.memory_total_bytes, std::optional<std::uint64_t>(42976ULL << 20));
     }},
    {"Mem",
     {"EfmlGetDevMem", "efmlDeviceGetMemoryInfo"},
     [](Library&, const Sample& s) {
         EXPECT_FALSE(s.memory_total_bytes);
         EXPECT_FALSE(s.memory_used_bytes);
     }},
    {"Numa", {"EfmlGetNumaNode"}, [](Library&, const Sample& s) { EXPECT_FALSE(s.numa_node); }},
    {"Health",
     {"EfmlGetDevIsHealth"},
     [](Library& l, const Sample& s) {
         EXPECT_FALSE(s.healthy);
         EXPECT_FALSE(l.healthy(0));
     }},
    {"DtuUsage",
     {"EfmlGetDevDtuUsage"},
     [](Library&, const Sample& s) { EXPECT_FALSE(s.usage_percent); }},
    {"PwrFallsBackToNvml",
     {"EfmlGetDevPwr"},
     [](Library&, const Sample& s) {
         EXPECT_EQ(s.power_w, std::optional<double>(96));
         EXPECT_FALSE(s.power_capability_w);
     }},
    {"Pwr",
     {"EfmlGetDevPwr", "efmlDeviceGetPowerUsage"},
     [](Library&, const Sample& s) { EXPECT_FALSE(s.power_w); }},
    {"TempOld",
     {"EfmlGetDevTemp"},
     [](Library&, const Sample& s) {
         EXPECT_EQ(s.board_temperature_c, std::optional<double>(30));
     }},
    {"TempV2UsesOld",
     {"EfmlGetDevTempV2"},
     [](Library&, const Sample& s) {
         EXPECT_EQ(s.temperature_c, std::optional<double>(35));
         EXPECT_FALSE(s.board_temperature_c);
     }},
    {"Temp",
     {"EfmlGetDevTemp", "EfmlGetDevTempV2"},
     [](Library&, const Sample& s) { EXPECT_FALSE(s.temperature_c); }},
    {"Clk",
     {"EfmlGetDevClk"},
     [](Library&, const Sample& s) {
         EXPECT_FALSE(s.hbm_clock_mhz);
         EXPECT_FALSE(s.dtu_clock_mhz);
     }},
    {"Ecc",
     {"EfmlGetDevEccStatus"},
     [](Library&, const Sample& s) { EXPECT_FALSE(s.ecc_double_bit); }},
    {"Pcie",
     {"EfmlGetPcieLinkInfo"},
     [](Library&, const Sample& s) { EXPECT_FALSE(s.pcie_link_width); }},
    {"Process",
     {"EfmlGetProcessInfo"},
     [](Library&, const Sample& s) { EXPECT_TRUE(s.processes.empty()); }},
    {"Event",
     {"EfmlGetEvent"},
     [](Library& l, const Sample&) {
         EXPECT_FALSE(l.has_events());
         EXPECT_FALSE(l.wait_event(10));
     }},
    {"NvmlInit", {"efmlInit"}, [](Library&, const Sample& s) { EXPECT_EQ(s.name, "S60"); }},
    {"NvmlCount",
     {"efmlDeviceGetCount_v2"},
     [](Library&, const Sample& s) { EXPECT_EQ(s.name, "S60"); }},
    {"NvmlHandle",
     {"efmlDeviceGetHandleByIndex_v2"},
     [](Library&, const Sample& s) { EXPECT_EQ(s.name, "S60"); }},
};

class MissingCall : public SimLib, public testing::WithParamInterface<Missing> {};

TEST_P(MissingCall, FieldUnknownRestIntact) {
    const Missing& m = GetParam();
    std::string list;
    for (const auto& d : m.drop) list += (list.empty() ? "" : ", ") + d;
    BUILD_OR_SKIP("{efml_missing_symbols: [" + list + "]}");
    ASSERT_EQ(sim({"telemetry", "--root", root(), "--card", "0", "process=99:1"}), "");
    auto lib = open();
    ASSERT_TRUE(lib);
    std::vector<std::string> want(m.drop.begin(), m.drop.end());
    auto got = lib->missing();
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want);
    auto s = lib->sample(0);
    ASSERT_TRUE(s) << s.error().what();
    m.check(*lib, *s);
    // Everything not dropped still reads.
    if (m.drop[0] != "EfmlGetDevUuid") EXPECT_EQ(s->uuid, "TR6Y46010302");
    if (m.drop[0] != "EfmlGetProcessInfo") EXPECT_EQ(s->processes.size(), 1u);
    lib.reset();
    auto host = inject::discover::discover(opts());
    ASSERT_TRUE(host) << host.error().what();
    EXPECT_EQ(host->devices.size(), 2u);
    auto efml = inject::discover::discover_with(opts(), inject::discover::Backend::Efml);
    EXPECT_EQ(static_cast<bool>(efml), m.efml_discovery) << (efml ? "" : efml.error().what());
    if (efml) EXPECT_EQ(efml->devices[1].minor, 3u);
}

INSTANTIATE_TEST_SUITE_P(Each, MissingCall, testing::ValuesIn(kMissing),
                         [](const auto& info) { return std::string(info.param.name); });

// Every known symbol is either covered above or required (open fails without it).
TEST(EfmlKnown, EveryKnownSymbolIsCovered) {
    std::set<std::string> covered{"EfmlInit", "EfmlGetDevCount"};
    for (const auto& m : kMissing) covered.insert(m.drop.begin(), m.drop.end());
    for (auto s : known_symbols()) EXPECT_TRUE(covered.count(std::string(s))) << s;
}

}  // namespace
