// SPDX-License-Identifier: Apache-2.0
// The `efsmi -q --json-format` parser (values as strings or numbers, sections nested or flat,
// every malformed case with its exact error). The DRS parsers are in efsmi_drs_test.cpp.
// The JSON format was not captured from a real driver: it is our own model
// (docs/efsmi-model.md), so these tests show the parser reads that model, not that a real
// efsmi prints it. The `efsmi -q` text parser (efsmi_text_test.cpp) has real samples.
#include <gtest/gtest.h>

#include <string>

#include "efsmi_card.hpp"
#include "inject/discover.hpp"
#include "test_util.hpp"

namespace {

using namespace inject::discover;
using testutil::edit;
using testutil::expect_card0;

// Our model of docs/efsmi-model.md (not a real capture), one card.
const std::string kOneCard = R"({"devices": [
  {"id": 0,
   "Driver Info": {"Ver": "1.4.3.4"},
   "Device Info": {"Dev Name": "S60", "Dev UUID": "TR6Y46010302", "Dev SN": "A0A1650510676",
                   "Health": "True"},
   "PCIe Info": {"Vendor ID": "1e36", "Device ID": "c035", "Domain": "0000", "Bus": "17",
                 "Dev": "00", "Func": 0},
   "Device Mem Info": {"Total Size": "42976 MiB", "Used Size": "0 MiB"}}
]})";

struct Variant {
    const char* name;
    std::string text;
};

std::vector<Variant> variants() {
    const std::string f = kOneCard;
    return {
        {"AsInOurModel", f},
        {"NumbersForStrings",
         edit(edit(edit(f, R"("Bus": "17")", R"("Bus": 17)"), R"("Dev": "00")", R"("Dev": 0)"),
              R"("Domain": "0000")", R"("Domain": 0)")},
        {"MemoryAsNumberIsMiB", edit(f, R"("Total Size": "42976 MiB")", R"("Total Size": 42976)")},
        {"HealthAsBool", edit(f, R"("Health": "True")", R"("Health": true)")},
        {"IdAsString", edit(f, R"("id": 0)", R"("id": "0")")},
        {"NoIdUsesPosition", edit(f, R"("id": 0,)", "")},
        {"OldDriverKeys", edit(edit(f, "Total Size", "Mem Size"), "Used Size", "Mem Usage")},
        {"FlatSections",
         R"({"devices":[{"id":0,"Ver":"1.4.3.4","Dev Name":"S60","Dev UUID":"TR6Y46010302",
            "Dev SN":"A0A1650510676","Health":"True","Device ID":"c035","Domain":"0000","Bus":"17",
            "Dev":"00","Func":"0","Total Size":"42976 MiB"}]})"},
        {"NestedSubsection",
         edit(f, R"("Func": 0})", R"("Func": 0, "Link Info": {"Max Link Width": "X16"}})")},
        {"NullAndListsIgnored",
         edit(f, R"("Used Size": "0 MiB")", R"("Used Size": null, "Procs": [1, 2])")},
        {"ExtraTopLevelKeys", edit(f, R"({"devices")", R"({"version": "1.0", "devices")")},
    };
}

class EfsmiJsonVariant : public testing::TestWithParam<Variant> {};

TEST_P(EfsmiJsonVariant, SameCard) {
    auto r = parse_efsmi_json(GetParam().text);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 1u);
    expect_card0((*r)[0]);
}

INSTANTIATE_TEST_SUITE_P(Variants, EfsmiJsonVariant, testing::ValuesIn(variants()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EfsmiJson, NoDevicesIsZeroCards) {
    auto r = parse_efsmi_json(R"({"devices": []})");
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(r->empty());
}

TEST(EfsmiJson, TwoCardsKeepTheirIds) {
    const std::string two = edit(
        kOneCard, "]}",
        "," +
            edit(edit(edit(kOneCard.substr(kOneCard.find("{\"id\"")), R"("id": 0)", R"("id": 5)"),
                      "TR6Y46010302", "TR1V57100501"),
                 "]}", "") +
            "]}");
    auto r = parse_efsmi_json(two);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[1].index, 5u);
    EXPECT_EQ((*r)[1].uuid, "TR1V57100501");
}

struct Bad {
    const char* name;
    std::string text;
    std::string error;
};

std::vector<Bad> bad_cases() {
    const std::string f = kOneCard;
    constexpr const char* kSrc = "efsmi -q --json-format: ";
    auto e = [&](const std::string& s) { return kSrc + s; };
    return {
        {"Empty", "", e("empty output")},
        {"Garbage", "Segmentation fault",
         e("byte 1: syntax error while parsing value - invalid literal; last read: 'S'")},
        {"Truncated", f.substr(0, 100),
         e("byte 101: syntax error while parsing object - unexpected end of input; expected '}'")},
        {"UsageText", "usage: efsmi [-q] [-L]\n",
         e("byte 1: syntax error while parsing value - invalid literal; last read: 'u'")},
        {"NotAnObject", "[1, 2]", e("no 'devices' array")},
        {"DevicesNotAList", R"({"devices": {}})", e("no 'devices' array")},
        {"DeviceNotAnObject", R"({"devices": [1]})", e("devices[0]: not an object")},
        {"NoUuid", edit(f, R"("Dev UUID": "TR6Y46010302", )", ""), e("devices[0]: no 'Dev UUID'")},
        {"NoPcie", edit(f, R"("Domain": "0000", "Bus": "17",)", ""),
         e("devices[0]: no 'Domain', 'Bus'")},
        {"BadMemory", edit(f, "42976 MiB", "lots"),
         e("devices[0]: bad value 'lots' for 'Total Size'")},
        {"NegativeMemory", edit(f, R"("42976 MiB")", "-5"),
         e("devices[0]: bad value '-5 MiB' for 'Total Size'")},
        {"BadBus", edit(f, R"("Bus": "17")", R"("Bus": "1x")"),
         e("devices[0]: bad value '1x' for 'Bus'")},
        {"BadHealth", edit(f, R"("Health": "True")", R"("Health": 3)"),
         e("devices[0]: bad value '3' for 'Health'")},
        {"BadId", edit(f, R"("id": 0)", R"("id": -1)"), e("devices[0]: bad id '-1'")},
        {"DuplicateId", edit(f, "]}", "," + f.substr(f.find("{\"id\""))),
         e("devices[1]: duplicate id 0")},
        {"DuplicateKeyAcrossSections", edit(f, R"("Func": 0})", R"("Func": 0, "Dev Name": "T10"})"),
         e("devices[0]: duplicate 'Dev Name'")},
    };
}

class EfsmiJsonBad : public testing::TestWithParam<Bad> {};

TEST_P(EfsmiJsonBad, ExactError) {
    auto r = parse_efsmi_json(GetParam().text);
    ASSERT_FALSE(r) << "parsed " << r->size() << " cards";
    EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput);
    EXPECT_EQ(r.error().what(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(Malformed, EfsmiJsonBad, testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Backend, NamesRoundTrip) {
    for (Backend b : {Backend::Auto, Backend::EfsmiJson, Backend::EfsmiText, Backend::Efml}) {
        auto r = parse_backend(backend_name(b));
        ASSERT_TRUE(r);
        EXPECT_EQ(*r, b);
    }
    auto bad = parse_backend("nvml");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(),
              "unknown backend 'nvml' (expected auto, efsmi-json, efsmi-text or libefml)");
}

}  // namespace
