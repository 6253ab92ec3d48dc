// SPDX-License-Identifier: Apache-2.0
#include "inject/process.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "test_util.hpp"

using namespace std::chrono_literals;
using inject::process::Command;

TEST(Process, CapturesOutputAndExitCode) {
    Command c{"/bin/sh", {"sh", "-c", "echo out; echo err >&2; exit 3"}, {}, 5000ms};
    auto r = inject::process::run(c);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->out, "out\n");
    EXPECT_EQ(r->err, "err\n");
    EXPECT_EQ(r->exit_code, 3);
}

TEST(Process, EnvironmentIsExactlyWhatWasGiven) {
    ::setenv("LD_PRELOAD", "/evil.so", 1);
    Command c{"/usr/bin/env", {"env"}, {"A=1"}, 5000ms};
    auto r = inject::process::run(c);
    ::unsetenv("LD_PRELOAD");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->out, "A=1\n");
}

TEST(Process, TimeoutKills) {
    Command c{"/bin/sleep", {"sleep", "10"}, {}, 100ms};
    auto r = inject::process::run(c);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().sys_errno(), ETIMEDOUT);
    EXPECT_EQ(r.error().what(), "/bin/sleep: timed out after 100 ms");
}

TEST(Process, OutputIsBounded) {
    Command c{"/bin/sh", {"sh", "-c", "yes | head -c 100000"}, {}, 5000ms, 1000};
    auto r = inject::process::run(c);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "/bin/sh: output larger than 1000 bytes");
}

TEST(Process, SignalIsReported) {
    Command c{"/bin/sh", {"sh", "-c", "kill -9 $$"}, {}, 5000ms};
    auto r = inject::process::run(c);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->term_signal, SIGKILL);
    EXPECT_EQ(r->exit_code, -1);
}

TEST(Process, RelativePathRefused) {
    auto r = inject::process::run(Command{"sh", {"sh"}, {}, 100ms});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "refusing to run 'sh': not an absolute path");
}

TEST(Process, MissingBinaryIsNotFound) {
    auto r = inject::process::run(Command{"/nonexistent/efsmi", {"efsmi"}, {}, 100ms});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::NotFound);
    EXPECT_EQ(r.error().what(), "cannot run '/nonexistent/efsmi': No such file or directory");
}

TEST(Process, StderrKeepsItsFirst4KiBAndNeverBlocks) {
    Command c{"/bin/sh", {"sh", "-c", "yes | head -c 1000000 >&2; echo done"}, {}, 5000ms};
    auto r = inject::process::run(c);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->out, "done\n");
    EXPECT_EQ(r->err.size(), inject::process::kMaxStderr);
}

TEST(Process, MergedStderrIsInTheOrderWritten) {
    Command c{"/bin/sh", {"sh", "-c", "echo one; echo two >&2; echo three"}, {}, 5000ms};
    c.merge_stderr = true;
    auto r = inject::process::run(c);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->out, "one\ntwo\nthree\n");
    EXPECT_EQ(r->err, "");
    EXPECT_EQ(inject::process::last_line(r->out), "three");
}

TEST(Process, MergedOutputIsBoundedToo) {
    Command c{"/bin/sh", {"sh", "-c", "yes | head -c 100000 >&2"}, {}, 5000ms, 1000};
    c.merge_stderr = true;
    auto r = inject::process::run(c);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "/bin/sh: output larger than 1000 bytes");
}

TEST(Process, LastLine) {
    EXPECT_EQ(inject::process::last_line("a\nb\n\n"), "b");
    EXPECT_EQ(inject::process::last_line("only"), "only");
    EXPECT_EQ(inject::process::last_line(""), "");
}

// In a root: the program, its loader and its libraries are the root's own.
class ProcessInRoot : public ::testing::Test {
protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "needs root (chroot)";
        if (!std::filesystem::exists("/bin/busybox")) GTEST_SKIP() << "needs a static /bin/busybox";
    }
    Command in_root(std::string path, std::vector<std::string> argv) {
        Command c{std::move(path), std::move(argv), {"PATH=/bin"}, 5000ms};
        c.root = dir_.path();
        c.merge_stderr = true;
        return c;
    }
    testutil::TempDir dir_;
};

TEST_F(ProcessInRoot, RunsTheRootsProgramInTheRoot) {
    std::filesystem::create_directories(dir_ / "bin");
    std::filesystem::copy_file("/bin/busybox", dir_ / "bin/busybox");
    testutil::write_file(dir_ / "marker", "inside\n");
    auto r = inject::process::run(in_root("/bin/busybox", {"busybox", "cat", "/marker"}));
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_EQ(r->out, "inside\n");
}

TEST_F(ProcessInRoot, APathOnlyTheCallerHasIsNotFound) {
    auto r = inject::process::run(in_root("/bin/busybox", {"busybox", "true"}));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::NotFound);
    EXPECT_EQ(r.error().what(), "cannot run '/bin/busybox': No such file or directory");
}

TEST_F(ProcessInRoot, ADynamicProgramWithoutItsLoaderSaysSo) {
    std::filesystem::copy_file("/bin/true", dir_ / "true");
    auto r = inject::process::run(in_root("/true", {"true"}));
    ASSERT_FALSE(r);
    EXPECT_EQ(
        r.error().what(),
        "cannot run '/true': the interpreter it names (its dynamic loader) is not on this host");
}

TEST_F(ProcessInRoot, ARootThatIsNoFolderIsAnError) {
    auto c = in_root("/bin/busybox", {"busybox", "true"});
    c.root = dir_ / "missing";
    auto r = inject::process::run(c);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "cannot chroot into '" + c.root + "': No such file or directory");
}
