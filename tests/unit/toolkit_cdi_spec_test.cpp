// SPDX-License-Identifier: Apache-2.0
// inject::toolkit::refresh_cdi_spec: the answers that need no chroot (the generate itself, run
// chrooted into a simulated host, is tests/integration/drs_manager_cdi.bats).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "inject/toolkit.hpp"
#include "test_util.hpp"

namespace tk = inject::toolkit;

namespace {

class CdiSpecRefresh : public ::testing::Test {
protected:
    tk::Options opts() const {
        tk::Options o;
        o.root = dir_.path();
        return o;
    }
    std::string toolkit() const { return dir_ / "usr/local/enflame/toolkit"; }
    void write_state(const std::string& json) const {
        testutil::write_file(toolkit() + "/.install-state.json", json);
    }
    testutil::TempDir dir_;
};

TEST_F(CdiSpecRefresh, NoToolkitFolderIsNotInstalled) {
    auto r = tk::refresh_cdi_spec(opts());
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(*r, tk::SpecRefresh::NotInstalled);
}

TEST_F(CdiSpecRefresh, ToolkitFolderWithoutStateIsNotInstalled) {
    std::filesystem::create_directories(toolkit());
    auto r = tk::refresh_cdi_spec(opts());
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(*r, tk::SpecRefresh::NotInstalled);
}

TEST_F(CdiSpecRefresh, InstallThatHasNotWrittenItsSpecYetIsNotInstalled) {
    write_state(R"({"engine": "containerd", "files": []})");
    auto r = tk::refresh_cdi_spec(opts());
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(*r, tk::SpecRefresh::NotInstalled);
}

TEST_F(CdiSpecRefresh, StateWhoseSpecHasNoPathIsAnError) {
    write_state(R"({"engine": "containerd", "cdi_spec": {"original": null}})");
    auto r = tk::refresh_cdi_spec(opts());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "'" + toolkit() + "/.install-state.json': cdi_spec names no path");
}

TEST_F(CdiSpecRefresh, MissingHostRootIsAnError) {
    auto o = opts();
    o.root = dir_ / "nowhere";
    auto r = tk::refresh_cdi_spec(o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "--host-root '" + o.root + "': not a folder");
}

}  // namespace
