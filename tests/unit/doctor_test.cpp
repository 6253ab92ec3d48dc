// SPDX-License-Identifier: Apache-2.0
// enflame-ctk doctor's checks that need no simulated host (tests/integration/doctor.bats runs
// the rest against one): the generated-from record, the cheap staleness checks, config origins,
// the CDI dir checks, the engine checks with config files and sockets in a temp dir, exit codes.
#include "inject/doctor.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "inject/cdi_io.hpp"
#include "inject/cdi_provenance.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/fs.hpp"
#include "test_util.hpp"

namespace cdi = inject::cdi;
namespace doc = inject::doctor;
using testutil::TempDir;

namespace {

cdi::GeneratedFrom record() {
    return cdi::GeneratedFrom{
        "1.4.3.4",
        {{0, "TR6Y46010000", "0000:10:00.0", 238, 0}, {1, "TR6Y46010001", "0000:11:00.0", 238, 1}}};
}

// A driver root with the module version and sysfs entries of record() (no device nodes:
// mknod needs root).
void lay_out(const TempDir& t, const std::string& version) {
    testutil::write_file(t / "root/sys/module/enflame/version", version + "\n");
    testutil::write_file(t / "root/sys/bus/pci/devices/0000:10:00.0/enflame/gcu0/dev", "238:0\n");
    testutil::write_file(t / "root/sys/bus/pci/devices/0000:11:00.0/enflame/gcu1/dev", "238:1\n");
}

const doc::Check* find(const std::vector<doc::Check>& checks, const std::string& name) {
    for (const auto& c : checks)
        if (c.name == name) return &c;
    return nullptr;
}

}  // namespace

TEST(GeneratedFrom, CommentRoundTripsAndSitsBeforeTheSpec) {
    const std::string line = cdi::generated_from_comment(record());
    EXPECT_EQ(line,
              "# enflame.com/generated-from: driver=1.4.3.4 card=0/TR6Y46010000/0000:10:00.0/238:0 "
              "card=1/TR6Y46010001/0000:11:00.0/238:1\n");
    const std::string text =
        "# a comment first\n" + line + "cdiVersion: \"0.5.0\"\nkind: enflame.com/gpu\n";
    auto got = cdi::read_generated_from(text, "s.yaml");
    ASSERT_TRUE(got) << got.error().what();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ(**got, record());
}

TEST(GeneratedFrom, AbsentOrAfterTheFirstKeyIsNone) {
    for (const std::string text :
         {std::string("cdiVersion: \"0.5.0\"\n"),
          "cdiVersion: \"0.5.0\"\n" + cdi::generated_from_comment(record()), std::string()}) {
        auto got = cdi::read_generated_from(text, "s.yaml");
        ASSERT_TRUE(got);
        EXPECT_FALSE(got->has_value()) << text;
    }
}

TEST(GeneratedFrom, MalformedNamesTheFile) {
    auto got = cdi::read_generated_from(
        "# enflame.com/generated-from: driver=1 card=0/U/0000:10:00.0/238\n", "/etc/cdi/x.yaml");
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), inject::Errc::InvalidInput);
    EXPECT_EQ(got.error().what(),
              "/etc/cdi/x.yaml: enflame.com/generated-from: bad card '0/U/0000:10:00.0/238': "
              "want index/uuid/bus/major:minor");
    auto blank = cdi::generated_from_comment(cdi::GeneratedFrom{"1 2", {}});
    EXPECT_EQ(blank, "");
}

TEST(GeneratedFrom, TheRegistryKeepsTheRecord) {
    TempDir t;
    cdi::Spec s{"0.5.0", "enflame.com/gpu", {}, {}, {}};
    cdi::Device d{"0", {}, {}};
    d.edits.env = {"A=1"};
    s.devices.push_back(d);
    testutil::write_file(t / "cdi/a.yaml", cdi::generated_from_comment(record()) + cdi::to_yaml(s));
    testutil::write_file(t / "cdi/b.json",
                         cdi::to_json(cdi::Spec{"0.5.0", "other.com/x", {}, {d}, {}}));
    auto reg = cdi::Registry::load({t / "cdi"});
    ASSERT_TRUE(reg);
    ASSERT_EQ(reg->specs().size(), 2u);
    EXPECT_EQ(reg->specs()[0].generated_from, record());
    EXPECT_FALSE(reg->specs()[1].generated_from.has_value());
}

struct StaleCase {
    const char* name;
    std::function<void(const TempDir&)> change;
    std::optional<std::vector<std::uint32_t>> cards;
    std::string want;  // "" = fresh; "@" stands for the root
};

class StaleReason : public ::testing::TestWithParam<StaleCase> {};

TEST_P(StaleReason, SaysWhy) {
    TempDir t;
    lay_out(t, "1.4.3.4");
    GetParam().change(t);
    const cdi::HostPaths paths{t / "root", t / "root", "gcu"};
    auto why = cdi::stale_reason(record(), paths, GetParam().cards);
    std::string want = GetParam().want;
    if (auto p = want.find('@'); p != std::string::npos) want.replace(p, 1, t / "root");
    EXPECT_EQ(why.value_or(""), want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, StaleReason,
    ::testing::Values(
        StaleCase{"DriverUpgraded", [](const TempDir& t) { lay_out(t, "1.5.0.1"); },
                  std::vector<std::uint32_t>{},
                  "the driver is 1.5.0.1, the spec was generated for 1.4.3.4"},
        StaleCase{
            "DriverUnloaded",
            [](const TempDir& t) { ::unlink((t / "root/sys/module/enflame/version").c_str()); },
            std::nullopt, "the driver is not loaded ('@/sys/module/enflame/version' is missing)"},
        StaleCase{"CardGoneFromSysfs",
                  [](const TempDir& t) {
                      std::filesystem::remove_all(t / "root/sys/bus/pci/devices/0000:11:00.0");
                  },
                  std::vector<std::uint32_t>{1},
                  "card 1 (TR6Y46010001, 0000:11:00.0) is gone from sysfs"},
        StaleCase{"OtherCardGoneIsNotOurs",
                  [](const TempDir& t) {
                      std::filesystem::remove_all(t / "root/sys/bus/pci/devices/0000:11:00.0");
                  },
                  std::vector<std::uint32_t>{0},
                  "card 0 (TR6Y46010000, 0000:10:00.0): '@/dev/gcu0' is missing"},
        StaleCase{"NumbersChanged",
                  [](const TempDir& t) {
                      testutil::write_file(
                          t / "root/sys/bus/pci/devices/0000:10:00.0/enflame/gcu0/dev", "239:0\n");
                  },
                  std::vector<std::uint32_t>{0},
                  "card 0 (TR6Y46010000, 0000:10:00.0) is 239:0 in sysfs, the spec says 238:0"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(StaleEdits, NodesAndMountsAgainstTheHost) {
    TempDir t;
    testutil::write_file(t / "lib/libefml.so.1", "x");
    cdi::ContainerEdits e;
    e.device_nodes.push_back(cdi::DeviceNode{"/dev/null", "/dev/null", "c", 1, 3, {}, "", {}, {}});
    e.mounts.push_back(cdi::Mount{t / "lib/libefml.so.1", "/usr/lib/libefml.so.1", "", {"ro"}});
    EXPECT_FALSE(cdi::stale_edits(e).has_value());

    auto wrong = e;
    wrong.device_nodes[0].minor = 5;
    EXPECT_EQ(cdi::stale_edits(wrong).value_or(""),
              "device node '/dev/null' is 1:3, the spec says 1:5");
    auto gone = e;
    gone.device_nodes[0].host_path = t / "dev/gcu9";
    EXPECT_EQ(cdi::stale_edits(gone).value_or(""),
              "device node '" + (t / "dev/gcu9") + "' is missing");
    ::unlink((t / "lib/libefml.so.1").c_str());
    EXPECT_EQ(cdi::stale_edits(e).value_or(""),
              "mounted file '" + (t / "lib/libefml.so.1") + "' is missing");
}

TEST(DoctorConfig, EachKeySaysWhereItCameFrom) {
    doc::Options o;
    const std::string text =
        "[enflame-container-runtime]\nmode = \"cdi\"\n[enflame-container-cli]\ndriver-root = "
        "\"/x\"\n";
    auto cfg = inject::config::parse(text, "/etc/c.toml");
    ASSERT_TRUE(cfg);
    o.cfg = *cfg;
    o.cfg.source = "/etc/c.toml";
    o.config_text = text;
    o.cfg.cli.dev_root = "/d";
    o.flag_overrides.emplace_back("dev-root", "--dev-root");
    const auto checks = doc::check_config(o);
    ASSERT_NE(find(checks, "config.mode"), nullptr);
    EXPECT_EQ(find(checks, "config.file")->seen, "/etc/c.toml");
    EXPECT_EQ(find(checks, "config.mode")->seen, "'cdi' (set in /etc/c.toml)");
    EXPECT_EQ(find(checks, "config.driver-root")->seen, "'/x' (set in /etc/c.toml)");
    EXPECT_EQ(find(checks, "config.dev-root")->seen, "'/d' (flag --dev-root)");
    EXPECT_EQ(find(checks, "config.log-level")->seen, "'info' (default)");
    EXPECT_EQ(doc::exit_code(checks), 0);

    o.config_error =
        inject::Error(inject::Errc::InvalidInput, "/etc/c.toml: line 2: unknown key 'mdoe'");
    const auto bad = doc::check_config(o);
    EXPECT_EQ(bad[0].status, doc::Status::Fail);
    EXPECT_EQ(bad[0].seen,
              "/etc/c.toml: line 2: unknown key 'mdoe' (the checks below use the defaults)");
    EXPECT_EQ(doc::exit_code(bad), 2);
}

TEST(DoctorCdi, BrokenSpecDuplicateNameAndNoSpecOfOurKind) {
    TempDir t;
    cdi::Device d{"0", {}, {}};
    d.edits.env = {"A=1"};
    const std::string other = cdi::to_yaml(cdi::Spec{"0.5.0", "other.com/x", {}, {d}, {}});
    testutil::write_file(t / "cdi/a.yaml", other);
    testutil::write_file(t / "cdi/b.yaml", other);
    testutil::write_file(t / "cdi/c.yaml",
                         "cdiVersion: \"0.5.0\"\nkind: other.com/y\ndevcies: []\n");
    doc::Options o;
    o.cfg.runtime.spec_dirs = {t / "cdi"};
    const auto checks = doc::check_cdi(o, std::nullopt);
    ASSERT_EQ(checks.size(), 3u);
    EXPECT_EQ(checks[0].name, "cdi.spec");
    EXPECT_EQ(checks[0].status, doc::Status::Fail);
    EXPECT_NE(checks[0].seen.find(t / "cdi/c.yaml"), std::string::npos) << checks[0].seen;
    EXPECT_NE(checks[0].seen.find("devcies"), std::string::npos) << checks[0].seen;
    EXPECT_EQ(checks[1].name, "cdi.names");
    EXPECT_EQ(checks[1].seen, "device 'other.com/x=0' is defined in '" + (t / "cdi/a.yaml") +
                                  "' and '" + (t / "cdi/b.yaml") + "' (a request for it fails)");
    EXPECT_EQ(checks[2].name, "cdi.current");
    EXPECT_EQ(checks[2].status, doc::Status::Warn);
    EXPECT_EQ(doc::exit_code(checks), 2);
}

class DoctorRuntime : public ::testing::Test {
protected:
    doc::Options with(const std::string& config_text, const std::string& socket) {
        if (!config_text.empty()) testutil::write_file(t_ / "daemon.json", config_text);
        doc::Options o;
        o.path = {"/bin", "/usr/bin"};
        o.engines = {doc::Engine{"docker", "true", {}, t_ / "daemon.json", socket}};
        o.timeout = std::chrono::milliseconds(500);
        return o;
    }
    TempDir t_;
};

TEST_F(DoctorRuntime, ConfigThatDoesNotParseFails) {
    const auto c = doc::check_runtimes(with("{\n  \"runtimes\": {,\n}\n", ""));
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, doc::Status::Fail);
    EXPECT_TRUE(c[0].seen.starts_with(t_ / "daemon.json" + ": does not parse: ")) << c[0].seen;
}

TEST_F(DoctorRuntime, WiredAndReachableIsOk) {
    const std::string sock = t_ / "d.sock";
    inject::fs::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(fd.get(), 1), 0);
    const auto c = doc::check_runtimes(
        with(R"({"runtimes": {"enflame": {"path": "/usr/bin/enflame-container-runtime"}}})", sock));
    EXPECT_EQ(c[0].status, doc::Status::Ok) << c[0].seen;
    EXPECT_NE(c[0].seen.find("wired (enflame-container-runtime)"), std::string::npos) << c[0].seen;
    EXPECT_NE(c[0].seen.find("daemon answers at '" + sock + "'"), std::string::npos) << c[0].seen;
}

TEST_F(DoctorRuntime, NotWiredAndNoDaemonWarn) {
    const auto c = doc::check_runtimes(with("{}", t_ / "none.sock"));
    EXPECT_EQ(c[0].status, doc::Status::Warn);
    EXPECT_NE(c[0].seen.find("not wired to enflame-container-runtime and CDI off"),
              std::string::npos)
        << c[0].seen;
    EXPECT_NE(c[0].seen.find("daemon not reachable at '" + (t_ / "none.sock") + "'"),
              std::string::npos)
        << c[0].seen;
    EXPECT_EQ(
        c[0].fix,
        "enflame-ctk runtime configure --runtime docker --cdi.enabled; systemctl start docker");
    const auto cdi_on = doc::check_runtimes(with(R"({"features": {"cdi": true}})", ""));
    EXPECT_EQ(cdi_on[0].status, doc::Status::Ok) << cdi_on[0].seen;
}

TEST_F(DoctorRuntime, ContainerdDropInFromImportsCounts) {
    // What `enflame-ctk runtime configure --runtime containerd` writes: a drop-in the main file
    // imports.
    testutil::write_file(
        t_ / "conf.d/99-enflame.toml",
        "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.enflame.options]\n"
        "BinaryName = \"/usr/bin/enflame-container-runtime\"\n");
    testutil::write_file(t_ / "config.toml",
                         "version = 2\nimports = [\"" + (t_ / "conf.d/99-enflame.toml") + "\"]\n");
    doc::Options o;
    o.path = {"/bin", "/usr/bin"};
    o.engines = {doc::Engine{"containerd", "true", {}, t_ / "config.toml", ""}};
    auto c = doc::check_runtimes(o);
    EXPECT_EQ(c[0].status, doc::Status::Ok) << c[0].seen;
    EXPECT_NE(c[0].seen.find("wired (enflame-container-runtime)"), std::string::npos) << c[0].seen;
    ::unlink((t_ / "conf.d/99-enflame.toml").c_str());
    c = doc::check_runtimes(o);
    EXPECT_EQ(c[0].status, doc::Status::Warn) << c[0].seen;
}

TEST_F(DoctorRuntime, NotInstalledIsOk) {
    auto o = with("", "");
    o.engines[0].binary = "no-such-engine-binary";
    const auto c = doc::check_runtimes(o);
    EXPECT_EQ(c[0].status, doc::Status::Ok);
    EXPECT_EQ(c[0].seen, "no-such-engine-binary is not installed (not on PATH)");
}

TEST(DoctorExit, WorstStatusDecides) {
    using S = doc::Status;
    EXPECT_EQ(doc::exit_code({}), 0);
    EXPECT_EQ(doc::exit_code({{"a", S::Ok, "", ""}, {"b", S::Warn, "", ""}}), 1);
    EXPECT_EQ(doc::exit_code({{"a", S::Fail, "", ""}, {"b", S::Warn, "", ""}}), 2);
}
