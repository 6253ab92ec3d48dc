// SPDX-License-Identifier: Apache-2.0
// Node confirmation against a driver-root/dev-root tree in a temp dir, and the efsmi runner
// against small fake efsmi scripts. No root needed: regular files stand in for nodes (and must
// be refused), and the one accepted-node case borrows the host's own /dev/tty0 (char 4:0) with
// a fake sysfs, skipping where that node does not exist.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>

#include "device/backends.hpp"
#include "inject/config.hpp"
#include "test_util.hpp"

namespace {

using namespace inject::discover;
using inject::Errc;
using testutil::TempDir;
using testutil::write_file;

RawCard card(std::uint32_t index, std::string bus,
             std::optional<std::uint32_t> minor = std::nullopt) {
    RawCard c;
    c.index = index;
    c.uuid = "UUID" + std::to_string(index);
    c.product = "S60";
    c.pci_bus_id = std::move(bus);
    c.minor = minor;
    c.memory_bytes = 42976ULL << 20;
    c.driver_version = "1.4.3.4";
    return c;
}

Options roots(const TempDir& t) {
    Options o;
    o.driver_root = t.path();
    o.dev_root = t.path();
    return o;
}

void sysfs(const TempDir& t, const std::string& bus, const std::string& entry,
           const std::string& dev, const std::string& cls = "enflame") {
    write_file(t / ("sys/bus/pci/devices/" + bus + "/" + cls + "/" + entry + "/dev"), dev + "\n");
}

struct Bad {
    const char* name;
    void (*setup)(const TempDir&);
    std::vector<RawCard> cards;
    std::string error;  // "@" stands for the temp dir
    Errc code;
};

std::string subst(std::string s, const std::string& root) {
    for (auto p = s.find('@'); p != std::string::npos; p = s.find('@', p + root.size()))
        s.replace(p, 1, root);
    return s;
}

const Bad kBad[] = {
    {"NodeIsARegularFile",
     [](const TempDir& t) {
         sysfs(t, "0000:17:00.0", "gcu0", "238:0");
         write_file(t / "dev/gcu0", "");
     },
     {card(0, "0000:17:00.0")},
     "card 0 (0000:17:00.0): '@/dev/gcu0' is not a character device",
     Errc::InvalidInput},
    {"NodeIsASymlinkToARealCharDevice",
     [](const TempDir& t) {
         sysfs(t, "0000:17:00.0", "gcu0", "238:0");
         ::mkdir((t / "dev").c_str(), 0755);
         ASSERT_EQ(::symlink("/dev/null", (t / "dev/gcu0").c_str()), 0);
     },
     {card(0, "0000:17:00.0")},
     "card 0 (0000:17:00.0): '@/dev/gcu0' is not a character device",
     Errc::InvalidInput},
    {"NodeMissing",
     [](const TempDir& t) { sysfs(t, "0000:17:00.0", "gcu0", "238:0"); },
     {card(0, "0000:17:00.0")},
     "card 0 (0000:17:00.0): device node '@/dev/gcu0' is missing",
     Errc::NotFound},
    {"NoSysfsEntry",
     [](const TempDir& t) { write_file(t / "sys/bus/pci/devices/0000:17:00.0/numa_node", "0\n"); },
     {card(0, "0000:17:00.0")},
     "card 0 (0000:17:00.0): no device minor: no enflame/ or zixiao/ entry under "
     "'@/sys/bus/pci/devices/0000:17:00.0'",
     Errc::NotFound},
    {"SysfsLinkLeavingTheRootIsResolvedInside",
     [](const TempDir& t) {
         // On the host /sys/devices/virtual/mem exists; inside the root it does not.
         ::mkdir((t / "sys").c_str(), 0755);
         write_file(t / "sys/bus/pci/devices/.keep", "");
         ASSERT_EQ(::symlink("/sys/devices/virtual/mem",
                             (t / "sys/bus/pci/devices/0000:17:00.0").c_str()),
                   0);
     },
     {card(0, "0000:17:00.0")},
     "card 0 (0000:17:00.0): no device minor: no enflame/ or zixiao/ entry under "
     "'@/sys/bus/pci/devices/0000:17:00.0'",
     Errc::NotFound},
    {"NoBusIdNoMinor",
     [](const TempDir&) {},
     {card(0, "")},
     "card 0: no device minor: the backend gives neither the minor nor the bus id",
     Errc::NotFound},
    {"BadSysfsDevNumber",
     [](const TempDir& t) { sysfs(t, "0000:17:00.0", "gcu0", "two-three-eight"); },
     {card(0, "0000:17:00.0")},
     "card 0 (0000:17:00.0): '@/sys/bus/pci/devices/0000:17:00.0/enflame/gcu0/dev': bad device "
     "number "
     "'two-three-eight'",
     Errc::InvalidInput},
    {"LibefmlAndSysfsDisagree",
     [](const TempDir& t) { sysfs(t, "0000:17:00.0", "gcu1", "238:1"); },
     {card(0, "0000:17:00.0", 0)},
     "card 0 (0000:17:00.0): libefml says minor 0, sysfs says 1",
     Errc::Conflict},
    {"ControlNodeNotAChar",
     [](const TempDir& t) { write_file(t / "dev/gcuctl", ""); },
     {},
     "'@/dev/gcuctl' is not a character device",
     Errc::InvalidInput},
};

class ConfirmBad : public testing::TestWithParam<Bad> {};

TEST_P(ConfirmBad, ExactError) {
    TempDir t;
    GetParam().setup(t);
    auto r = detail::confirm(roots(t), {GetParam().cards, "1.4.3.4"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), subst(GetParam().error, t.path()));
    EXPECT_EQ(r.error().code(), GetParam().code);
}

INSTANTIATE_TEST_SUITE_P(Table, ConfirmBad, testing::ValuesIn(kBad),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Confirm, ZeroCardsIsAnAnswer) {
    TempDir t;
    write_file(t / "sys/module/enflame/version", "1.4.3.4\n");
    auto r = detail::confirm(roots(t), {});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(r->devices.empty());
    EXPECT_FALSE(r->control.has_value());
    EXPECT_EQ(r->driver_version, "1.4.3.4");  // from sys/module/enflame/version
}

// The host's /dev/tty0 (char 4:0) stands in for a card node: prefix "tty", dev-root "/".
bool have_tty0() {
    struct stat st {};
    return ::lstat("/dev/tty0", &st) == 0 && S_ISCHR(st.st_mode) && ::major(st.st_rdev) == 4 &&
           ::minor(st.st_rdev) == 0;
}

TEST(Confirm, RealCharNodeFillsEveryField) {
    if (!have_tty0()) GTEST_SKIP() << "no /dev/tty0 (char 4:0) on this machine";
    TempDir t;
    sysfs(t, "0000:17:00.0", "tty0", "4:0", "zixiao");  // newer parts name the class folder zixiao
    write_file(t / "sys/bus/pci/devices/0000:17:00.0/numa_node", "1\n");
    Options o = roots(t);
    o.dev_root = "/";
    o.device_prefix = "tty";
    RawCard c = card(3, "0000:17:00.0");
    c.driver_version.clear();
    c.healthy = false;
    auto r = detail::confirm(o, {{c}, ""});
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->devices.size(), 1u);
    const auto& d = r->devices[0];
    EXPECT_EQ(d.index, 3u);
    EXPECT_EQ(d.minor, 0u);
    EXPECT_EQ(d.numa_node, 1);
    EXPECT_EQ(d.architecture, "GCU300");
    EXPECT_EQ(d.family, "scorpio");
    EXPECT_EQ(d.healthy, std::optional<bool>(false));
    EXPECT_EQ(d.driver_version, "");  // neither the backend nor sys/module says
    EXPECT_EQ(d.node.path, "/dev/tty0");
    EXPECT_EQ(d.node.host_path, "/dev/tty0");
    EXPECT_EQ(d.node.major, 4u);
    EXPECT_EQ(d.node.minor, 0u);
    struct stat st {};
    ASSERT_EQ(::lstat("/dev/tty0", &st), 0);
    EXPECT_EQ(d.node.mode, st.st_mode & 07777);
    EXPECT_EQ(d.node.uid, st.st_uid);
    EXPECT_EQ(d.node.gid, st.st_gid);
}

TEST(Confirm, RealCharNodeWithWrongMajorIsRefused) {
    if (!have_tty0()) GTEST_SKIP() << "no /dev/tty0 (char 4:0) on this machine";
    TempDir t;
    sysfs(t, "0000:17:00.0", "tty0", "238:0");
    Options o = roots(t);
    o.dev_root = "/";
    o.device_prefix = "tty";
    auto r = detail::confirm(o, {{card(0, "0000:17:00.0")}, ""});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "card 0 (0000:17:00.0): '/dev/tty0' is 4:0, sysfs says 238:0");
    EXPECT_EQ(r.error().code(), Errc::Conflict);
}

TEST(Confirm, DuplicateMinorsAreAConflict) {
    if (!have_tty0()) GTEST_SKIP() << "no /dev/tty0 (char 4:0) on this machine";
    TempDir t;
    Options o = roots(t);
    o.dev_root = "/";
    o.device_prefix = "tty";
    auto r = detail::confirm(o, {{card(0, "", 0), card(1, "", 0)}, ""});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "cards 0 and 1 both have minor 0");
}

// ---- options ----

TEST(Options, FromConfig) {
    auto cfg = inject::config::parse(
        "[enflame-container-cli]\ndriver-root = \"/drv\"\ndev-root = \"/devroot\"\ndevice-prefix = "
        "\"gpu\"\n"
        "library-search-paths = [\"/opt/lib\"]\nefsmi-timeout-ms = 250\n",
        "test");
    ASSERT_TRUE(cfg) << cfg.error().what();
    Options o = options_from(*cfg);
    EXPECT_EQ(o.driver_root, "/drv");
    EXPECT_EQ(o.dev_root, "/devroot");
    EXPECT_EQ(o.device_prefix, "gpu");
    EXPECT_EQ(o.library_search_paths, std::vector<std::string>{"/opt/lib"});
    EXPECT_EQ(o.efsmi_timeout, std::chrono::milliseconds(250));
    EXPECT_EQ(o.backend, Backend::Auto);
}

TEST(Options, BadPrefixIsRefused) {
    Options o;
    o.device_prefix = "../gcu";
    auto r = discover(o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "bad device prefix '../gcu'");
}

// ---- the efsmi runner, against fake efsmi scripts ----

void fake_efsmi(const TempDir& t, const std::string& body) {
    write_file(t / "usr/bin/efsmi", "#!/bin/sh\n" + body);
    ASSERT_EQ(::chmod((t / "usr/bin/efsmi").c_str(), 0755), 0);
}

struct Run {
    const char* name;
    const char* script;
    std::string expect;  // stdout, or the error with "@" for the temp dir
    bool ok;
    // efsmi's timeout: generous, so a loaded machine never turns a slow start into a failure,
    // except where the timeout itself is under test.
    std::chrono::milliseconds timeout = std::chrono::seconds(5);
};

const Run kRuns[] = {
    // sh adds PWD on its own; anything else would be inherited from us.
    {"EnvIsExactlyPathAndLcAll", "env | grep -v '^PWD=' | sort\n", "LC_ALL=C\nPATH=/usr/bin:/bin\n",
     true},
    {"ArgsArePassed", "echo \"$@\"\n", "-q --json-format\n", true},
    {"ExitCodeWithStderr", "echo 'efsmi: no driver' >&2\nexit 3\n",
     "efsmi exited 3: 'efsmi: no driver'", false},
    {"ExitCodeQuiet", "exit 4\n", "efsmi exited 4", false},
    {"Signal", "kill -SEGV $$\n", "efsmi was killed by signal 11 (Segmentation fault)", false},
    {"Timeout", "exec sleep 60\n", "efsmi timed out after 100 ms", false,
     std::chrono::milliseconds(100)},
};

class EfsmiRun : public testing::TestWithParam<Run> {};

TEST_P(EfsmiRun, Outcome) {
    TempDir t;
    fake_efsmi(t, GetParam().script);
    Options o = roots(t);
    o.efsmi_timeout = GetParam().timeout;
    auto efsmi = detail::find_efsmi(o);
    ASSERT_TRUE(efsmi) << efsmi.error().what();
    const auto start = std::chrono::steady_clock::now();
    auto r = detail::run_efsmi(o, *efsmi, {"-q", "--json-format"});
    // Back well before the script would have ended on its own (a timed-out efsmi is killed,
    // not waited for); the bound is loose, as a loaded machine may be slow to kill and reap.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
    if (GetParam().ok) {
        ASSERT_TRUE(r) << r.error().what();
        EXPECT_EQ(*r, GetParam().expect);
    } else {
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().what(), subst(GetParam().expect, t.path()));
    }
}

INSTANTIATE_TEST_SUITE_P(Table, EfsmiRun, testing::ValuesIn(kRuns),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EfsmiFind, AbsentListsWhatWasTried) {
    TempDir t;
    auto r = detail::find_efsmi(roots(t));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              "no efsmi under driver-root '" + t.path() +
                  "' (tried /usr/bin/efsmi, /usr/sbin/efsmi, /usr/local/bin/efsmi)");
}

TEST(EfsmiFind, AbsoluteSymlinkResolvesInsideTheRoot) {
    TempDir t;
    write_file(t / "usr/local/efsmi/efsmi-1.4.3.4/efsmi", "#!/bin/sh\n");
    ::mkdir((t / "usr/bin").c_str(), 0755);
    ASSERT_EQ(::symlink("/usr/local/efsmi/efsmi-1.4.3.4/efsmi", (t / "usr/bin/efsmi").c_str()), 0);
    auto r = detail::find_efsmi(roots(t));
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->path, t.path() + "/usr/local/efsmi/efsmi-1.4.3.4/efsmi");
}

TEST(EfsmiFind, RunsTheFileItFoundEvenIfThePathIsSwappedAfterwards) {
    // The efsmi that was looked up (inside driver-root) is the one that runs: swapping the
    // file at its path between the lookup and the run changes nothing.
    TempDir t;
    fake_efsmi(t, "echo found\n");
    Options o = roots(t);
    auto efsmi = detail::find_efsmi(o);
    ASSERT_TRUE(efsmi) << efsmi.error().what();
    write_file(t / "swap", "#!/bin/sh\necho swapped\n");
    ASSERT_EQ(::chmod((t / "swap").c_str(), 0755), 0);
    ASSERT_EQ(::rename((t / "swap").c_str(), efsmi->path.c_str()), 0);
    auto r = detail::run_efsmi(o, *efsmi, {"-q"});
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(*r, "found\n");
}

TEST(EfsmiFind, NoDriverRootIsNotFound) {
    Options o;
    o.driver_root = "/nonexistent-driver-root";
    o.dev_root = "/nonexistent-driver-root";
    auto r = detail::find_efsmi(o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::NotFound);
}

// ---- libefml lookup ----

// /usr/lib/libefml.so -> /lib/x86_64-linux-gnu/libm.so.6 exists on the host running the test but
// not inside the root: the link must be resolved inside driver-root and nothing loaded.
TEST(EfmlFind, AbsoluteLinkNeverLeavesTheRoot) {
    TempDir t;
    ::mkdir((t / "usr").c_str(), 0755);
    ::mkdir((t / "usr/lib").c_str(), 0755);
    ASSERT_EQ(::symlink("/lib/x86_64-linux-gnu/libm.so.6", (t / "usr/lib/libefml.so").c_str()), 0);
    ASSERT_EQ(::symlink("../../../../../../../lib/x86_64-linux-gnu/libm.so.6",
                        (t / "usr/lib/libefml.so.1").c_str()),
              0);
    Options o = roots(t);
    o.library_search_paths = {"/usr/lib"};
    auto r = detail::query_efml(o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::NotFound);
    EXPECT_EQ(r.error().what(), "no libefml.so or libefml.so.1 under driver-root '" + t.path() +
                                    "' (searched /usr/lib)");
}

TEST(EfmlFind, NotALibraryIsAOneLineError) {
    TempDir t;
    write_file(t / "usr/lib/libefml.so.1", "not an ELF file\n");
    Options o = roots(t);
    auto r = detail::query_efml(o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what().rfind("dlopen: " + t.path() + "/usr/lib/libefml.so.1: ", 0), 0u)
        << r.error().what();
    EXPECT_EQ(r.error().what().find('\n'), std::string::npos);
}

// The whole chain on a fake host: efsmi without --json-format support falls back to text.
TEST(Discover, FallsBackToTextAndSaysWhy) {
    if (!have_tty0()) GTEST_SKIP() << "no /dev/tty0 (char 4:0) on this machine";
    TempDir t;
    const std::string fixture = testutil::fixture("efsmi/efsmi-q-s60-1dev.txt");
    fake_efsmi(t,
               "case \"$*\" in\n"
               "  '-q') cat '" +
                   fixture +
                   "' ;;\n"
                   "  '-q --json-format') echo 'usage: efsmi [-q]'; exit 1 ;;\n"
                   "  *) exit 2 ;;\n"
                   "esac\n");
    sysfs(t, "0000:17:00.0", "tty0", "4:0");
    Options o = roots(t);
    o.dev_root = "/";
    o.device_prefix = "tty";
    auto r = discover(o);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->backend, "efsmi-text");
    EXPECT_EQ(r->fallbacks, std::vector<std::string>{
                                "efsmi-json: efsmi exited 1 (old driver without --json-format?)"});
    ASSERT_EQ(r->devices.size(), 1u);
    EXPECT_EQ(r->devices[0].uuid, "TR6Y46010302");
    EXPECT_TRUE(r->drs_profiles.empty());  // efsmi --drs failed: DRS dropped, discovery fine
}

TEST(Discover, AllFailListsEveryReason) {
    TempDir t;
    auto r = discover(roots(t));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::NotFound);
    const std::string tried = "no efsmi under driver-root '" + t.path() +
                              "' (tried /usr/bin/efsmi, /usr/sbin/efsmi, /usr/local/bin/efsmi)";
    EXPECT_EQ(r.error().what(),
              "no backend found the cards: efsmi-json: " + tried + "; efsmi-text: " + tried +
                  "; libefml: no libefml.so or libefml.so.1 under driver-root '" + t.path() +
                  "' (searched /usr/lib, /usr/lib64, /usr/lib/x86_64-linux-gnu, /usr/local/lib)");
}

}  // namespace

namespace {

// An efsmi that logs its arguments to the returned file and answers by `cases` (shell case
// arms); anything else exits 2.
std::string logging_efsmi(const TempDir& t, const std::string& cases) {
    const std::string calls = t / "calls";
    fake_efsmi(
        t, "echo \"$*\" >> '" + calls + "'\ncase \"$*\" in\n" + cases + "  *) exit 2 ;;\nesac\n");
    return calls;
}

inject::device::Host cards(std::uint32_t n) {
    inject::device::Host h;
    for (std::uint32_t i = 0; i < n; ++i) h.devices.push_back({.index = i});
    return h;
}

}  // namespace

// When efsmi does not answer for every card at once, DRS is read per card, as gcushare reads
// it: a card whose query fails or whose table is bad loses its DRS only; a card without
// profiles is not asked for instances.
TEST(AddDrs, PerCardQueriesAndPerCardFailures) {
    TempDir t;
    const std::string calls = logging_efsmi(
        t,
        "  '-i 0 --drs --list-profile') echo '| 0 | 1g.11gb | 0 | 4 | 10744MiB | 6 |' ;;\n"
        "  '-i 0 --drs --list-instance') echo '| 0 | 1g.11gb | 0 | 1 | 1:1 |' ;;\n"
        "  '-i 1 --drs --list-profile') echo 'Error: boom' >&2; exit 1 ;;\n"
        "  '-i 2 --drs --list-profile') echo '| 2 | 1g.11gb | 0 |' ;;\n"
        "  '-i 3 --drs --list-profile') echo '| GCU 3: DRS not supported |' ;;\n"
        "  '-i 4 --drs --list-profile') echo '4 1g.11gb 0 4 10744MiB 6' ;;\n"
        "  '-i 4 --drs --list-instance') echo '4 1g.11gb 2 4c1e9a52-0000-4000-8000-000000000002' "
        ";;\n");
    inject::device::Host h = cards(5);
    detail::add_drs(roots(t), h);
    EXPECT_EQ(testutil::read_file(calls),
              "--drs --list-profile\n-i 0 --drs --list-profile\n-i 0 --drs --list-instance\n-i 1 "
              "--drs --list-profile\n"
              "-i 2 --drs --list-profile\n-i 3 --drs --list-profile\n-i 4 --drs --list-profile\n"
              "-i 4 --drs --list-instance\n");
    ASSERT_EQ(h.drs_profiles.size(), 1u);  // the same profile on cards 0 and 4: once
    EXPECT_EQ(h.drs_profiles[0].name, "1g.11gb");
    ASSERT_EQ(h.devices[0].drs_instances.size(), 1u);
    EXPECT_EQ(h.devices[0].drs_instances[0].placement, "1:1");
    EXPECT_EQ(inject::device::drs_address(h.devices[0].drs_instances[0]), "0:1g.11gb:1");
    EXPECT_TRUE(h.devices[1].drs_instances.empty());
    EXPECT_TRUE(h.devices[2].drs_instances.empty());
    EXPECT_TRUE(h.devices[3].drs_instances.empty());
    ASSERT_EQ(h.devices[4].drs_instances.size(), 1u);
    EXPECT_EQ(inject::device::drs_address(h.devices[4].drs_instances[0]),
              "DRS-4c1e9a52-0000-4000-8000-000000000002");
}

// Every card at once: two efsmi runs whatever the number of cards; rows go to their cards.
TEST(AddDrs, EveryCardAtOnce) {
    TempDir t;
    const std::string calls = logging_efsmi(t,
                                            "  '--drs --list-profile') printf '0 1g.11gb 0 4 "
                                            "10744MiB 6\\n2 1g.11gb 0 4 10744MiB 6\\n' ;;\n"
                                            "  '--drs --list-instance') printf '2 1g.11gb 0 1 "
                                            "0:1\\n0 1g.11gb 0 0 0:1\\n9 1g.11gb 0 0 0:1\\n' ;;\n");
    inject::device::Host h = cards(3);
    detail::add_drs(roots(t), h);
    EXPECT_EQ(testutil::read_file(calls), "--drs --list-profile\n--drs --list-instance\n");
    ASSERT_EQ(h.drs_profiles.size(), 1u);
    ASSERT_EQ(h.devices[0].drs_instances.size(), 1u);
    EXPECT_EQ(inject::device::drs_name(h.devices[0].drs_instances[0]), "0:1g.11gb:0");
    EXPECT_TRUE(h.devices[1].drs_instances.empty());
    ASSERT_EQ(h.devices[2].drs_instances.size(), 1u);  // card 9's row: no such card, ignored
    EXPECT_EQ(inject::device::drs_name(h.devices[2].drs_instances[0]), "2:1g.11gb:1");
}

// An efsmi that hangs on the DRS query is not asked again card by card.
TEST(AddDrs, HangingEfsmiIsAskedOnce) {
    TempDir t;
    const std::string calls = t / "calls";
    fake_efsmi(t, "echo \"$*\" >> '" + calls + "'\nexec sleep 5\n");
    inject::device::Host h = cards(4);
    Options o = roots(t);
    o.efsmi_timeout = std::chrono::milliseconds(100);
    detail::add_drs(o, h);
    EXPECT_EQ(testutil::read_file(calls), "--drs --list-profile\n");
    EXPECT_TRUE(h.drs_profiles.empty());
}
