// SPDX-License-Identifier: Apache-2.0
// The fallback chain driven by each fault switch of the simulated host (sim/), in process:
// which backend answers, and the exact reason each earlier one gives. The host builder makes
// real character nodes with mknod, so this needs root and the built simulator; without them
// every test skips with the reason. The simulator prints our own model of efsmi's
// --json-format and the DRS tables' borders (docs/efsmi-model.md, not captured from a real driver),
// so "efsmi-json answers a healthy host" holds for that model.
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include "inject/discover.hpp"
#include "sim_host.hpp"
#include "test_util.hpp"

namespace {

using namespace inject::discover;
using testutil::TempDir;

const char* kCards = R"(driver_version: "1.4.3.4"
cards:
  - {index: 0, minor: 0, product: S60, uuid: TR6Y46010302, serial: A0A1650510676, bus_id: "0000:17:00.0", numa_node: 0}
  - {index: 1, minor: 1, product: S60, uuid: TR1V57100501, serial: A0A1650510677, bus_id: "0000:b1:00.0", numa_node: 1}
)";

struct Fault {
    const char* name;
    const char* faults;   // YAML under `faults:`
    const char* backend;  // the one that answers; nullptr = discovery fails
    std::vector<std::string>
        why;  // fnmatch patterns of Host::fallbacks, or of the error ("@" = root)
    // efsmi's timeout: generous, so a loaded machine never pushes a healthy efsmi down the
    // chain, except where the timeout itself is under test.
    std::chrono::milliseconds timeout = std::chrono::seconds(5);
};

const std::string kNoEfsmi =
    "no efsmi under driver-root '@' (tried /usr/bin/efsmi, /usr/sbin/efsmi, /usr/local/bin/efsmi)";

const Fault kFaults[] = {
    {"Healthy", "{}", "efsmi-json", {}},
    {"EfsmiAbsent",
     "{efsmi_absent: true}",
     "libefml",
     {"efsmi-json: " + kNoEfsmi, "efsmi-text: " + kNoEfsmi}},
    {"EfsmiExit1",
     "{efsmi_exit_code: 1}",
     "libefml",
     {"efsmi-json: efsmi exited 1 (old driver without --json-format?)",
      "efsmi-text: efsmi exited 1"}},
    {"JsonUnsupported",
     "{json_unsupported: true}",
     "efsmi-text",
     {"efsmi-json: efsmi exited 1 (old driver without --json-format?)"}},
    {"Garbage",
     "{efsmi_output: garbage}",
     "libefml",
     {"efsmi-json: efsmi -q --json-format: byte 1: syntax error while parsing value - invalid "
      "literal*",
      "efsmi-text: efsmi -q: line 1: unexpected text '*' before the first DEV ID"}},
    {"Truncated",
     "{efsmi_output: truncated}",
     "libefml",
     {"efsmi-json: efsmi -q --json-format: byte *: syntax error while parsing * - unexpected end "
      "of input*",
      "efsmi-text: efsmi -q: line *: output ends *(truncated?)"}},
    {"OldKeys", "{old_keys: true}", "efsmi-json", {}},
    {"OldKeysNoJson",
     "{old_keys: true, json_unsupported: true}",
     "efsmi-text",
     {"efsmi-json: efsmi exited 1 (old driver without --json-format?)"}},
    {"EfsmiTimeout",
     "{efsmi_sleep_ms: 60000}",
     "libefml",
     {"efsmi-json: efsmi timed out after 300 ms", "efsmi-text: efsmi timed out after 300 ms"},
     std::chrono::milliseconds(300)},
    {"EfmlMissingUuid",
     "{efsmi_absent: true, efml_missing_symbols: [EfmlGetDevUuid]}",
     "libefml",
     {"efsmi-json: " + kNoEfsmi, "efsmi-text: " + kNoEfsmi}},
    {"EfmlMissingNumaUsesSysfs",
     "{efsmi_absent: true, efml_missing_symbols: [EfmlGetNumaNode]}",
     "libefml",
     {"efsmi-json: " + kNoEfsmi, "efsmi-text: " + kNoEfsmi}},
    {"EfmlMissingInit",
     "{efsmi_absent: true, efml_missing_symbols: [EfmlInit]}",
     nullptr,
     {"no backend found the cards: efsmi-json: " + kNoEfsmi + "; efsmi-text: " + kNoEfsmi +
      "; libefml: libefml has no EfmlInit"}},
    {"EfmlMissingCount",
     "{efsmi_exit_code: 2, efml_missing_symbols: [EfmlGetDevCount]}",
     nullptr,
     {"no backend found the cards: efsmi-json: efsmi exited 2 (old driver without --json-format?); "
      "efsmi-text: efsmi exited 2; libefml: libefml has no EfmlGetDevCount"}},
    {"EfmlInitFails",
     "{efsmi_output: garbage, efml_init_fails: true}",
     nullptr,
     {"no backend found the cards: efsmi-json: *; efsmi-text: *; libefml: EfmlInit failed with 1"}},
    {"EfmlAbsent",
     "{efsmi_absent: true, efml_absent: true}",
     nullptr,
     {"no backend found the cards: efsmi-json: " + kNoEfsmi + "; efsmi-text: " + kNoEfsmi +
      "; libefml: no libefml.so or libefml.so.1 under driver-root '@' (searched /usr/lib, "
      "/usr/lib64, "
      "/usr/lib/x86_64-linux-gnu, /usr/local/lib)"}},
};

std::string subst(std::string s, const std::string& root) {
    for (auto p = s.find('@'); p != std::string::npos; p = s.find('@', p + root.size()))
        s.replace(p, 1, root);
    return s;
}

bool matches(const std::string& pattern, const std::string& text) {
    return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

// Lays out a simulated host; an empty string when it worked, else why not (for GTEST_SKIP).
std::string build_host(const TempDir& t, const std::string& desc) {
    if (auto why = testutil::sim_host_unusable(); !why.empty()) return why;
    testutil::write_file(t / "desc.yaml", desc);
    EXPECT_EQ(testutil::sim_host({"build", "--desc", t / "desc.yaml", "--root", t / "root"}), "");
    return "";
}

class FaultChain : public testing::TestWithParam<Fault> {};

TEST_P(FaultChain, BackendAndReasons) {
    const Fault& f = GetParam();
    TempDir t;
    if (auto why = build_host(t, std::string(kCards) + "faults: " + f.faults + "\n"); !why.empty())
        GTEST_SKIP() << why;
    Options o;
    o.driver_root = o.dev_root = t / "root";
    o.efsmi_timeout = f.timeout;
    const auto start = std::chrono::steady_clock::now();
    auto host = discover(o);
    // A hung efsmi (60 s in EfsmiTimeout) is killed, not waited for; the bound is loose, as a
    // loaded machine may be slow to kill and reap.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
    if (f.backend == nullptr) {
        ASSERT_FALSE(host) << "answered: " << host->backend;
        ASSERT_EQ(f.why.size(), 1u);
        EXPECT_PRED2(matches, subst(f.why[0], o.driver_root), host.error().what());
        return;
    }
    ASSERT_TRUE(host) << host.error().what();
    EXPECT_EQ(host->backend, f.backend);
    ASSERT_EQ(host->fallbacks.size(), f.why.size());
    for (std::size_t i = 0; i < f.why.size(); ++i)
        EXPECT_PRED2(matches, subst(f.why[i], o.driver_root), host->fallbacks[i]);
    ASSERT_EQ(host->devices.size(), 2u);
    const auto& d = host->devices[1];
    EXPECT_EQ(d.index, 1u);
    EXPECT_EQ(d.minor, 1u);
    EXPECT_EQ(d.uuid, std::string(f.name) == "EfmlMissingUuid" ? "" : "TR1V57100501");
    EXPECT_EQ(d.pci_bus_id, "0000:b1:00.0");
    EXPECT_EQ(d.numa_node, 1);
    EXPECT_EQ(d.memory_bytes, 42976ULL << 20);
    EXPECT_EQ(d.healthy, std::optional<bool>(true));
    EXPECT_EQ(d.node.host_path, o.dev_root + "/dev/gcu1");
    EXPECT_EQ(d.node.major, 238u);
    EXPECT_EQ(host->driver_version, "1.4.3.4");
    ASSERT_TRUE(host->control.has_value());
    EXPECT_EQ(host->control->minor, 255u);
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultChain, testing::ValuesIn(kFaults),
                         [](const auto& info) { return std::string(info.param.name); });

// An unhealthy card is reported as such by every backend, never dropped.
TEST(FaultChain, UnhealthyCardByEveryBackend) {
    TempDir t;
    std::string desc = kCards;
    desc.replace(desc.rfind("numa_node: 1}"), 13, "numa_node: 1, healthy: false}");
    if (auto why = build_host(t, desc); !why.empty()) GTEST_SKIP() << why;
    Options o;
    o.driver_root = o.dev_root = t / "root";
    for (Backend b : {Backend::EfsmiJson, Backend::EfsmiText, Backend::Efml}) {
        auto host = discover_with(o, b);
        ASSERT_TRUE(host) << backend_name(b) << ": " << host.error().what();
        ASSERT_EQ(host->devices.size(), 2u);
        EXPECT_EQ(host->devices[0].healthy, std::optional<bool>(true)) << backend_name(b);
        EXPECT_EQ(host->devices[1].healthy, std::optional<bool>(false)) << backend_name(b);
    }
}

// DRS comes from efsmi after any backend, libefml included.
TEST(FaultChain, DrsAfterEveryBackend) {
    TempDir t;
    const std::string desc = std::string(kCards) + R"(drs:
  profiles:
    - {id: 0, name: 1g.11gb, max_instances: 4, memory_mib: 10744}
  instances:
    - {card: 1, instance_id: 0, profile: 1g.11gb, uuid: 4c1e9a52-0000-4000-8000-000000000000}
)";
    if (auto why = build_host(t, desc); !why.empty()) GTEST_SKIP() << why;
    Options o;
    o.driver_root = o.dev_root = t / "root";
    for (Backend b : {Backend::EfsmiJson, Backend::EfsmiText, Backend::Efml}) {
        auto host = discover_with(o, b);
        ASSERT_TRUE(host) << backend_name(b) << ": " << host.error().what();
        ASSERT_EQ(host->drs_profiles.size(), 1u) << backend_name(b);
        EXPECT_EQ(host->drs_profiles[0].name, "1g.11gb");
        EXPECT_TRUE(host->devices[0].drs_instances.empty());
        ASSERT_EQ(host->devices[1].drs_instances.size(), 1u) << backend_name(b);
        EXPECT_EQ(host->devices[1].drs_instances[0].uuid, "4c1e9a52-0000-4000-8000-000000000000");
    }
    o.with_drs = false;
    auto host = discover(o);
    ASSERT_TRUE(host) << host.error().what();
    EXPECT_TRUE(host->drs_profiles.empty());
    EXPECT_TRUE(host->devices[1].drs_instances.empty());
}

}  // namespace
