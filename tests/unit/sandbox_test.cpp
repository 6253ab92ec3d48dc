// SPDX-License-Identifier: Apache-2.0
// The sandbox for privileged helpers: the child has no capabilities, no_new_privs and a seccomp
// filter, runs a host binary inside a chroot whose own files it cannot substitute, and a system
// call outside the allow-list is refused. busybox (static) stands in for any host helper; the
// real /sbin/ldconfig builds a cache in a rootfs at the end.
#include "inject/sandbox.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "test_util.hpp"

namespace stdfs = std::filesystem;
using inject::sandbox::Options;

namespace {

constexpr const char* kBusybox = "/bin/busybox";

std::string status_field(const std::string& status, const std::string& key) {
    auto p = status.find("\n" + key + ":");
    if (p == std::string::npos) return "?";
    p += key.size() + 2;
    while (p < status.size() && (status[p] == ' ' || status[p] == '\t')) ++p;
    return status.substr(p, status.find('\n', p) - p);
}

class Sandbox : public ::testing::Test {
protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "needs root (chroot, setns)";
        if (!stdfs::exists(kBusybox)) GTEST_SKIP() << "needs a static " << kBusybox;
    }
    Options busybox(std::vector<std::string> args) {
        Options o;
        o.executable = kBusybox;
        o.argv = {"busybox"};
        o.argv.insert(o.argv.end(), args.begin(), args.end());
        o.env = {"PATH=/bin"};
        o.syscalls = inject::sandbox::ldconfig_syscalls();
        return o;
    }
    testutil::TempDir dir_;
};

TEST_F(Sandbox, ChildHasNoCapabilitiesNoNewPrivsAndSeccomp) {
    auto o = busybox({"cat", "/proc/self/status"});
    o.mount_namespace = "/proc/self/ns/mnt";
    auto r = inject::sandbox::run(o);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->exit_code, 0) << r->err;
    for (const char* key : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
        EXPECT_EQ(status_field(r->out, key), "0000000000000000") << key;
    EXPECT_EQ(status_field(r->out, "NoNewPrivs"), "1");
    EXPECT_EQ(status_field(r->out, "Seccomp"), "2");
}

TEST_F(Sandbox, RunsTheHostBinaryInsideTheChroot) {
    // The rootfs has its own "busybox" that would leave a marker: it must never run.
    const auto root = dir_ / "rootfs";
    testutil::write_file(root + "/bin/busybox", "#!/bin/sh\ntouch " + dir_.path() + "/marker\n");
    ::chmod((root + "/bin/busybox").c_str(), 0755);
    testutil::write_file(root + "/hello", "from the rootfs\n");
    auto o = busybox({"cat", "/hello"});
    o.rootfs = root;
    auto r = inject::sandbox::run(o);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->exit_code, 0) << r->err;
    EXPECT_EQ(r->out, "from the rootfs\n");
    EXPECT_FALSE(stdfs::exists(dir_ / "marker"));
}

TEST_F(Sandbox, ForbiddenSyscallIsRefused) {
    // mkfifo needs no privilege, so only seccomp can refuse it (mknodat is not on the list).
    const auto root = dir_ / "rootfs";
    stdfs::create_directories(root + "/tmp");
    auto o = busybox({"mkfifo", "/tmp/fifo"});
    o.rootfs = root;
    auto r = inject::sandbox::run(o);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_NE(r->exit_code, 0);
    EXPECT_NE(r->err.find("Operation not permitted"), std::string::npos) << r->err;
    EXPECT_FALSE(stdfs::exists(root + "/tmp/fifo"));
    o.syscalls.clear();  // the control: without the filter the same call works
    auto r2 = inject::sandbox::run(o);
    ASSERT_TRUE(r2) << r2.error().what();
    EXPECT_EQ(r2->exit_code, 0) << r2->err;
    EXPECT_TRUE(stdfs::exists(root + "/tmp/fifo"));
}

TEST_F(Sandbox, TheHelperCannotExecAnything) {
    // ldconfig never execs; under the filter neither execve nor another execveat works.
    auto o = busybox({"sh", "-c", "exec /bin/busybox echo escaped"});
    auto r = inject::sandbox::run(o);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_NE(r->exit_code, 0);
    EXPECT_EQ(r->out.find("escaped"), std::string::npos);
    EXPECT_NE(r->err.find("Operation not permitted"), std::string::npos) << r->err;
}

TEST_F(Sandbox, EnvironmentIsExactlyWhatWasGiven) {
    auto o = busybox({"env"});
    o.env = {"PATH=/bin", "A=1"};
    auto r = inject::sandbox::run(o);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->out, "PATH=/bin\nA=1\n");
}

TEST_F(Sandbox, SetupErrorsNameTheStep) {
    struct {
        const char* name;
        std::function<void(Options&)> edit;
        std::string want;
    } const table[] = {
        {"LdPreload", [](Options& o) { o.env.push_back("LD_PRELOAD=/proc/self/cwd/evil.so"); },
         "sandbox: refusing environment entry 'LD_PRELOAD'"},
        {"RelativeExecutable", [](Options& o) { o.executable = "busybox"; },
         "sandbox: 'busybox' is not an absolute host path"},
        {"MissingExecutable", [](Options& o) { o.executable = "/nonexistent/ldconfig"; },
         "sandbox: opening /nonexistent/ldconfig: No such file or directory"},
        {"GonePid", [](Options& o) { o.mount_namespace = "/proc/2147483647/ns/mnt"; },
         "sandbox: opening /proc/2147483647/ns/mnt: No such file or directory"},
        {"MissingRootfs", [](Options& o) { o.rootfs = "/nonexistent-rootfs"; },
         "sandbox: opening the rootfs /nonexistent-rootfs: No such file or directory"},
        {"UnknownSyscall", [](Options& o) { o.syscalls.push_back("no_such_call"); },
         "unknown system call 'no_such_call'"},
    };
    for (const auto& t : table) {
        auto o = busybox({"true"});
        t.edit(o);
        auto r = inject::sandbox::run(o);
        ASSERT_FALSE(r) << t.name;
        EXPECT_EQ(r.error().what(), t.want) << t.name;
    }
}

TEST_F(Sandbox, HostLdconfigBuildsTheCacheInTheRootfs) {
    const std::string ldconfig = "/sbin/ldconfig";
    if (!stdfs::exists(ldconfig)) GTEST_SKIP() << "no " << ldconfig;
    const auto root = dir_ / "rootfs";
    stdfs::create_directories(root + "/usr/lib/enflame");
    stdfs::create_directories(root + "/etc");
    std::string lib;
    for (const char* cand :
         {"/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"})
        if (stdfs::exists(cand)) lib = cand;
    if (lib.empty()) GTEST_SKIP() << "no libz to index";
    stdfs::copy_file(stdfs::canonical(lib), root + "/usr/lib/enflame/libz.so.1.2.13");
    testutil::write_file(root + "/etc/ld.so.conf", "/usr/lib/enflame\n");
    Options o;
    o.executable = ldconfig;
    o.argv = {"ldconfig"};
    o.rootfs = root;
    o.syscalls = inject::sandbox::ldconfig_syscalls();
    auto r = inject::sandbox::run(o);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->exit_code, 0) << r->err;
    EXPECT_NE(testutil::read_file(root + "/etc/ld.so.cache").find("/usr/lib/enflame/libz.so.1"),
              std::string::npos);
    EXPECT_TRUE(stdfs::is_symlink(root + "/usr/lib/enflame/libz.so.1"));
}

}  // namespace

// --- the OCI state and bundle the hooks read (inject/hook.hpp) ---
#include "inject/hook.hpp"

namespace {

TEST(HookState, ParsesRuncAndCrunAndRefusesBadInput) {
    struct {
        const char* name;
        std::string json;
        bool need_pid;
        std::string want_error;  // "" = ok
        int want_pid;
    } const table[] = {
        {"Runc",
         R"({"ociVersion":"1.0.2","id":"c1","status":"creating","pid":4242,"bundle":"/run/b"})",
         true, "", 4242},
        {"Crun",
         R"({"ociVersion":"1.0.0","id":"c1","pid":77,"root":"rootfs","bundle":"/run/b","status":"created"})",
         true, "", 77},
        {"CreateContainerPidZero", R"({"pid":0,"bundle":"/run/b","status":"created"})", false, "",
         0},
        {"Empty", "  \n", true, "container state on stdin: empty", 0},
        {"NotJson", "nope", true,
         "container state on stdin: not valid JSON at byte 2: syntax error while parsing value - "
         "invalid literal; last read: 'no'",
         0},
        {"Truncated", R"({"pid":1,"bundle":"/b")", true,
         "container state on stdin: not valid JSON at byte 23: syntax error while parsing object - "
         "unexpected end of input; expected '}'",
         0},
        {"NotObject", "[1]", true, "container state on stdin: not a JSON object", 0},
        {"NoBundle", R"({"pid":1})", true, "container state on stdin: no \"bundle\"", 0},
        {"RelativeBundle", R"({"pid":1,"bundle":"b"})", true,
         "container state on stdin: bundle 'b' is not an absolute path", 0},
        {"NoPid", R"({"status":"stopped","bundle":"/b"})", true,
         "container state on stdin: no container pid (status 'stopped')", 0},
        {"NegativePid", R"({"pid":-1,"status":"creating","bundle":"/b"})", true,
         "container state on stdin: no container pid (status 'creating')", 0},
    };
    for (const auto& t : table) {
        auto r = inject::hook::parse_state(t.json, t.need_pid);
        if (t.want_error.empty()) {
            ASSERT_TRUE(r) << t.name << ": " << r.error().what();
            EXPECT_EQ(r->pid, t.want_pid) << t.name;
            EXPECT_EQ(r->bundle, "/run/b") << t.name;
        } else {
            ASSERT_FALSE(r) << t.name;
            EXPECT_EQ(r.error().what(), t.want_error) << t.name;
            EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput) << t.name;
        }
    }
}

TEST(HookBundle, RootfsRelativeOrAbsoluteEnvAnnotationsAndDeviceRules) {
    testutil::TempDir d;
    stdfs::create_directories(d / "rootfs");
    testutil::write_file(d / "config.json", R"({"root":{"path":"rootfs"},
      "process":{"env":["PATH=/bin","ENFLAME_VISIBLE_DEVICES=0"]},
      "annotations":{"cdi.k8s.io/x":"enflame.com/gpu=0"},
      "linux":{"resources":{"devices":[{"allow":false,"access":"rwm"},
                                       {"allow":true,"type":"c","major":238,"minor":0,"access":"rw"}]}}})");
    auto b = inject::hook::load_bundle(d.path());
    ASSERT_TRUE(b) << b.error().what();
    EXPECT_EQ(b->rootfs, d / "rootfs");
    EXPECT_EQ(b->env, (std::vector<std::string>{"PATH=/bin", "ENFLAME_VISIBLE_DEVICES=0"}));
    EXPECT_EQ(b->annotations.at("cdi.k8s.io/x"), "enflame.com/gpu=0");
    ASSERT_EQ(b->device_rules.size(), 2u);
    EXPECT_TRUE(inject::hook::rules_allow(b->device_rules, 'c', 238, 0));
    EXPECT_FALSE(inject::hook::rules_allow(b->device_rules, 'c', 238, 1));
    EXPECT_FALSE(inject::hook::rules_allow(b->device_rules, 'b', 238, 0));
    testutil::write_file(d / "config.json", R"({"root":{"path":")" + d.path() + R"(/rootfs"}})");
    auto abs = inject::hook::load_bundle(d.path());
    ASSERT_TRUE(abs) << abs.error().what();
    EXPECT_EQ(abs->rootfs, d / "rootfs");
}

TEST(HookBundle, BadBundles) {
    testutil::TempDir d;
    struct {
        const char* name;
        std::string config;  // "" = no config.json
        std::string want;
    } const table[] = {
        {"NoConfig", "", "opening " + d.path() + "/config.json: No such file or directory"},
        {"NotJson", "{",
         d.path() + "/config.json: not valid JSON at byte 2: syntax error while parsing object key "
                    "- unexpected end of input; expected string literal"},
        {"NoRootPath", R"({"root":{}})", d.path() + "/config.json: no root.path"},
        {"RootfsMissing", R"({"root":{"path":"nowhere"}})",
         "rootfs " + d.path() + "/nowhere: No such file or directory"},
        {"RootfsIsAFile", R"({"root":{"path":"file"}})",
         "rootfs " + d.path() + "/file is not a folder"},
    };
    testutil::write_file(d / "file", "x");
    for (const auto& t : table) {
        stdfs::remove(d / "config.json");
        if (!t.config.empty()) testutil::write_file(d / "config.json", t.config);
        auto r = inject::hook::load_bundle(d.path());
        ASSERT_FALSE(r) << t.name;
        EXPECT_EQ(r.error().what(), t.want) << t.name;
    }
}

TEST(HookRules, LastMatchWinsLikeTheKernel) {
    using R = inject::hook::DeviceRule;
    std::vector<R> rules{R{false, 'a', {}, {}, "rwm"}, R{true, 'c', 238, {}, "rw"},
                         R{false, 'c', 238, 3, "w"}};
    EXPECT_TRUE(inject::hook::rules_allow(rules, 'c', 238, 0));
    EXPECT_FALSE(inject::hook::rules_allow(rules, 'c', 238, 3)) << "write denied by the later rule";
    EXPECT_FALSE(inject::hook::rules_allow(rules, 'c', 239, 0));
    EXPECT_FALSE(inject::hook::rules_allow({}, 'c', 1, 3));
}

TEST(HookChild, AnExceptionInTheChildIsAnErrorNotASecondCaller) {
    // Without the catch the forked child unwinds into this test (a copy of the caller) and the
    // parent sees no answer at all.
    const pid_t parent = ::getpid();
    auto r = inject::hook::in_mount_namespace_text("", [&]() -> inject::Result<std::string> {
        if (::getpid() == parent) return std::string("not forked");
        throw std::bad_alloc();
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::Internal);
    EXPECT_EQ(r.error().what(), "internal: std::bad_alloc");
}

TEST(Ldcache, RefusesAContainerSideLdconfig) {
    inject::hook::LdcacheOptions o;
    o.ldconfig = "/sbin/ldconfig";
    o.folders = {"/usr/lib"};
    auto r = inject::hook::update_ldcache("/nonexistent", o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "ldconfig '/sbin/ldconfig' is not a host path: only host binaries "
              "('@/sbin/ldconfig') are run");
    EXPECT_EQ(r.error().code(), inject::Errc::Permission);
    o.ldconfig = "@/sbin/ldconfig";
    o.folders = {"usr/lib"};
    auto r2 = inject::hook::update_ldcache("/nonexistent", o);
    ASSERT_FALSE(r2);
    EXPECT_EQ(r2.error().what(), "library folder 'usr/lib' is not an absolute path");
}

}  // namespace

namespace {

// allow_devices with a fake /proc and cgroup root: the v1 write, nothing to do (v1 or v2) when
// config.json's rules already allow the nodes, and v2 without a cgroup2 mount failing closed.
// (The v2 eBPF path on a real cgroup2 mount: hook_bpf_test.cpp.)
TEST(AllowDevices, V1WritesAlreadyAllowedSkipsV2WithoutCgroup2Refuses) {
    testutil::TempDir d;
    inject::cdi::DeviceNode gcu0;
    gcu0.path = "/dev/gcu0";
    gcu0.type = "c";
    gcu0.major = 238;
    gcu0.minor = 0;
    inject::cdi::DeviceNode ctl = gcu0;
    ctl.path = "/dev/gcuctl";
    ctl.minor = 255;
    using R = inject::hook::DeviceRule;
    const std::vector<R> none;
    const std::vector<R> allowed{R{false, 'a', {}, {}, "rwm"}, R{true, 'c', 238, {}, "rwm"}};
    struct {
        const char* name;
        std::string proc_cgroup;
        std::vector<R> rules;
        std::string want_error;
        std::string want_allow;  // content of devices.allow after
    } const table[] = {
        {"V1", "12:devices:/c1\n11:memory:/c1\n0::/c1\n", none, "", "c 238:0 rwc 238:255 rw"},
        {"V1Comounted", "4:cpu,devices:/c1\n0::/c1\n", none, "", "c 238:0 rwc 238:255 rw"},
        {"V2NoCgroup2Mount", "0::/c1\n", none,
         "cannot allow /dev/gcu0 and the other nodes on cgroup v2: no cgroup2 filesystem at " +
             (d / "cg") + " or " + (d / "cg/unified"),
         ""},
        {"V2AlreadyAllowed", "0::/c1\n", allowed, "", ""},
        {"V1AlreadyAllowed", "12:devices:/c1\n", allowed, "", ""},
        {"NoCgroupLine", "1:name=systemd:/c1\n", none,
         "cannot allow /dev/gcu0 and the other nodes on cgroup v2: the process is in neither a v1 "
         "devices cgroup nor a "
         "cgroup2 one",
         ""},
        {"V1EscapingPath", "12:devices:/../../etc\n", none,
         "resolving /../../etc/devices.allow: No such file or directory", ""},
    };
    for (const auto& t : table) {
        stdfs::remove_all(d / "proc");
        stdfs::remove_all(d / "cg");
        testutil::write_file(d / "proc/42/cgroup", t.proc_cgroup);
        testutil::write_file(d / "cg/devices/c1/devices.allow", "");
        auto r = inject::hook::allow_devices(42, {gcu0, ctl}, t.rules, d / "cg", d / "proc");
        if (t.want_error.empty()) {
            ASSERT_TRUE(r) << t.name << ": " << r.error().what();
        } else {
            ASSERT_FALSE(r) << t.name;
            EXPECT_EQ(r.error().what(), t.want_error) << t.name;
        }
        EXPECT_EQ(testutil::read_file(d / "cg/devices/c1/devices.allow"), t.want_allow) << t.name;
    }
}

}  // namespace
