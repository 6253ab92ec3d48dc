// SPDX-License-Identifier: Apache-2.0
// In-root creation, mknod, bind mounts, symlinks and chmod against hostile rootfs trees.
// Every case runs with a host folder OUT next to the rootfs; whatever the rootfs's symlinks say,
// OUT must stay untouched and no mount may appear outside the rootfs.
// in_root_enosys_test.cpp includes this file and reruns every case with openat2 made to fail
// with ENOSYS by a seccomp filter, so the component-walk fallback meets the same trees.
#include "inject/mount.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace stdfs = std::filesystem;
using inject::fs::UniqueFd;

namespace {

// Mounts made by a test live in a private mount namespace of this test process, so a failed
// test leaves nothing mounted on the host.
class PrivateMountNamespace : public ::testing::Environment {
public:
    void SetUp() override {
        if (::geteuid() != 0) return;
        if (::unshare(CLONE_NEWNS) == 0)
            ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
    }
};
[[maybe_unused]] auto* const kMountNs =
    ::testing::AddGlobalTestEnvironment(new PrivateMountNamespace);

std::string mountinfo() {
    return testutil::read_file("/proc/self/mountinfo");
}

struct Env {
    std::string root;  // the rootfs on the host
    std::string out;   // a host folder the rootfs must never reach
    int root_fd;
};

struct Case {
    std::string name;
    std::vector<std::string> dirs;                           // created in the rootfs
    std::vector<std::pair<std::string, std::string>> links;  // rootfs path -> target ({OUT} = out)
    std::function<inject::Result<void>(const Env&)> op;
    std::string want_error;                           // "" = success
    std::vector<std::string> want_in_root;            // must exist in the rootfs after
    std::function<void(const Env&)> check = nullptr;  // more checks on success
};

std::string subst(std::string s, const std::string& out) {
    for (auto p = s.find("{OUT}"); p != std::string::npos; p = s.find("{OUT}"))
        s.replace(p, 5, out);
    return s;
}

inject::Result<void> as_void(inject::Result<UniqueFd> r) {
    if (!r) return inject::fail(std::move(r).error());
    return inject::ok();
}

inject::Result<void> as_void_str(inject::Result<std::string> r) {
    if (!r) return inject::fail(std::move(r).error());
    return inject::ok();
}

inject::Result<void> bind_host_file(const Env& e, const std::string& target) {
    testutil::write_file(e.root + "/../src.so", "library");
    UniqueFd src(::open((e.root + "/../src.so").c_str(), O_PATH | O_CLOEXEC));
    return inject::fs::bind_mount_in_root(src.get(), e.root_fd, target);
}

const dev_t kNull = makedev(1, 3);

std::vector<Case> cases() {
    return {
        {"MkdirPlain",
         {},
         {},
         [](const Env& e) { return as_void(inject::fs::mkdir_in_root(e.root_fd, "/a/b/c")); },
         "",
         {"a/b/c"}},
        {"MkdirDotDotClamped",
         {},
         {},
         [](const Env& e) { return as_void(inject::fs::mkdir_in_root(e.root_fd, "/../../x/./y")); },
         "",
         {"x/y"}},
        {"MkdirAbsSymlinkToHost",
         {},
         {{"usr", "{OUT}"}},
         [](const Env& e) {
             return as_void(inject::fs::mkdir_in_root(e.root_fd, "/usr/lib/enflame"));
         },
         "resolving /usr: No such file or directory",
         {}},
        {"MkdirSymlinkToSlash",
         {},
         {{"usr", "/"}},
         [](const Env& e) {
             return as_void(inject::fs::mkdir_in_root(e.root_fd, "/usr/lib/enflame"));
         },
         "",
         {"lib/enflame"}},
        {"NotInRoot-DotDotChain",
         {},
         {{"lib", "../../../../../../../../../../"}},
         [](const Env& e) { return as_void(inject::fs::mkdir_in_root(e.root_fd, "/lib/evil")); },
         "",
         {"evil"}},
        {"NotInRoot-Tricky1",
         {"b"},
         {{"a", "b/../../../..{OUT}"}},
         [](const Env& e) { return as_void(inject::fs::mkdir_in_root(e.root_fd, "/a/x")); },
         "resolving /a: No such file or directory",
         {}},
        {"NotInRoot-ProcSelfRoot",
         {},
         {{"dev", "/proc/self/root{OUT}"}},
         [](const Env& e) {
             return inject::fs::mknod_in_root(e.root_fd, "/dev/gcu0", {S_IFCHR, 0666, kNull, 0, 0});
         },
         "resolving /dev: No such file or directory",
         {}},
        {"NotInRoot-RelativeToOut",
         {"out"},
         {{"dev", "../out"}},
         [](const Env& e) {
             return inject::fs::mknod_in_root(e.root_fd, "/dev/gcu0", {S_IFCHR, 0666, kNull, 0, 0});
         },
         "",
         {"out/gcu0"}},
        {"FileLastComponentSymlinkToHost",
         {"etc"},
         {{"etc/passwd", "{OUT}/passwd"}},
         [](const Env& e) {
             return as_void(inject::fs::ensure_in_root(e.root_fd, "/etc/passwd", false));
         },
         "resolving /etc/passwd: No such file or directory",
         {}},
        {"FileCreated",
         {},
         {},
         [](const Env& e) {
             return as_void(inject::fs::ensure_in_root(e.root_fd, "/usr/bin/efsmi", false));
         },
         "",
         {"usr/bin/efsmi"}},
        {"FileButFolderThere",
         {"usr/bin/efsmi"},
         {},
         [](const Env& e) {
             return as_void(inject::fs::ensure_in_root(e.root_fd, "/usr/bin/efsmi", false));
         },
         "/usr/bin/efsmi is a folder, expected a file",
         {}},
        {"MknodPlainTwice",
         {},
         {},
         [](const Env& e) -> inject::Result<void> {
             INJECT_TRY_VOID(
                 inject::fs::mknod_in_root(e.root_fd, "/dev/gcu0", {S_IFCHR, 0640, kNull, 0, 0}));
             return inject::fs::mknod_in_root(e.root_fd, "/dev/gcu0", {S_IFCHR, 0640, kNull, 0, 0});
         },
         "",
         {"dev/gcu0"},
         [](const Env& e) {
             struct stat st {};
             ASSERT_EQ(::lstat((e.root + "/dev/gcu0").c_str(), &st), 0);
             EXPECT_TRUE(S_ISCHR(st.st_mode));
             EXPECT_EQ(st.st_rdev, kNull);
             EXPECT_EQ(st.st_mode & 07777, 0640u);
         }},
        {"MknodOverSymlink",
         {"dev"},
         {{"dev/gcu0", "{OUT}/gcu0"}},
         [](const Env& e) {
             return inject::fs::mknod_in_root(e.root_fd, "/dev/gcu0", {S_IFCHR, 0666, kNull, 0, 0});
         },
         "/dev/gcu0 exists and is not the device node c 1:3",
         {}},
        {"SymlinkCreatedAndKept",
         {},
         {},
         [](const Env& e) -> inject::Result<void> {
             INJECT_TRY_VOID(
                 inject::fs::symlink_in_root(e.root_fd, "libefml.so.1", "/usr/lib/libefml.so"));
             return inject::fs::symlink_in_root(e.root_fd, "libefml.so.1", "/usr/lib/libefml.so");
         },
         "",
         {},
         [](const Env& e) {
             EXPECT_EQ(stdfs::read_symlink(e.root + "/usr/lib/libefml.so"), "libefml.so.1");
         }},
        {"SymlinkConflict",
         {"usr/lib"},
         {{"usr/lib/libefml.so", "other"}},
         [](const Env& e) {
             return inject::fs::symlink_in_root(e.root_fd, "libefml.so.1", "/usr/lib/libefml.so");
         },
         "/usr/lib/libefml.so exists and is not a symlink to 'libefml.so.1'",
         {}},
        {"SymlinkParentToHost",
         {},
         {{"usr", "{OUT}"}},
         [](const Env& e) {
             return inject::fs::symlink_in_root(e.root_fd, "/etc/shadow", "/usr/lib/x");
         },
         "resolving /usr: No such file or directory",
         {}},
        {"ChmodRefusesSymlink",
         {},
         {{"f", "{OUT}/file"}},
         [](const Env& e) { return inject::fs::chmod_in_root(e.root_fd, "/f", 0777); },
         "/f: refusing to change the mode of a symlink",
         {}},
        {"ChmodThroughFolderSymlinkToHost",
         {},
         {{"d", "{OUT}"}},
         [](const Env& e) { return inject::fs::chmod_in_root(e.root_fd, "/d/file", 0777); },
         "resolving /d/file: No such file or directory",
         {}},
        {"ChmodPlain",
         {"bin"},
         {},
         [](const Env& e) {
             testutil::write_file(e.root + "/bin/tool", "x");
             return inject::fs::chmod_in_root(e.root_fd, "/bin/tool", 0750);
         },
         "",
         {"bin/tool"},
         [](const Env& e) {
             struct stat st {};
             ASSERT_EQ(::stat((e.root + "/bin/tool").c_str(), &st), 0);
             EXPECT_EQ(st.st_mode & 07777, 0750u);
         }},
        {"WriteInRoot",
         {},
         {},
         [](const Env& e) {
             return inject::fs::write_in_root(e.root_fd, "/etc/ld.so.conf.d/00-enflame.conf",
                                              "/usr/lib\n");
         },
         "",
         {"etc/ld.so.conf.d/00-enflame.conf"},
         [](const Env& e) {
             EXPECT_EQ(testutil::read_file(e.root + "/etc/ld.so.conf.d/00-enflame.conf"),
                       "/usr/lib\n");
         }},
        {"WriteRefusesSymlink",
         {"etc"},
         {{"etc/ld.so.conf", "{OUT}/file"}},
         [](const Env& e) { return inject::fs::write_in_root(e.root_fd, "/etc/ld.so.conf", "x"); },
         "/etc/ld.so.conf: refusing to replace a symlink",
         {}},
        {"WriteParentSymlinkToHost",
         {},
         {{"etc", "{OUT}"}},
         [](const Env& e) {
             return inject::fs::write_in_root(e.root_fd, "/etc/ld.so.conf.d/x.conf", "x");
         },
         "resolving /etc: No such file or directory",
         {}},
        // The installer's view of a node's root mounted in its pod: absolute links resolve from
        // the root, never from the caller's "/".
        {"AtomicWriteThroughAbsoluteLink",
         {"run/cdi"},
         {{"var/run", "/run"}},
         [](const Env& e) {
             return inject::fs::atomic_write_in_root(e.root_fd, "/var/run/cdi/spec.yaml", "spec\n");
         },
         "",
         {"run/cdi/spec.yaml"},
         [](const Env& e) {
             EXPECT_EQ(testutil::read_file(e.root + "/run/cdi/spec.yaml"), "spec\n");
         }},
        {"AtomicWriteThroughDotDotLink",
         {"etc"},
         {{"etc/containerd", "/../../.."}},
         [](const Env& e) {
             return inject::fs::atomic_write_in_root(e.root_fd, "/etc/containerd/config.toml", "x");
         },
         "",
         {"config.toml"}},
        {"AtomicWriteParentLinkToHost",
         {},
         {{"etc/containerd", "{OUT}"}},
         [](const Env& e) {
             return inject::fs::atomic_write_in_root(e.root_fd, "/etc/containerd/config.toml", "x");
         },
         "resolving /etc/containerd: No such file or directory",
         {}},
        {"AtomicWriteRefusesSymlink",
         {"etc"},
         {{"etc/config.toml", "{OUT}/file"}},
         [](const Env& e) {
             return inject::fs::atomic_write_in_root(e.root_fd, "/etc/config.toml", "x");
         },
         "/etc/config.toml: refusing to replace a symlink",
         {}},
        {"AtomicWriteKeepsMode",
         {"etc"},
         {},
         [](const Env& e) {
             testutil::write_file(e.root + "/etc/secret.toml", "old");
             ::chmod((e.root + "/etc/secret.toml").c_str(), 0600);
             return inject::fs::atomic_write_in_root(e.root_fd, "/etc/secret.toml", "new");
         },
         "",
         {"etc/secret.toml"},
         [](const Env& e) {
             struct stat st {};
             ASSERT_EQ(::stat((e.root + "/etc/secret.toml").c_str(), &st), 0);
             EXPECT_EQ(st.st_mode & 07777, 0600u);
             EXPECT_EQ(testutil::read_file(e.root + "/etc/secret.toml"), "new");
             EXPECT_EQ(stdfs::directory_iterator(e.root + "/etc")->path().filename(), "secret.toml")
                 << "a temp file was left behind";
         }},
        {"ReadThroughLinkToHost",
         {"etc"},
         {{"etc/passwd", "{OUT}/file"}},
         [](const Env& e) {
             return as_void_str(inject::fs::read_in_root(e.root_fd, "/etc/passwd", 100));
         },
         "resolving /etc/passwd: No such file or directory",
         {}},
        {"ReadThroughDotDotLink",
         {"run"},
         {{"var/run", "../../../../../run"}},
         [](const Env& e) -> inject::Result<void> {
             testutil::write_file(e.root + "/run/x", "inside");
             INJECT_TRY(auto t, inject::fs::read_in_root(e.root_fd, "/var/run/x", 100));
             if (t != "inside") return inject::fail(inject::Errc::Internal, "read " + t);
             return inject::ok();
         },
         "",
         {}},
        {"ReadRefusesFifo",
         {"run"},
         {},
         [](const Env& e) {
             EXPECT_EQ(::mkfifo((e.root + "/run/pipe").c_str(), 0600), 0);
             return as_void_str(inject::fs::read_in_root(e.root_fd, "/run/pipe", 100));
         },
         "/run/pipe: not a regular file",
         {}},
        {"RemoveTheLinkNotItsTarget",
         {"etc"},
         {{"etc/link", "{OUT}/file"}},
         [](const Env& e) { return inject::fs::remove_in_root(e.root_fd, "/etc/link"); },
         "",
         {},
         [](const Env& e) { EXPECT_FALSE(stdfs::is_symlink(e.root + "/etc/link")); }},
        {"RemoveThroughLinkToHost",
         {},
         {{"etc", "{OUT}"}},
         [](const Env& e) { return inject::fs::remove_in_root(e.root_fd, "/etc/file"); },
         "resolving /etc: No such file or directory",
         {}},
        {"BindReadOnlyIdempotent",
         {},
         {},
         [](const Env& e) -> inject::Result<void> {
             INJECT_TRY_VOID(bind_host_file(e, "/usr/lib/libefml.so.1"));
             return bind_host_file(e, "/usr/lib/libefml.so.1");
         },
         "",
         {"usr/lib/libefml.so.1"},
         [](const Env& e) {
             const std::string t = e.root + "/usr/lib/libefml.so.1";
             EXPECT_EQ(testutil::read_file(t), "library");
             struct statvfs sv {};
             ASSERT_EQ(::statvfs(t.c_str(), &sv), 0);
             EXPECT_TRUE(sv.f_flag & ST_RDONLY);
             EXPECT_TRUE(sv.f_flag & ST_NOSUID);
             EXPECT_TRUE(sv.f_flag & ST_NODEV);
             std::string mi = mountinfo();
             std::size_t n = 0;
             for (auto p = mi.find(" " + t + " "); p != std::string::npos;
                  p = mi.find(" " + t + " ", p + 1))
                 ++n;
             EXPECT_EQ(n, 1u) << "a second call must not stack a second mount";
         }},
        {"BindThroughSymlinkToHost",
         {},
         {{"usr", "{OUT}"}},
         [](const Env& e) { return bind_host_file(e, "/usr/lib/libefml.so.1"); },
         "resolving /usr: No such file or directory",
         {}},
        {"BindTargetDanglingDotDot",
         {"usr/lib", "out"},
         {{"usr/lib/libefml.so.1", "../../../../../out/lib.so"}},
         [](const Env& e) { return bind_host_file(e, "/usr/lib/libefml.so.1"); },
         "resolving /usr/lib/libefml.so.1: No such file or directory",
         {}},
    };
}

class InRootOps : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "needs root (mknod, mount)";
        env_.root = dir_ / "rootfs";
        env_.out = dir_ / "out";
        stdfs::create_directories(env_.root);
        stdfs::create_directories(env_.out);
        testutil::write_file(env_.out + "/file", "host");
        ::chmod((env_.out + "/file").c_str(), 0644);
    }
    void TearDown() override {
        // Undo mounts under the scratch dir so it can be removed.
        for (int i = 0; i < 8; ++i) {
            std::string mi = mountinfo();
            auto p = mi.find(" " + dir_.path() + "/");
            if (p == std::string::npos) break;
            auto end = mi.find(' ', p + 1);
            ::umount2(mi.substr(p + 1, end - p - 1).c_str(), MNT_DETACH);
        }
    }
    testutil::TempDir dir_;
    Env env_{};
};

TEST_P(InRootOps, HostStaysUntouched) {
    const Case& c = GetParam();
    for (const auto& d : c.dirs) stdfs::create_directories(env_.root + "/" + d);
    for (const auto& [link, target] : c.links) {
        stdfs::create_directories(stdfs::path(env_.root + "/" + link).parent_path());
        stdfs::create_symlink(subst(target, env_.out), env_.root + "/" + link);
    }
    const std::string mounts_before = mountinfo();
    auto root = inject::fs::open_root(env_.root);
    ASSERT_TRUE(root) << root.error().what();
    env_.root_fd = root->get();
    auto r = c.op(env_);
    if (c.want_error.empty()) {
        ASSERT_TRUE(r) << r.error().what();
        for (const auto& p : c.want_in_root) EXPECT_TRUE(stdfs::exists(env_.root + "/" + p)) << p;
        if (c.check) c.check(env_);
    } else {
        ASSERT_FALSE(r) << "expected: " << c.want_error;
        EXPECT_EQ(r.error().what(), c.want_error);
        EXPECT_EQ(mountinfo(), mounts_before) << "a failed operation mounted something";
    }
    // The host folder is exactly as it was: one file, same content and mode.
    std::vector<std::string> names;
    for (const auto& ent : stdfs::directory_iterator(env_.out))
        names.push_back(ent.path().filename());
    EXPECT_EQ(names, std::vector<std::string>{"file"});
    EXPECT_EQ(testutil::read_file(env_.out + "/file"), "host");
    struct stat st {};
    ASSERT_EQ(::stat((env_.out + "/file").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
    EXPECT_EQ(mountinfo().find(" " + env_.out), std::string::npos) << "a mount outside the rootfs";
}

INSTANTIATE_TEST_SUITE_P(Hostile, InRootOps, ::testing::ValuesIn(cases()), [](const auto& info) {
    std::string n = info.param.name;
    for (auto& ch : n)
        if (ch == '-') ch = '_';
    return n;
});

TEST(SplitInRootPath, Normalises) {
    struct {
        const char* in;
        const char* dir;
        const char* name;
    } const table[] = {
        {"/a/./b/../c", "/a", "c"},
        {"/", "/", ""},
        {"../../x", "/", "x"},
        {"a//b/", "/a", "b"},
    };
    for (const auto& t : table) {
        auto sp = inject::fs::split_in_root_path(t.in);
        EXPECT_EQ(sp.dir, t.dir) << t.in;
        EXPECT_EQ(sp.name, t.name) << t.in;
    }
}

}  // namespace

// --- applying CDI edits to a rootfs (inject/hook.hpp), in this test's private mount namespace ---
#include "inject/hook.hpp"

namespace {

TEST(ApplyEdits, NodesAndReadOnlyMountsIdempotent) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    testutil::TempDir d;
    const auto root = d / "rootfs";
    stdfs::create_directories(root + "/dev");
    testutil::write_file(d / "host/lib/libefml.so.1.0.0", "efml");
    inject::cdi::ContainerEdits e;
    inject::cdi::DeviceNode n;
    n.path = "/dev/gcu0";
    n.host_path = "/dev/null";  // a real character node the host has: c 1:3
    n.type = "c";
    e.device_nodes.push_back(n);
    e.mounts.push_back(
        {d / "host/lib/libefml.so.1.0.0", "/usr/lib/libefml.so.1", "", {"ro", "nosuid", "nodev"}});
    for (int i = 0; i < 2; ++i) {
        auto r = inject::hook::apply_edits(0, root, e);
        ASSERT_TRUE(r) << "round " << i << ": " << r.error().what();
    }
    // The child made the mount in this (private) namespace: it is visible here, once.
    const std::string target = root + "/usr/lib/libefml.so.1";
    EXPECT_EQ(testutil::read_file(target), "efml");
    struct statvfs sv {};
    ASSERT_EQ(::statvfs(target.c_str(), &sv), 0);
    EXPECT_TRUE(sv.f_flag & ST_RDONLY);
    std::string mi = mountinfo();
    EXPECT_EQ(mi.find(" " + target + " "), mi.rfind(" " + target + " ")) << "mounted twice";
    struct stat st {};
    ASSERT_EQ(::lstat((root + "/dev/gcu0").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, makedev(1, 3));
    ::umount2(target.c_str(), MNT_DETACH);
}

TEST(ApplyEdits, ErrorsComeBackFromTheChildWithContext) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    testutil::TempDir d;
    const auto root = d / "rootfs";
    stdfs::create_directories(root);
    stdfs::create_symlink("/etc", root + "/usr");
    inject::cdi::ContainerEdits e;
    e.mounts.push_back({"/etc/hostname", "/usr/lib/x", "", {"ro"}});
    auto r = inject::hook::apply_edits(0, root, e);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "mounting /etc/hostname into " + root +
                                    ": resolving /usr: No such file or directory");
    EXPECT_EQ(r.error().code(), inject::Errc::NotFound);
    EXPECT_FALSE(stdfs::exists("/etc/lib"));
    e.mounts.clear();
    inject::cdi::DeviceNode n;
    n.path = "/dev/gcu0";
    n.host_path = d / "not-a-node";
    testutil::write_file(n.host_path, "");
    e.device_nodes.push_back(n);
    auto r2 = inject::hook::apply_edits(0, root, e);
    ASSERT_FALSE(r2);
    EXPECT_EQ(r2.error().what(), "creating /dev/gcu0 in " + root + ": device node " + n.host_path +
                                     " is not a character device");
    auto r3 = inject::hook::apply_edits(2147483647, root, e);
    ASSERT_FALSE(r3);
    EXPECT_EQ(r3.error().what(), "opening /proc/2147483647/ns/mnt: No such file or directory");
}

}  // namespace

namespace {

TEST(ApplyEdits, DeviceNodesCanBeBindMountedInstead) {
    // What happens where mknod is refused (user namespaces): the host node is bind-mounted.
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    testutil::TempDir d;
    const auto root = d / "rootfs";
    stdfs::create_directories(root);
    inject::cdi::ContainerEdits e;
    inject::cdi::DeviceNode n;
    n.path = "/dev/gcu0";
    n.host_path = "/dev/null";
    n.type = "c";
    e.device_nodes.push_back(n);
    inject::hook::ApplyOptions opts;
    opts.bind_device_nodes = true;
    ASSERT_TRUE(inject::hook::apply_edits(0, root, e, opts));
    ASSERT_TRUE(inject::hook::apply_edits(0, root, e, opts)) << "idempotent";
    const std::string target = root + "/dev/gcu0";
    struct stat st {};
    ASSERT_EQ(::stat(target.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, makedev(1, 3));
    std::string mi = mountinfo();
    ASSERT_NE(mi.find(" " + target + " "), std::string::npos);
    EXPECT_EQ(mi.find(" " + target + " "), mi.rfind(" " + target + " ")) << "mounted twice";
    struct statvfs sv {};
    ASSERT_EQ(::statvfs(target.c_str(), &sv), 0);
    EXPECT_TRUE(sv.f_flag & ST_NOSUID);
    EXPECT_FALSE(sv.f_flag & ST_NODEV) << "a device node mount must allow the device";
    ::umount2(target.c_str(), MNT_DETACH);
}

}  // namespace
