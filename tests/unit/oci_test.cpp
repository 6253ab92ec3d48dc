// SPDX-License-Identifier: Apache-2.0
#include "inject/oci.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace cdi = inject::cdi;
namespace oci = inject::oci;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

cdi::ContainerEdits card_edits() {
    cdi::ContainerEdits e;
    e.env = {"ENFLAME_VISIBLE_DEVICES=void", "TOPS_VISIBLE_DEVICES=0"};
    cdi::DeviceNode gcu0{"/dev/gcu0", "/sim/dev/gcu0", "c", 238, 0, 0666u, "", 0u, 0u};
    cdi::DeviceNode ctl{"/dev/gcuctl", "",   "c",          238,         255,
                        std::nullopt,  "rw", std::nullopt, std::nullopt};
    e.device_nodes = {gcu0, ctl};
    e.mounts = {{"/sim/usr/lib/libefml.so.1",
                 "/usr/lib/libefml.so.1",
                 "",
                 {"ro", "nosuid", "nodev", "rbind", "rprivate"}}};
    e.hooks = {{"createContainer",
                "/usr/bin/enflame-ctk",
                {"enflame-ctk", "hook", "update-ldcache"},
                {"PATH=/usr/bin"},
                std::nullopt}};
    e.additional_gids = {44, 0};
    return e;
}

const char* kRuncSpec = R"({
  "ociVersion": "1.0.2-dev",
  "process": {"terminal": false, "user": {"uid": 0, "gid": 0},
              "args": ["sh"], "env": ["PATH=/bin", "TOPS_VISIBLE_DEVICES=old", "TERM=xterm"], "cwd": "/"},
  "root": {"path": "rootfs", "readonly": true},
  "hostname": "runc",
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
  "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]},
            "namespaces": [{"type": "pid"}]}
})";

TEST(OciApply, AddsEverythingWhereTheSpecWantsIt) {
    auto spec = json::parse(kRuncSpec);
    ASSERT_TRUE(oci::apply(spec, card_edits()));
    EXPECT_EQ(spec["process"]["env"], json({"PATH=/bin", "TOPS_VISIBLE_DEVICES=0", "TERM=xterm",
                                            "ENFLAME_VISIBLE_DEVICES=void"}));
    EXPECT_EQ(
        spec["linux"]["devices"],
        json::parse(
            R"([{"path":"/dev/gcu0","type":"c","major":238,"minor":0,"fileMode":438,"uid":0,"gid":0},
                              {"path":"/dev/gcuctl","type":"c","major":238,"minor":255}])"));
    EXPECT_EQ(spec["linux"]["resources"]["devices"], json::parse(R"([{"allow":false,"access":"rwm"},
                              {"allow":true,"type":"c","major":238,"minor":0,"access":"rwm"},
                              {"allow":true,"type":"c","major":238,"minor":255,"access":"rw"}])"));
    EXPECT_EQ(spec["mounts"][1],
              json::parse(R"({"destination":"/usr/lib/libefml.so.1","type":"bind",
        "source":"/sim/usr/lib/libefml.so.1","options":["ro","nosuid","nodev","rbind","rprivate"]})"));
    EXPECT_EQ(spec["hooks"], json::parse(R"({"createContainer":[{"path":"/usr/bin/enflame-ctk",
        "args":["enflame-ctk","hook","update-ldcache"],"env":["PATH=/usr/bin"]}]})"));
    EXPECT_EQ(spec["process"]["user"]["additionalGids"], json({44}));
    EXPECT_EQ(spec["hostname"], "runc");
    EXPECT_EQ(spec["linux"]["namespaces"], json::parse(R"([{"type":"pid"}])"));
}

TEST(OciApply, Idempotent) {
    auto once = json::parse(kRuncSpec);
    ASSERT_TRUE(oci::apply(once, card_edits()));
    auto twice = once;
    ASSERT_TRUE(oci::apply(twice, card_edits()));
    EXPECT_EQ(once, twice);
}

TEST(OciApply, OrderedKeepsKeyOrder) {
    auto spec = ordered_json::parse(kRuncSpec);
    ASSERT_TRUE(oci::apply(spec, card_edits()));
    std::vector<std::string> keys;
    for (const auto& [k, v] : spec.items()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"ociVersion", "process", "root", "hostname", "mounts",
                                              "linux", "hooks"}));
    // An empty edit leaves the document byte-identical.
    auto plain = ordered_json::parse(kRuncSpec);
    ASSERT_TRUE(oci::apply(plain, cdi::ContainerEdits{}));
    EXPECT_EQ(plain.dump(), ordered_json::parse(kRuncSpec).dump());
}

TEST(OciApply, OrderedNewSiblingsDoNotInvalidateEachOther) {
    // linux.devices and linux.resources are both created: in an ordered_json object the second
    // insert moves the first (regression: a dangling pointer wrote into freed memory).
    auto spec = ordered_json::parse(R"({"linux":{"namespaces":[{"type":"pid"}]}})");
    ASSERT_TRUE(oci::apply(spec, card_edits()));
    EXPECT_EQ(spec["linux"]["devices"].size(), 2u);
    EXPECT_EQ(spec["linux"]["resources"]["devices"].size(), 2u);
    std::vector<std::string> keys;
    for (const auto& [k, v] : spec["linux"].items()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"namespaces", "devices", "resources"}));
}

TEST(OciApply, EmptySpecGetsTheSections) {
    json spec = json::object();
    ASSERT_TRUE(oci::apply(spec, card_edits()));
    EXPECT_EQ(spec["process"]["env"].size(), 2u);
    EXPECT_EQ(spec["linux"]["devices"].size(), 2u);
    EXPECT_EQ(spec["linux"]["resources"]["devices"].size(), 2u);
    EXPECT_EQ(spec["mounts"].size(), 1u);
}

TEST(OciApply, ReplacesSamePathAndDestination) {
    auto spec = json::parse(kRuncSpec);
    ASSERT_TRUE(oci::apply(spec, card_edits()));
    auto e = card_edits();
    e.device_nodes[0].minor = 7;
    e.mounts[0].host_path = "/other";
    ASSERT_TRUE(oci::apply(spec, e));
    EXPECT_EQ(spec["linux"]["devices"].size(), 2u);
    EXPECT_EQ(spec["linux"]["devices"][0]["minor"], 7);
    EXPECT_EQ(spec["mounts"].size(), 2u);
    EXPECT_EQ(spec["mounts"][1]["source"], "/other");
}

struct BadCase {
    const char* name;
    const char* spec;
    std::function<void(cdi::ContainerEdits&)> edit;
    std::string message;
};

const std::vector<BadCase> kBadCases = {
    {"NotAnObject", "[]", [](auto&) {}, "config.json: the spec is not a JSON object"},
    {"EnvNotArray", R"({"process":{"env":"x"}})", [](auto&) {},
     "config.json: 'process.env' is not an array"},
    {"EnvNotStrings", R"({"process":{"env":[1]}})", [](auto&) {},
     "config.json: 'process.env' is not an array of strings"},
    {"LinuxNotObject", R"({"linux":[]})", [](auto&) {}, "config.json: 'linux' is not an object"},
    {"MountsNotArray", R"({"mounts":{}})", [](auto&) {}, "config.json: 'mounts' is not an array"},
    {"HooksStageNotArray", R"({"hooks":{"createContainer":1}})", [](auto&) {},
     "config.json: 'hooks.createContainer' is not an array"},
    {"UnknownHookStage", "{}", [](auto& e) { e.hooks[0].hook_name = "prestop"; },
     "hook '/usr/bin/enflame-ctk': unknown stage 'prestop'"},
    {"RelativeDevice", "{}", [](auto& e) { e.device_nodes[0].path = "dev/gcu0"; },
     "device node 'dev/gcu0': path is not absolute"},
    {"NoMajor", "{}", [](auto& e) { e.device_nodes[0].major.reset(); },
     "device node '/dev/gcu0': major/minor unknown"},
    {"RelativeMount", "{}", [](auto& e) { e.mounts[0].container_path = "lib"; },
     "mount 'lib': container path is not absolute"},
    // Each met after earlier edits went in (so the spec must be checked before any edit).
    {"ProcessNull", R"({"process":null})", [](auto&) {}, "config.json: 'process' is not an object"},
    {"LinuxDevicesNotArray", R"({"linux":{"devices":{}}})", [](auto&) {},
     "config.json: 'linux.devices' is not an array"},
    {"ResourcesNotObject", R"({"linux":{"resources":[]}})", [](auto&) {},
     "config.json: 'linux.resources' is not an object"},
    {"RulesNotArray", R"({"linux":{"resources":{"devices":"all"}}})", [](auto&) {},
     "config.json: 'linux.resources.devices' is not an array"},
    {"HooksNotObject", R"({"hooks":[]})", [](auto&) {}, "config.json: 'hooks' is not an object"},
    {"RelativeHook", "{}", [](auto& e) { e.hooks[0].path = "enflame-ctk"; },
     "hook 'enflame-ctk': path is not absolute"},
    {"UserNotObject", R"({"process":{"user":7}})", [](auto&) {},
     "config.json: 'process.user' is not an object"},
    {"GidsNotArray", R"({"process":{"user":{"additionalGids":{}}}})", [](auto&) {},
     "config.json: 'process.user.additionalGids' is not an array"},
    {"OnlyGidZeroStillChecked", R"({"process":{"user":{"additionalGids":1}}})",
     [](auto& e) { e.additional_gids = {0}; },
     "config.json: 'process.user.additionalGids' is not an array"},
};

class OciBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(OciBadTest, FailsAndLeavesTheSpec) {
    const auto& c = GetParam();
    auto spec = json::parse(c.spec);
    const auto before = spec;
    auto e = card_edits();
    c.edit(e);
    auto r = oci::apply(spec, e);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput);
    EXPECT_EQ(r.error().what(), c.message);
    EXPECT_EQ(spec, before);
}

INSTANTIATE_TEST_SUITE_P(Oci, OciBadTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Legacy mode: the cards' cgroup rules only (the hook makes the nodes), idempotent, all or nothing.
TEST(OciAllowDevices, RulesOnlyIdempotentAllOrNothing) {
    auto spec = ordered_json::parse(kRuncSpec);
    const auto devices_before = spec["linux"].value("devices", ordered_json());
    ASSERT_TRUE(oci::allow_devices(spec, card_edits().device_nodes));
    EXPECT_EQ(spec["linux"].value("devices", ordered_json()), devices_before)
        << "no linux.devices entry";
    const auto& rules = spec["linux"]["resources"]["devices"];
    ASSERT_GE(rules.size(), 2u);
    EXPECT_EQ(
        rules[rules.size() - 2],
        ordered_json::parse(R"({"allow":true,"type":"c","major":238,"minor":0,"access":"rwm"})"));
    EXPECT_EQ(
        rules.back(),
        ordered_json::parse(R"({"allow":true,"type":"c","major":238,"minor":255,"access":"rw"})"));
    auto twice = spec;
    ASSERT_TRUE(oci::allow_devices(twice, card_edits().device_nodes));
    EXPECT_EQ(twice, spec);

    auto bad = card_edits().device_nodes;
    bad.back().major.reset();
    auto kept = ordered_json::parse(kRuncSpec);
    const auto original = kept;
    auto r = oci::allow_devices(kept, bad);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "device node '/dev/gcuctl': major/minor unknown");
    EXPECT_EQ(kept, original);
}

TEST(FillDeviceNumbers, FromTheHostNode) {
    cdi::ContainerEdits e;
    e.device_nodes.push_back(
        cdi::DeviceNode{"/dev/null", "", "", std::nullopt, std::nullopt, std::nullopt, "", {}, {}});
    ASSERT_TRUE(oci::fill_device_numbers(e));
    EXPECT_EQ(e.device_nodes[0].type, "c");
    EXPECT_EQ(e.device_nodes[0].major, 1);
    EXPECT_EQ(e.device_nodes[0].minor, 3);
    EXPECT_EQ(e.device_nodes[0].file_mode, 0666u);
}

TEST(FillDeviceNumbers, Errors) {
    testutil::TempDir dir;
    testutil::write_file(dir / "file", "x");
    cdi::ContainerEdits e;
    e.device_nodes.push_back(cdi::DeviceNode{
        "/dev/gcu9", dir / "file", "", std::nullopt, std::nullopt, std::nullopt, "", {}, {}});
    auto r = oci::fill_device_numbers(e);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "device node '/dev/gcu9': '" + (dir / "file") + "' is not a device node");
    e.device_nodes[0].host_path = dir / "missing";
    r = oci::fill_device_numbers(e);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "device node '/dev/gcu9': stat " + (dir / "missing") + ": No such file or directory");
}

}  // namespace

// The shim writes config.json with oci::dump: byte for byte what nlohmann's dump() writes,
// for everything a spec can hold (its fast path copies printable ASCII whole).
TEST(OciDump, SameBytesAsNlohmann) {
    const char* docs[] = {
        kRuncSpec,
        R"({"a":"quote \" backslash \\ slash / tab \t nl \n cr \r bs \b ff \f","b":"\u0001\u001f\u007f"})",
        R"({"only a quote":"say \"hi\"","only a backslash":"C:\\x","ctl":"bell \u0007"})",
        R"({"utf8":"gr\u00fc\u00df \u20ac \ud83d\ude00","k\u00e9y":[]})",
        R"({"n":[0,-1,1,9223372036854775807,-9223372036854775808,18446744073709551615,1.5,-0.0,1e300,2.5e-7]})",
        R"({"e":{},"a":[],"nested":[[{}],{"x":[null,true,false]}],"":""})",
        R"([1,"two",{"three":3}])",
        R"("just a string")",
        R"(null)",
    };
    for (const char* d : docs) {
        const auto doc = ordered_json::parse(d);
        auto out = oci::dump(doc);
        ASSERT_TRUE(out) << d;
        EXPECT_EQ(*out, doc.dump()) << d;
    }
    ordered_json edited = ordered_json::parse(kRuncSpec);
    ASSERT_TRUE(oci::apply(edited, card_edits()));
    EXPECT_EQ(*oci::dump(edited), edited.dump());
}

TEST(OciDump, NotUtf8IsAnError) {
    ordered_json doc = {{"env", std::string("A=\xff\xfe")}};
    auto out = oci::dump(doc);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().code(), inject::Errc::InvalidInput);
    EXPECT_NE(out.error().what().find("serializing config.json: "), std::string::npos)
        << out.error().what();
}
