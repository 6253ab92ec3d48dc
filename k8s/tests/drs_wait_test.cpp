// SPDX-License-Identifier: Apache-2.0
// The device plugin's wait at start for the DRS manager (device-plugin/drs_wait.hpp): no file or
// this boot's settled layout -> no wait; another boot's state -> ready once the manager writes
// this boot's, or timed out, or stopped by a signal. Signals come through a pipe carrying
// signalfd records, the shape the plugin's signalfd reads.
#include "device-plugin/drs_wait.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <thread>

#include "k8s/drs_layout_state.hpp"
#include "temp_dir.hpp"

namespace {

using device_plugin::LayoutWait;
using k8s::drs::LayoutState;
using std::chrono::milliseconds;

struct Pipe {
    int fds[2] = {-1, -1};
    Pipe() { EXPECT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0); }
    ~Pipe() {
        ::close(fds[0]);
        ::close(fds[1]);
    }
    void signal(int signo) const {
        signalfd_siginfo si{};
        si.ssi_signo = static_cast<std::uint32_t>(signo);
        EXPECT_EQ(::write(fds[1], &si, sizeof si), static_cast<ssize_t>(sizeof si));
    }
};

class DrsWait : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream(boot_) << "boot-now\n";
        auto w = k8s::FileWatch::create(state_);
        ASSERT_TRUE(w) << w.error().what();
        watch_.emplace(std::move(*w));
    }
    void write_state(const LayoutState& s) {
        ASSERT_TRUE(k8s::drs::write_layout_state(state_, s));
    }
    inject::Result<LayoutWait> wait(milliseconds limit) {
        return device_plugin::wait_for_layout(*watch_, state_, boot_, limit, signals_.fds[0]);
    }

    k8s_test::TempDir dir_;
    std::string state_ = dir_.path() + "/m/state.json";
    std::string boot_ = dir_.path() + "/boot_id";
    std::optional<k8s::FileWatch> watch_;
    Pipe signals_;
};

TEST_F(DrsWait, NoStateFileOrThisBootsSettledLayoutOrZeroLimitWaitsNot) {
    EXPECT_EQ(*wait(milliseconds(5000)), LayoutWait::NotNeeded);
    write_state({"all-1g.11gb", "success", "", "boot-now"});
    EXPECT_EQ(*wait(milliseconds(5000)), LayoutWait::NotNeeded);
    write_state({"all-1g.11gb", "success", "", "boot-before"});
    EXPECT_EQ(*wait(milliseconds(0)), LayoutWait::NotNeeded);
}

TEST_F(DrsWait, AnotherBootsStateWaitsUntilTheManagerWritesThisBootsSettledOne) {
    write_state({"all-1g.11gb", "success", "", "boot-before"});
    // The manager's writes come after the wait began (it starts within these 100 ms).
    std::thread manager([this] {
        std::this_thread::sleep_for(milliseconds(100));
        write_state({"all-1g.11gb", "applying", "", "boot-now"});  // not yet
        std::this_thread::sleep_for(milliseconds(100));
        write_state({"all-1g.11gb", "success", "", "boot-now"});
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto r = wait(milliseconds(10000));
    const auto took = std::chrono::steady_clock::now() - t0;
    manager.join();
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(*r, LayoutWait::Ready);
    EXPECT_GE(took, milliseconds(200));
    EXPECT_LT(took, milliseconds(5000));
}

TEST_F(DrsWait, NoManagerTimesOut) {
    write_state({"all-1g.11gb", "pending", "", "boot-now"});
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(*wait(milliseconds(150)), LayoutWait::TimedOut);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(150));
}

TEST_F(DrsWait, SigtermStopsItAtOnceSighupDoesNot) {
    write_state({"all-1g.11gb", "success", "", "boot-before"});
    signals_.signal(SIGHUP);
    EXPECT_EQ(*wait(milliseconds(200)), LayoutWait::TimedOut);
    signals_.signal(SIGTERM);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(*wait(milliseconds(10000)), LayoutWait::Stopped);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1000));
}

TEST_F(DrsWait, AnUnreadableBootIdIsTheError) {
    write_state({"all-1g.11gb", "success", "", "boot-before"});
    std::ofstream(boot_) << "";
    auto r = wait(milliseconds(1000));
    ASSERT_FALSE(r);
    EXPECT_EQ(std::string(r.error().what()), "'" + boot_ + "': empty boot id");
}

}  // namespace
