// SPDX-License-Identifier: Apache-2.0
// The NRI adjustment equals what the shim writes, for every request form: the expected side is
// the shim's own create path (shim::prepare_bundle on a bundle), the actual side the plugin's
// adjustment applied to the same spec as the runtime applies it (device nodes replaced by path,
// mounts by destination, env by key, hooks appended; the runtime adds each device's allow rule).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "create.hpp"
#include "inject/oci.hpp"
#include "nri/adjust.hpp"
#include "test_util.hpp"

namespace {

using nlohmann::json;

const char* kSpec = R"(cdiVersion: "0.5.0"
kind: enflame.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/gcu0
      hostPath: /dev/null
    env:
    - TOPS_CARD=0
- name: "1"
  containerEdits:
    deviceNodes:
    - path: /dev/gcu1
      hostPath: /dev/full
      fileMode: 432
      uid: 5
      gid: 6
- name: TR6Y46010302
  containerEdits:
    deviceNodes:
    - path: /dev/gcu0
      hostPath: /dev/null
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/gcu0
      hostPath: /dev/null
    - path: /dev/gcu1
      hostPath: /dev/full
      fileMode: 432
      uid: 5
      gid: 6
containerEdits:
  env:
  - ENFLAME_VISIBLE_DEVICES=void
  deviceNodes:
  - path: /dev/gcuctl
    hostPath: /dev/zero
  mounts:
  - hostPath: /usr/lib/x86_64-linux-gnu/libefml.so.1
    containerPath: /usr/lib/libefml.so.1
    options: [ro, nosuid, nodev, bind]
  hooks:
  - hookName: createContainer
    path: /usr/bin/enflame-ctk
    args: [enflame-ctk, hook, update-ldcache, --folder, /usr/lib]
    env: [A=1]
    timeout: 5
)";

json spec_with(const std::vector<std::string>& env,
               const std::map<std::string, std::string>& annotations) {
    json s = json::parse(
        R"({"ociVersion":"1.0.2-dev","process":{"args":["sh"],"env":["PATH=/bin","TOPS_CARD=x"],
        "cwd":"/"},"root":{"path":"rootfs"},"mounts":[{"destination":"/proc","type":"proc","source":"proc"}],
        "linux":{"namespaces":[{"type":"pid"}]}})");
    for (const auto& e : env) s["process"]["env"].push_back(e);
    if (!annotations.empty()) s["annotations"] = annotations;
    return s;
}

/// The adjustment as the runtime applies it, in the edits' terms (oci::apply has NRI's rules:
/// replace by path / destination / key, append hooks; an allow rule per device node).
inject::cdi::ContainerEdits edits_of(const nri_plugin::api::ContainerAdjustment& a) {
    inject::cdi::ContainerEdits e;
    for (const auto& kv : a.env()) e.env.push_back(kv.key() + "=" + kv.value());
    for (const auto& d : a.linux().devices()) {
        inject::cdi::DeviceNode n;
        n.path = d.path();
        n.type = d.type();
        n.major = d.major();
        n.minor = d.minor();
        if (d.has_file_mode()) n.file_mode = d.file_mode().value();
        if (d.has_uid()) n.uid = d.uid().value();
        if (d.has_gid()) n.gid = d.gid().value();
        e.device_nodes.push_back(n);
    }
    for (const auto& m : a.mounts())
        e.mounts.push_back(
            {m.source(), m.destination(), m.type(), {m.options().begin(), m.options().end()}});
    const auto hooks = [&](const auto& list, const char* stage) {
        for (const auto& h : list) {
            inject::cdi::Hook o{stage,
                                h.path(),
                                {h.args().begin(), h.args().end()},
                                {h.env().begin(), h.env().end()},
                                {}};
            if (h.has_timeout()) o.timeout = static_cast<int>(h.timeout().value());
            e.hooks.push_back(o);
        }
    };
    hooks(a.hooks().prestart(), "prestart");
    hooks(a.hooks().create_runtime(), "createRuntime");
    hooks(a.hooks().create_container(), "createContainer");
    hooks(a.hooks().start_container(), "startContainer");
    hooks(a.hooks().poststart(), "poststart");
    hooks(a.hooks().poststop(), "poststop");
    return e;
}

struct Fixture {
    testutil::TempDir dir;
    inject::config::Config cfg;
    shim::ShimEnv env{"", "", "/usr/bin:/bin"};
    shim::RuncLog log;
    nri_plugin::SpecCache specs;
    Fixture() {
        testutil::write_file(dir / "cdi/enflame.com-gpu.yaml", kSpec);
        cfg.runtime.mode = inject::config::Mode::Cdi;
        cfg.runtime.spec_dirs = {dir / "cdi"};
    }
    /// The shim's config.json for `spec`, or its error.
    inject::Result<json> shim_side(const json& spec) {
        testutil::write_file(dir / "b/config.json", spec.dump());
        INJECT_TRY_VOID(shim::prepare_bundle(cfg, dir / "b", env, log));
        return json::parse(testutil::read_file(dir / "b/config.json"));
    }
    /// The plugin's adjustment applied to `spec`, or its error.
    inject::Result<json> nri_side(json spec) {
        nri_plugin::api::Container c;
        c.set_name("c");
        for (const auto& e : spec["process"]["env"]) c.add_env(e.get<std::string>());
        if (spec.contains("annotations"))
            for (const auto& [k, v] : spec["annotations"].items())
                (*c.mutable_annotations())[k] = v.get<std::string>();
        INJECT_TRY(auto d, nri_plugin::decide(cfg, c, {}, specs));
        if (d.asked) INJECT_TRY_VOID(inject::oci::apply(spec, edits_of(d.adjust)));
        return spec;
    }
};

struct Form {
    const char* name;
    std::vector<std::string> env;
    std::map<std::string, std::string> annotations;
};

const std::vector<Form> kForms = {
    {"Index", {"ENFLAME_VISIBLE_DEVICES=0"}, {}},
    {"TwoCards", {"ENFLAME_VISIBLE_DEVICES=0,1"}, {}},
    {"Range", {"ENFLAME_VISIBLE_DEVICES=0-1"}, {}},
    {"GcuName", {"ENFLAME_VISIBLE_DEVICES=GCU-1"}, {}},
    {"Uuid", {"ENFLAME_VISIBLE_DEVICES=TR6Y46010302"}, {}},
    {"All", {"ENFLAME_VISIBLE_DEVICES=all"}, {}},
    {"None", {"ENFLAME_VISIBLE_DEVICES=none"}, {}},
    {"CdiNameInEnv", {"ENFLAME_VISIBLE_DEVICES=enflame.com/gpu=1"}, {}},
    {"Annotation", {}, {{"cdi.k8s.io/x", "enflame.com/gpu=TR6Y46010302"}}},
    {"DevicePluginAllocate",
     {"ENFLAME_VISIBLE_DEVICES=1"},
     {{"cdi.k8s.io/enflame-device-plugin_abc", "enflame.com/gpu=1"}}},
    {"UtilityOnly", {"ENFLAME_VISIBLE_DEVICES=0", "ENFLAME_DRIVER_CAPABILITIES=utility"}, {}},
    {"Void", {"ENFLAME_VISIBLE_DEVICES=void"}, {}},
    {"Nothing", {}, {}},
};

void PrintTo(const Form& f, std::ostream* os) {
    *os << f.name;
}

class NriAdjustForm : public testing::TestWithParam<Form> {};

TEST_P(NriAdjustForm, SameSpecAsTheShim) {
    const auto& form = GetParam();
    Fixture f;
    const json spec = spec_with(form.env, form.annotations);
    auto want = f.shim_side(spec);
    ASSERT_TRUE(want) << want.error().what();
    auto got = f.nri_side(spec);
    ASSERT_TRUE(got) << got.error().what();
    EXPECT_EQ(*got, *want) << "shim: " << want->dump(1) << "\nnri: " << got->dump(1);
}

INSTANTIATE_TEST_SUITE_P(Forms, NriAdjustForm, testing::ValuesIn(kForms),
                         [](const auto& i) { return std::string(i.param.name); });

TEST(NriAdjust, CardsAreRealNodesWithHostNumbersAndOneEntryPerKey) {
    Fixture f;
    nri_plugin::api::Container c;
    c.add_env("ENFLAME_VISIBLE_DEVICES=0,1");
    auto d = nri_plugin::decide(f.cfg, c, {}, f.specs);
    ASSERT_TRUE(d) << d.error().what();
    ASSERT_TRUE(d->asked);
    const auto& devs = d->adjust.linux().devices();
    ASSERT_EQ(devs.size(), 3);
    EXPECT_EQ(devs[0].path(), "/dev/gcuctl");
    EXPECT_EQ(devs[0].type(), "c");
    EXPECT_EQ(devs[0].major(), 1);  // /dev/zero
    EXPECT_EQ(devs[0].minor(), 5);
    EXPECT_EQ(devs[2].path(), "/dev/gcu1");
    EXPECT_EQ(devs[2].minor(), 7);  // /dev/full
    EXPECT_EQ(devs[2].file_mode().value(), 432u);
    // TOPS_CARD and ENFLAME_VISIBLE_DEVICES once each, whatever the edits repeat
    std::map<std::string, int> keys;
    for (const auto& kv : d->adjust.env()) ++keys[kv.key()];
    for (const auto& [k, n] : keys) EXPECT_EQ(n, 1) << k;
}

TEST(NriAdjust, UnprivilegedEnvIgnoredWhenConfiguredAnnotationsStillRead) {
    Fixture f;
    f.cfg.runtime.accept_envvar_when_unprivileged = false;
    nri_plugin::api::Container c;
    c.add_env("ENFLAME_VISIBLE_DEVICES=0");
    auto d = nri_plugin::decide(f.cfg, c, {}, f.specs);
    ASSERT_TRUE(d);
    EXPECT_FALSE(d->asked);
    EXPECT_FALSE(d->adjust.has_linux());
    (*c.mutable_annotations())["cdi.k8s.io/x"] = "enflame.com/gpu=1";
    d = nri_plugin::decide(f.cfg, c, {}, f.specs);
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->asked);
    EXPECT_EQ(d->adjust.linux().devices().size(), 2);
    // and the shim agrees on both
    for (const auto& ann : std::vector<std::map<std::string, std::string>>{
             {}, {{"cdi.k8s.io/x", "enflame.com/gpu=1"}}}) {
        const json spec = spec_with({"ENFLAME_VISIBLE_DEVICES=0"}, ann);
        auto want = f.shim_side(spec);
        auto got = f.nri_side(spec);
        ASSERT_TRUE(want);
        ASSERT_TRUE(got);
        EXPECT_EQ(*got, *want);
    }
}

TEST(NriAdjust, UnsatisfiableRequestIsAnErrorNamingTheDevice) {
    Fixture f;
    nri_plugin::api::Container c;
    c.add_env("ENFLAME_VISIBLE_DEVICES=5");
    auto d = nri_plugin::decide(f.cfg, c, {}, f.specs);
    ASSERT_FALSE(d);
    EXPECT_NE(std::string(d.error().what()).find("'enflame.com/gpu=5'"), std::string::npos)
        << d.error().what();
    c.set_env(0, "ENFLAME_VISIBLE_DEVICES=x1");
    d = nri_plugin::decide(f.cfg, c, {}, f.specs);
    ASSERT_FALSE(d);
    EXPECT_NE(std::string(d.error().what()).find("'x1'"), std::string::npos) << d.error().what();
}

TEST(NriAdjust, SpecsAreReadAgainWhenTheyChangeOnly) {
    Fixture f;
    nri_plugin::api::Container c;
    c.add_env("ENFLAME_VISIBLE_DEVICES=0");
    auto first = f.specs.get(f.cfg);
    ASSERT_TRUE(first);
    auto again = f.specs.get(f.cfg);
    ASSERT_TRUE(again);
    EXPECT_EQ(*first, *again);
    EXPECT_EQ((*again)->specs().size(), 1u);
    // replaced as enflame-ctk writes it (a new file renamed over the old): card 0 is now /dev/zero
    std::string spec = kSpec;
    spec.replace(spec.find("hostPath: /dev/null"), 19, "hostPath: /dev/zero");
    testutil::write_file(f.dir / "cdi/new.tmp", spec);
    ASSERT_EQ(
        ::rename((f.dir / "cdi/new.tmp").c_str(), (f.dir / "cdi/enflame.com-gpu.yaml").c_str()), 0);
    auto d = nri_plugin::decide(f.cfg, c, {}, f.specs);
    ASSERT_TRUE(d) << d.error().what();
    bool zero = false;
    for (const auto& n : d->adjust.linux().devices())
        if (n.path() == "/dev/gcu0") zero = n.minor() == 5;
    EXPECT_TRUE(zero);
    // removed: the card is unknown
    ASSERT_EQ(::unlink((f.dir / "cdi/enflame.com-gpu.yaml").c_str()), 0);
    d = nri_plugin::decide(f.cfg, c, {}, f.specs);
    ASSERT_FALSE(d);
    EXPECT_NE(std::string(d.error().what()).find("enflame.com/gpu"), std::string::npos)
        << d.error().what();
}

TEST(NriAdjust, SupplementaryGroupsCannotBeExpressedAndAreRefused) {
    inject::cdi::ContainerEdits e;
    e.additional_gids = {44};
    auto a = nri_plugin::to_adjustment(e);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().what(),
              std::string("the edits add supplementary groups, which NRI cannot set"));
}

}  // namespace
