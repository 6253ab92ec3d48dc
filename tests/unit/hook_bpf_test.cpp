// SPDX-License-Identifier: Apache-2.0
// cgroup v2 device filters, for real: a cgroup made under the host's cgroup2 mount (on this
// hybrid machine /sys/fs/cgroup/unified), a "runtime" filter attached the way runc attaches
// its own, then the legacy hook's allow_devices() extends it. A child process moved into the
// cgroup opens the nodes: the requested card opens (ENXIO: no driver behind the simulated
// node, so the cgroup let it through), another card and what the runtime denied give EPERM,
// and what the runtime allowed still opens. Needs root and a cgroup2 mount.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "test_util.hpp"

namespace {

namespace stdfs = std::filesystem;
using R = inject::hook::DeviceRule;

constexpr int kMajor = 238;  // the simulated cards' major (sim/)

std::string cgroup2_mount() {
    for (const char* m : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
        struct statfs s {};
        if (::statfs(m, &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC) return m;
    }
    return "";
}

// A cgroup2 folder removed (with its children) at the end; its programs go with it.
class Cgroup {
public:
    explicit Cgroup(std::string path) : path_(std::move(path)) { stdfs::create_directory(path_); }
    ~Cgroup() {
        std::error_code ec;
        for (const auto& child : children_) stdfs::remove(child, ec);
        stdfs::remove(path_, ec);
    }
    Cgroup(const Cgroup&) = delete;
    Cgroup& operator=(const Cgroup&) = delete;
    std::string child(const std::string& name) {
        children_.push_back(path_ + "/" + name);
        stdfs::create_directory(children_.back());
        return children_.back();
    }
    [[nodiscard]] inject::fs::UniqueFd fd() const {
        return inject::fs::UniqueFd(::open(path_.c_str(), O_RDONLY | O_DIRECTORY));
    }
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    std::string path_;
    std::vector<std::string> children_;
};

// errno of open(path, O_RDWR) by a child moved into cgroup `cg` (0: it opened), or of mknod
// when `node_at` names where to make a char node kMajor:minor.
int probe(const std::string& cg, const std::string& path, int mknod_minor = -1) {
    pid_t pid = ::fork();
    if (pid == 0) {
        int fd = ::open((cg + "/cgroup.procs").c_str(), O_WRONLY);
        if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(200);
        ::close(fd);
        if (mknod_minor >= 0) {
            if (::mknod(path.c_str(), S_IFCHR | 0600,
                        makedev(kMajor, static_cast<unsigned>(mknod_minor))) != 0)
                ::_exit(errno);
            ::_exit(0);
        }
        fd = ::open(path.c_str(), O_RDWR);
        ::_exit(fd < 0 ? errno : 0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

inject::cdi::DeviceNode node(const std::string& path, int minor) {
    inject::cdi::DeviceNode n;
    n.path = path;
    n.type = "c";
    n.major = kMajor;
    n.minor = minor;
    return n;
}

class CgroupV2 : public ::testing::Test {
protected:
    void SetUp() override {
        mount_ = cgroup2_mount();
        const char* ci = std::getenv("CI");
        const bool must = ci != nullptr && std::string(ci) == "true";
        if (::geteuid() != 0 || mount_.empty()) {
            if (must) FAIL() << "needs root and a cgroup2 mount";
            GTEST_SKIP() << "needs root and a cgroup2 mount";
        }
        for (int m : {0, 1})
            ASSERT_EQ(::mknod((dir_ / ("gcu" + std::to_string(m))).c_str(), S_IFCHR | 0666,
                              makedev(kMajor, static_cast<unsigned>(m))),
                      0);
        name_ = "/ectk-bpf-test-" + std::to_string(::getpid());
    }
    // What runc's filter holds for this test: everything denied but /dev/null (and card 0's mknod,
    // to show a rule of the runtime that the hook's own rules do not give).
    const std::vector<R> runtime_rules_{R{false, 'a', {}, {}, "rwm"}, R{true, 'c', 1, 3, "rwm"}};
    testutil::TempDir dir_;
    std::string mount_, name_;
};

TEST_F(CgroupV2, HookExtendsTheRuntimeFilterWithTheRequestedCardOnly) {
    Cgroup cg(mount_ + name_);
    const std::string gcu0 = dir_ / "gcu0", gcu1 = dir_ / "gcu1";
    // Without a filter the cgroup lets everything through: the driver answers (ENXIO).
    EXPECT_EQ(probe(cg.path(), gcu1), ENXIO);
    {
        auto fd = cg.fd();
        {
            auto a = inject::hook::attach_device_filter(fd.get(), runtime_rules_);
            ASSERT_TRUE(a) << a.error().what();
        }
    }
    // The runtime's filter: card 1 denied, /dev/null allowed, /dev/zero denied.
    EXPECT_EQ(probe(cg.path(), gcu1), EPERM);
    EXPECT_EQ(probe(cg.path(), "/dev/null"), 0);
    EXPECT_EQ(probe(cg.path(), "/dev/zero"), EPERM);

    // The hook, as it runs for a container whose init is in that cgroup (a fake /proc/<pid>/cgroup
    // names it: the real hook reads the runtime's pid there), asked for card 1.
    testutil::write_file(dir_ / "proc/42/cgroup", "0::" + name_ + "\n");
    auto r = inject::hook::allow_devices(42, {node("/dev/gcu1", 1)}, {}, "/sys/fs/cgroup",
                                         dir_ / "proc");
    ASSERT_TRUE(r) << r.error().what();

    EXPECT_EQ(probe(cg.path(), gcu1), ENXIO) << "the requested card is allowed";
    EXPECT_EQ(probe(cg.path(), gcu0), EPERM) << "another card stays denied";
    EXPECT_EQ(probe(cg.path(), "/dev/null"), 0) << "the runtime's allow rule still holds";
    EXPECT_EQ(probe(cg.path(), "/dev/zero"), EPERM) << "the runtime's deny still holds";
    EXPECT_EQ(probe(cg.path(), dir_ / "gcu1-again", 1), EPERM) << "read/write only: no mknod";
    // The hook run again (prestart and createRuntime) changes nothing; another node is added.
    auto fd = cg.fd();
    auto again = inject::hook::extend_device_filters(fd.get(), {R{true, 'c', kMajor, 1, "rw"}});
    ASSERT_TRUE(again) << again.error().what();
    EXPECT_EQ(*again, 0U);
    auto more = inject::hook::extend_device_filters(fd.get(), {R{true, 'c', kMajor, 0, "rw"}});
    ASSERT_TRUE(more) << more.error().what();
    EXPECT_EQ(*more, 1U) << "one program, replaced, not stacked";
    EXPECT_EQ(probe(cg.path(), gcu0), ENXIO);
    EXPECT_EQ(probe(cg.path(), gcu1), ENXIO);
    EXPECT_EQ(probe(cg.path(), "/dev/zero"), EPERM);
}

TEST_F(CgroupV2, EveryProgramOfAMultiAttachIsExtended) {
    Cgroup cg(mount_ + name_);
    auto fd = cg.fd();
    // Two filters: both must allow. The second also allows card 0 and /dev/zero.
    {
        auto a = inject::hook::attach_device_filter(fd.get(), runtime_rules_);
        ASSERT_TRUE(a) << a.error().what();
    }
    ASSERT_TRUE(inject::hook::attach_device_filter(
        fd.get(),
        {R{false, 'a', {}, {}, "rwm"}, R{true, 'c', 1, {}, "rwm"}, R{true, 'c', kMajor, 0, "rw"}}));
    EXPECT_EQ(probe(cg.path(), dir_ / "gcu0"), EPERM) << "the first filter denies it";
    auto n = inject::hook::extend_device_filters(fd.get(), {R{true, 'c', kMajor, 1, "rw"}});
    ASSERT_TRUE(n) << n.error().what();
    EXPECT_EQ(*n, 2U);
    EXPECT_EQ(probe(cg.path(), dir_ / "gcu1"), ENXIO);
    EXPECT_EQ(probe(cg.path(), dir_ / "gcu0"), EPERM);
    EXPECT_EQ(probe(cg.path(), "/dev/null"), 0);
    EXPECT_EQ(probe(cg.path(), "/dev/zero"), EPERM);
}

TEST_F(CgroupV2, NoFilterIsNothingToDoAParentsFilterFailsClosed) {
    Cgroup parent(mount_ + name_);
    const std::string child = parent.child("c");
    auto cfd = inject::fs::UniqueFd(::open(child.c_str(), O_RDONLY | O_DIRECTORY));
    auto none = inject::hook::extend_device_filters(cfd.get(), {R{true, 'c', kMajor, 1, "rw"}});
    ASSERT_TRUE(none) << none.error().what();
    EXPECT_EQ(*none, 0U);

    auto pfd = parent.fd();
    ASSERT_TRUE(inject::hook::attach_device_filter(pfd.get(), runtime_rules_));
    auto r = inject::hook::extend_device_filters(cfd.get(), {R{true, 'c', kMajor, 1, "rw"}});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "the device filter comes from a parent cgroup, not the container's own");
    EXPECT_EQ(probe(child, dir_ / "gcu1"), EPERM);

    // Through the hook: one line saying why, naming the node.
    testutil::write_file(dir_ / "proc/42/cgroup", "0::" + name_ + "/c\n");
    auto h = inject::hook::allow_devices(42, {node("/dev/gcu1", 1)}, {}, "/sys/fs/cgroup",
                                         dir_ / "proc");
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error().what(),
              "cannot allow /dev/gcu1 on cgroup v2: cgroup " + name_ +
                  "/c: the device filter comes from a parent cgroup, not the container's own");
}

}  // namespace
