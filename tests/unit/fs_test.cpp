// SPDX-License-Identifier: Apache-2.0
#include "inject/fs.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace stdfs = std::filesystem;
using testutil::TempDir;

TEST(AtomicWrite, CreatesWithModeAndReplaces) {
    TempDir d;
    const auto p = d / "spec.yaml";
    ASSERT_TRUE(inject::fs::atomic_write(p, "one"));
    EXPECT_EQ(testutil::read_file(p), "one");
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
    ::chmod(p.c_str(), 0600);
    ASSERT_TRUE(inject::fs::atomic_write(p, "two"));
    EXPECT_EQ(testutil::read_file(p), "two");
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << "an existing file keeps its mode";
    EXPECT_EQ(std::distance(stdfs::directory_iterator(d.path()), stdfs::directory_iterator{}), 1)
        << "no temp file left";
}

// The names created in the folder during a write, as inotify reports them.
std::vector<std::string> created_while(const std::string& dir, const std::function<void()>& fn) {
    inject::fs::UniqueFd in(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    EXPECT_GE(::inotify_add_watch(in.get(), dir.c_str(), IN_CREATE), 0);
    fn();
    std::vector<std::string> names;
    alignas(inotify_event) char buf[4096];
    for (ssize_t n; (n = ::read(in.get(), buf, sizeof buf)) > 0;) {
        for (char* p = buf; p < buf + n;) {
            const auto* ev = reinterpret_cast<const inotify_event*>(p);
            if (ev->len > 0) names.emplace_back(ev->name);
            p += sizeof(inotify_event) + ev->len;
        }
    }
    return names;
}

TEST(AtomicWrite, TempNameIsADotFileOnlyWhenAsked) {
    TempDir d;
    const auto p = d / "enflame";
    auto names =
        created_while(d.path(), [&] { ASSERT_TRUE(inject::fs::atomic_write(p, "a=1\n")); });
    ASSERT_EQ(names.size(), 1u);
    EXPECT_TRUE(names[0].starts_with("enflame.tmp.")) << names[0];
    names = created_while(d.path(), [&] {
        ASSERT_TRUE(inject::fs::atomic_write(p, "a=2\n", {.hidden_temp = true}));
    });
    ASSERT_EQ(names.size(), 1u);
    EXPECT_TRUE(names[0].starts_with(".enflame.tmp.")) << names[0];
    EXPECT_EQ(testutil::read_file(p), "a=2\n");
    // The name a crash would leave is recognised, and names its target.
    EXPECT_EQ(inject::fs::atomic_temp_target(names[0].substr(1)), "enflame");
    EXPECT_EQ(std::distance(stdfs::directory_iterator(d.path()), stdfs::directory_iterator{}), 1)
        << "no temp file left";
}

TEST(AtomicWrite, TempTarget) {
    struct Case {
        const char* name;
        const char* file;
        const char* target;
    };
    for (const auto& c :
         std::initializer_list<Case>{{"temp", "a.yaml.tmp.Ab3xYz", "a.yaml"},
                                     {"plain", "a.yaml", ""},
                                     {"random part too long", "a.yaml.tmp.Ab3xYz1", ""},
                                     {"random part too short", "a.yaml.tmp.Ab3", ""},
                                     {"no target", ".tmp.Ab3xYz", ""}})
        EXPECT_EQ(inject::fs::atomic_temp_target(c.file), c.target) << c.name;
    EXPECT_EQ(inject::fs::atomic_temp_template("/d/a.yaml"), "/d/a.yaml.tmp.XXXXXX");
    EXPECT_EQ(inject::fs::atomic_temp_template("/d/a.yaml", true), "/d/.a.yaml.tmp.XXXXXX");
}

// Not durable (the shim's config.json): the old file goes by a name exchange, not a rename
// over it; the result is the same for a reader: new content, old mode, nothing left behind,
// and a reader that opened the old file still reads all of it.
TEST(AtomicWrite, NotDurableCreatesAndReplaces) {
    TempDir d;
    const auto p = d / "config.json";
    inject::fs::AtomicWriteOptions o;
    o.durable = false;
    ASSERT_TRUE(inject::fs::atomic_write(p, "first", o)) << "a new file (nothing to exchange with)";
    EXPECT_EQ(testutil::read_file(p), "first");
    ::chmod(p.c_str(), 0600);
    inject::fs::UniqueFd old(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(old.valid());
    ASSERT_TRUE(inject::fs::atomic_write(p, "second, longer", o));
    EXPECT_EQ(testutil::read_file(p), "second, longer");
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << "an existing file keeps its mode";
    EXPECT_EQ(std::distance(stdfs::directory_iterator(d.path()), stdfs::directory_iterator{}), 1)
        << "no temp file and no old file left";
    char buf[16] = {};
    EXPECT_EQ(::read(old.get(), buf, sizeof buf), 5);
    EXPECT_EQ(std::string(buf), "first");
}

// A directory that appears at the path after atomic_write checked it: a rename over it fails
// and changes nothing; the exchange path must do the same (put the directory back), never
// leave it stranded under a temp name. Another thread makes and removes the directory while
// writes run; afterwards only the path itself may be left.
TEST(AtomicWrite, NotDurableNeverStrandsADirectoryThatAppears) {
    TempDir d;
    const auto p = d / "config.json";
    std::atomic<bool> stop{false};
    std::thread flipper([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            (void)::mkdir(p.c_str(), 0755);
            (void)::rmdir(p.c_str());
        }
    });
    inject::fs::AtomicWriteOptions o;
    o.durable = false;
    int written = 0;
    // At least 5000 tries, and on until one has succeeded (10 s at most): on a loaded machine
    // the flipper can be descheduled between its mkdir and rmdir for longer than 5000 quick
    // refusals take (seen once in a full run: 5000 refusals in 13 ms, nothing written).
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int i = 0; i < 5000 || (written == 0 && std::chrono::steady_clock::now() < until); ++i) {
        if (inject::fs::atomic_write(p, "x", o)) {
            ++written;
            ::unlink(p.c_str());
        }
    }
    stop = true;
    flipper.join();
    std::vector<std::string> left;
    for (const auto& e : stdfs::directory_iterator(d.path()))
        if (e.path() != stdfs::path(p)) left.push_back(e.path().filename());
    EXPECT_TRUE(left.empty()) << left.size() << " left, e.g. "
                              << (left.empty() ? "" : left.front());
    EXPECT_GT(written, 0);
}

TEST(AtomicWrite, RefusesSymlinkAndDirectory) {
    TempDir d;
    testutil::write_file(d / "target", "keep");
    stdfs::create_symlink(d / "target", d / "link");
    auto r = inject::fs::atomic_write(d / "link", "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), d / "link" + ": refusing to replace a symlink");
    EXPECT_EQ(testutil::read_file(d / "target"), "keep");
    stdfs::create_directory(d / "dir");
    auto r2 = inject::fs::atomic_write(d / "dir", "x");
    ASSERT_FALSE(r2);
    EXPECT_EQ(r2.error().what(), d / "dir" + ": is a directory");
}

TEST(AtomicWrite, FailureLeavesOldFileAndNoTemp) {
    TempDir d;
    testutil::write_file(d / "sub/f", "old");
    // An immutable folder refuses new files even to root (chmod would not stop root).
    inject::fs::UniqueFd dir(::open((d / "sub").c_str(), O_RDONLY | O_DIRECTORY));
    int flags = 0;
    if (::ioctl(dir.get(), FS_IOC_GETFLAGS, &flags) != 0) GTEST_SKIP() << "no inode flags here";
    int immutable = flags | FS_IMMUTABLE_FL;
    if (::ioctl(dir.get(), FS_IOC_SETFLAGS, &immutable) != 0)
        GTEST_SKIP() << "cannot set immutable";
    auto r = inject::fs::atomic_write(d / "sub/f", "new");
    ::ioctl(dir.get(), FS_IOC_SETFLAGS, &flags);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::Permission);
    EXPECT_EQ(testutil::read_file(d / "sub/f"), "old");
    EXPECT_EQ(std::distance(stdfs::directory_iterator(d / "sub"), stdfs::directory_iterator{}), 1);
}

TEST(AtomicWrite, MissingFolderIsNotFound) {
    TempDir d;
    auto r = inject::fs::atomic_write(d / "nope/f", "x");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::NotFound);
}

TEST(ReadFile, BoundsTheSize) {
    TempDir d;
    testutil::write_file(d / "big", std::string(100, 'x'));
    auto r = inject::fs::read_file(d / "big", 10);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), d / "big" + ": file is larger than 10 bytes");
    EXPECT_EQ(*inject::fs::read_file(d / "big", 100), std::string(100, 'x'));
}

TEST(Join, RootSlashIsIdentity) {
    EXPECT_EQ(inject::fs::join("/", "/dev/gcu0"), "/dev/gcu0");
    EXPECT_EQ(inject::fs::join("/host/", "/dev/gcu0"), "/host/dev/gcu0");
    EXPECT_EQ(inject::fs::join("/host", "dev"), "/host/dev");
}

// In-root resolution: every case must stay inside the root, whatever the links say.
struct InRootCase {
    const char* name;
    const char* path;
    const char* expect;  // path relative to the root, or nullptr = must fail
};

class InRootBase : public testing::Test {
protected:
    void SetUp() override {
        stdfs::create_directories(d_ / "usr/lib");
        stdfs::create_directories(d_ / "etc");
        testutil::write_file(d_ / "usr/lib/libefml.so.1", "lib");
        testutil::write_file(d_ / "etc/passwd", "inroot");
        stdfs::create_symlink("/usr/lib/libefml.so.1", d_ / "usr/lib/abs-link");
        stdfs::create_symlink("libefml.so.1", d_ / "usr/lib/rel-link");
        stdfs::create_symlink("../../../../../../etc", d_ / "usr/lib/dotdot");
        stdfs::create_symlink("/", d_ / "rootlink");
        stdfs::create_symlink("/proc/self/root/etc", d_ / "magic");
        stdfs::create_symlink("loop2", d_ / "loop1");
        stdfs::create_symlink("loop1", d_ / "loop2");
    }
    TempDir d_;
};
class InRoot : public InRootBase, public testing::WithParamInterface<InRootCase> {};

TEST_P(InRoot, StaysInside) {
    auto root = inject::fs::open_root(d_.path());
    ASSERT_TRUE(root);
    auto fd = inject::fs::open_in_root(root->get(), GetParam().path, O_PATH);
    if (GetParam().expect == nullptr) {
        EXPECT_FALSE(fd) << "resolved to " << (fd ? *inject::fs::fd_path(fd->get()) : "");
        return;
    }
    ASSERT_TRUE(fd) << fd.error().what();
    auto p = inject::fs::fd_path(fd->get());
    ASSERT_TRUE(p);
    auto real_root = stdfs::canonical(d_.path()).string();
    std::string want =
        real_root +
        (std::string(GetParam().expect).empty() ? "" : "/" + std::string(GetParam().expect));
    EXPECT_EQ(*p, want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, InRoot,
    testing::Values(InRootCase{"Plain", "/usr/lib/libefml.so.1", "usr/lib/libefml.so.1"},
                    InRootCase{"AbsoluteLink", "/usr/lib/abs-link", "usr/lib/libefml.so.1"},
                    InRootCase{"RelativeLink", "usr/lib/rel-link", "usr/lib/libefml.so.1"},
                    InRootCase{"DotDotChain", "/../../../etc/passwd", "etc/passwd"},
                    InRootCase{"NotInRoot_Tricky1", "/usr/lib/dotdot/passwd", "etc/passwd"},
                    InRootCase{"RootLinkClamped", "/rootlink/etc/passwd", "etc/passwd"},
                    InRootCase{"MagicLinkNotFollowedOut", "/magic/passwd", nullptr},
                    InRootCase{"Loop", "/loop1", nullptr},
                    InRootCase{"Missing", "/usr/lib/nope", nullptr}),
    [](const auto& info) { return std::string(info.param.name); });

// openat2 with RESOLVE_IN_ROOT answers EAGAIN when a rename or mount anywhere on the system
// races a lookup that walks "..": on a busy node (containerd, kubelet and builds renaming files
// all the time) that is not rare, and a hook failing a container start with "Resource
// temporarily unavailable" would be our bug. Renames run in another folder while ".." paths
// resolve; every resolution must succeed and stay inside.
TEST_F(InRootBase, DotDotSurvivesRenamesElsewhere) {
    TempDir other;
    testutil::write_file(other / "a", "x");
    std::atomic<bool> stop{false};
    std::thread renamer([&] {
        const std::string a = other / "a", b = other / "b";
        while (!stop.load(std::memory_order_relaxed)) {
            (void)::rename(a.c_str(), b.c_str());
            (void)::rename(b.c_str(), a.c_str());
        }
    });
    auto root = inject::fs::open_root(d_.path());
    ASSERT_TRUE(root);
    const auto want = stdfs::canonical(d_.path()).string() + "/etc/passwd";
    int failures = 0;
    std::string first_error;
    for (int i = 0; i < 20000; ++i) {
        auto fd = inject::fs::open_in_root(root->get(), "/usr/lib/dotdot/passwd", O_PATH);
        if (!fd) {
            if (failures++ == 0) first_error = fd.error().what();
            continue;
        }
        auto p = inject::fs::fd_path(fd->get());
        if (!p || *p != want) {
            if (failures++ == 0) first_error = "resolved to " + (p ? *p : std::string("?"));
        }
    }
    stop = true;
    renamer.join();
    EXPECT_EQ(failures, 0) << "first: " << first_error;
}

TEST(ResolveInRoot, GivesTheHostPath) {
    TempDir d;
    testutil::write_file(d / "usr/local/efsmi/efsmi-1.4/efsmi", "bin");
    stdfs::create_directories(d / "usr/bin");
    stdfs::create_symlink("/usr/local/efsmi/efsmi-1.4/efsmi", d / "usr/bin/efsmi");
    auto p = inject::fs::resolve_in_root(d.path(), "/usr/bin/efsmi");
    ASSERT_TRUE(p) << p.error().what();
    EXPECT_EQ(*p, stdfs::canonical(d.path()).string() + "/usr/local/efsmi/efsmi-1.4/efsmi");
}
