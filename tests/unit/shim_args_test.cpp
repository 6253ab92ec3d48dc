// SPDX-License-Identifier: Apache-2.0
// The shim's scan of runc's argv, in the forms podman, containerd and dockerd really send
// (podman 4.3, containerd 1.6/1.7, dockerd 20.10 as Debian 12 ships them), and the runc-format
// log lines containerd reads back.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "args.hpp"
#include "exec.hpp"
#include "runc_log.hpp"
#include "test_util.hpp"

namespace {

struct ArgsCase {
    const char* name;
    std::vector<std::string_view> argv;
    std::string command;
    std::optional<std::string> bundle;
    std::string id;
    std::string log;
    std::string log_format;
    bool debug;
};

const std::vector<ArgsCase> kArgsCases = {
    {"PodmanCreate",
     {"create", "--bundle", "/u/userdata", "--pid-file", "/r/pidfile", "abc"},
     "create",
     "/u/userdata",
     "abc",
     "",
     "text",
     false},
    {"ContainerdCreate",
     {"--root", "/run/containerd/runc/ns", "--log", "/b/log.json", "--log-format", "json", "create",
      "--bundle", "/b", "--pid-file", "/b/init.pid", "id1"},
     "create",
     "/b",
     "id1",
     "/b/log.json",
     "json",
     false},
    {"DockerRuntimeArgsFirst",
     {"--debug", "--root", "/x/moby", "--log", "/b/log.json", "--log-format", "json", "create",
      "--bundle", "/b", "id2"},
     "create",
     "/b",
     "id2",
     "/b/log.json",
     "json",
     true},
    {"EqualsForms",
     {"--log=/l", "--log-format=json", "--systemd-cgroup", "run", "--bundle=/b", "-d", "id3"},
     "run",
     "/b",
     "id3",
     "/l",
     "json",
     false},
    {"ShortBundle", {"create", "-b", "/b", "id4"}, "create", "/b", "id4", "", "text", false},
    {"GoSingleDash",
     {"-root", "/r", "create", "-bundle", "/b", "id5"},
     "create",
     "/b",
     "id5",
     "",
     "text",
     false},
    {"NoBundleIsCwd",
     {"create", "--pid-file", "/p", "id6"},
     "create",
     std::nullopt,
     "id6",
     "",
     "text",
     false},
    {"DoubleDash",
     {"create", "--bundle", "/b", "--", "-weird-id"},
     "create",
     "/b",
     "-weird-id",
     "",
     "text",
     false},
    {"RootlessAndCriu",
     {"--rootless", "true", "--criu", "/c", "create", "x"},
     "create",
     std::nullopt,
     "x",
     "",
     "text",
     false},
    {"DebugFalse", {"--debug=false", "state", "x"}, "state", std::nullopt, "", "", "text", false},
    {"Passthrough",
     {"--log", "/l", "exec", "--process", "/p", "--detach", "id"},
     "exec",
     std::nullopt,
     "",
     "/l",
     "text",
     false},
    {"BundleAfterIdIgnored",
     {"delete", "--force", "id"},
     "delete",
     std::nullopt,
     "",
     "",
     "text",
     false},
    {"Nothing", {}, "", std::nullopt, "", "", "text", false},
};

class ArgsTest : public ::testing::TestWithParam<ArgsCase> {};

TEST_P(ArgsTest, Scans) {
    const auto& c = GetParam();
    auto a = shim::scan_args(c.argv);
    EXPECT_EQ(a.command, c.command);
    EXPECT_EQ(a.bundle, c.bundle);
    EXPECT_EQ(a.container_id, c.id);
    EXPECT_EQ(a.log_path, c.log);
    EXPECT_EQ(a.log_format, c.log_format);
    EXPECT_EQ(a.debug, c.debug);
    EXPECT_EQ(a.edits_bundle(), c.command == "create" || c.command == "run");
}

INSTANTIATE_TEST_SUITE_P(Shim, ArgsTest, ::testing::ValuesIn(kArgsCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ShimArgs, Version) {
    EXPECT_TRUE(shim::scan_args({"--version"}).version);
    EXPECT_TRUE(shim::scan_args({"-v"}).version);
    EXPECT_FALSE(shim::scan_args({"state", "--version"}).version);
}

TEST(RuncLog, FormatsLikeRunc) {
    EXPECT_EQ(shim::RuncLog::format(shim::Level::Error, "bad \"x\"\n", true, "T"),
              "{\"level\":\"error\",\"msg\":\"bad \\\"x\\\"\\n\",\"time\":\"T\"}\n");
    EXPECT_EQ(shim::RuncLog::format(shim::Level::Warn, "a\x01", false, "T"),
              "time=\"T\" level=warning msg=\"a\\u0001\"\n");
    const auto now = shim::RuncLog::now();
    ASSERT_EQ(now.size(), 30u);
    EXPECT_EQ(now.back(), 'Z');
}

TEST(RuncLog, WritesOnlyWhatTheLevelAllows) {
    testutil::TempDir dir;
    {
        shim::RuncLog log;
        log.open_runc_log(dir / "log.json", true, false);
        log.open_debug_log(dir / "debug.log", "debug");
        log.debug("d");
        log.error("e");
        EXPECT_TRUE(log.debug_enabled());
    }
    auto runc = testutil::read_file(dir / "log.json");
    EXPECT_EQ(runc.find("\"msg\":\"d\""), std::string::npos);
    EXPECT_NE(runc.find("{\"level\":\"error\",\"msg\":\"e\""), std::string::npos);
    auto dbg = testutil::read_file(dir / "debug.log");
    EXPECT_NE(dbg.find("level=debug msg=\"d\""), std::string::npos);
    EXPECT_NE(dbg.find("level=error msg=\"e\""), std::string::npos);
}

TEST(FindRuntime, PathAbsoluteAndSelf) {
    testutil::TempDir dir;
    testutil::write_file(dir / "bin/runc", "#!/bin/sh\n");
    testutil::write_file(dir / "bin/self", "#!/bin/sh\n");
    testutil::write_file(dir / "bin/noexec", "");
    ::chmod((dir / "bin/runc").c_str(), 0755);
    ::chmod((dir / "bin/self").c_str(), 0755);
    const std::string path = "/nonexistent:" + (dir / "bin");
    auto r = shim::find_runtime({"crun-missing", "runc"}, path);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(*r, dir / "bin/runc");
    r = shim::find_runtime({dir / "bin/runc"}, "");
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, dir / "bin/runc");
    // The shim itself never counts, whatever it is called.
    r = shim::find_runtime({"self", "runc"}, path, dir / "bin/self");
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, dir / "bin/runc");
    r = shim::find_runtime({"noexec", "relative/runc"}, path);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::NotFound);
    EXPECT_EQ(r.error().what(),
              "no low-level runtime found: tried 'noexec', 'relative/runc' (PATH=" + path + ")");
}

}  // namespace
