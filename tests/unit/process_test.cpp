// SPDX-License-Identifier: Apache-2.0
#include "inject/process.hpp"

#include <csignal>

#include <gtest/gtest.h>

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
}
