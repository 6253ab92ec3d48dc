// SPDX-License-Identifier: Apache-2.0
// The CDI rules: every rule accepted and rejected with its exact text, minimum versions,
// qualified names.
#include "inject/cdi_validate.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "inject/cdi_io.hpp"

namespace cdi = inject::cdi;

namespace {

// A valid spec that each case breaks in one way.
cdi::Spec base() {
    cdi::Spec s;
    s.version = "0.5.0";
    s.kind = "enflame.com/gpu";
    cdi::Device d{"0", {}, {}};
    d.edits.device_nodes.push_back(
        cdi::DeviceNode{"/dev/gcu0", "/dev/gcu0", "c", 238, 0, 0666u, "", {}, {}});
    s.devices.push_back(d);
    s.edits.env = {"ENFLAME_VISIBLE_DEVICES=void"};
    s.edits.mounts.push_back(cdi::Mount{"/usr/bin/efsmi", "/usr/bin/efsmi", "", {"ro"}});
    s.edits.hooks.push_back(
        cdi::Hook{"createContainer", "/usr/bin/enflame-ctk", {"enflame-ctk"}, {"PATH=/bin"}, {}});
    return s;
}

TEST(CdiValidate, BaseIsValid) {
    EXPECT_TRUE(cdi::validate(base(), "f.yaml").empty());
}

struct RuleCase {
    const char* name;
    std::function<void(cdi::Spec&)> edit;
    std::vector<std::string> problems;  // Problem::text(); empty = accepted
};

class CdiRules : public ::testing::TestWithParam<RuleCase> {};

TEST_P(CdiRules, Problems) {
    auto s = base();
    GetParam().edit(s);
    std::vector<std::string> got;
    for (const auto& p : cdi::validate(s, "f.yaml")) got.push_back(p.text());
    EXPECT_EQ(got, GetParam().problems);
}

using V = std::vector<std::string>;
cdi::DeviceNode& node0(cdi::Spec& s) {
    return s.devices[0].edits.device_nodes[0];
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CdiRules,
    ::testing::Values(
        // versions
        RuleCase{"MissingVersion", [](auto& s) { s.version = ""; },
                 V{"f.yaml: missing cdiVersion"}},
        RuleCase{"UnknownVersion", [](auto& s) { s.version = "0.9.0"; },
                 V{"f.yaml: unknown cdiVersion '0.9.0': want one of 0.1.0 to 0.8.0"}},
        RuleCase{"VersionWithV", [](auto& s) { s.version = "v0.5.0"; },
                 V{"f.yaml: unknown cdiVersion 'v0.5.0': want one of 0.1.0 to 0.8.0"}},
        RuleCase{"NewerVersionOk", [](auto& s) { s.version = "0.8.0"; }, V{}},
        RuleCase{"TooOldForDigitName",
                 [](auto& s) {
                     s.version = "0.4.0";
                     s.devices[0].edits.device_nodes[0].host_path = "";
                 },
                 V{"f.yaml: cdiVersion '0.4.0' is too old for this spec: it needs 0.5.0"}},
        RuleCase{"TooOldForAnnotations", [](auto& s) { s.annotations["a"] = "b"; },
                 V{"f.yaml: cdiVersion '0.5.0' is too old for this spec: it needs 0.6.0"}},
        // kind
        RuleCase{"MissingKind", [](auto& s) { s.kind = ""; }, V{"f.yaml: missing kind"}},
        RuleCase{"KindNoSlash", [](auto& s) { s.kind = "enflame.com"; },
                 V{"f.yaml: kind 'enflame.com' is not vendor/class"}},
        RuleCase{"VendorStartsWithDigit", [](auto& s) { s.kind = "1enflame.com/gpu"; },
                 V{"f.yaml: kind: vendor '1enflame.com' must start with a letter"}},
        RuleCase{"VendorEndsWithDot", [](auto& s) { s.kind = "enflame./gpu"; },
                 V{"f.yaml: kind: vendor 'enflame.' must end with a letter or digit"}},
        RuleCase{"ClassBadChar", [](auto& s) { s.kind = "enflame.com/g+pu"; },
                 V{"f.yaml: kind: class 'g+pu' has invalid character '+'"}},
        RuleCase{"ClassEmpty", [](auto& s) { s.kind = "enflame.com/"; },
                 V{"f.yaml: kind: empty class"}},
        RuleCase{"VendorDashUnderscoreOk", [](auto& s) { s.kind = "test-1_x.enflame.com/gpu"; },
                 V{}},
        // devices
        RuleCase{"NoDevices", [](auto& s) { s.devices.clear(); }, V{"f.yaml: no devices"}},
        RuleCase{"EmptyName", [](auto& s) { s.devices[0].name = ""; },
                 V{"f.yaml: devices[0]: empty device name"}},
        RuleCase{"NameBadStart", [](auto& s) { s.devices[0].name = "-x"; },
                 V{"f.yaml: device '-x': device name '-x' must start with a letter or digit"}},
        RuleCase{"NameBadChar", [](auto& s) { s.devices[0].name = "a/b"; },
                 V{"f.yaml: device 'a/b': device name 'a/b' has invalid character '/'"}},
        RuleCase{"NameBadEnd", [](auto& s) { s.devices[0].name = "a:"; },
                 V{"f.yaml: device 'a:': device name 'a:' must end with a letter or digit"}},
        RuleCase{"DrsNameOk", [](auto& s) { s.devices[0].name = "0:1g.11gb:0"; }, V{}},
        RuleCase{"DuplicateName", [](auto& s) { s.devices.push_back(s.devices[0]); },
                 V{"f.yaml: device '0': duplicate device name"}},
        RuleCase{"EmptyDeviceEdits", [](auto& s) { s.devices[0].edits = {}; },
                 V{"f.yaml: device '0': no container edits"}},
        RuleCase{"EmptySpecEditsOk", [](auto& s) { s.edits = {}; }, V{}},
        // env
        RuleCase{"EnvNoEquals", [](auto& s) { s.devices[0].edits.env = {"FOO"}; },
                 V{"f.yaml: device '0': env entry 'FOO' is not KEY=VALUE"}},
        RuleCase{"EnvEmptyKey", [](auto& s) { s.edits.env.push_back("=x"); },
                 V{"f.yaml: containerEdits: env entry '=x' is not KEY=VALUE"}},
        RuleCase{"EnvEmptyValueOk", [](auto& s) { s.edits.env.push_back("X="); }, V{}},
        // device nodes
        RuleCase{"NodeNoPath", [](auto& s) { node0(s).path = ""; },
                 V{"f.yaml: device '0': deviceNodes[0]: empty path"}},
        RuleCase{"NodeRelativePath", [](auto& s) { node0(s).path = "dev/gcu0"; },
                 V{"f.yaml: device '0': deviceNodes[0]: path 'dev/gcu0' is not absolute"}},
        RuleCase{"NodeRelativeHostPath", [](auto& s) { node0(s).host_path = "gcu0"; },
                 V{"f.yaml: device '0': deviceNodes[0]: hostPath 'gcu0' is not absolute"}},
        RuleCase{"NodeBadType", [](auto& s) { node0(s).type = "z"; },
                 V{"f.yaml: device '0': deviceNodes[0]: invalid type 'z': want b, c, u or p"}},
        RuleCase{"NodeTypesOk", [](auto& s) { node0(s).type = "b"; }, V{}},
        RuleCase{"NodeNegativeMajor", [](auto& s) { node0(s).major = -1; },
                 V{"f.yaml: device '0': deviceNodes[0]: negative device number -1:0"}},
        RuleCase{"NodeBadPermissions", [](auto& s) { node0(s).permissions = "rwx"; },
                 V{"f.yaml: device '0': deviceNodes[0]: invalid permissions 'rwx': want a subset "
                   "of rwm"}},
        RuleCase{"NodePermissionsOk", [](auto& s) { node0(s).permissions = "rw"; }, V{}},
        RuleCase{"NodeBadFileMode", [](auto& s) { node0(s).file_mode = 020666u; },
                 V{"f.yaml: device '0': deviceNodes[0]: fileMode 8630 has bits beyond 07777"}},
        // hooks
        RuleCase{"HookBadName", [](auto& s) { s.edits.hooks[0].hook_name = "preStart"; },
                 V{"f.yaml: containerEdits: hooks[0]: invalid hook name 'preStart': want prestart, "
                   "createRuntime, "
                   "createContainer, startContainer, poststart or poststop"}},
        RuleCase{"HookEveryNameOk",
                 [](auto& s) {
                     for (const char* n :
                          {"prestart", "createRuntime", "startContainer", "poststart", "poststop"})
                         s.edits.hooks.push_back(cdi::Hook{n, "/bin/true", {}, {}, {}});
                 },
                 V{}},
        RuleCase{"HookNoPath", [](auto& s) { s.edits.hooks[0].path = ""; },
                 V{"f.yaml: containerEdits: hooks[0]: empty path"}},
        RuleCase{"HookRelativePath", [](auto& s) { s.edits.hooks[0].path = "enflame-ctk"; },
                 V{"f.yaml: containerEdits: hooks[0]: path 'enflame-ctk' is not absolute"}},
        RuleCase{"HookBadEnv", [](auto& s) { s.edits.hooks[0].env = {"PATH"}; },
                 V{"f.yaml: containerEdits: hooks[0]: env entry 'PATH' is not KEY=VALUE"}},
        RuleCase{"HookZeroTimeout", [](auto& s) { s.edits.hooks[0].timeout = 0; },
                 V{"f.yaml: containerEdits: hooks[0]: timeout 0 is not positive"}},
        // mounts
        RuleCase{"MountNoHostPath", [](auto& s) { s.edits.mounts[0].host_path = ""; },
                 V{"f.yaml: containerEdits: mounts[0]: empty hostPath"}},
        RuleCase{"MountNoContainerPath", [](auto& s) { s.edits.mounts[0].container_path = ""; },
                 V{"f.yaml: containerEdits: mounts[0]: empty containerPath"}},
        RuleCase{
            "MountRelative", [](auto& s) { s.edits.mounts[0].container_path = "usr/bin/efsmi"; },
            V{"f.yaml: containerEdits: mounts[0]: containerPath 'usr/bin/efsmi' is not absolute"}},
        // several problems are all reported, in order
        RuleCase{"Several",
                 [](auto& s) {
                     s.kind = "x";
                     s.devices[0].edits.env = {"A"};
                     s.edits.mounts[0].host_path = "rel";
                 },
                 V{"f.yaml: kind 'x' is not vendor/class",
                   "f.yaml: device '0': env entry 'A' is not KEY=VALUE",
                   "f.yaml: containerEdits: mounts[0]: hostPath 'rel' is not absolute"}}),
    [](const auto& info) { return std::string(info.param.name); });

struct VersionCase {
    const char* name;
    std::function<void(cdi::Spec&)> edit;
    const char* want;
};

class CdiMinimumVersion : public ::testing::TestWithParam<VersionCase> {};

TEST_P(CdiMinimumVersion, Lowest) {
    cdi::Spec s;
    s.kind = "enflame.com/gpu";
    s.devices.push_back(cdi::Device{"gpu", {}, {}});
    s.devices[0].edits.env = {"A=1"};
    GetParam().edit(s);
    EXPECT_EQ(cdi::minimum_version(s), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CdiMinimumVersion,
    ::testing::Values(
        VersionCase{"Plain", [](auto&) {}, "0.3.0"},
        VersionCase{"MountType",
                    [](auto& s) {
                        s.edits.mounts.push_back(cdi::Mount{"/a", "/b", "bind", {}});
                    },
                    "0.4.0"},
        VersionCase{"DigitName", [](auto& s) { s.devices[0].name = "0"; }, "0.5.0"},
        VersionCase{"HostPath",
                    [](auto& s) {
                        s.devices[0].edits.device_nodes.push_back(
                            cdi::DeviceNode{"/d", "/h", "", {}, {}, {}, "", {}, {}});
                    },
                    "0.5.0"},
        VersionCase{"SpecHostPath",
                    [](auto& s) {
                        s.edits.device_nodes.push_back(
                            cdi::DeviceNode{"/d", "/h", "", {}, {}, {}, "", {}, {}});
                    },
                    "0.5.0"},
        VersionCase{"SpecAnnotations", [](auto& s) { s.annotations["a"] = "b"; }, "0.6.0"},
        VersionCase{"DeviceAnnotations", [](auto& s) { s.devices[0].annotations["a"] = "b"; },
                    "0.6.0"},
        VersionCase{"DotInClass", [](auto& s) { s.kind = "enflame.com/gpu.x"; }, "0.6.0"},
        VersionCase{"AdditionalGids", [](auto& s) { s.edits.additional_gids = {44}; }, "0.7.0"},
        VersionCase{"DeviceGids",
                    [](auto& s) {
                        s.devices[0].edits.additional_gids = {44};
                        s.devices[0].name = "0";
                    },
                    "0.7.0"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CdiVersions, Compare) {
    EXPECT_LT(cdi::compare_versions("0.3.0", "0.5.0"), 0);
    EXPECT_EQ(cdi::compare_versions("0.5.0", "v0.5.0"), 0);
    EXPECT_GT(cdi::compare_versions("0.10.0", "0.9.0"), 0);
    EXPECT_EQ(cdi::known_versions().front(), "0.1.0");
    EXPECT_EQ(cdi::known_versions().back(), "0.8.0");
}

struct NameCase {
    const char* name;
    const char* text;
    const char* error;  // empty = valid
};

class CdiQualifiedName : public ::testing::TestWithParam<NameCase> {};

TEST_P(CdiQualifiedName, Parse) {
    auto r = cdi::parse_qualified_name(GetParam().text);
    if (std::string(GetParam().error).empty()) {
        ASSERT_TRUE(r) << r.error().what();
        EXPECT_EQ(r->str(), GetParam().text);
    } else {
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput);
        EXPECT_EQ(r.error().what(), GetParam().error);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CdiQualifiedName,
    ::testing::Values(
        NameCase{"Index", "enflame.com/gpu=0", ""},
        NameCase{"Uuid", "enflame.com/gpu=GCU-U53000080105", ""},
        NameCase{"Drs", "enflame.com/gpu=0:1g.11gb:0", ""},
        NameCase{"NoEquals", "enflame.com/gpu",
                 "bad CDI device name 'enflame.com/gpu': want vendor/class=name"},
        NameCase{"NoClass", "enflame.com=0",
                 "bad CDI device name 'enflame.com=0': want vendor/class=name"},
        NameCase{"Path", "/dev/gcu0", "bad CDI device name '/dev/gcu0': want vendor/class=name"},
        NameCase{"EmptyName",
                 "enflame.com/gpu=", "bad CDI device name 'enflame.com/gpu=': empty device name"},
        NameCase{"EmptyVendor", "/gpu=0", "bad CDI device name '/gpu=0': want vendor/class=name"},
        NameCase{"BadVendor", "-e/gpu=0",
                 "bad CDI device name '-e/gpu=0': vendor '-e' must start with a letter"},
        NameCase{"SlashInClass", "e.com/g/x=0",
                 "bad CDI device name 'e.com/g/x=0': class 'g/x' has invalid character '/'"},
        NameCase{
            "BadName", "e.com/gpu=a b",
            "bad CDI device name 'e.com/gpu=a b': device name 'a b' has invalid character ' '"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CdiQualifiedName, Detect) {
    EXPECT_TRUE(cdi::is_qualified_name("enflame.com/gpu=0"));
    EXPECT_FALSE(cdi::is_qualified_name("0"));
    EXPECT_FALSE(cdi::is_qualified_name("A=enflame.com/gpu"));
    EXPECT_FALSE(cdi::is_qualified_name("/dev/x=1"));
}

}  // namespace
