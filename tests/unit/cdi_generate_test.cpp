// SPDX-License-Identifier: Apache-2.0
// The spec generator: golden files for an 8-card host with and without DRS, naming
// strategies, capabilities, determinism, symlinks under the driver root, bad hosts.
// Golden files hold "@ROOT@" for the temporary driver root; ENFLAME_UPDATE_GOLDEN=1 rewrites them.
#include "inject/cdi_generate.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "inject/cdi_io.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/cdi_validate.hpp"
#include "inject/config.hpp"
#include "test_util.hpp"

namespace cdi = inject::cdi;
namespace device = inject::device;

namespace {

void symlink_to(const std::string& target, const std::string& link) {
    std::filesystem::create_directories(std::filesystem::path(link).parent_path());
    ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0) << link;
}

// The driver root the sim host builder lays out (docs/efsmi-model.md), with absolute symlinks.
void lay_out_driver_root(const std::string& root) {
    const std::string ver = "/usr/local/efsmi/efsmi-1.4.3.4";
    testutil::write_file(root + ver + "/efsmi", "#!/bin/sh\n");
    testutil::write_file(root + ver + "/lib/libefml.so.1.0.0", "efml");
    symlink_to(ver + "/efsmi", root + "/usr/bin/efsmi");
    symlink_to(ver + "/lib/libefml.so.1.0.0", root + "/usr/lib/libefml.so.1");
    symlink_to(ver + "/lib/libefml.so.1.0.0", root + "/usr/lib/libefml.so");
    testutil::write_file(root + "/usr/lib/libtopsrt.so.2.1.0", "topsrt");
    symlink_to("libtopsrt.so.2.1.0", root + "/usr/lib/libtopsrt.so.2");
    symlink_to("libtopsrt.so.2", root + "/usr/lib/libtopsrt.so");
    testutil::write_file(root + "/opt/tops/lib/libeccl.so.1.0.0", "eccl");
    testutil::write_file(root + "/usr/lib/libunrelated.so", "x");
    std::filesystem::create_directories(root +
                                        "/usr/lib/libefml.so.d");  // a dir matching a pattern
}

device::DeviceNode node(const std::string& root, const std::string& name, std::uint32_t minor) {
    device::DeviceNode n;
    n.path = "/dev/" + name;
    n.host_path = root + "/dev/" + name;
    n.major = 238;
    n.minor = minor;
    n.mode = 0666;
    return n;
}

device::Host host8(const std::string& root, bool drs) {
    device::Host h;
    h.driver_version = "1.4.3.4";
    h.backend = "efsmi-json";
    for (std::uint32_t i = 0; i < 8; ++i) {
        device::Device d;
        d.index = i;
        d.minor = i;
        d.uuid = "TR6Y4601030" + std::to_string(i);
        d.product = "S60";
        d.node = node(root, "gcu" + std::to_string(i), i);
        h.devices.push_back(d);
    }
    h.control = node(root, "gcuctl", 255);
    if (drs) {
        h.drs_profiles.push_back(device::DrsProfile{"1g.11gb", 0, 4, 10744ull << 20});
        for (std::uint32_t k = 0; k < 2; ++k)
            h.devices[0].drs_instances.push_back(device::DrsInstance{
                0, k, "1g.11gb", "4c1e9a52-0000-4000-8000-00000000000" + std::to_string(k)});
        h.devices[3].drs_instances.push_back(
            device::DrsInstance{3, 0, "2g.22gb", "4c1e9a52-0000-4000-8000-000000000300"});
    }
    return h;
}

cdi::GenerateOptions options(const std::string& root) {
    cdi::GenerateOptions o;
    o.driver_root = root;
    o.dev_root = root;
    o.ctk_path = "/usr/bin/enflame-ctk";
    return o;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
        s.replace(p, from.size(), to);
    return s;
}

void check_golden(const std::string& got, const std::string& root, const std::string& name) {
    const std::string text = replace_all(got, root, "@ROOT@");
    testutil::expect_golden(testutil::fixture("cdi/" + name), text);
}

class CdiGenerate : public ::testing::Test {
protected:
    void SetUp() override {
        // the canonical path: fd_path() in the generator resolves /tmp symlinks too
        root_ = std::filesystem::canonical(tmp_.path()).string();
        lay_out_driver_root(root_);
    }
    testutil::TempDir tmp_;
    std::string root_;
};

TEST_F(CdiGenerate, Golden8Cards) {
    auto s = cdi::generate(host8(root_, false), options(root_));
    ASSERT_TRUE(s) << s.error().what();
    EXPECT_TRUE(cdi::validate(*s, "gen").empty());
    EXPECT_EQ(s->version, "0.5.0");
    check_golden(cdi::to_yaml(*s), root_, "golden-8card.yaml");
    check_golden(cdi::to_json(*s), root_, "golden-8card.json");
}

TEST_F(CdiGenerate, Golden8CardsWithDrs) {
    auto s = cdi::generate(host8(root_, true), options(root_));
    ASSERT_TRUE(s) << s.error().what();
    EXPECT_TRUE(cdi::validate(*s, "gen").empty());
    check_golden(cdi::to_yaml(*s), root_, "golden-8card-drs.yaml");
}

TEST_F(CdiGenerate, DeviceNamesAndEdits) {
    auto s = cdi::generate(host8(root_, true), options(root_));
    ASSERT_TRUE(s) << s.error().what();
    std::vector<std::string> names;
    for (const auto& d : s->devices) names.push_back(d.name);
    EXPECT_EQ(names,
              (std::vector<std::string>{"0",           "TR6Y46010300",
                                        "1",           "TR6Y46010301",
                                        "2",           "TR6Y46010302",
                                        "3",           "TR6Y46010303",
                                        "4",           "TR6Y46010304",
                                        "5",           "TR6Y46010305",
                                        "6",           "TR6Y46010306",
                                        "7",           "TR6Y46010307",
                                        "0:1g.11gb:0", "DRS-4c1e9a52-0000-4000-8000-000000000000",
                                        "0:1g.11gb:1", "DRS-4c1e9a52-0000-4000-8000-000000000001",
                                        "3:2g.22gb:0", "DRS-4c1e9a52-0000-4000-8000-000000000300",
                                        "all"}));
    auto e = cdi::resolve(*s, {"3:2g.22gb:0"});
    ASSERT_TRUE(e) << e.error().what();
    EXPECT_EQ(e->env, (std::vector<std::string>{
                          "ENFLAME_VISIBLE_DEVICES=void",
                          "TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000300"}));
    ASSERT_EQ(e->device_nodes.size(), 2u);
    EXPECT_EQ(e->device_nodes[0].path, "/dev/gcuctl");
    EXPECT_EQ(e->device_nodes[1],
              (cdi::DeviceNode{"/dev/gcu3", root_ + "/dev/gcu3", "c", 238, 3, 0666u, "", {}, {}}));

    // the spec-level mounts: every name found, each bound from the real file inside the root
    std::vector<std::pair<std::string, std::string>> mounts;
    for (const auto& m : s->edits.mounts) {
        mounts.emplace_back(m.container_path, replace_all(m.host_path, root_, "@"));
        EXPECT_EQ(m.options,
                  (std::vector<std::string>{"ro", "nosuid", "nodev", "rbind", "rprivate"}));
    }
    EXPECT_EQ(mounts,
              (std::vector<std::pair<std::string, std::string>>{
                  {"/opt/tops/lib/libeccl.so.1.0.0", "@/opt/tops/lib/libeccl.so.1.0.0"},
                  {"/usr/bin/efsmi", "@/usr/local/efsmi/efsmi-1.4.3.4/efsmi"},
                  {"/usr/lib/libefml.so", "@/usr/local/efsmi/efsmi-1.4.3.4/lib/libefml.so.1.0.0"},
                  {"/usr/lib/libefml.so.1", "@/usr/local/efsmi/efsmi-1.4.3.4/lib/libefml.so.1.0.0"},
                  {"/usr/lib/libtopsrt.so", "@/usr/lib/libtopsrt.so.2.1.0"},
                  {"/usr/lib/libtopsrt.so.2", "@/usr/lib/libtopsrt.so.2.1.0"},
                  {"/usr/lib/libtopsrt.so.2.1.0", "@/usr/lib/libtopsrt.so.2.1.0"},
                  {"/usr/local/efsmi/efsmi-1.4.3.4/efsmi", "@/usr/local/efsmi/efsmi-1.4.3.4/efsmi"},
                  {"/usr/local/efsmi/efsmi-1.4.3.4/lib/libefml.so.1.0.0",
                   "@/usr/local/efsmi/efsmi-1.4.3.4/lib/libefml.so.1.0.0"}}));
    ASSERT_EQ(s->edits.hooks.size(), 1u);
    const auto& h = s->edits.hooks[0];
    EXPECT_EQ(h.hook_name, "createContainer");
    EXPECT_EQ(h.path, "/usr/bin/enflame-ctk");
    EXPECT_EQ(h.args, (std::vector<std::string>{"enflame-ctk", "hook", "update-ldcache", "--folder",
                                                "/opt/tops/lib", "--folder", "/usr/lib", "--folder",
                                                "/usr/local/efsmi/efsmi-1.4.3.4/lib"}));
    EXPECT_EQ(h.env, (std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}));
}

TEST_F(CdiGenerate, Deterministic) {
    const auto a = cdi::to_yaml(*cdi::generate(host8(root_, true), options(root_)));
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(cdi::to_yaml(*cdi::generate(host8(root_, true), options(root_))), a);
}

struct StrategyCase {
    const char* name;
    cdi::NameStrategy names;
    bool all;
    std::vector<std::string> want;
    const char* version;
};

class CdiGenerateNames : public CdiGenerate, public ::testing::WithParamInterface<StrategyCase> {};

TEST_P(CdiGenerateNames, Strategy) {
    auto h = host8(root_, false);
    h.devices.resize(2);
    auto o = options(root_);
    o.names = GetParam().names;
    o.all_device = GetParam().all;
    auto s = cdi::generate(h, o);
    ASSERT_TRUE(s) << s.error().what();
    std::vector<std::string> names;
    for (const auto& d : s->devices) names.push_back(d.name);
    EXPECT_EQ(names, GetParam().want);
    EXPECT_EQ(s->version, GetParam().version);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CdiGenerateNames,
    ::testing::Values(
        StrategyCase{"Index", cdi::NameStrategy::Index, true, {"0", "1", "all"}, "0.5.0"},
        StrategyCase{"Uuid",
                     cdi::NameStrategy::Uuid,
                     true,
                     {"TR6Y46010300", "TR6Y46010301", "all"},
                     "0.5.0"},
        StrategyCase{"BothNoAll",
                     cdi::NameStrategy::Both,
                     false,
                     {"0", "TR6Y46010300", "1", "TR6Y46010301"},
                     "0.5.0"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(CdiGenerate, UtilityOnlyHasNoComputeLibraries) {
    auto o = options(root_);
    o.capabilities = cdi::kCapUtility;
    auto s = cdi::generate(host8(root_, false), o);
    ASSERT_TRUE(s);
    for (const auto& m : s->edits.mounts)
        EXPECT_EQ(m.container_path.find("topsrt"), std::string::npos);
    ASSERT_EQ(s->edits.hooks.size(), 1u);
    EXPECT_EQ(
        s->edits.hooks[0].args,
        (std::vector<std::string>{"enflame-ctk", "hook", "update-ldcache", "--folder", "/usr/lib",
                                  "--folder", "/usr/local/efsmi/efsmi-1.4.3.4/lib"}));
}

TEST_F(CdiGenerate, NoCtkPathNoHookAndLdconfigPassedOn) {
    auto o = options(root_);
    o.ctk_path.clear();
    auto s = cdi::generate(host8(root_, false), o);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->edits.hooks.empty());
    o = options(root_);
    o.ldconfig = "@/sbin/ldconfig";
    s = cdi::generate(host8(root_, false), o);
    ASSERT_TRUE(s);
    const auto& args = s->edits.hooks.at(0).args;
    EXPECT_EQ(std::vector<std::string>(args.end() - 2, args.end()),
              (std::vector<std::string>{"--ldconfig-path", "@/sbin/ldconfig"}));
}

TEST_F(CdiGenerate, SymlinkEscapingTheRootStaysInside) {
    // /usr/lib/libefml.so.1 -> /etc/passwd must resolve to <root>/etc/passwd, which is missing
    std::filesystem::remove(root_ + "/usr/lib/libefml.so.1");
    symlink_to("/etc/passwd", root_ + "/usr/lib/libefml.so.1");
    symlink_to("../../../../../../../etc/shadow", root_ + "/usr/lib/libefml.so.9");
    auto s = cdi::generate(host8(root_, false), options(root_));
    ASSERT_TRUE(s) << s.error().what();
    for (const auto& m : s->edits.mounts) {
        EXPECT_EQ(m.host_path.rfind(root_ + "/", 0), 0u) << m.host_path;
        EXPECT_NE(m.container_path, "/usr/lib/libefml.so.1");
        EXPECT_NE(m.container_path, "/usr/lib/libefml.so.9");
    }
}

// A daemon in a pod sees the host's / at /host (driver-root); containerd reads the spec on the
// host: every mount and node names the host's path (host-driver-root, host-dev-root), the
// container side is unchanged.
TEST_F(CdiGenerate, HostRootsNameTheHostsPaths) {
    auto mine = cdi::generate(host8(root_, false), options(root_));
    ASSERT_TRUE(mine) << mine.error().what();
    auto o = options(root_);
    o.host_driver_root = "/";
    o.host_dev_root = "/hostdev";
    auto s = cdi::generate(host8(root_, false), o);
    ASSERT_TRUE(s) << s.error().what();
    ASSERT_EQ(s->edits.mounts.size(), mine->edits.mounts.size());
    ASSERT_FALSE(s->edits.mounts.empty());
    for (std::size_t i = 0; i < s->edits.mounts.size(); ++i) {
        EXPECT_EQ(s->edits.mounts[i].container_path, mine->edits.mounts[i].container_path);
        // <root>/usr/local/efsmi/... as the pod sees it is /usr/local/efsmi/... on the host
        EXPECT_EQ(s->edits.mounts[i].host_path,
                  mine->edits.mounts[i].host_path.substr(root_.size()));
        EXPECT_EQ(s->edits.mounts[i].host_path.rfind("/usr/", 0) == 0 ||
                      s->edits.mounts[i].host_path.rfind("/opt/", 0) == 0,
                  true)
            << s->edits.mounts[i].host_path;
    }
    for (const auto& d : s->devices) {
        for (const auto& n : d.edits.device_nodes)
            EXPECT_EQ(n.host_path, "/hostdev" + n.path) << d.name;
    }
    ASSERT_EQ(s->edits.device_nodes.size(), 1u);
    EXPECT_EQ(s->edits.device_nodes[0].host_path, "/hostdev/dev/gcuctl");
    EXPECT_EQ(s->edits.hooks, mine->edits.hooks);  // container paths and the hook's own (host) path
}

TEST_F(CdiGenerate, EmptyDriverRootGivesNodesOnly) {
    testutil::TempDir empty;
    auto o = options(empty.path());
    auto s = cdi::generate(host8(root_, false), o);
    ASSERT_TRUE(s) << s.error().what();
    EXPECT_TRUE(s->edits.mounts.empty());
    EXPECT_TRUE(s->edits.hooks.empty());
    EXPECT_EQ(s->edits.env, (std::vector<std::string>{"ENFLAME_VISIBLE_DEVICES=void"}));
    EXPECT_EQ(s->edits.device_nodes.size(), 1u);
}

struct GenError {
    const char* name;
    std::function<void(device::Host&, cdi::GenerateOptions&)> edit;
    inject::Errc code;
    std::string error;
};

class CdiGenerateErrors : public CdiGenerate, public ::testing::WithParamInterface<GenError> {};

TEST_P(CdiGenerateErrors, Exact) {
    auto h = host8(root_, false);
    auto o = options(root_);
    GetParam().edit(h, o);
    auto s = cdi::generate(h, o);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code(), GetParam().code);
    EXPECT_EQ(s.error().what(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CdiGenerateErrors,
    ::testing::Values(
        GenError{"NoCards", [](auto& h, auto&) { h.devices.clear(); }, inject::Errc::NotFound,
                 "no Enflame cards found: nothing to generate"},
        GenError{"BadVendor", [](auto&, auto& o) { o.vendor = "-x"; }, inject::Errc::InvalidInput,
                 "vendor '-x' must start with a letter"},
        GenError{"BadClass", [](auto&, auto& o) { o.cls = "g/pu"; }, inject::Errc::InvalidInput,
                 "class 'g/pu' has invalid character '/'"},
        GenError{"NoUuid", [](auto& h, auto&) { h.devices[2].uuid.clear(); },
                 inject::Errc::InvalidInput, "card 2 has no UUID to name it by"},
        GenError{"BadUuid", [](auto& h, auto&) { h.devices[1].uuid = "bad uuid"; },
                 inject::Errc::InvalidInput,
                 "cannot name a CDI device after 'bad uuid': device name 'bad uuid' has invalid "
                 "character ' '"},
        GenError{"DuplicateUuid", [](auto& h, auto&) { h.devices[1].uuid = h.devices[0].uuid; },
                 inject::Errc::Conflict, "two devices would be named 'TR6Y46010300'"},
        GenError{"UuidLooksLikeIndex", [](auto& h, auto&) { h.devices[0].uuid = "5"; },
                 inject::Errc::Conflict, "two devices would be named '5'"},
        GenError{"MissingDriverRoot", [](auto&, auto& o) { o.driver_root = "/nonexistent-root"; },
                 inject::Errc::NotFound,
                 "opening driver root '/nonexistent-root': opening root /nonexistent-root: No such "
                 "file or directory"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CdiGenerateOptions, FromConfig) {
    auto cfg = inject::config::parse(R"([enflame-container-runtime]
cdi-kind = "test.enflame.com/gcu"
[enflame-container-cli]
driver-root = "/drv"
host-driver-root = "/"
library-search-paths = ["/opt/x"]
)",
                                     "c.toml");
    ASSERT_TRUE(cfg) << cfg.error().what();
    auto o = cdi::options_from(*cfg);
    ASSERT_TRUE(o) << o.error().what();
    EXPECT_EQ(o->vendor, "test.enflame.com");
    EXPECT_EQ(o->cls, "gcu");
    EXPECT_EQ(o->driver_root, "/drv");
    EXPECT_EQ(o->host_driver_root, "/");
    EXPECT_EQ(o->host_dev_root, "");
    EXPECT_EQ(o->library_search_paths, (std::vector<std::string>{"/opt/x"}));
    EXPECT_EQ(*cdi::parse_name_strategy("uuid"), cdi::NameStrategy::Uuid);
    auto bad = cdi::parse_name_strategy("minor");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(), "unknown device name strategy 'minor': want index, uuid or both");
}

}  // namespace
