// SPDX-License-Identifier: Apache-2.0
// The shim's create path on a bundle in a temp dir: passthrough without rewriting, cdi and
// legacy mode edits, and the errors that must leave config.json untouched.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "create.hpp"
#include "test_util.hpp"

namespace {

using nlohmann::ordered_json;

const char* kSpec = R"(cdiVersion: "0.5.0"
kind: enflame.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/gcu0
      hostPath: /dev/null
      type: c
      major: 1
      minor: 3
- name: TR6Y46010302
  containerEdits:
    deviceNodes:
    - path: /dev/gcu0
      hostPath: /dev/null
      type: c
      major: 1
      minor: 3
containerEdits:
  env:
  - ENFLAME_VISIBLE_DEVICES=void
  deviceNodes:
  - path: /dev/gcuctl
    hostPath: /dev/zero
    type: c
    major: 1
    minor: 5
)";

std::string bundle_json(const std::string& env_entry, const std::string& extra = "") {
    return R"({"ociVersion":"1.0.2-dev","process":{"user":{"uid":0,"gid":0},"args":["sh"],"env":["PATH=/bin")" +
           (env_entry.empty() ? std::string() : ",\"" + env_entry + "\"") +
           R"(],"cwd":"/"},"root":{"path":"rootfs"},)" + extra +
           R"("linux":{"namespaces":[{"type":"pid"}]}})";
}

struct Fixture {
    testutil::TempDir dir;
    inject::config::Config cfg;
    shim::ShimEnv env{"", "", "/usr/bin:/bin"};
    shim::RuncLog log;

    Fixture() {
        testutil::write_file(dir / "cdi/enflame.com-gpu.yaml", kSpec);
        cfg.runtime.mode = inject::config::Mode::Cdi;
        cfg.runtime.spec_dirs = {dir / "cdi"};
    }
    std::string bundle(const std::string& json) {
        testutil::write_file(dir / "b/config.json", json);
        return dir / "b";
    }
    std::string config() { return testutil::read_file(dir / "b/config.json"); }
    ino_t inode() {
        struct stat st {};
        ::stat((dir / "b/config.json").c_str(), &st);
        return st.st_ino;
    }
};

TEST(ShimCreate, NoRequestIsNotEvenRewritten) {
    for (std::string e :
         {"", "ENFLAME_VISIBLE_DEVICES=void", "ENFLAME_VISIBLE_DEVICES=", "OTHER=1"}) {
        Fixture f;
        const auto text = bundle_json(e);
        auto b = f.bundle(text);
        const auto ino = f.inode();
        auto r = shim::prepare_bundle(f.cfg, b, f.env, f.log);
        ASSERT_TRUE(r) << r.error().what();
        EXPECT_FALSE(r->rewritten) << e;
        EXPECT_EQ(f.config(), text);
        EXPECT_EQ(f.inode(), ino);
    }
}

TEST(ShimCreate, CdiModeByIndexUuidAndAnnotation) {
    Fixture f;
    auto b = f.bundle(bundle_json("ENFLAME_VISIBLE_DEVICES=0"));
    auto r = shim::prepare_bundle(f.cfg, b, f.env, f.log);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(r->rewritten);
    auto doc = ordered_json::parse(f.config());
    EXPECT_EQ(doc.begin().key(), "ociVersion");  // key order kept
    EXPECT_EQ(doc["linux"]["devices"], ordered_json::parse(R"([
        {"path":"/dev/gcuctl","type":"c","major":1,"minor":5},
        {"path":"/dev/gcu0","type":"c","major":1,"minor":3}])"));
    EXPECT_EQ(doc["process"]["env"],
              ordered_json::parse(R"(["PATH=/bin","ENFLAME_VISIBLE_DEVICES=void"])"));
    EXPECT_EQ(doc["linux"]["resources"]["devices"].size(), 2u);

    // Running the shim again on its own output changes nothing (void = no request).
    const auto once = f.config();
    r = shim::prepare_bundle(f.cfg, b, f.env, f.log);
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->rewritten);
    EXPECT_EQ(f.config(), once);

    Fixture g;
    b = g.bundle(
        bundle_json("", R"("annotations":{"cdi.k8s.io/x":"enflame.com/gpu=TR6Y46010302"},)"));
    r = shim::prepare_bundle(g.cfg, b, g.env, g.log);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(ordered_json::parse(g.config())["linux"]["devices"].size(), 2u);
}

TEST(ShimCreate, CdiModeNoneGivesSpecLevelEditsOnly) {
    Fixture f;
    auto b = f.bundle(bundle_json("ENFLAME_VISIBLE_DEVICES=none"));
    auto r = shim::prepare_bundle(f.cfg, b, f.env, f.log);
    ASSERT_TRUE(r) << r.error().what();
    auto doc = ordered_json::parse(f.config());
    EXPECT_EQ(doc["linux"]["devices"],
              ordered_json::parse(R"([{"path":"/dev/gcuctl","type":"c","major":1,"minor":5}])"));
}

// Legacy mode discovers the cards at create, for their device-cgroup rules: without cards to
// discover it fails there, with config.json untouched. (The rules and the hook on a simulated
// host: shim.bats, "legacy mode ...".)
TEST(ShimCreate, LegacyModeDiscoversTheCardsAtCreate) {
    Fixture f;
    f.cfg.runtime.mode = inject::config::Mode::Legacy;
    f.cfg.runtime.hook_path = "/bin/true";
    f.cfg.cli.driver_root = f.dir / "nohost";
    f.env.config_path = "/etc/x.toml";
    const auto text = bundle_json("ENFLAME_VISIBLE_DEVICES=all");
    auto b = f.bundle(text);
    auto r = shim::prepare_bundle(f.cfg, b, f.env, f.log);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().what().starts_with("discovering the cards: no backend found the cards"))
        << r.error().what();
    EXPECT_EQ(f.config(), text);
}

TEST(ShimCreate, UnprivilegedEnvIgnoredWhenConfigured) {
    Fixture f;
    f.cfg.runtime.accept_envvar_when_unprivileged = false;
    const auto text = bundle_json("ENFLAME_VISIBLE_DEVICES=0");
    auto b = f.bundle(text);
    auto r = shim::prepare_bundle(f.cfg, b, f.env, f.log);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_FALSE(r->rewritten);
    EXPECT_EQ(f.config(), text);
    // A privileged container (CAP_SYS_ADMIN in its bounding set) is still honoured.
    Fixture g;
    g.cfg.runtime.accept_envvar_when_unprivileged = false;
    auto priv = text;
    priv.replace(priv.find("\"cwd\""), 5, R"("capabilities":{"bounding":["CAP_SYS_ADMIN"]},"cwd")");
    b = g.bundle(priv);
    r = shim::prepare_bundle(g.cfg, b, g.env, g.log);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(r->rewritten);
}

struct BadCase {
    const char* name;
    std::string json;
    std::function<void(Fixture&)> setup;
    std::string message;  // with {b} for the bundle dir
};

const std::vector<BadCase> kBad = {
    {"UnknownIndex", bundle_json("ENFLAME_VISIBLE_DEVICES=5"), [](Fixture&) {},
     "unknown CDI device 'enflame.com/gpu=5'"},
    {"Duplicate", bundle_json("ENFLAME_VISIBLE_DEVICES=0,0"), [](Fixture&) {},
     "ENFLAME_VISIBLE_DEVICES: duplicate entry '0'"},
    {"Malformed", R"({"process":{"env":["ENFLAME_VISIBLE_DEVICES=0"]})", [](Fixture&) {},
     "{b}/config.json: invalid JSON at line 1, column 49: syntax error while parsing object - "
     "unexpected end of "
     "input; expected '}'"},
    {"EnvNotArray", R"({"process":{"env":"ENFLAME_VISIBLE_DEVICES=0"}})", [](Fixture&) {},
     "{b}/config.json: 'process.env' is not an array"},
    {"NotAnObject", R"(["ENFLAME_VISIBLE_DEVICES=0"])", [](Fixture&) {},
     "{b}/config.json: the spec is not a JSON object"},
    {"AnnotationsNotObject", R"({"annotations":["cdi.k8s.io/x"]})", [](Fixture&) {},
     "{b}/config.json: 'annotations' is not an object"},
    {"NoSpecForNone", bundle_json("ENFLAME_VISIBLE_DEVICES=none"),
     [](Fixture& f) { f.cfg.runtime.spec_dirs = {f.dir / "empty"}; },
     "no CDI spec of kind 'enflame.com/gpu' in {b}/../empty"},
    {"LegacyNoHook", bundle_json("ENFLAME_VISIBLE_DEVICES=0"),
     [](Fixture& f) {
         f.cfg.runtime.mode = inject::config::Mode::Legacy;
         f.cfg.runtime.hook_path = "/nonexistent/hook";
     },
     "legacy mode: hook '/nonexistent/hook' is not an executable file"},
    {"BadLinuxInSpec", R"({"process":{"env":["ENFLAME_VISIBLE_DEVICES=0"]},"linux":[]})",
     [](Fixture&) {}, "{b}/config.json: config.json: 'linux' is not an object"},
};

class ShimCreateBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(ShimCreateBad, FailsAndLeavesConfigJson) {
    const auto& c = GetParam();
    Fixture f;
    c.setup(f);
    auto b = f.bundle(c.json);
    auto r = shim::prepare_bundle(f.cfg, b, f.env, f.log);
    ASSERT_FALSE(r);
    std::string want = c.message;
    for (auto p = want.find("{b}"); p != std::string::npos; p = want.find("{b}"))
        want.replace(p, 3, b);
    if (auto p = want.find(b + "/../"); p != std::string::npos)
        want.replace(p, b.size() + 4, f.dir.path() + "/");
    EXPECT_EQ(r.error().what(), want);
    EXPECT_EQ(f.config(), c.json);
}

INSTANTIATE_TEST_SUITE_P(Shim, ShimCreateBad, ::testing::ValuesIn(kBad),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ShimCreate, MissingBundleAndHugeConfig) {
    Fixture f;
    auto r = shim::prepare_bundle(f.cfg, f.dir / "nope", f.env, f.log);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "opening " + (f.dir / "nope/config.json") + ": No such file or directory");
    std::string huge = bundle_json("ENFLAME_VISIBLE_DEVICES=0");
    huge.insert(1, "\"pad\":\"" + std::string(shim::kMaxConfigJson, 'x') + "\",");
    auto b = f.bundle(huge);
    r = shim::prepare_bundle(f.cfg, b, f.env, f.log);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), b + "/config.json: file is larger than 8388608 bytes");
}

}  // namespace
