// SPDX-License-Identifier: Apache-2.0
#include "inject/result.hpp"

#include <gtest/gtest.h>

using inject::Errc;
using inject::Error;
using inject::Result;

namespace {

Result<int> parse_positive(int v) {
    if (v <= 0)
        return inject::fail(Errc::InvalidInput, "value " + std::to_string(v) + " is not positive");
    return v;
}

Result<int> doubled(int v) {
    INJECT_TRY(int x, parse_positive(v));
    return 2 * x;
}

Result<void> checked(int v) {
    INJECT_TRY_CTX(parse_positive(v), "checking the count");
    return inject::ok();
}

}  // namespace

TEST(Result, ValueAndError) {
    auto good = doubled(3);
    ASSERT_TRUE(good);
    EXPECT_EQ(*good, 6);
    auto bad = doubled(-1);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code(), Errc::InvalidInput);
    EXPECT_EQ(bad.error().what(), "value -1 is not positive");
}

TEST(Result, ContextChainsOutermostFirst) {
    auto r = checked(0);
    ASSERT_FALSE(r);
    r.error().context("loading /etc/x");
    EXPECT_EQ(r.error().what(), "loading /etc/x: checking the count: value 0 is not positive");
    EXPECT_EQ(r.error().message(), "value 0 is not positive");
}

TEST(Result, SysErrorMapsErrno) {
    EXPECT_EQ(inject::sys_error("opening /x", ENOENT).code(), Errc::NotFound);
    EXPECT_EQ(inject::sys_error("opening /x", EACCES).code(), Errc::Permission);
    EXPECT_EQ(inject::sys_error("opening /x", EIO).code(), Errc::Io);
    EXPECT_EQ(inject::sys_error("opening /x", ENOENT).what(),
              "opening /x: No such file or directory");
    EXPECT_EQ(inject::sys_error("opening /x", ENOENT).sys_errno(), ENOENT);
}
