// SPDX-License-Identifier: Apache-2.0
// inject::runtime_config: golden files per engine and config version, idempotence, the round
// trip through unconfigure, bad input with the exact text a user sees, the file writer, and
// `enflame-ctk config --set`. Set ENFLAME_UPDATE_GOLDEN=1 to rewrite the golden files.
#include "inject/runtime_config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "inject/fs.hpp"
#include "test_util.hpp"

namespace rc = inject::runtime_config;
using rc::Engine;

namespace {

std::string fixture_text(std::string_view rel) {
    return testutil::read_file(
        testutil::fixture(std::string("runtime-config/") + std::string(rel)));
}

/// Compares with tests/fixtures/runtime-config/<rel> (ENFLAME_UPDATE_GOLDEN=1 rewrites it and
/// fails).
void expect_golden(const std::string& got, std::string_view rel) {
    testutil::expect_golden(testutil::fixture(std::string("runtime-config/") + std::string(rel)),
                            got);
}

rc::Options full_options() {
    rc::Options o;
    o.runtime_path = "/usr/bin/enflame-container-runtime";
    o.set_as_default = true;
    o.cdi_enabled = true;
    return o;
}

// ---- in-place edits: every engine and containerd config version --------------------------

struct InPlaceCase {
    const char* name;
    Engine engine;
    const char* input;
    const char* golden;
};

class InPlace : public testing::TestWithParam<InPlaceCase> {};

TEST_P(InPlace, MatchesGoldenIsIdempotentAndRoundTrips) {
    const auto& c = GetParam();
    auto input = fixture_text(c.input);
    ASSERT_FALSE(input.empty());
    auto opts = full_options();
    auto out = rc::configure(c.engine, input, opts, c.input);
    ASSERT_TRUE(out) << out.error().what();
    expect_golden(*out, c.golden);

    auto again = rc::configure(c.engine, *out, opts, c.golden);
    ASSERT_TRUE(again) << again.error().what();
    EXPECT_EQ(*again, *out) << "a second configure must change no byte";

    auto back = rc::unconfigure(c.engine, *out, opts, c.golden, input);
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(*back, input) << "unconfigure with the backup restores the original bytes";

    // Without the backup the document still means the original (formatting may differ).
    auto plain = rc::unconfigure(c.engine, *out, opts, c.golden);
    ASSERT_TRUE(plain) << plain.error().what();
    auto plain_back = rc::unconfigure(c.engine, *plain, opts, "plain");
    ASSERT_TRUE(plain_back);
    EXPECT_EQ(*plain_back, *plain) << "unconfigure of a clean file changes no byte";
}

INSTANTIATE_TEST_SUITE_P(
    Golden, InPlace,
    testing::Values(InPlaceCase{"Docker", Engine::Docker, "docker-daemon.json",
                                "docker-daemon.configured.json"},
                    InPlaceCase{"ContainerdV1", Engine::Containerd, "containerd-v1.toml",
                                "containerd-v1.in-place.toml"},
                    InPlaceCase{"ContainerdV2", Engine::Containerd, "containerd-v2.toml",
                                "containerd-v2.in-place.toml"},
                    InPlaceCase{"ContainerdV3", Engine::Containerd, "containerd-v3.toml",
                                "containerd-v3.in-place.toml"},
                    InPlaceCase{"Crio", Engine::Crio, "crio.conf", "crio.in-place.toml"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RuntimeConfig, DockerKeepsKeyOrderAndOnlyAddsOurs) {
    auto out =
        rc::configure(Engine::Docker, fixture_text("docker-daemon.json"), full_options(), "d.json");
    ASSERT_TRUE(out);
    auto j = nlohmann::ordered_json::parse(*out);
    std::vector<std::string> keys;
    for (auto& [k, v] : j.items()) keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"log-level", "storage-driver", "runtimes",
                                              "default-runtime", "features"}));
    EXPECT_EQ(j["runtimes"]["enflame"]["path"], "/usr/bin/enflame-container-runtime");
    EXPECT_EQ(j["runtimes"]["crun"]["runtimeArgs"][0], "--debug");
    EXPECT_EQ(j["default-runtime"], "enflame");
    EXPECT_EQ(j["features"]["cdi"], true);
    EXPECT_EQ(j["features"]["buildkit"], true);
}

TEST(RuntimeConfig, DockerEmptyFileAndFlagsOff) {
    rc::Options o;
    o.runtime_path = "/opt/e/enflame-container-runtime";
    o.runtime_name = "gcu";
    auto out = rc::configure(Engine::Docker, "", o, "d.json");
    ASSERT_TRUE(out);
    EXPECT_EQ(*out,
              "{\n    \"runtimes\": {\n        \"gcu\": {\n            \"path\": "
              "\"/opt/e/enflame-container-runtime\"\n        }\n    }\n}\n");
    auto back = rc::unconfigure(Engine::Docker, *out, o, "d.json");
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, "{}\n");
}

TEST(RuntimeConfig, UnconfigureKeepsADefaultRuntimeThatIsNotOurs) {
    auto out = rc::unconfigure(
        Engine::Docker, R"({"default-runtime": "runc", "runtimes": {"enflame": {"path": "/x"}}})",
        full_options(), "d.json");
    ASSERT_TRUE(out);
    EXPECT_EQ(*out, "{\n    \"default-runtime\": \"runc\"\n}\n");
}

// ---- drop-ins ---------------------------------------------------------------------------

struct DropInCase {
    const char* name;
    Engine engine;
    const char* main;
    const char* golden;
};

class DropIn : public testing::TestWithParam<DropInCase> {};

TEST_P(DropIn, MatchesGolden) {
    const auto& c = GetParam();
    auto main = fixture_text(c.main);
    auto out = rc::drop_in(c.engine, main, full_options(), c.main);
    ASSERT_TRUE(out) << out.error().what();
    expect_golden(*out, c.golden);
    auto again = rc::drop_in(c.engine, main, full_options(), c.main);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *out);
}

INSTANTIATE_TEST_SUITE_P(
    Golden, DropIn,
    testing::Values(DropInCase{"ContainerdV2", Engine::Containerd, "containerd-v2.toml",
                               "containerd-v2.drop-in.toml"},
                    DropInCase{"ContainerdV3", Engine::Containerd, "containerd-v3.toml",
                               "containerd-v3.drop-in.toml"},
                    DropInCase{"Crio", Engine::Crio, "crio.conf", "crio.drop-in.toml"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RuntimeConfig, ContainerdDropInOfAMissingMainConfigIsVersion2) {
    rc::Options o;
    o.runtime_path = "/x/shim";
    auto out = rc::drop_in(Engine::Containerd, "", o, "config.toml");
    ASSERT_TRUE(out);
    EXPECT_NE(out->find("version = 2\n"), std::string::npos);
    EXPECT_NE(
        out->find("[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.enflame.options]\n"
                  "BinaryName = \"/x/shim\"\n"),
        std::string::npos)
        << *out;
}

TEST(RuntimeConfig, ContainerdKeepsItsDefaultRuncWhenTheConfigNamesNone) {
    // containerd decodes `runtimes` into a new map: with ours alone, CRI has no runc and stops
    rc::Options o;
    o.runtime_path = "/x/shim";
    const std::string runc =
        "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
        "runtime_type = \"io.containerd.runc.v2\"\n";
    auto d = rc::drop_in(Engine::Containerd, "version = 2\n", o, "config.toml");
    ASSERT_TRUE(d);
    EXPECT_NE(d->find(runc), std::string::npos) << *d;
    auto in_place = rc::configure(Engine::Containerd, "version = 2\n", o, "config.toml");
    ASSERT_TRUE(in_place);
    EXPECT_NE(in_place->find(runc), std::string::npos) << *in_place;
    auto back = rc::unconfigure(Engine::Containerd, *in_place, o, "config.toml");
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, "version = 2\n");
    // another default runtime: nothing added
    auto crun = rc::configure(Engine::Containerd,
                              "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
                              "default_runtime_name = \"crun\"\n",
                              o, "config.toml");
    ASSERT_TRUE(crun);
    EXPECT_EQ(crun->find("runtimes.runc"), std::string::npos) << *crun;
}

// ---- NRI (--enable-nri) ----------------------------------------------------------------

rc::Options nri_options() {
    rc::Options o;
    o.runtime_path = "/usr/bin/enflame-container-runtime";
    o.cdi_enabled = true;
    o.nri_enabled = true;
    o.nri_socket = "/run/x/nri.sock";
    return o;
}

/// containerd 1.7's sample with an NRI table of the user's: off, a request timeout of its own.
constexpr std::string_view kV2WithNri =
    "version = 2\n\n[plugins.\"io.containerd.nri.v1.nri\"]\n  disable = true\n"
    "  plugin_request_timeout = \"5s\"\n";

TEST(RuntimeConfigNri, ContainerdInPlaceTurnsItOnAndUnconfigurePutsTheUsersValuesBack) {
    for (auto [file, table] :
         {std::pair{"containerd-v1.toml", "[plugins.nri]\n"},
          std::pair{"containerd-v2.toml", "[plugins.\"io.containerd.nri.v1.nri\"]\n"},
          std::pair{"containerd-v3.toml", "[plugins.\"io.containerd.nri.v1.nri\"]\n"}}) {
        SCOPED_TRACE(file);
        auto input = fixture_text(file);
        auto out = rc::configure(Engine::Containerd, input, nri_options(), file);
        ASSERT_TRUE(out) << out.error().what();
        EXPECT_NE(out->find(std::string(table) + "disable = false\ndisable_connections = false\n"
                                                 "socket_path = \"/run/x/nri.sock\"\n"),
                  std::string::npos)
            << *out;
        auto again = rc::configure(Engine::Containerd, *out, nri_options(), file);
        ASSERT_TRUE(again);
        EXPECT_EQ(*again, *out);
        auto back = rc::unconfigure(Engine::Containerd, *out, nri_options(), file, input);
        ASSERT_TRUE(back);
        EXPECT_EQ(*back, input);
        // without the backup: no NRI table left (the fixtures had none)
        auto plain = rc::unconfigure(Engine::Containerd, *out, nri_options(), file);
        ASSERT_TRUE(plain);
        EXPECT_EQ(plain->find("nri"), std::string::npos) << *plain;
    }
    // the user's own NRI table: its other keys stay, its disable comes back
    auto out = rc::configure(Engine::Containerd, kV2WithNri, nri_options(), "c.toml");
    ASSERT_TRUE(out);
    EXPECT_NE(out->find("disable = false\n"), std::string::npos) << *out;
    EXPECT_NE(out->find("plugin_request_timeout = \"5s\"\n"), std::string::npos) << *out;
    auto back = rc::unconfigure(Engine::Containerd, *out, nri_options(), "c.toml", kV2WithNri);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, kV2WithNri);
    // NRI off (the default): the NRI table is not touched
    auto off = rc::configure(Engine::Containerd, kV2WithNri, full_options(), "c.toml");
    ASSERT_TRUE(off);
    EXPECT_NE(off->find("disable = true\n"), std::string::npos) << *off;
}

TEST(RuntimeConfigNri, ContainerdDropInCarriesTheMainConfigsNriTable) {
    // containerd replaces a whole plugin table from an import: the user's keys go along
    auto d = rc::drop_in(Engine::Containerd, kV2WithNri, nri_options(), "c.toml");
    ASSERT_TRUE(d) << d.error().what();
    EXPECT_NE(d->find("[plugins.\"io.containerd.nri.v1.nri\"]\ndisable = false\n"
                      "disable_connections = false\nplugin_request_timeout = \"5s\"\n"
                      "socket_path = \"/run/x/nri.sock\"\n"),
              std::string::npos)
        << *d;
    auto plain = rc::drop_in(Engine::Containerd, kV2WithNri, full_options(), "c.toml");
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->find("nri"), std::string::npos) << *plain;
}

TEST(RuntimeConfigNri, CrioInPlaceAndDropIn) {
    auto input = fixture_text("crio.conf");
    auto out = rc::configure(Engine::Crio, input, nri_options(), "crio.conf");
    ASSERT_TRUE(out);
    EXPECT_NE(out->find("[crio.nri]\nenable_nri = true\nnri_listen = \"/run/x/nri.sock\"\n"),
              std::string::npos)
        << *out;
    auto back = rc::unconfigure(Engine::Crio, *out, nri_options(), "crio.conf", input);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, input);
    auto d = rc::drop_in(Engine::Crio, "", nri_options(), "crio.conf");
    ASSERT_TRUE(d);
    EXPECT_NE(d->find("enable_nri = true\n"), std::string::npos) << *d;
}

TEST(RuntimeConfigNri, DockerAndARelativeSocketAreRefused) {
    auto o = nri_options();
    auto d = rc::configure(Engine::Docker, "{}", o, "d.json");
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().what(), "docker has no NRI: enabling it is for containerd and crio");
    o.nri_socket = "nri.sock";
    auto c = rc::configure(Engine::Containerd, "", o, "c.toml");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().what(), "NRI socket 'nri.sock' must be an absolute path");
    auto di = rc::drop_in(Engine::Containerd, "", o, "c.toml");
    ASSERT_FALSE(di);
}

// ---- the imports line of containerd's main config ---------------------------------------

struct ImportCase {
    const char* name;
    const char* before;
    const char* after;
};

class Imports : public testing::TestWithParam<ImportCase> {};

TEST_P(Imports, AddThenRemoveIsByteIdentical) {
    const auto& c = GetParam();
    const std::string path = "/etc/containerd/conf.d/99-enflame.toml";
    auto added = rc::add_import(c.before, path, "config.toml");
    ASSERT_TRUE(added) << added.error().what();
    EXPECT_EQ(*added, c.after);
    auto twice = rc::add_import(*added, path, "config.toml");
    ASSERT_TRUE(twice);
    EXPECT_EQ(*twice, *added);
    auto removed = rc::remove_import(*added, path, "config.toml");
    ASSERT_TRUE(removed) << removed.error().what();
    EXPECT_EQ(*removed, c.before);
}

INSTANTIATE_TEST_SUITE_P(
    Text, Imports,
    testing::Values(
        ImportCase{"AfterVersion", "# top\nversion = 2\nroot = \"/r\"\n",
                   "# top\nversion = 2\nimports = [\"/etc/containerd/conf.d/99-enflame.toml\"]  # "
                   "added by enflame-ctk\nroot = \"/r\"\n"},
        ImportCase{"NoVersionGoesFirst", "[grpc]\naddress = \"/s\"\n",
                   "imports = [\"/etc/containerd/conf.d/99-enflame.toml\"]  # added by "
                   "enflame-ctk\n[grpc]\naddress = \"/s\"\n"},
        ImportCase{"ExistingOneLine", "version = 2\nimports = [\"/a.toml\"]  # mine\n",
                   "version = 2\nimports = [\"/a.toml\", "
                   "\"/etc/containerd/conf.d/99-enflame.toml\"]  # mine\n"},
        ImportCase{"ExistingEmpty", "version = 2\nimports = []\n",
                   "version = 2\nimports = [\"/etc/containerd/conf.d/99-enflame.toml\"]\n"},
        ImportCase{"ExistingMultiLine", "version = 2\nimports = [\n  \"/a.toml\",\n]\n",
                   "version = 2\nimports = [\n  "
                   "\"/a.toml\",\n\"/etc/containerd/conf.d/99-enflame.toml\"]\n"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RuntimeConfig, ImportAfterAVersionLineWithoutNewline) {
    auto added = rc::add_import("version = 2", "/d.toml", "c.toml");
    ASSERT_TRUE(added);
    EXPECT_EQ(*added, "version = 2\nimports = [\"/d.toml\"]  # added by enflame-ctk\n");
    auto removed = rc::remove_import(*added, "/d.toml", "c.toml");
    ASSERT_TRUE(removed);
    EXPECT_EQ(*removed, "version = 2\n");
}

TEST(RuntimeConfig, AGlobImportThatCoversTheDropInIsEnough) {
    const std::string main = "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n";
    auto added = rc::add_import(main, "/etc/containerd/conf.d/99-enflame.toml", "c.toml");
    ASSERT_TRUE(added);
    EXPECT_EQ(*added, main);
    auto removed = rc::remove_import(main, "/etc/containerd/conf.d/99-enflame.toml", "c.toml");
    ASSERT_TRUE(removed);
    EXPECT_EQ(*removed, main);
}

// ---- bad input: refused with the line and the reason --------------------------------------

struct BadCase {
    const char* name;
    Engine engine;
    const char* text;
    const char* error;
};

class BadInput : public testing::TestWithParam<BadCase> {};

TEST_P(BadInput, IsRefusedWithTheLine) {
    const auto& c = GetParam();
    auto out = rc::configure(c.engine, c.text, full_options(), "/etc/x.conf");
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().what(), c.error);
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadInput,
    testing::Values(
        BadCase{
            "DockerSyntax", Engine::Docker, "{\n  \"a\": 1,\n  \"b\" 2\n}\n",
            "/etc/x.conf: line 3: syntax error while parsing object separator - unexpected number "
            "literal; expected ':'"},
        BadCase{"DockerNotObject", Engine::Docker, "[1]",
                "/etc/x.conf: line 1: the top level must be an object"},
        BadCase{"DockerRuntimesNotObject", Engine::Docker, "{\"runtimes\": []}",
                "/etc/x.conf: 'runtimes' must be an object"},
        BadCase{"ContainerdSyntax", Engine::Containerd, "version = 2\n[plugins\nx = 1\n",
                "/etc/x.conf: line 2: error while parsing table header: expected ']', saw '\\n'"},
        BadCase{"ContainerdVersion", Engine::Containerd, "version = 7\n",
                "/etc/x.conf: line 1: containerd config version '7' is not 1, 2 or 3"},
        BadCase{"ContainerdRuntimesNotTable", Engine::Containerd,
                "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = 3\n",
                "/etc/x.conf: line 3: 'plugins.io.containerd.grpc.v1.cri.containerd.runtimes' must "
                "be a table"},
        BadCase{
            "CrioSyntax", Engine::Crio, "[crio.runtime]\ndefault_runtime = \n",
            "/etc/x.conf: line 2: error while parsing key-value pair: expected value, saw '\\n'"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RuntimeConfig, OptionErrors) {
    rc::Options o;
    o.runtime_path = "relative/shim";
    auto out = rc::configure(Engine::Docker, "{}", o, "d.json");
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().what(), "runtime path 'relative/shim' must be an absolute path");
    auto e = rc::parse_engine("podman");
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().what(), "runtime 'podman' is not one of docker, containerd, crio");
    auto v1 = rc::drop_in(Engine::Containerd, fixture_text("containerd-v1.toml"), full_options(),
                          "c.toml");
    ASSERT_FALSE(v1);
    EXPECT_EQ(v1.error().what(),
              "c.toml: containerd config version 1 does not merge drop-ins; use --no-drop-in or "
              "migrate it with 'containerd config migrate'");
}

// ---- the writer -------------------------------------------------------------------------

TEST(RuntimeConfigWrite, BacksUpTheFirstOriginalOnly) {
    testutil::TempDir dir;
    auto path = dir / "daemon.json";
    testutil::write_file(path, "{}\n");
    ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
    auto w = rc::write_file(path, "{\"a\": 1}\n");
    ASSERT_TRUE(w) << w.error().what();
    EXPECT_EQ(*w, rc::WriteOutcome::Written);
    EXPECT_EQ(testutil::read_file(rc::backup_path(path)), "{}\n");
    struct stat bak {};
    ASSERT_EQ(::stat(rc::backup_path(path).c_str(), &bak), 0);
    EXPECT_EQ(bak.st_mode & 07777, 0600U) << "the backup keeps the original's mode";
    w = rc::write_file(path, "{\"a\": 2}\n");
    ASSERT_TRUE(w);
    EXPECT_EQ(testutil::read_file(rc::backup_path(path)), "{}\n")
        << "the backup keeps the first original";
    struct stat before {};
    ASSERT_EQ(::stat(path.c_str(), &before), 0);
    w = rc::write_file(path, "{\"a\": 2}\n");
    ASSERT_TRUE(w);
    EXPECT_EQ(*w, rc::WriteOutcome::Unchanged);
    struct stat after {};
    ASSERT_EQ(::stat(path.c_str(), &after), 0);
    EXPECT_EQ(before.st_ino, after.st_ino) << "an unchanged file is not rewritten";
    w = rc::write_file(path, "", true);
    ASSERT_TRUE(w);
    EXPECT_EQ(*w, rc::WriteOutcome::Removed);
    EXPECT_NE(::access(path.c_str(), F_OK), 0);
}

TEST(RuntimeConfigWrite, NewFileHasNoBackup) {
    testutil::TempDir dir;
    auto path = dir / "new.toml";
    auto w = rc::write_file(path, "version = 2\n");
    ASSERT_TRUE(w);
    EXPECT_EQ(testutil::read_file(path), "version = 2\n");
    EXPECT_NE(::access(rc::backup_path(path).c_str(), F_OK), 0);
}

TEST(RuntimeConfigWrite, InRootFollowsTheRootsOwnLinks) {
    // A node's root mounted in a pod: its `/etc/containerd` an absolute link, resolved from the
    // node's root, and the backup beside the file there.
    testutil::TempDir dir;
    const auto root = dir.path() + "/host";
    std::filesystem::create_directories(root + "/srv/containerd");
    std::filesystem::create_directories(root + "/etc");
    std::filesystem::create_symlink("/srv/containerd", root + "/etc/containerd");
    testutil::write_file(root + "/srv/containerd/config.toml", "version = 2\n");
    auto fd = inject::fs::open_root(root);
    ASSERT_TRUE(fd) << fd.error().what();
    auto w = rc::write_file(fd->get(), "/etc/containerd/config.toml", "version = 3\n");
    ASSERT_TRUE(w) << w.error().what();
    EXPECT_EQ(*w, rc::WriteOutcome::Written);
    EXPECT_EQ(testutil::read_file(root + "/srv/containerd/config.toml"), "version = 3\n");
    EXPECT_EQ(testutil::read_file(root + "/srv/containerd/config.toml.enflame.bak"),
              "version = 2\n");
    w = rc::write_file(fd->get(), "/etc/containerd/config.toml", "", true);
    ASSERT_TRUE(w) << w.error().what();
    EXPECT_EQ(*w, rc::WriteOutcome::Removed);
    EXPECT_TRUE(std::filesystem::is_symlink(root + "/etc/containerd"));
}

TEST(RuntimeConfigDropIn, BesideContainerdsConfig) {
    EXPECT_EQ(rc::drop_in_for(rc::Engine::Containerd, "/etc/containerd/config.toml"),
              "/etc/containerd/conf.d/99-enflame.toml");
    EXPECT_EQ(rc::drop_in_for(rc::Engine::Containerd,
                              "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"),
              "/var/lib/rancher/k3s/agent/etc/containerd/conf.d/99-enflame.toml");
    // CRI-O reads drop-ins from its --config-dir, wherever --config is
    EXPECT_EQ(rc::drop_in_for(rc::Engine::Crio, "/opt/crio/crio.conf"),
              "/etc/crio/crio.conf.d/99-enflame.toml");
    EXPECT_EQ(rc::drop_in_for(rc::Engine::Docker, "/etc/docker/daemon.json"), std::nullopt);
}

// ---- enflame-ctk config --set -------------------------------------------------------------

struct SetCase {
    const char* name;
    const char* text;
    const char* key;
    const char* value;
    const char* result;  // nullptr: expect `error`
    const char* error;
};

class SetKey : public testing::TestWithParam<SetCase> {};

TEST_P(SetKey, EditsOneLine) {
    const auto& c = GetParam();
    auto out = rc::set_config_key(c.text, c.key, c.value, "config.toml");
    if (c.result == nullptr) {
        ASSERT_FALSE(out);
        EXPECT_EQ(out.error().what(), c.error);
    } else {
        ASSERT_TRUE(out) << out.error().what();
        EXPECT_EQ(*out, c.result);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SetKey,
    testing::Values(
        SetCase{
            "ReplaceKeepsComments",
            "# mine\n[enflame-container-runtime]\n  mode = \"auto\" # x\nlog-level = \"info\"\n",
            "enflame-container-runtime.mode", "cdi",
            "# mine\n[enflame-container-runtime]\n  mode = \"cdi\"\nlog-level = \"info\"\n",
            nullptr},
        SetCase{"BareNameFindsItsTable", "", "driver-root", "/run/driver",
                "[enflame-container-cli]\ndriver-root = \"/run/driver\"\n", nullptr},
        SetCase{"AddToExistingTable", "[enflame-container-cli]\ndev-root = \"/\"\n", "driver-root",
                "/d", "[enflame-container-cli]\ndriver-root = \"/d\"\ndev-root = \"/\"\n", nullptr},
        SetCase{"NewTableAfterText", "[enflame-container-cli]\ndev-root = \"/\"", "runtimes",
                "[\"crun\"]",
                "[enflame-container-cli]\ndev-root = "
                "\"/\"\n\n[enflame-container-runtime]\nruntimes = [\"crun\"]\n",
                nullptr},
        SetCase{"BooleanAndInteger", "", "accept-envvar-when-unprivileged", "false",
                "[enflame-container-runtime]\naccept-envvar-when-unprivileged = false\n", nullptr},
        SetCase{"UnknownBareKey", "", "mdoe", "cdi", nullptr, "unknown key 'mdoe'"},
        SetCase{"UnknownKeyInTable", "", "enflame-container-runtime.mdoe", "cdi", nullptr,
                "config.toml: line 2: unknown key 'mdoe' in [enflame-container-runtime]"},
        SetCase{"UnknownTable", "", "other.mode", "cdi", nullptr,
                "unknown table [other] in key 'other.mode'"},
        SetCase{"BadValue", "", "mode", "fast", nullptr,
                "config.toml: mode 'fast' is not one of auto, cdi, legacy"},
        SetCase{"WrongType", "", "efsmi-timeout-ms", "soon", nullptr,
                "config.toml: line 2: key 'efsmi-timeout-ms' must be a positive integer"}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- examples/: each one is what the tool writes, or at least parses ----------------------

std::string example(std::string_view rel) {
    return testutil::read_file(std::string(ENFLAME_SOURCE_DIR) + "/examples/" + std::string(rel));
}

TEST(Examples, EngineFilesAreWhatConfigureWrites) {
    rc::Options o;
    o.runtime_path = "/usr/bin/enflame-container-runtime";
    o.set_as_default = true;
    EXPECT_EQ(*rc::configure(Engine::Docker, "", o, "x"), example("docker/daemon.json"));
    o.set_as_default = false;
    EXPECT_EQ(*rc::drop_in(Engine::Crio, "", o, "x"), example("crio/99-enflame.toml"));
    o.cdi_enabled = true;
    EXPECT_EQ(*rc::drop_in(Engine::Containerd, "version = 2\n", o, "x"),
              example("containerd/99-enflame.v2.toml"));
    EXPECT_EQ(*rc::drop_in(Engine::Containerd, "version = 3\n", o, "x"),
              example("containerd/99-enflame.v3.toml"));
}

TEST(Examples, KubernetesManifestsParse) {
    auto rcl = YAML::Load(example("kubernetes/runtimeclass.yaml"));
    EXPECT_EQ(rcl["kind"].as<std::string>(), "RuntimeClass");
    EXPECT_EQ(rcl["handler"].as<std::string>(), "enflame");
    auto pod = YAML::Load(example("kubernetes/pod-visible-devices.yaml"));
    EXPECT_EQ(pod["kind"].as<std::string>(), "Pod");
    EXPECT_EQ(pod["spec"]["runtimeClassName"].as<std::string>(),
              rcl["metadata"]["name"].as<std::string>());
    const auto env = pod["spec"]["containers"][0]["env"];
    ASSERT_TRUE(env.IsSequence());
    EXPECT_EQ(env[0]["name"].as<std::string>(), "ENFLAME_VISIBLE_DEVICES");
    EXPECT_EQ(env[0]["value"].as<std::string>(), "0");
}

}  // namespace
