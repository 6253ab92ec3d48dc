// SPDX-License-Identifier: Apache-2.0
// The `efsmi -q` text parser on the shared fixtures as they are, on the variants drivers print,
// and on every malformed case with the exact error a user sees. Also parse_memory.
#include <gtest/gtest.h>

#include <string>

#include "efsmi_card.hpp"
#include "inject/discover.hpp"
#include "test_util.hpp"

namespace {

using inject::discover::parse_efsmi_text;
using inject::discover::parse_memory;
using testutil::edit;
using testutil::expect_card;
using testutil::expect_card0;

constexpr std::uint64_t kMiB = 1ULL << 20;

std::string fixture1() {
    return testutil::read_file(testutil::fixture("efsmi/efsmi-q-s60-1dev.txt"));
}
std::string fixture2() {
    return testutil::read_file(testutil::fixture("efsmi/efsmi-q-s60-2dev.txt"));
}

// Replaces every occurrence.
std::string edit_all(std::string text, const std::string& from, const std::string& to) {
    for (auto pos = text.find(from); pos != std::string::npos;
         pos = text.find(from, pos + to.size()))
        text.replace(pos, from.size(), to);
    return text;
}

TEST(EfsmiText, OneCardFixtureEveryField) {
    auto r = parse_efsmi_text(fixture1());
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 1u);
    expect_card0((*r)[0]);
}

TEST(EfsmiText, TwoCardFixtureEveryField) {
    auto r = parse_efsmi_text(fixture2());
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 2u);
    expect_card0((*r)[0]);
    expect_card((*r)[1], {1, "TR1V57100501", "A0A1650510677", "S60", "0000:b1:00.0", "c035",
                          "1.4.3.4", 42976});
}

TEST(EfsmiText, OldDriverT10FixtureEveryField) {
    auto r = parse_efsmi_text(
        testutil::read_file(testutil::fixture("efsmi/efsmi-q-t10-old-driver.txt")));
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 1u);
    expect_card((*r)[0], {0, "GCU-U53000080105", "B1C2330100021", "T10", "0000:3b:00.0", "c033",
                          "1.2.0.19", 16384});
}

// Variants that must give exactly the fixture's card.
struct Variant {
    const char* name;
    std::string text;
};

std::vector<Variant> variants() {
    const std::string f = fixture1();
    return {
        {"OldDriverKeys",
         edit(edit(f, "Total Size   ", "Mem Size     "), "Used Size   ", "Mem Usage   ")},
        {"TempUnitC", edit(f, "35 ℃", "35 C")},
        {"TempUnitDegreeC", edit(f, "35 ℃", "35 °C")},
        {"TempUnitNoSpace", edit(f, "35 ℃", "35℃")},
        {"NoPaddingBeforeColon", edit_all(f, "                : ", ": ")},
        {"NoIndentation", edit_all(edit_all(f, "\n        ", "\n"), "\n    ", "\n")},
        {"TabsForSpaces", edit_all(f, "        ", "\t\t")},
        {"CrLfLineEnds", edit_all(f, "\n", "\r\n")},
        {"NoBanner", f.substr(f.find("DEV ID 0"))},
        {"BlankLinesBetweenSections", edit_all(f, "\n    ", "\n\n    ")},
        {"TrailingBanner",
         f + "-------------------------------------------------------------------------------\n"},
        {"UppercaseHex", edit(f, "c035", "C035")},
        {"HexPrefix", edit(f, ": c035", ": 0xc035")},
    };
}

class EfsmiTextVariant : public testing::TestWithParam<Variant> {};

TEST_P(EfsmiTextVariant, SameCard) {
    auto r = parse_efsmi_text(GetParam().text);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 1u);
    expect_card0((*r)[0]);
}

INSTANTIATE_TEST_SUITE_P(Variants, EfsmiTextVariant, testing::ValuesIn(variants()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EfsmiText, UnhealthyCard) {
    auto r = parse_efsmi_text(edit(fixture1(), "Health                  : True", "Health : False"));
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ((*r)[0].healthy, std::optional<bool>(false));
}

TEST(EfsmiText, BannerOnlyIsZeroCards) {
    const std::string f = fixture1();
    auto r = parse_efsmi_text(f.substr(0, f.find("DEV ID 0")));
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(r->empty());
}

TEST(EfsmiText, SourceNamesTheInput) {
    auto r = parse_efsmi_text("junk\n", "efsmi-text");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "efsmi-text: line 1: unexpected text 'junk' before the first DEV ID");
}

struct Bad {
    const char* name;
    std::string text;
    std::string error;
};

std::vector<Bad> bad_cases() {
    const std::string f = fixture1();
    const std::string f2 = fixture2();
    const std::string head = f.substr(0, f.find("        Dev UUID"));
    return {
        {"BadTotalSize", edit(f, "42976 MiB", "x"),
         "efsmi -q: line 36: bad value 'x' for 'Total Size'"},
        {"TotalSizeWithoutUnit", edit(f, "42976 MiB", "42976"),
         "efsmi -q: line 36: bad value '42976' for 'Total Size'"},
        {"BadOldMemSize", edit(f, "Total Size              : 42976 MiB", "Mem Size : lots"),
         "efsmi -q: line 36: bad value 'lots' for 'Mem Size'"},
        {"BothMemoryKeys", edit(f, "Reserved Size", "Mem Size     "),
         "efsmi -q: line 37: duplicate memory size ('Mem Size')"},
        {"NoUuid", edit(f, "        Dev UUID                : TR6Y46010302\n", ""),
         "efsmi -q: line 5: DEV ID 0: no 'Dev UUID'"},
        {"EmptyUuid", edit(f, ": TR6Y46010302", ":"),
         "efsmi -q: line 10: bad value '' for 'Dev UUID'"},
        {"UuidWithSpace", edit(f, "TR6Y46010302", "TR6Y 4601"),
         "efsmi -q: line 10: bad value 'TR6Y 4601' for 'Dev UUID'"},
        {"TruncatedBlock", head,
         "efsmi -q: line 5: DEV ID 0: no 'Dev UUID', 'Total Size', 'Domain', 'Bus', 'Dev', 'Func'"},
        {"TruncatedMidValue", f.substr(0, f.find("42976 MiB") + 3),
         "efsmi -q: line 36: bad value '429' for 'Total Size'"},
        {"TruncatedSecondCard", f2.substr(0, f2.find("    Device Info", f2.find("DEV ID 1"))),
         "efsmi -q: line 59: DEV ID 1: no 'Dev Name', 'Dev UUID', 'Total Size', 'Domain', 'Bus', "
         "'Dev', 'Func'"},
        {"NoFinalNewline", f.substr(0, f.size() - 1),
         "efsmi -q: line 58: output ends in the middle of a line (truncated?)"},
        {"TruncatedAtSectionName", f.substr(0, f.find("Total DBE") + 12),
         "efsmi -q: line 53: output ends in the middle of a line (truncated?)"},
        {"TruncatedAfterSectionName", f.substr(0, f.find("RMA Info") + 9),
         "efsmi -q: line 51: output ends after 'RMA Info' (truncated?)"},
        {"Garbage", "Segmentation fault (core dumped)\n",
         "efsmi -q: line 1: unexpected text 'Segmentation fault (core dumped)' before the first "
         "DEV ID"},
        {"BinaryInBlock", edit(f, "    Clock Info\n", "    \x01\x02\xff\n"),
         "efsmi -q: line 29: unexpected text '?"
         "?"
         "?'"},
        {"Empty", "", "efsmi -q: empty output"},
        {"OnlyWhitespace", "\n  \n", "efsmi -q: empty output"},
        {"BadHealth", edit(f, ": True", ": Maybe"),
         "efsmi -q: line 14: bad value 'Maybe' for 'Health'"},
        {"BadBus", edit(f, ": 17\n", ": zz\n"), "efsmi -q: line 19: bad value 'zz' for 'Bus'"},
        {"BusOutOfRange", edit(f, ": 17\n", ": 100\n"),
         "efsmi -q: line 19: bad value '100' for 'Bus'"},
        {"FuncOutOfRange", edit(f, "Func                    : 0", "Func : 9"),
         "efsmi -q: line 21: bad value '9' for 'Func'"},
        {"BadDomain", edit(f, ": 0000\n", ": 0000:\n"),
         "efsmi -q: line 18: bad value '0000:' for 'Domain'"},
        {"BadDeviceId", edit(f, ": c035", ": c0356"),
         "efsmi -q: line 17: bad value 'c0356' for 'Device ID'"},
        {"DuplicateKey", edit(f, "Dev SN ", "Dev UUID"), "efsmi -q: line 11: duplicate 'Dev UUID'"},
        {"DuplicateDevId", edit(f2, "DEV ID 1", "DEV ID 0"),
         "efsmi -q: line 59: duplicate DEV ID 0"},
        {"BadDevIdLine", edit(f, "DEV ID 0", "DEV ID zero"),
         "efsmi -q: line 5: bad card line 'DEV ID zero'"},
        {"EmptyKey", edit(f, "    Clock Info\n", "    : 12\n"),
         "efsmi -q: line 29: unexpected text ': 12'"},
        {"LongGarbageIsCut", std::string(100, 'x') + "\n",
         "efsmi -q: line 1: unexpected text '" + std::string(60, 'x') +
             "...' before the first DEV ID"},
    };
}

class EfsmiTextBad : public testing::TestWithParam<Bad> {};

TEST_P(EfsmiTextBad, ExactError) {
    auto r = parse_efsmi_text(GetParam().text);
    ASSERT_FALSE(r) << "parsed " << r->size() << " cards";
    EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput);
    EXPECT_EQ(r.error().what(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(Malformed, EfsmiTextBad, testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

struct Mem {
    const char* name;
    const char* text;
    std::uint64_t bytes;
    const char* error;  // nullptr: must parse
};

const Mem kMemory[] = {
    {"MiB", "42976 MiB", 42976 * kMiB, nullptr},
    {"GiB", "16 GiB", 16ULL << 30, nullptr},
    {"KB", "1024 KB", 1ULL << 20, nullptr},
    {"KiB", "4 KiB", 4096, nullptr},
    {"MBMeansMiB", "2 MB", 2 * kMiB, nullptr},
    {"Bytes", "512 B", 512, nullptr},
    {"NoSpace", "512MiB", 512 * kMiB, nullptr},
    {"LowerCase", " 7 mib ", 7 * kMiB, nullptr},
    {"Zero", "0 MiB", 0, nullptr},
    {"Fraction", "1.5 GiB", 3ULL << 29, nullptr},
    {"TiB", "1 TiB", 1ULL << 40, nullptr},
    {"Empty", "", 0, "bad memory size '': no number"},
    {"NoNumber", "MiB", 0, "bad memory size 'MiB': no number"},
    {"Negative", "-1 MiB", 0, "bad memory size '-1 MiB': no number"},
    {"NoUnit", "42976", 0, "bad memory size '42976': no unit"},
    {"UnknownUnit", "4 XB", 0, "bad memory size '4 XB': unknown unit 'XB'"},
    {"DotWithoutDigits", "1. GiB", 0, "bad memory size '1. GiB': no digits after '.'"},
    {"TooLarge", "18446744073709551615 GiB", 0,
     "bad memory size '18446744073709551615 GiB': too large"},
    {"NumberOverflow", "99999999999999999999 B", 0,
     "bad memory size '99999999999999999999 B': too large"},
};

class ParseMemory : public testing::TestWithParam<Mem> {};

TEST_P(ParseMemory, Table) {
    const Mem& m = GetParam();
    auto r = parse_memory(m.text);
    if (m.error == nullptr) {
        ASSERT_TRUE(r) << r.error().what();
        EXPECT_EQ(*r, m.bytes);
    } else {
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().what(), m.error);
    }
}

INSTANTIATE_TEST_SUITE_P(Table, ParseMemory, testing::ValuesIn(kMemory),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
