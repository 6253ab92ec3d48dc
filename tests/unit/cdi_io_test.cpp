// SPDX-License-Identifier: Apache-2.0
// CDI spec reading and writing: round trips through YAML and JSON, strictness, exact errors.
#include "inject/cdi_io.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace cdi = inject::cdi;

namespace {

// A spec that uses every field we model.
cdi::Spec full_spec() {
    cdi::Spec s;
    s.version = "0.7.0";
    s.kind = "enflame.com/gpu";
    s.annotations = {{"b.example.com/x", "2"}, {"a.example.com/y", "yes"}};
    cdi::Device d0;
    d0.name = "0";
    d0.annotations = {{"note", "first card"}};
    d0.edits.env = {"TOPS_VISIBLE_DEVICES=0", "EMPTY="};
    d0.edits.device_nodes.push_back(
        cdi::DeviceNode{"/dev/gcu0", "/sim/dev/gcu0", "c", 238, 0, 0666u, "rw", 0u, 44u});
    d0.edits.additional_gids = {44, 1000};
    cdi::Device d1;
    d1.name = "all";
    d1.edits.device_nodes.push_back(cdi::DeviceNode{"/dev/gcu1", "", "", std::nullopt, std::nullopt,
                                                    std::nullopt, "", std::nullopt, std::nullopt});
    s.devices = {d0, d1};
    s.edits.env = {"ENFLAME_VISIBLE_DEVICES=void"};
    s.edits.hooks.push_back(
        cdi::Hook{"createContainer",
                  "/usr/bin/enflame-ctk",
                  {"enflame-ctk", "hook", "update-ldcache", "--folder", "/usr/lib"},
                  {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
                  10});
    s.edits.mounts.push_back(cdi::Mount{"/sim/usr/lib/libefml.so.1.0.0",
                                        "/usr/lib/libefml.so.1",
                                        "bind",
                                        {"ro", "nosuid", "nodev", "rbind", "rprivate"}});
    s.edits.mounts.push_back(cdi::Mount{"/host path/with \"quotes\"", "/c:colon", "", {}});
    return s;
}

TEST(CdiIo, YamlRoundTrip) {
    const auto s = full_spec();
    const auto yaml = cdi::to_yaml(s);
    auto back = cdi::parse_spec(yaml, "t.yaml");
    ASSERT_TRUE(back) << back.error().what() << "\n" << yaml;
    EXPECT_EQ(*back, s) << yaml;
    EXPECT_EQ(cdi::to_yaml(*back), yaml);
}

TEST(CdiIo, JsonRoundTrip) {
    const auto s = full_spec();
    const auto json = cdi::to_json(s);
    auto back = cdi::parse_spec(json, "t.json");
    ASSERT_TRUE(back) << back.error().what() << "\n" << json;
    EXPECT_EQ(*back, s) << json;
    EXPECT_EQ(cdi::to_json(*back), json);
}

TEST(CdiIo, YamlAndJsonAgree) {
    const auto s = full_spec();
    auto from_yaml = cdi::parse_spec(cdi::to_yaml(s), "t.yaml");
    auto from_json = cdi::parse_spec(cdi::to_json(s), "t.json");
    ASSERT_TRUE(from_yaml && from_json);
    EXPECT_EQ(*from_yaml, *from_json);
}

TEST(CdiIo, YamlQuotesWhatWouldNotReadBackAsAString) {
    cdi::Spec s;
    s.version = "0.5.0";
    s.kind = "enflame.com/gpu";
    for (const char* n :
         {"0", "0:1g.11gb:0", "true", "no", "y", "null", "1e3", "all", "TR6Y46010302",
          "DRS-4c1e9a52-0000-4000-8000-000000000000", "0x1f", ".inf", "-", "a: b", "#x"})
        s.devices.push_back(cdi::Device{n, {}, {}});
    const auto yaml = cdi::to_yaml(s);
    EXPECT_NE(yaml.find("- name: \"0\"\n"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("- name: all\n"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("- name: \"true\"\n"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("- name: DRS-4c1e9a52-0000-4000-8000-000000000000\n"), std::string::npos)
        << yaml;
    EXPECT_NE(yaml.find("cdiVersion: \"0.5.0\"\n"), std::string::npos) << yaml;
    auto back = cdi::parse_spec(yaml, "t.yaml");
    ASSERT_TRUE(back) << back.error().what() << "\n" << yaml;
    EXPECT_EQ(*back, s);
}

TEST(CdiIo, YamlLayout) {
    cdi::Spec s;
    s.version = "0.5.0";
    s.kind = "enflame.com/gpu";
    cdi::Device d{"0", {}, {}};
    d.edits.device_nodes.push_back(
        cdi::DeviceNode{"/dev/gcu0", "/dev/gcu0", "c", 238, 0, 438u, "", {}, {}});
    s.devices.push_back(d);
    s.edits.env = {"ENFLAME_VISIBLE_DEVICES=void"};
    s.edits.mounts.push_back(cdi::Mount{"/usr/bin/efsmi", "/usr/bin/efsmi", "", {"ro", "nosuid"}});
    EXPECT_EQ(cdi::to_yaml(s),
              "cdiVersion: \"0.5.0\"\n"
              "kind: enflame.com/gpu\n"
              "devices:\n"
              "- name: \"0\"\n"
              "  containerEdits:\n"
              "    deviceNodes:\n"
              "    - path: /dev/gcu0\n"
              "      hostPath: /dev/gcu0\n"
              "      type: c\n"
              "      major: 238\n"
              "      minor: 0\n"
              "      fileMode: 438\n"
              "containerEdits:\n"
              "  env:\n"
              "  - ENFLAME_VISIBLE_DEVICES=void\n"
              "  mounts:\n"
              "  - hostPath: /usr/bin/efsmi\n"
              "    containerPath: /usr/bin/efsmi\n"
              "    options:\n"
              "    - ro\n"
              "    - nosuid\n");
}

TEST(CdiIo, ReadsWhatOtherToolsWrite) {
    // Flow style, anchors, comments, octal file mode (YAML 1.1, as go-yaml reads it), nulls.
    const char* yaml = R"(# written by hand
cdiVersion: 0.5.0
kind: "enflame.com/gpu"
devices:
  - name: gpu0
    containerEdits: &e
      deviceNodes: [{path: /dev/gcu0, major: 238, minor: 0x0, fileMode: 0666}]
      env: ~
  - name: "1"
    containerEdits: *e
containerEdits:
)";
    auto s = cdi::parse_spec(yaml, "hand.yaml");
    ASSERT_TRUE(s) << s.error().what();
    ASSERT_EQ(s->devices.size(), 2u);
    EXPECT_EQ(s->version, "0.5.0");
    EXPECT_EQ(s->devices[0].edits.device_nodes[0].file_mode, 0666u);
    EXPECT_EQ(s->devices[1].edits, s->devices[0].edits);
    EXPECT_TRUE(s->edits.empty());
}

struct BadCase {
    const char* name;
    const char* text;
    const char* error;
};

class CdiIoBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(CdiIoBad, ExactError) {
    auto s = cdi::parse_spec(GetParam().text, "bad.yaml");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code(), inject::Errc::InvalidInput);
    EXPECT_EQ(s.error().what(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CdiIoBad,
    ::testing::Values(
        BadCase{"UnknownTopField", "cdiVersion: 0.5.0\nkind: a/b\ndevcies: []\n",
                "bad.yaml: line 3: unknown field 'devcies'"},
        BadCase{"UnknownNodeField",
                "cdiVersion: 0.5.0\nkind: a/b\ndevices:\n- name: x\n  containerEdits:\n    "
                "deviceNodes:\n"
                "    - path: /dev/x\n      mjor: 1\n",
                "bad.yaml: line 8: devices[0].containerEdits.deviceNodes[0]: unknown field 'mjor'"},
        BadCase{"UnquotedNumericName", "cdiVersion: 0.5.0\nkind: a/b\ndevices:\n- name: 0\n",
                "bad.yaml: line 4: devices[0].name: want a string, got a number (quote it to make "
                "it a string)"},
        BadCase{"QuotedMajor",
                "kind: a/b\ndevices:\n- name: x\n  containerEdits:\n    deviceNodes: [{path: /d, "
                "major: \"1\"}]\n",
                "bad.yaml: line 5: devices[0].containerEdits.deviceNodes[0].major: want an "
                "integer, got a string"},
        BadCase{
            "NegativeUid",
            "kind: a/b\ndevices:\n- name: x\n  containerEdits:\n    deviceNodes: [{path: /d, uid: "
            "-1}]\n",
            "bad.yaml: line 5: devices[0].containerEdits.deviceNodes[0].uid: '-1' is out of range"},
        BadCase{"EnvNotAList", "kind: a/b\ncontainerEdits:\n  env: A=1\n",
                "bad.yaml: line 3: containerEdits.env: want a list of strings, got a string"},
        BadCase{"DevicesNotAList", "kind: a/b\ndevices: {name: x}\n",
                "bad.yaml: line 2: devices: want a list, got a mapping"},
        BadCase{"DuplicateKey", "kind: a/b\nkind: c/d\n",
                "bad.yaml: line 2: duplicate field 'kind'"},
        BadCase{"TopIsAList", "- a\n- b\n",
                "bad.yaml: line 1: want a mapping at the top, got a list"},
        BadCase{"Empty", "", "bad.yaml: empty spec"},
        BadCase{"YamlSyntax", "kind: [a\n",
                "bad.yaml: line 2, column 1: end of sequence flow not found"},
        BadCase{"JsonSyntax", "{\"kind\": }",
                "bad.yaml: byte 10: parse error at line 1, column 10: syntax error while parsing "
                "value - "
                "unexpected '}'; expected '[', '{', or a literal"},
        BadCase{"JsonUnknownField", "{\"cdiVersion\": \"0.5.0\", \"kind\": \"a/b\", \"extra\": 1}",
                "bad.yaml: unknown field 'extra'"},
        BadCase{"JsonNumberName", "{\"kind\": \"a/b\", \"devices\": [{\"name\": 0}]}",
                "bad.yaml: devices[0].name: want a string, got a number (quote it to make it a "
                "string)"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CdiIo, DeepNestingIsRefusedNotACrash) {
    const std::string json = std::string(100000, '[') + std::string(100000, ']');
    auto j = cdi::parse_spec(json.substr(0, 0) + "{\"kind\": " + json + "}", "deep.json");
    ASSERT_FALSE(j);
    EXPECT_EQ(j.error().what(), "deep.json: nested deeper than 64 levels");
    std::string yaml = "kind:\n";
    for (int i = 0; i < 200; ++i)
        yaml += std::string(static_cast<std::size_t>(i + 1), ' ') + "- \n";
    auto y =
        cdi::parse_spec("a: " + std::string(300, '[') + std::string(300, ']') + "\n", "deep.yaml");
    ASSERT_FALSE(y);
    EXPECT_EQ(y.error().what(), "deep.yaml: nested deeper than 64 levels");
    auto y2 = cdi::parse_spec(yaml, "deep2.yaml");
    ASSERT_FALSE(y2);
}

TEST(CdiIo, Formats) {
    EXPECT_EQ(cdi::format_for_path("/etc/cdi/x.json"), cdi::Format::Json);
    EXPECT_EQ(cdi::format_for_path("/etc/cdi/x.yaml"), cdi::Format::Yaml);
    EXPECT_EQ(cdi::format_for_path("-"), cdi::Format::Yaml);
    EXPECT_EQ(*cdi::parse_format("json"), cdi::Format::Json);
    auto bad = cdi::parse_format("xml");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(), "unknown format 'xml': want yaml or json");
}

TEST(CdiIo, LoadSpecNamesThePath) {
    testutil::TempDir t;
    auto missing = cdi::load_spec(t / "nope.yaml");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code(), inject::Errc::NotFound);
    EXPECT_NE(missing.error().what().find("reading CDI spec '" + (t / "nope.yaml") + "'"),
              std::string::npos)
        << missing.error().what();
    testutil::write_file(t / "x.yaml", "kind: a/b\nbogus: 1\n");
    auto bad = cdi::load_spec(t / "x.yaml");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(), (t / "x.yaml") + ": line 2: unknown field 'bogus'");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The fast block-YAML reader must give exactly yaml-cpp's tree for what it accepts.

#include "cdi/tree.hpp"

namespace {

namespace detail = inject::cdi::detail;

std::string dump(const detail::Node& n, int depth = 0) {
    std::string pad(static_cast<std::size_t>(depth * 2), ' ');
    std::string o = pad + "kind=" + std::to_string(static_cast<int>(n.kind)) +
                    " line=" + std::to_string(n.line) + " text='" + n.text + "'\n";
    for (const auto& i : n.items) o += dump(i, depth + 1);
    for (const auto& [k, v] : n.fields) o += pad + " " + k + ":\n" + dump(v, depth + 1);
    return o;
}

std::string golden(const char* name) {
    std::string t = testutil::read_file(testutil::fixture(std::string("cdi/") + name));
    for (auto p = t.find("@ROOT@"); p != std::string::npos; p = t.find("@ROOT@"))
        t.replace(p, 6, "/sim-root");
    return t;
}

struct FastCase {
    const char* name;
    std::string text;
    bool fast;  // the fast reader takes it (else it must decline)
};

class CdiFastYaml : public ::testing::TestWithParam<FastCase> {};

TEST_P(CdiFastYaml, SameTreeAsYamlCpp) {
    const auto& c = GetParam();
    auto fast = detail::parse_simple_yaml(c.text);
    ASSERT_EQ(fast.has_value(), c.fast) << c.text;
    if (!fast) return;
    auto slow = detail::parse_yaml_tree(c.text, "t");
    ASSERT_TRUE(slow) << slow.error().what();
    EXPECT_TRUE(*fast == *slow) << c.text << "\nfast:\n" << dump(*fast) << "slow:\n" << dump(*slow);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CdiFastYaml,
    ::testing::Values(
        FastCase{"Golden8", golden("golden-8card.yaml"), true},
        FastCase{"GoldenDrs", golden("golden-8card-drs.yaml"), true},
        FastCase{"FullSpec", cdi::to_yaml(full_spec()), true},
        FastCase{"Comments",
                 "# head\n---\nkind: a/b # trailing\n\ndevices:   # c\n  # inside\n  - name: x\n   "
                 " containerEdits:\n      env:\n        - A=1 # c\n        - 'B=#2'\n",
                 true},
        FastCase{"SeqAtKeyIndent",
                 "devices:\n- name: \"0\"\n  containerEdits:\n    env:\n    - A=1\nkind: a/b\n",
                 true},
        FastCase{"QuotedKeysAndEscapes", "\"kind\": 'it''s'\n'x': \"a\\\"b\\\\c\\u00e9\\n\"\n",
                 true},
        FastCase{"NullsAndEmpties", "a:\nb: ~\nc: null\nd: {}\ne: []\nf:\n  g:\nh: ''\n", true},
        FastCase{"Scalars",
                 "a: 0666\nb: 0x1f\nc: 1e3\nd: true\ne: no\nf: 1.5\ng: -1\nh: 0:1g.11gb:0\ni: /a/b "
                 "c\nj: a:b\n",
                 true},
        FastCase{"NestedSeq", "a:\n  - - x\n    - y\n  -\n    - z\n  - k: v\n    l: w\n", true},
        FastCase{"EmptyItem", "a:\n- \n- b\n", true}, FastCase{"NullAtEnd", "a: 1\nb:\n", true},
        FastCase{"NullAtEndAfterComment", "a: 1\nb:\n# done\n\n", true},
        FastCase{"EmptyItemAtEnd", "a:\n- b\n-\n", true},
        FastCase{"WideIndent",
                 "devices:\n    -   name: x\n        containerEdits:\n            env: [A=1]\n",
                 false},
        FastCase{"FlowList", "env: [A=1, B=2]\n", false}, FastCase{"FlowMap", "a: {b: c}\n", false},
        FastCase{"Anchor", "a: &x 1\nb: *x\n", false}, FastCase{"Tag", "a: !!str 1\n", false},
        FastCase{"BlockScalar", "a: |\n  text\n", false},
        FastCase{"MultiLinePlain", "a: one\n  two\n", false},
        FastCase{"MultiLineQuoted", "a: \"one\n  two\"\n", false},
        FastCase{"Tab", "a:\n\t- b\n", false}, FastCase{"Crlf", "a: b\r\n", false},
        FastCase{"Duplicate", "a: 1\na: 2\n", false},
        FastCase{"ColonSpaceInValue", "a: b: c\n", false},
        FastCase{"TwoDocuments", "a: 1\n---\nb: 2\n", false},
        FastCase{"IndentedStart", "  a: 1\n", false},
        FastCase{"BadIndent", "a:\n    b: 1\n  c: 2\n", false},
        FastCase{"UnknownEscape", "a: \"\\x41\"\n", false},
        FastCase{"PlainScalarTop", "just text\n", false}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CdiFastYaml, PlainScalarKinds) {
    // resolve_plain() types plain scalars for both readers (so the differential test above
    // cannot catch a mistake in it): the words and numbers YAML gives a type, and the
    // strings its shortcut returns at once (long, or starting like no word and no number).
    using K = detail::Node::Kind;
    const std::vector<std::pair<std::string, K>> cases = {
        {"", K::Null},
        {"~", K::Null},
        {"null", K::Null},
        {"NULL", K::Null},
        {"nulls", K::String},
        {"true", K::Bool},
        {"TRUE", K::Bool},
        {"False", K::Bool},
        {"falsey", K::String},
        {"no", K::Bool},
        {"nope", K::String},
        {"off", K::Bool},
        {"offset", K::String},
        {"Y", K::Bool},
        {"yes", K::Bool},
        {"On", K::Bool},
        {"path", K::String},
        {"type", K::String},
        {"/dev/gcu0", K::String},
        {"rwm", K::String},
        {"0666", K::Number},
        {"0x1f", K::Number},
        {"1e3", K::Number},
        {"-1", K::Number},
        {"-.inf", K::Number},
        {".NaN", K::Number},
        {"+12.5", K::Number},
        {"123456789", K::Number},
        {"_1", K::Number},
        {"1.2.3", K::String},
        {"0:1g.11gb:0", K::String},
        {"abcdefgh", K::String},
        {"-", K::String},
        {".", K::String},
        {"0x", K::String},
        {"0xg", K::String},
    };
    for (const auto& [text, kind] : cases)
        EXPECT_EQ(static_cast<int>(detail::resolve_plain(text)), static_cast<int>(kind))
            << "'" << text << "'";
}

TEST(CdiFastYaml, WideIndentStillParses) {
    // the flow list sends it to yaml-cpp; the result is the same Spec
    auto s = cdi::parse_spec(
        "cdiVersion: 0.5.0\nkind: a/b\ndevices:\n    -   name: x\n        containerEdits:\n"
        "            env: [A=1]\n",
        "t");
    ASSERT_TRUE(s) << s.error().what();
    EXPECT_EQ(s->devices.at(0).edits.env, std::vector<std::string>{"A=1"});
}

}  // namespace
