// SPDX-License-Identifier: Apache-2.0
#include "inject/request.hpp"

#include <gtest/gtest.h>

using inject::request::Request;
using inject::request::Selector;
namespace rq = inject::request;

namespace {

struct ParseCase {
    const char* name;
    std::vector<std::string> env;
    std::map<std::string, std::string> annotations;
    Request::Mode mode;
    std::vector<std::uint32_t> indices;  // selectors of kind Index/GcuName, in order
    std::vector<std::string> named;      // selectors of kind Uuid/Drs, as written
    std::vector<std::string> cdi_names;
    unsigned caps;
    std::string source;
};

const std::vector<ParseCase> kParseCases = {
    {"Unset", {"PATH=/bin"}, {}, Request::Mode::None, {}, {}, {}, 3, ""},
    {"Empty", {"ENFLAME_VISIBLE_DEVICES="}, {}, Request::Mode::None, {}, {}, {}, 3, ""},
    {"Void", {"ENFLAME_VISIBLE_DEVICES=void"}, {}, Request::Mode::None, {}, {}, {}, 3, ""},
    {"None",
     {"ENFLAME_VISIBLE_DEVICES=none"},
     {},
     Request::Mode::NoCards,
     {},
     {},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"All",
     {"ENFLAME_VISIBLE_DEVICES=all"},
     {},
     Request::Mode::All,
     {},
     {},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"One",
     {"ENFLAME_VISIBLE_DEVICES=0"},
     {},
     Request::Mode::List,
     {0},
     {},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"ListWithSpaces",
     {"ENFLAME_VISIBLE_DEVICES= 2 , 0"},
     {},
     Request::Mode::List,
     {2, 0},
     {},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"Range",
     {"ENFLAME_VISIBLE_DEVICES=0-3"},
     {},
     Request::Mode::List,
     {0, 1, 2, 3},
     {},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"RangeOfOne",
     {"ENFLAME_VISIBLE_DEVICES=5-5,1"},
     {},
     Request::Mode::List,
     {5, 1},
     {},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"GcuName",
     {"ENFLAME_VISIBLE_DEVICES=GCU-1,GCU-3"},
     {},
     Request::Mode::List,
     {1, 3},
     {},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"GcuUuidIsNotAnIndex",
     {"ENFLAME_VISIBLE_DEVICES=GCU-U53000080105"},
     {},
     Request::Mode::List,
     {},
     {"GCU-U53000080105"},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"Uuid",
     {"ENFLAME_VISIBLE_DEVICES=TR6Y46010302"},
     {},
     Request::Mode::List,
     {},
     {"TR6Y46010302"},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"Drs",
     {"ENFLAME_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000000"},
     {},
     Request::Mode::List,
     {},
     {"DRS-4c1e9a52-0000-4000-8000-000000000000"},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"DrsName",
     {"ENFLAME_VISIBLE_DEVICES=0:1g.11gb:1"},
     {},
     Request::Mode::List,
     {},
     {"0:1g.11gb:1"},
     {},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"CdiNameInEnv",
     {"ENFLAME_VISIBLE_DEVICES=enflame.com/gpu=0"},
     {},
     Request::Mode::None,
     {},
     {},
     {"enflame.com/gpu=0"},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"Mixed",
     {"ENFLAME_VISIBLE_DEVICES=1,enflame.com/gpu=all"},
     {},
     Request::Mode::List,
     {1},
     {},
     {"enflame.com/gpu=all"},
     3,
     "ENFLAME_VISIBLE_DEVICES"},
    {"LastEnvWins",
     {"ENFLAME_VISIBLE_DEVICES=0", "ENFLAME_VISIBLE_DEVICES=void"},
     {},
     Request::Mode::None,
     {},
     {},
     {},
     3,
     ""},
    {"CapsUtility",
     {"ENFLAME_VISIBLE_DEVICES=0", "ENFLAME_DRIVER_CAPABILITIES=utility"},
     {},
     Request::Mode::List,
     {0},
     {},
     {},
     1,
     "ENFLAME_VISIBLE_DEVICES"},
    {"CapsCompute",
     {"ENFLAME_DRIVER_CAPABILITIES=compute"},
     {},
     Request::Mode::None,
     {},
     {},
     {},
     2,
     ""},
    {"CapsAll", {"ENFLAME_DRIVER_CAPABILITIES=all"}, {}, Request::Mode::None, {}, {}, {}, 3, ""},
    {"CapsEmptyIsDefault",
     {"ENFLAME_DRIVER_CAPABILITIES="},
     {},
     Request::Mode::None,
     {},
     {},
     {},
     3,
     ""},
    {"Annotation",
     {},
     {{"cdi.k8s.io/plugin", "enflame.com/gpu=0,enflame.com/gpu=1"}, {"other", "x"}},
     Request::Mode::None,
     {},
     {},
     {"enflame.com/gpu=0", "enflame.com/gpu=1"},
     3,
     "cdi.k8s.io/plugin"},
    {"AnnotationAndEnvSameNameOnce",
     {"ENFLAME_VISIBLE_DEVICES=enflame.com/gpu=0"},
     {{"cdi.k8s.io/a", "enflame.com/gpu=0"}},
     Request::Mode::None,
     {},
     {},
     {"enflame.com/gpu=0"},
     3,
     "ENFLAME_VISIBLE_DEVICES, cdi.k8s.io/a"},
};

class ParseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseTest, Parses) {
    const auto& c = GetParam();
    auto r = rq::parse(c.env, c.annotations);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->mode, c.mode);
    std::vector<std::uint32_t> indices;
    std::vector<std::string> named;
    for (const auto& s : r->selectors) {
        if (s.kind == Selector::Kind::Index || s.kind == Selector::Kind::GcuName)
            indices.push_back(s.index);
        else
            named.push_back(s.text);
    }
    EXPECT_EQ(indices, c.indices);
    EXPECT_EQ(named, c.named);
    EXPECT_EQ(r->cdi_names, c.cdi_names);
    EXPECT_EQ(r->capabilities, c.caps);
    EXPECT_EQ(r->source, c.source);
    EXPECT_EQ(r->empty(), c.mode == Request::Mode::None && c.cdi_names.empty());
}

INSTANTIATE_TEST_SUITE_P(Request, ParseTest, ::testing::ValuesIn(kParseCases),
                         [](const auto& info) { return std::string(info.param.name); });

struct ErrorCase {
    const char* name;
    std::vector<std::string> env;
    std::map<std::string, std::string> annotations;
    std::string message;
};

const std::vector<ErrorCase> kErrorCases = {
    {"Garbage",
     {"ENFLAME_VISIBLE_DEVICES=x1"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry 'x1': not an index, range, GCU-n, UUID, DRS-uuid or "
     "card:profile:id"},
    {"Negative",
     {"ENFLAME_VISIBLE_DEVICES=-1"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry '-1': not an index, range, GCU-n, UUID, DRS-uuid or "
     "card:profile:id"},
    {"Duplicate",
     {"ENFLAME_VISIBLE_DEVICES=0,1,0"},
     {},
     "ENFLAME_VISIBLE_DEVICES: duplicate entry '0'"},
    {"DuplicateBySpelling",
     {"ENFLAME_VISIBLE_DEVICES=1,GCU-1"},
     {},
     "ENFLAME_VISIBLE_DEVICES: duplicate entry 'GCU-1'"},
    {"DuplicateInRange",
     {"ENFLAME_VISIBLE_DEVICES=2,0-3"},
     {},
     "ENFLAME_VISIBLE_DEVICES: duplicate entry '0-3'"},
    {"DuplicateUuid",
     {"ENFLAME_VISIBLE_DEVICES=TR6Y46010302,TR6Y46010302"},
     {},
     "ENFLAME_VISIBLE_DEVICES: duplicate entry 'TR6Y46010302'"},
    {"ReversedRange",
     {"ENFLAME_VISIBLE_DEVICES=3-1"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry '3-1': range end is before its start"},
    {"HugeRange",
     {"ENFLAME_VISIBLE_DEVICES=0-4000000"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry '0-4000000': range spans more than 1024 cards"},
    {"Overflow",
     {"ENFLAME_VISIBLE_DEVICES=99999999999"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry '99999999999': number out of range"},
    {"EmptyEntry",
     {"ENFLAME_VISIBLE_DEVICES=0,,1"},
     {},
     "ENFLAME_VISIBLE_DEVICES: empty entry in the list"},
    {"TrailingComma",
     {"ENFLAME_VISIBLE_DEVICES=0,"},
     {},
     "ENFLAME_VISIBLE_DEVICES: empty entry in the list"},
    {"AllInList",
     {"ENFLAME_VISIBLE_DEVICES=0,all"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry 'all': cannot be combined with other entries"},
    {"BadDrs",
     {"ENFLAME_VISIBLE_DEVICES=DRS-x"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry 'DRS-x': not a DRS-<uuid>"},
    {"BadDrsName",
     {"ENFLAME_VISIBLE_DEVICES=0:1g.11gb"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry '0:1g.11gb': not an index, range, GCU-n, UUID, DRS-uuid "
     "or card:profile:id"},
    {"BadDrsNameCard",
     {"ENFLAME_VISIBLE_DEVICES=x:1g.11gb:0"},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry 'x:1g.11gb:0': not an index, range, GCU-n, UUID, DRS-uuid "
     "or card:profile:id"},
    {"BadCdiName",
     {"ENFLAME_VISIBLE_DEVICES=enflame.com/gpu="},
     {},
     "ENFLAME_VISIBLE_DEVICES: bad entry 'enflame.com/gpu=': not a fully qualified CDI name "
     "(vendor.com/class=name)"},
    {"UnknownCapability",
     {"ENFLAME_DRIVER_CAPABILITIES=utility,graphics"},
     {},
     "ENFLAME_DRIVER_CAPABILITIES: unknown capability 'graphics' (expected utility, compute or "
     "all)"},
    {"DuplicateCapability",
     {"ENFLAME_DRIVER_CAPABILITIES=compute,compute"},
     {},
     "ENFLAME_DRIVER_CAPABILITIES: duplicate entry 'compute'"},
    {"AnnotationNotQualified",
     {},
     {{"cdi.k8s.io/x", "gpu0"}},
     "cdi.k8s.io/x: bad entry 'gpu0': not a fully qualified CDI name (vendor.com/class=name)"},
    {"AnnotationDuplicate",
     {},
     {{"cdi.k8s.io/x", "enflame.com/gpu=0,enflame.com/gpu=0"}},
     "cdi.k8s.io/x: duplicate entry 'enflame.com/gpu=0'"},
    {"AnnotationEmpty", {}, {{"cdi.k8s.io/x", ""}}, "cdi.k8s.io/x: empty entry in the list"},
};

class ParseErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParseErrorTest, Fails) {
    const auto& c = GetParam();
    auto r = rq::parse(c.env, c.annotations);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput);
    EXPECT_EQ(r.error().what(), c.message);
}

INSTANTIATE_TEST_SUITE_P(Request, ParseErrorTest, ::testing::ValuesIn(kErrorCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CdiName, Qualified) {
    EXPECT_TRUE(rq::is_qualified_cdi_name("enflame.com/gpu=0"));
    EXPECT_TRUE(rq::is_qualified_cdi_name("enflame.com/gpu=DRS-4c1e:x"));
    EXPECT_FALSE(rq::is_qualified_cdi_name("enflame.com/gpu"));
    EXPECT_FALSE(rq::is_qualified_cdi_name("gpu=0"));
    EXPECT_FALSE(rq::is_qualified_cdi_name("enflame.com/g.pu=0"));
    EXPECT_FALSE(rq::is_qualified_cdi_name("-enflame.com/gpu=0"));
    EXPECT_FALSE(rq::is_qualified_cdi_name("enflame.com/gpu=0-"));
}

inject::device::Host four_cards() {
    inject::device::Host h;
    const char* uuids[] = {"TR6Y46010302", "TR1V57100501", "GCU-U53000080105", "TR0000000003"};
    for (std::uint32_t i = 0; i < 4; ++i) {
        inject::device::Device d;
        d.index = i;
        d.minor = i;
        d.uuid = uuids[i];
        h.devices.push_back(d);
    }
    h.devices[1].drs_instances.push_back({1, 0, "1g.11gb", "4c1e9a52-0000-4000-8000-000000000000"});
    // As newer efsmi lists it: no UUID, a profile id and a placement.
    h.devices[2].drs_instances.push_back({2, 3, "2g.22gb", "", 1, "2:2"});
    return h;
}

struct SelectCase {
    const char* name;
    std::string visible;
    std::vector<std::uint32_t> cards;
    std::size_t drs;
    std::string error;  // empty = success
};

const std::vector<SelectCase> kSelectCases = {
    {"All", "all", {0, 1, 2, 3}, 0, ""},
    {"None", "none", {}, 0, ""},
    {"SortedUnique", "3,TR6Y46010302,GCU-U53000080105", {0, 2, 3}, 0, ""},
    {"UuidAndIndexSameCard", "0,TR6Y46010302", {0}, 0, ""},
    {"Range", "1-2", {1, 2}, 0, ""},
    {"Drs", "DRS-4c1e9a52-0000-4000-8000-000000000000", {1}, 1, ""},
    {"DrsByNameWithUuid", "1:1g.11gb:0", {1}, 1, ""},
    {"DrsByNameWithoutUuid", "2:2g.22gb:3,0", {0, 2}, 1, ""},
    {"UnknownDrsName",
     "2:2g.22gb:0",
     {},
     0,
     "ENFLAME_VISIBLE_DEVICES: unknown device '2:2g.22gb:0': no such DRS instance"},
    {"IndexOutOfRange",
     "0,4",
     {},
     0,
     "ENFLAME_VISIBLE_DEVICES: unknown device '4': no card with index 4 (the host has cards "
     "0,1,2,3)"},
    {"RangeOutOfRange",
     "2-5",
     {},
     0,
     "ENFLAME_VISIBLE_DEVICES: unknown device '2-5': no card with index 4 (the host has cards "
     "0,1,2,3)"},
    {"UnknownUuid",
     "TRXXXXXXXXXX",
     {},
     0,
     "ENFLAME_VISIBLE_DEVICES: unknown device 'TRXXXXXXXXXX': no card with this uuid"},
    {"UnknownDrs",
     "DRS-4c1e9a52-0000-4000-8000-00000000ffff",
     {},
     0,
     "ENFLAME_VISIBLE_DEVICES: unknown device 'DRS-4c1e9a52-0000-4000-8000-00000000ffff': no such "
     "DRS instance"},
};

class SelectTest : public ::testing::TestWithParam<SelectCase> {};

TEST_P(SelectTest, Selects) {
    const auto& c = GetParam();
    auto req = rq::parse({"ENFLAME_VISIBLE_DEVICES=" + c.visible}, {});
    ASSERT_TRUE(req) << req.error().what();
    auto sel = rq::select(*req, four_cards());
    if (!c.error.empty()) {
        ASSERT_FALSE(sel);
        EXPECT_EQ(sel.error().code(), inject::Errc::NotFound);
        EXPECT_EQ(sel.error().what(), c.error);
        return;
    }
    ASSERT_TRUE(sel) << sel.error().what();
    EXPECT_EQ(sel->card_indices, c.cards);
    EXPECT_EQ(sel->drs_instances.size(), c.drs);
}

INSTANTIATE_TEST_SUITE_P(Request, SelectTest, ::testing::ValuesIn(kSelectCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Select, NoCardsOnHost) {
    auto req = rq::parse({"ENFLAME_VISIBLE_DEVICES=0"}, {});
    ASSERT_TRUE(req);
    auto sel = rq::select(*req, inject::device::Host{});
    ASSERT_FALSE(sel);
    EXPECT_EQ(sel.error().what(),
              "ENFLAME_VISIBLE_DEVICES: unknown device '0': no card with index 0 (the host has no "
              "cards)");
}

}  // namespace
