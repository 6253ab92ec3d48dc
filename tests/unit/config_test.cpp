// SPDX-License-Identifier: Apache-2.0
#include "inject/config.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.hpp"

using inject::config::Mode;

TEST(Config, EmptyTextGivesTheDefaults) {
    auto c = inject::config::parse("", "cfg.toml");
    ASSERT_TRUE(c) << c.error().what();
    EXPECT_EQ(c->runtime.mode, Mode::Auto);
    EXPECT_EQ(c->runtime.runtimes, (std::vector<std::string>{"runc", "crun"}));
    EXPECT_EQ(c->runtime.spec_dirs, (std::vector<std::string>{"/etc/cdi", "/var/run/cdi"}));
    EXPECT_EQ(c->cli.driver_root, "/");
    EXPECT_EQ(c->cli.dev_root, "/");
    EXPECT_EQ(c->cli.ldconfig, "@/sbin/ldconfig");
    EXPECT_TRUE(c->runtime.accept_envvar_when_unprivileged);
}

TEST(Config, EveryDesignKeyIsRead) {
    auto c = inject::config::parse(R"([enflame-container-runtime]
mode = "cdi"
runtimes = ["/usr/sbin/runc"]
spec-dirs = ["/a", "/b"]
log-file = "/tmp/x.log"
log-level = "debug"
[enflame-container-cli]
driver-root = "/run/driver"
dev-root = "/host"
ldconfig = "/sbin/ldconfig.real"
)",
                                   "cfg.toml");
    ASSERT_TRUE(c) << c.error().what();
    EXPECT_EQ(c->runtime.mode, Mode::Cdi);
    EXPECT_EQ(c->runtime.runtimes, std::vector<std::string>{"/usr/sbin/runc"});
    EXPECT_EQ(c->runtime.spec_dirs, (std::vector<std::string>{"/a", "/b"}));
    EXPECT_EQ(c->runtime.log_file, "/tmp/x.log");
    EXPECT_EQ(c->runtime.log_level, "debug");
    EXPECT_EQ(c->cli.driver_root, "/run/driver");
    EXPECT_EQ(c->cli.dev_root, "/host");
    EXPECT_EQ(c->cli.ldconfig, "/sbin/ldconfig.real");
}

struct BadConfig {
    const char* name;
    const char* text;
    const char* error;
};

class ConfigErrors : public testing::TestWithParam<BadConfig> {};

TEST_P(ConfigErrors, NameTheKeyAndLine) {
    auto c = inject::config::parse(GetParam().text, "cfg.toml");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().code(), inject::Errc::InvalidInput);
    EXPECT_EQ(c.error().what(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ConfigErrors,
    testing::Values(
        BadConfig{"UnknownKey", "[enflame-container-runtime]\nmode = \"auto\"\nmdoe = \"cdi\"\n",
                  "cfg.toml: line 3: unknown key 'mdoe' in [enflame-container-runtime]"},
        BadConfig{"UnknownTable", "\n[enflame-runtime]\nmode = \"auto\"\n",
                  "cfg.toml: line 2: unknown table [enflame-runtime]"},
        BadConfig{"UnknownTopKey", "debug = true\n", "cfg.toml: line 1: unknown key 'debug'"},
        BadConfig{"BadMode", "[enflame-container-runtime]\nmode = \"fast\"\n",
                  "cfg.toml: mode 'fast' is not one of auto, cdi, legacy"},
        BadConfig{"WrongType", "[enflame-container-runtime]\nruntimes = \"runc\"\n",
                  "cfg.toml: line 2: key 'runtimes' must be an array of strings"},
        BadConfig{"WrongBool",
                  "[enflame-container-runtime]\naccept-envvar-when-unprivileged = \"yes\"\n",
                  "cfg.toml: line 2: key 'accept-envvar-when-unprivileged' must be true or false"},
        BadConfig{"BadLevel", "[enflame-container-runtime]\nlog-level = \"loud\"\n",
                  "cfg.toml: log-level 'loud' is not one of trace, debug, info, warn, error, off"},
        BadConfig{"Syntax", "[enflame-container-cli]\ndriver-root = /x\n",
                  "cfg.toml: line 2: Error while parsing value: could not determine value type"},
        BadConfig{"BadTimeout", "[enflame-container-cli]\nefsmi-timeout-ms = -4\n",
                  "cfg.toml: line 2: key 'efsmi-timeout-ms' must be a positive integer"},
        BadConfig{"RelativeHostDriverRoot",
                  "[enflame-container-cli]\nhost-driver-root = \"host\"\n",
                  "cfg.toml: host-driver-root 'host' is not an absolute path"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Config, MissingFileGivesDefaultsOnlyWhenAllowed) {
    testutil::TempDir d;
    auto c = inject::config::load_file(d / "none.toml", true);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->source, "defaults");
    auto e = inject::config::load_file(d / "none.toml", false);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().code(), inject::Errc::NotFound);
}

TEST(Config, ToTomlRoundTrips) {
    auto c = inject::config::parse("[enflame-container-runtime]\nmode = \"legacy\"\n", "a");
    ASSERT_TRUE(c);
    auto again = inject::config::parse(inject::config::to_toml(*c), "b");
    ASSERT_TRUE(again) << again.error().what();
    EXPECT_EQ(again->runtime.mode, Mode::Legacy);
    EXPECT_EQ(inject::config::to_toml(*again), inject::config::to_toml(*c));
}

// A value from outside input written with toml_string() reads back as itself and adds no key.
TEST(Config, TomlStringKeepsEveryCharacterInTheValue) {
    const std::vector<std::string> values{"/opt/sim",      "/a\"b",
                                          "/a\\b",         "/x\"\ndevice-prefix = \"evil",
                                          "/t\tc\x01\x7f", "/\xc3\xa9t\xc3\xa9"};
    for (const auto& v : values) {
        const std::string text =
            "[enflame-container-cli]\ndriver-root = " + inject::config::toml_string(v) + "\n";
        auto c = inject::config::parse(text, "t.toml");
        ASSERT_TRUE(c) << c.error().what() << "\n" << text;
        EXPECT_EQ(c->cli.driver_root, v);
        EXPECT_EQ(c->cli.device_prefix, "gcu");
    }
    EXPECT_EQ(inject::config::toml_string("/opt/sim"), "\"/opt/sim\"");
}
