// SPDX-License-Identifier: Apache-2.0
// inject::toolkit returns what `enflame-ctk toolkit` and `runtime configure` print instead of
// printing it: the lines in order and how the call ended. The whole install against real
// engines is tests/integration/installer*.bats; these are the answers that need no engine.
#include "inject/toolkit.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "inject/runtime_plan.hpp"
#include "test_util.hpp"

namespace tk = inject::toolkit;
using Lines = std::vector<std::string>;

namespace {

class Toolkit : public ::testing::Test {
protected:
    tk::Options opts() const {
        tk::Options o;
        o.root = dir_.path();
        o.source_dir = dir_ / "src";
        return o;
    }
    std::string state() const { return dir_ / "usr/local/enflame/toolkit/.install-state.json"; }
    testutil::TempDir dir_;
};

TEST_F(Toolkit, UninstallWithNothingInstalledSaysSo) {
    auto r = tk::uninstall(opts());
    ASSERT_TRUE(r.result) << r.result.error().what();
    EXPECT_EQ(r.lines, Lines{"nothing to undo: no " + state()});
}

TEST_F(Toolkit, UninstallWhileHandingOverUndoesNothing) {
    testutil::write_file(dir_ / "annotations", "a=\"b\"\nenflame.com/toolkit-handover=\"true\"\n");
    testutil::write_file(state(), "not json");
    auto o = opts();
    o.handover_file = dir_ / "annotations";
    auto r = tk::uninstall(o);
    ASSERT_TRUE(r.result) << r.result.error().what();
    ASSERT_EQ(r.lines.size(), 1U);
    EXPECT_EQ(r.lines[0].rfind("handing over: ", 0), 0U) << r.lines[0];
    EXPECT_TRUE(std::filesystem::exists(state()));
    auto s = tk::status(o);
    ASSERT_FALSE(s.result);
    EXPECT_EQ(s.result.error().what(),
              "handing over to a new installer (enflame.com/toolkit-handover)");
}

TEST_F(Toolkit, StatusWithNothingInstalledIsNotReadyAndPrintsNothing) {
    auto r = tk::status(opts());
    ASSERT_FALSE(r.result);
    EXPECT_EQ(r.result.error().what(), "not installed: no " + state());
    EXPECT_TRUE(r.lines.empty());
}

TEST_F(Toolkit, AStateFileNotOursIsRefused) {
    testutil::write_file(state(), "{\"other\": 1}\n");
    auto r = tk::uninstall(opts());
    ASSERT_FALSE(r.result);
    EXPECT_EQ(r.result.error().what(), "'" + state() + "': not a state file of ours");
}

TEST_F(Toolkit, InstallWithoutAnEngineChangesNothing) {
    auto r = tk::install(opts());
    ASSERT_FALSE(r.result);
    EXPECT_EQ(
        r.result.error().what(),
        "--runtime auto: no container engine (containerd, crio, dockerd) is installed under '" +
            dir_.path() + "'");
    EXPECT_TRUE(r.lines.empty());
    EXPECT_FALSE(std::filesystem::exists(dir_ / "usr"));
}

TEST_F(Toolkit, FlagsAreCheckedFirst) {
    auto o = opts();
    o.restart_mode = "now";
    EXPECT_EQ(tk::install(o).result.error().what(), "--restart-mode 'now': want signal or none");
    o = opts();
    o.cdi_dir = "var/run/cdi";
    EXPECT_EQ(tk::status(o).result.error().what(), "'var/run/cdi': host paths must be absolute");
    o = opts();
    o.root = dir_ / "missing";
    EXPECT_EQ(tk::uninstall(o).result.error().what(), "--host-root '" + o.root + "': not a folder");
}

TEST_F(Toolkit, ApplyChangesSaysWhatItWrote) {
    auto root = tk::HostRoot::open(dir_.path());
    ASSERT_TRUE(root) << root.error().what();
    tk::RuntimeArgs a;
    a.engine = "docker";
    a.opts.runtime_path = "/usr/bin/enflame-container-runtime";
    auto changes = tk::plan(a, *root);
    ASSERT_TRUE(changes) << changes.error().what();
    Lines lines;
    auto changed = tk::apply_changes(*root, *changes, lines);
    ASSERT_TRUE(changed) << changed.error().what();
    EXPECT_TRUE(*changed);
    const std::string file = dir_ / "etc/docker/daemon.json";
    EXPECT_EQ(lines, Lines{"updated: " + file});
    lines.clear();
    changed = tk::apply_changes(*root, *changes, lines);
    ASSERT_TRUE(changed) << changed.error().what();
    EXPECT_FALSE(*changed);
    EXPECT_EQ(lines, Lines{"unchanged: " + file + " (nothing to do)"});
}

// What the installer's preStop finds on a CRI-O node (conmon -r) and on a containerd one (a
// task bundle's options.json): the runtime binary stays while either names it, the rest goes.
TEST_F(Toolkit, UninstallKeepsTheRuntimeWhileAContainerRunsThroughIt) {
    namespace fs = std::filesystem;
    const std::string tk_dir = dir_ / "usr/local/enflame/toolkit";
    const std::string host_rt = "/usr/local/enflame/toolkit/enflame-container-runtime";
    for (const char* f :
         {"enflame-container-runtime", "enflame-container-runtime-hook", "enflame-ctk"})
        testutil::write_file(tk_dir + "/" + f, "binary");
    testutil::write_file(state(), R"({"engine": "crio", "engine_config": "/etc/crio/crio.conf",
        "engine_configured": false, "files": ["enflame-container-runtime",
        "enflame-container-runtime-hook", "enflame-ctk"],
        "created_dirs": ["/usr/local/enflame", "/usr/local/enflame/toolkit"]})");
    using namespace std::string_literals;
    testutil::write_file(dir_ / "proc/4242/cmdline",
                         "/usr/bin/conmon\0-c\0abc123\0-r\0"s + host_rt + "\0"s);
    testutil::write_file(dir_ / "proc/77/cmdline",
                         "/usr/bin/conmon\0--cid=other\0-r\0/usr/bin/runc\0"s);
    testutil::write_file(dir_ / "proc/78/cmdline",
                         "/bin/sh\0-r\0"s + host_rt + "\0"s);  // not a conmon
    const auto kept_line = [&](const std::string& ids) {
        return "kept: " + tk_dir +
               "/enflame-container-runtime: 1 container still runs through it (" + ids +
               "); the next 'enflame-ctk toolkit install' or 'uninstall' removes it once they are "
               "gone";
    };
    auto r = tk::uninstall(opts());
    ASSERT_TRUE(r.result) << r.result.error().what();
    EXPECT_EQ(r.lines, (Lines{kept_line("abc123"), "uninstalled: " + tk_dir}));
    EXPECT_TRUE(fs::exists(dir_ / host_rt));
    EXPECT_FALSE(fs::exists(tk_dir + "/enflame-ctk"));
    EXPECT_FALSE(fs::exists(tk_dir + "/enflame-container-runtime-hook"));
    EXPECT_FALSE(fs::exists(state()));
    EXPECT_TRUE(fs::exists(tk_dir + "/.kept-runtime.json"));
    // conmon gone, a containerd task bundle naming it: kept again, for that task
    fs::remove_all(dir_ / "proc/4242");
    const std::string id(64, 'e');
    testutil::write_file(
        dir_ / ("run/containerd/io.containerd.runtime.v2.task/k8s.io/" + id + "/options.json"),
        R"({"binary_name":")" + host_rt + R"(","root":"/run/containerd/runc"})");
    r = tk::uninstall(opts());
    ASSERT_TRUE(r.result) << r.result.error().what();
    EXPECT_EQ(r.lines, Lines{kept_line(id.substr(0, 12))});
    // nothing left: removed, with the record and the folders the install made
    fs::remove_all(dir_ / "run/containerd/io.containerd.runtime.v2.task/k8s.io");
    r = tk::uninstall(opts());
    ASSERT_TRUE(r.result) << r.result.error().what();
    EXPECT_EQ(r.lines, Lines{"removed: " + tk_dir +
                             "/enflame-container-runtime (no container runs through it any more)"});
    EXPECT_FALSE(fs::exists(dir_ / "usr/local/enflame"));
    EXPECT_TRUE(fs::exists(dir_ / "usr/local"));
    r = tk::uninstall(opts());
    EXPECT_EQ(r.lines, Lines{"nothing to undo: no " + state()});
}

}  // namespace
