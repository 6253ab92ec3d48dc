// SPDX-License-Identifier: Apache-2.0
// The CDI registry: spec dirs, precedence, conflicts, broken files, resolution order.
#include "inject/cdi_registry.hpp"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject/cdi_io.hpp"
#include "test_util.hpp"

namespace cdi = inject::cdi;

namespace {

// A spec of `kind` with one device per name; each device sets DEV=<tag>-<name>.
std::string spec_text(const std::string& kind, const std::vector<std::string>& names,
                      const std::string& tag) {
    cdi::Spec s;
    s.version = "0.5.0";
    s.kind = kind;
    for (const auto& n : names) {
        cdi::Device d{n, {}, {}};
        d.edits.env = {"DEV=" + tag + "-" + n};
        d.edits.device_nodes.push_back(cdi::DeviceNode{"/dev/" + n, "", "c", 1, 3, {}, "", {}, {}});
        s.devices.push_back(d);
    }
    s.edits.env = {"SPEC=" + tag};
    s.edits.mounts.push_back(cdi::Mount{"/lib/" + tag, "/usr/lib/libefml.so.1", "", {"ro"}});
    return cdi::to_yaml(s);
}

TEST(CdiRegistry, LoadsYamlAndJsonSorted) {
    testutil::TempDir t;
    testutil::write_file(t / "etc/b.yaml", spec_text("enflame.com/gpu", {"0", "1"}, "b"));
    testutil::write_file(t / "etc/a.json", cdi::to_json(*cdi::parse_spec(
                                               spec_text("other.com/x", {"dev"}, "a"), "a")));
    testutil::write_file(t / "etc/ignored.txt", "not a spec");
    testutil::write_file(t / "etc/.hidden.yaml", "garbage: [");
    auto r = cdi::Registry::load({t / "etc", t / "missing"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->device_names(), (std::vector<std::string>{"enflame.com/gpu=0", "enflame.com/gpu=1",
                                                           "other.com/x=dev"}));
    ASSERT_EQ(r->specs().size(), 2u);
    EXPECT_EQ(r->specs()[0].path, t / "etc/a.json");
    EXPECT_TRUE(r->conflicts().empty());
    EXPECT_TRUE(r->problems().empty());
}

TEST(CdiRegistry, LaterDirWins) {
    testutil::TempDir t;
    testutil::write_file(t / "etc/x.yaml", spec_text("enflame.com/gpu", {"0", "1"}, "etc"));
    testutil::write_file(t / "run/x.yaml", spec_text("enflame.com/gpu", {"0"}, "run"));
    auto r = cdi::Registry::load({t / "etc", t / "run"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(r->conflicts().empty());
    auto e = r->resolve({"enflame.com/gpu=0", "enflame.com/gpu=1"});
    ASSERT_TRUE(e) << e.error().what();
    // spec-level edits of each spec used, once, in order of first use; then the devices in order
    EXPECT_EQ(e->env, (std::vector<std::string>{"SPEC=run", "SPEC=etc", "DEV=run-0", "DEV=etc-1"}));
    // both specs mount the same container path: the first one used keeps it
    ASSERT_EQ(e->mounts.size(), 1u);
    EXPECT_EQ(e->mounts[0].host_path, "/lib/run");
}

TEST(CdiRegistry, ConflictInOneDir) {
    testutil::TempDir t;
    testutil::write_file(t / "etc/a.yaml", spec_text("enflame.com/gpu", {"0", "1"}, "a"));
    testutil::write_file(t / "etc/b.yaml", spec_text("enflame.com/gpu", {"0"}, "b"));
    auto r = cdi::Registry::load({t / "etc"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(
        r->conflicts(),
        (std::vector<std::string>{"device 'enflame.com/gpu=0' is defined in '" +
                                  (t / "etc/a.yaml") + "' and '" + (t / "etc/b.yaml") + "'"}));
    auto e = r->resolve({"enflame.com/gpu=0"});
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code(), inject::Errc::Conflict);
    EXPECT_EQ(e.error().what(),
              "CDI device 'enflame.com/gpu=0' is defined in more than one spec file");
    EXPECT_TRUE(r->resolve({"enflame.com/gpu=1"}));
}

TEST(CdiRegistry, BrokenFilesAreReportedNotFatal) {
    testutil::TempDir t;
    testutil::write_file(t / "etc/good.yaml", spec_text("enflame.com/gpu", {"0"}, "g"));
    testutil::write_file(t / "etc/syntax.yaml", "kind: [\n");
    testutil::write_file(t / "etc/invalid.yaml",
                         "cdiVersion: 0.5.0\nkind: enflame.com/gpu\ndevices: []\n");
    auto r = cdi::Registry::load({t / "etc"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->device_names(), (std::vector<std::string>{"enflame.com/gpu=0"}));
    ASSERT_EQ(r->problems().size(), 2u);
    EXPECT_EQ(r->problems()[0], (t / "etc/invalid.yaml") + ": no devices");
    EXPECT_EQ(r->problems()[1].rfind(t / "etc/syntax.yaml", 0), 0u) << r->problems()[1];
}

// What Registry::load of `dir` says when run by an unprivileged user, in a forked child (root
// reads any dir, and CI runs as root): "ok", or the error's code name and text on two lines.
// The child drops to nobody (65534) with no supplementary groups before it looks.
std::string load_as_nobody(const std::string& dir) {
    int fds[2];
    if (::pipe(fds) != 0) return "pipe failed";
    const pid_t pid = ::fork();
    if (pid < 0) return "fork failed";
    if (pid == 0) {
        ::close(fds[0]);
        std::string out;
        if (::geteuid() == 0 &&
            (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) {
            out = "could not drop to nobody";
        } else if (::geteuid() == 0) {
            out = "still root after setuid";
        } else {
            auto r = cdi::Registry::load({dir});
            out = r ? std::string("ok")
                    : std::string(inject::errc_name(r.error().code())) + "\n" + r.error().what();
        }
        const bool written =
            ::write(fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size());
        ::_exit(written ? 0 : 1);
    }
    ::close(fds[1]);
    std::string out;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        out += " (child status " + std::to_string(status) + ")";
    return out;
}

TEST(CdiRegistry, UnreadableDirIsAnError) {
    testutil::TempDir t;
    testutil::write_file(t / "etc/a.yaml", spec_text("enflame.com/gpu", {"0"}, "a"));
    // Only etc/ is unreadable: the way to it stays open to the unprivileged child.
    ASSERT_EQ(::chmod(t.path().c_str(), 0755), 0);
    ASSERT_EQ(::chmod((t / "etc").c_str(), 0), 0);
    const std::string got = load_as_nobody(t / "etc");
    ::chmod((t / "etc").c_str(), 0755);
    EXPECT_EQ(got, std::string(inject::errc_name(inject::Errc::Permission)) + "\n" +
                       "reading CDI spec dir '" + (t / "etc") + "': Permission denied");
}

TEST(CdiRegistry, FileWhereDirExpectedIsAnError) {
    testutil::TempDir t;
    testutil::write_file(t / "etc", "x");
    auto r = cdi::Registry::load({t / "etc"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::Io);
    EXPECT_EQ(r.error().what(), "reading CDI spec dir '" + (t / "etc") + "': Not a directory");
}

struct ResolveError {
    const char* name;
    std::vector<std::string> request;
    inject::Errc code;
    const char* error;
};

class CdiResolveErrors : public ::testing::TestWithParam<ResolveError> {};

TEST_P(CdiResolveErrors, Exact) {
    testutil::TempDir t;
    testutil::write_file(t / "etc/a.yaml", spec_text("enflame.com/gpu", {"0"}, "a"));
    auto r = cdi::Registry::load({t / "etc"});
    ASSERT_TRUE(r);
    auto e = r->resolve(GetParam().request);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code(), GetParam().code);
    EXPECT_EQ(e.error().what(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(Cases, CdiResolveErrors,
                         ::testing::Values(ResolveError{"UnknownDevice",
                                                        {"enflame.com/gpu=0", "enflame.com/gpu=9"},
                                                        inject::Errc::NotFound,
                                                        "unknown CDI device 'enflame.com/gpu=9'"},
                                           ResolveError{"UnknownKind",
                                                        {"nvidia.com/gpu=0"},
                                                        inject::Errc::NotFound,
                                                        "unknown CDI device 'nvidia.com/gpu=0'"},
                                           ResolveError{
                                               "Unqualified",
                                               {"0"},
                                               inject::Errc::InvalidInput,
                                               "bad CDI device name '0': want vendor/class=name"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CdiResolveSpec, InMemory) {
    auto spec = cdi::parse_spec(spec_text("enflame.com/gpu", {"0", "1", "all"}, "m"), "m");
    ASSERT_TRUE(spec);
    auto e = cdi::resolve(*spec, {"1", "enflame.com/gpu=0", "1"});
    ASSERT_TRUE(e) << e.error().what();
    EXPECT_EQ(e->env, (std::vector<std::string>{"SPEC=m", "DEV=m-1", "DEV=m-0"}));
    ASSERT_EQ(e->device_nodes.size(), 2u);
    EXPECT_EQ(e->device_nodes[0].path, "/dev/1");
    EXPECT_EQ(e->device_nodes[1].path, "/dev/0");
    EXPECT_EQ(e->mounts.size(), 1u);

    auto none = cdi::resolve(*spec, {});
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());

    auto bad = cdi::resolve(*spec, {"7"});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code(), inject::Errc::NotFound);
    EXPECT_EQ(bad.error().what(), "unknown CDI device 'enflame.com/gpu=7'");
    auto other = cdi::resolve(*spec, {"nvidia.com/gpu=0"});
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error().what(), "unknown CDI device 'nvidia.com/gpu=0'");
}

TEST(CdiMergeEdits, DeduplicatesIdenticalEntries) {
    cdi::ContainerEdits a, b;
    a.env = {"A=1"};
    a.device_nodes.push_back(cdi::DeviceNode{"/dev/gcu0", "", "c", 1, 2, {}, "", {}, {}});
    a.hooks.push_back(cdi::Hook{"createContainer", "/x", {}, {}, {}});
    a.additional_gids = {44};
    b = a;
    b.env.push_back("B=2");
    b.additional_gids.push_back(45);
    cdi::merge_edits(a, b);
    EXPECT_EQ(a.env, (std::vector<std::string>{"A=1", "B=2"}));
    EXPECT_EQ(a.device_nodes.size(), 1u);
    EXPECT_EQ(a.hooks.size(), 1u);
    EXPECT_EQ(a.additional_gids, (std::vector<std::uint32_t>{44, 45}));
}

}  // namespace
