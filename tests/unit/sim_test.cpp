// SPDX-License-Identifier: Apache-2.0
// The simulated host's pure parts, no root needed: the description reader and its exact
// error lines, the efsmi printer against the fixtures, the JSON model round trip, symbol
// hiding, library link chains and the example generator. tests/integration/sim_*.bats cover
// the builder and the simulators as programs.

#include <gtest/gtest.h>

#include <algorithm>

#include "builder.hpp"
#include "desc.hpp"
#include "drs.hpp"
#include "efsmi_print.hpp"
#include "example.hpp"
#include "inject/discover.hpp"
#include "inject/efml.hpp"
#include "model_json.hpp"
#include "test_util.hpp"

namespace {

sim::Host parse_ok(const std::string& text) {
    auto p = sim::parse_description(text);
    EXPECT_TRUE(p) << p.error().what();
    if (!p) return {};
    auto v = sim::validate(*p);
    EXPECT_TRUE(v) << v.error().what();
    return p->host;
}

std::string parse_error(const std::string& text) {
    auto p = sim::parse_description(text);
    if (!p) return p.error().what();
    auto v = sim::validate(*p);
    return v ? "" : v.error().what();
}

TEST(SimEfsmi, TwoCardExampleIsTheFixtureByteForByte) {
    const auto h = parse_ok(
        testutil::read_file(std::string(ENFLAME_SOURCE_DIR) + "/sim/examples/s60-2dev.yaml"));
    EXPECT_EQ(sim::efsmi_query_text(h),
              testutil::read_file(testutil::fixture("efsmi/efsmi-q-s60-2dev.txt")));
}

TEST(SimEfsmi, DefaultsGiveTheOneCardFixture) {
    const auto h = parse_ok("cards: [{uuid: TR6Y46010302, bus_id: '0000:17:00.0'}]");
    EXPECT_EQ(sim::efsmi_query_text(h),
              testutil::read_file(testutil::fixture("efsmi/efsmi-q-s60-1dev.txt")));
}

TEST(SimEfsmi, JsonCarriesTheTextKeys) {
    auto h = parse_ok("cards: [{healthy: false, used_mib: 100}]\nfaults: {old_keys: true}");
    const auto j = nlohmann::json::parse(sim::efsmi_query_json(h));
    const auto& d = j.at("devices").at(0);
    EXPECT_EQ(d.at("id"), 0);
    EXPECT_EQ(d.at("Device Info").at("Health"), "False");
    EXPECT_EQ(d.at("PCIe Info").at("Bus"), "10");
    EXPECT_EQ(d.at("PCIe Info").at("Func"), 0);
    EXPECT_EQ(d.at("Device Mem Info").at("Mem Size"), "42976 MiB");
    EXPECT_EQ(d.at("Device Mem Info").at("Mem Usage"), "100 MiB");
    EXPECT_FALSE(d.at("Device Mem Info").contains("Total Size"));
}

// The DRS tables, read back by libinject's parsers (separate code: sim/ never uses them), in
// both instance layouts, and create/destroy with the state file in a temp folder.
TEST(SimEfsmi, DrsTablesReadBackInBothLayouts) {
    auto ex = sim::example_description({2, "S60", true, std::nullopt});
    ASSERT_TRUE(ex) << ex.error().what();
    sim::Host h = parse_ok(*ex);
    const testutil::TempDir dir;
    auto prof = sim::efsmi_drs(h, dir.path(), sim::DrsOp::ListProfiles, 1u, "");
    ASSERT_EQ(prof.code, 0) << prof.err;
    auto profiles = inject::discover::parse_efsmi_drs_profiles(prof.out, 1u);
    ASSERT_TRUE(profiles) << profiles.error().what();
    ASSERT_EQ(profiles->size(), 2u);  // 1g.11gb and 2g.22gb; "full" is not a <g>g.<m>gb name
    EXPECT_EQ((*profiles)[1].sips, 12u);

    auto uuid = sim::efsmi_drs(h, dir.path(), sim::DrsOp::ListInstances, std::nullopt, "");
    auto in = inject::discover::parse_efsmi_drs_instances(uuid.out);
    ASSERT_TRUE(in) << in.error().what();
    ASSERT_EQ(in->size(), 3u);
    EXPECT_EQ((*in)[2].uuid, "4c1e9a52-0000-4000-8000-000000000002");
    EXPECT_EQ((*in)[2].parent_index, 1u);

    h.faults.drs_instance_layout = "placement";
    auto placed = sim::efsmi_drs(h, dir.path(), sim::DrsOp::ListInstances, 0u, "");
    in = inject::discover::parse_efsmi_drs_instances(placed.out, 0u);
    ASSERT_TRUE(in) << in.error().what();
    ASSERT_EQ(in->size(), 2u);
    EXPECT_EQ((*in)[1].placement, "1:1");
    EXPECT_EQ((*in)[1].uuid, "");
    EXPECT_EQ((*in)[1].profile_id.value_or(99), 0u);
}

TEST(SimEfsmi, DrsCreateDestroyKeepStateAndFailLikeATool) {
    auto ex = sim::example_description({2, "S60", true, std::nullopt});
    ASSERT_TRUE(ex) << ex.error().what();
    const sim::Host h = parse_ok(*ex);
    const testutil::TempDir dir;
    using Op = sim::DrsOp;
    auto run = [&](Op op, std::optional<std::uint32_t> card, const std::string& arg) {
        return sim::efsmi_drs(h, dir.path(), op, card, arg);
    };
    // Card 1 holds one 2g.22gb (slices 0-1) of 4: one more 2g.22gb fits, then nothing does.
    auto a = run(Op::Create, 1u, "1");
    EXPECT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, "Created DRS instance 1 (2g.22gb) on GCU 1\n");
    EXPECT_EQ(run(Op::Create, 1u, "1").err,
              "Error: too many instances: GCU 1 has 2 of 2 '2g.22gb' instances\n");
    EXPECT_EQ(run(Op::Create, 1u, "0").err,
              "Error: too many instances: 1 free slice(s) needed on GCU 1\n");
    EXPECT_EQ(run(Op::Create, 1u, "7").err, "Error: unknown DRS profile id '7' on GCU 1\n");
    EXPECT_EQ(run(Op::Create, 9u, "0").err, "Error: invalid card index 9\n");
    EXPECT_EQ(run(Op::Create, std::nullopt, "0").err,
              "Error: --create-instance and --destroy-instance need -i <card>\n");
    EXPECT_EQ(run(Op::Destroy, 1u, "5").err, "Error: no DRS instance '5' on GCU 1\n");
    EXPECT_EQ(run(Op::Off, 1u, "").err, "Error: GCU 1 has DRS instances: destroy them first\n");
    EXPECT_EQ(run(Op::Destroy, 1u, "0").code, 0);
    EXPECT_EQ(run(Op::Destroy, 1u, "1").code, 0);
    EXPECT_EQ(run(Op::Off, 1u, "").out, "DRS is off on GCU 1\n");
    EXPECT_EQ(run(Op::Create, 1u, "0").err, "Error: DRS is off on GCU 1 (efsmi -i 1 --drs on)\n");
    EXPECT_NE(run(Op::ListInstances, 1u, "").out.find("| GCU 1: DRS is off"), std::string::npos);
    EXPECT_EQ(run(Op::On, 1u, "").code, 0);
    // Every failure above left the state alone: card 0's two instances, card 1 empty.
    const auto st = sim::drs_state(h, dir.path());
    ASSERT_EQ(st.instances.size(), 2u);
    EXPECT_EQ(st.instances[0].card, 0u);
    EXPECT_EQ(st.instances[1].card, 0u);
    EXPECT_TRUE(st.disabled.empty());
    // A card without profiles.
    const sim::Host t10 = parse_ok("cards: [{product: T10}]");
    EXPECT_EQ(sim::efsmi_drs(t10, dir.path(), Op::Create, 0u, "0").err,
              "Error: GCU 0 does not support DRS\n");
    EXPECT_NE(sim::efsmi_drs(t10, dir.path(), Op::ListProfiles, 0u, "")
                  .out.find("| GCU 0: DRS not supported"),
              std::string::npos);
}

struct BadCase {
    const char* name;
    const char* text;
    const char* error;
};

class SimDescriptionErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(SimDescriptionErrors, OneLineNamingKeyAndProblem) {
    EXPECT_EQ(parse_error(GetParam().text), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Table, SimDescriptionErrors,
    ::testing::Values(
        BadCase{"DuplicateMinor", "cards: [{minor: 0}, {minor: 0}]",
                "line 1: cards[1].minor: duplicate minor 0 (also cards[0])"},
        BadCase{"DuplicateUuidAcrossCardAndDrs",
                "cards:\n  - uuid: U1\ndrs:\n  profiles: [{name: p, memory_mib: 1}]\n"
                "  instances: [{card: 0, instance_id: 0, profile: p, uuid: U1}]",
                "line 5: drs.instances[0].uuid: duplicate uuid 'U1' (also cards[0])"},
        BadCase{"BadBusId", "cards: [{bus_id: '0000:17:00'}]",
                "line 1: cards[0].bus_id: bad bus id '0000:17:00' (want domain:bus:device.function "
                "like '0000:17:00.0')"},
        BadCase{"UppercaseBusIdCollides",
                "cards: [{bus_id: '0000:B1:00.0'}, {bus_id: '0000:b1:00.0'}]",
                "line 1: cards[1].bus_id: duplicate bus id '0000:b1:00.0' (also cards[0])"},
        BadCase{"UnknownProduct", "cards: [{product: S70}]",
                "line 1: cards[0].product: unknown product 'S70' (want S60, T10, I20, T20 or T21)"},
        BadCase{"UnknownKeyOnItsLine", "cards:\n  - index: 0\n    minr: 1",
                "line 3: cards[0]: unknown key 'minr'"},
        BadCase{"KeyTwice", "cards: [{}]\nmajor: 1\nmajor: 2", "line 3: major: key given twice"},
        BadCase{"MajorZero", "cards: [{}]\nmajor: 0",
                "line 2: major: want an integer in 1..4095, got '0'"},
        BadCase{"CardsNotAList", "cards: {a: 1}", "line 1: cards: want a list, got a mapping"},
        BadCase{"TopNotAMap", "- 1", "line 1: description: want a mapping, got a list"},
        BadCase{"Empty", "", "description: want a mapping, got nothing"},
        BadCase{"MissingCards", "major: 238", "line 1: description: missing key 'cards'"},
        BadCase{"IndexGap", "cards: [{index: 0}, {index: 5}]",
                "line 1: cards[1].index: index 5 out of range (2 cards: want 0..1)"},
        BadCase{"ControlMinorTaken", "control: {minor: 7}\ncards: [{minor: 7}]",
                "line 2: cards[0].minor: minor 7 is the control node's (control.minor)"},
        BadCase{"InstanceMissingUuid",
                "cards: [{}]\ndrs: {profiles: [{name: p, memory_mib: 1}], instances: [{card: 0, "
                "instance_id: 0, profile: p}]}",
                "line 2: drs.instances[0]: missing key 'uuid'"},
        BadCase{
            "DuplicateProfile",
            "cards: [{}]\ndrs: {profiles: [{name: p, memory_mib: 1}, {name: p, memory_mib: 2}]}",
            "line 2: drs.profiles[1].name: duplicate profile 'p' (also drs.profiles[0])"},
        BadCase{"MissingSymbolTwice",
                "cards: [{}]\nfaults: {efml_missing_symbols: [EfmlInit, EfmlInit]}",
                "faults.efml_missing_symbols: 'EfmlInit' listed twice"},
        BadCase{"ClassDirWithSlash", "cards: [{}]\nclass_dir: a/b",
                "line 2: class_dir: bad class folder name 'a/b'"},
        BadCase{"YamlSyntax", "cards: [", "line 1, column 1: end of sequence flow not found"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SimDescription, DefaultsAreFilledIn) {
    const auto h = parse_ok("major: 240\ncards: [{product: T10}, {minor: 9}]");
    ASSERT_EQ(h.cards.size(), 2U);
    EXPECT_EQ(h.control_major, 240U);
    EXPECT_EQ(h.control_minor, 255U);
    EXPECT_EQ(h.cards[0].memory_mib, 16384U);
    EXPECT_EQ(h.cards[0].device_id, "c011");
    EXPECT_EQ(h.cards[0].minor, 0U);
    EXPECT_EQ(h.cards[0].uuid, "TR6Y46010000");
    EXPECT_EQ(h.cards[0].bus_id, "0000:10:00.0");
    EXPECT_EQ(h.cards[1].index, 1U);  // position in the list
    EXPECT_EQ(h.cards[1].minor, 9U);
    EXPECT_EQ(h.cards[1].serial, "A0A1650510677");
}

TEST(SimDescription, LoadSortsByIndexAndNamesTheFile) {
    testutil::TempDir dir;
    testutil::write_file(dir / "d.yaml", "cards: [{index: 1, uuid: B}, {index: 0, uuid: A}]");
    auto h = sim::load_description(dir / "d.yaml");
    ASSERT_TRUE(h) << h.error().what();
    EXPECT_EQ(h->cards[0].uuid, "A");
    testutil::write_file(dir / "bad.yaml", "cards: [{minor: x}]");
    auto bad = sim::load_description(dir / "bad.yaml");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().what(),
              "description '" + (dir / "bad.yaml") +
                  "': line 1: cards[0].minor: want an integer in 0..1048575, got 'x'");
}

TEST(SimModel, JsonRoundTrip) {
    auto ex = sim::example_description({5, "S60", true, 3});
    ASSERT_TRUE(ex);
    const auto h = parse_ok(*ex);
    const auto j = sim::to_json(h);
    EXPECT_EQ(sim::to_json(sim::host_from_json(nlohmann::json::parse(j.dump()))), j);
}

TEST(SimModel, EmbeddedDescriptionIsFoundAtTheEndOfAFile) {
    testutil::TempDir dir;
    const auto h = parse_ok("cards: [{uuid: EMB1}]");
    testutil::write_file(dir / "efsmi", std::string("\x7f"
                                                    "ELF...binary...") +
                                            sim::embedded_description(sim::to_json(h).dump()));
    EXPECT_EQ(sim::load_host(dir / "enflame-sim.json", dir / "efsmi").cards.at(0).uuid, "EMB1");
    testutil::write_file(dir / "enflame-sim.json",
                         sim::to_json(parse_ok("cards: [{uuid: NEXT}]")).dump());
    EXPECT_EQ(sim::load_host(dir / "enflame-sim.json", dir / "efsmi").cards.at(0).uuid, "NEXT");
    testutil::write_file(dir / "plain", "no trailer here");
    EXPECT_THROW((void)sim::load_host(dir / "none.json", dir / "plain"), std::runtime_error);
}

TEST(SimModel, LibraryLinks) {
    using L = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(sim::library_links("libtopsrt.so.2.1.0"),
              (L{{"libtopsrt.so.2", "libtopsrt.so.2.1.0"}, {"libtopsrt.so", "libtopsrt.so.2"}}));
    EXPECT_EQ(sim::library_links("libx.so.3"), (L{{"libx.so", "libx.so.3"}}));
    EXPECT_EQ(sim::library_links("libx.so"), L{});
}

TEST(SimBuilder, HideSymbolsRenamesEveryNulDelimitedCopy) {
    const std::string elf = std::string("a\0EfmlInit\0b\0EfmlGetDevUuid\0c\0EfmlGetDevUuid\0", 45);
    auto r = sim::hide_symbols(elf, {"EfmlGetDevUuid"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->size(), elf.size());
    EXPECT_EQ(r->find(std::string("\0EfmlGetDevUuid\0", 16)), std::string::npos);
    EXPECT_NE(r->find(std::string("\0EfmlInit\0", 10)), std::string::npos);
    auto missing = sim::hide_symbols(elf, {"EfmlShutdown"});
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().what(), "the libefml simulator has no symbol 'EfmlShutdown'");
}

// The simulator exports (and can drop) exactly the calls our reader knows.
TEST(SimModel, EfmlSymbolsAreTheReadersKnownSymbols) {
    std::vector<std::string> sim_names(std::begin(sim::kEfmlSymbols), std::end(sim::kEfmlSymbols));
    std::vector<std::string> known(inject::efml::known_symbols().begin(),
                                   inject::efml::known_symbols().end());
    std::sort(sim_names.begin(), sim_names.end());
    std::sort(known.begin(), known.end());
    EXPECT_EQ(sim_names, known);
}

TEST(SimExample, ValidForEverySizeAndDeterministic) {
    for (std::uint32_t n : {1U, 2U, 7U, 64U, 128U}) {
        auto a = sim::example_description({n, "S60", true, n - 1});
        ASSERT_TRUE(a) << n;
        const auto h = parse_ok(*a);
        ASSERT_EQ(h.cards.size(), n);
        EXPECT_EQ(h.cards.back().numa_node, n == 1 ? 0 : 1);
        EXPECT_FALSE(h.cards.back().healthy);
        EXPECT_EQ(*sim::example_description({n, "S60", true, n - 1}), *a);
    }
    EXPECT_EQ(sim::example_description({129, "S60", false, std::nullopt}).error().what(),
              "--cards: want 1..128, got 129");
}

}  // namespace
