// SPDX-License-Identifier: Apache-2.0
// The in-root cases of mount_test.cpp again, with openat2 failing with ENOSYS (the crun trick:
// a seccomp filter in this test process only, no global switch), so every lookup goes through
// the component walk of in_root.cpp. Same trees, same expected results, same error text.
#include <linux/openat2.h>
#include <seccomp.h>
#include <sys/syscall.h>

#include "mount_test.cpp"  // NOLINT(bugprone-suspicious-include): rerun the same table

namespace {

class Openat2Enosys : public ::testing::Environment {
public:
    void SetUp() override {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        ASSERT_NE(ctx, nullptr);
        ASSERT_EQ(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0), 0);
        ASSERT_EQ(seccomp_load(ctx), 0);
        seccomp_release(ctx);
    }
};
[[maybe_unused]] auto* const kEnosys = ::testing::AddGlobalTestEnvironment(new Openat2Enosys);

TEST(Openat2Fallback, FilterIsActive) {
    open_how how{};
    how.flags = O_PATH;
    how.resolve = RESOLVE_IN_ROOT;
    EXPECT_EQ(::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how), -1);
    EXPECT_EQ(errno, ENOSYS);
}

}  // namespace
