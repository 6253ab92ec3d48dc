// SPDX-License-Identifier: Apache-2.0
// k8s::FileWatch and the DRS layout state file: a write, a rename over and a removal of the file
// are changes; other files in its folder are not; a folder that appears later is followed. The
// state file's boot id, and when a device plugin starting must wait for the layout.
#include "k8s/file_watch.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "k8s/drs_layout_state.hpp"

namespace {

namespace fs = std::filesystem;

struct TempDir {
    fs::path path;
    TempDir() {
        char t[] = "/tmp/file-watch-XXXXXX";
        path = ::mkdtemp(t);
    }
    ~TempDir() { fs::remove_all(path); }
};

// Waits up to a second for the watch's fd, then asks it.
bool changed_soon(k8s::FileWatch& w) {
    pollfd p{w.fd(), POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) return false;
    auto c = w.changed();
    EXPECT_TRUE(c) << c.error().what();
    return c && *c;
}

void write(const fs::path& p, const std::string& text) {
    std::ofstream(p) << text;
}

TEST(FileWatch, WritesRenamesAndRemovalsOfTheFileAreChangesOtherFilesAreNot) {
    TempDir d;
    const auto file = d.path / "state.json";
    auto w = k8s::FileWatch::create(file.string());
    ASSERT_TRUE(w) << w.error().what();
    EXPECT_EQ(w->watching(), d.path.string());
    write(d.path / "other.json", "x");
    EXPECT_FALSE(changed_soon(*w));
    write(file, "a");
    EXPECT_TRUE(changed_soon(*w));
    write(d.path / "tmp", "b");
    fs::rename(d.path / "tmp", file);
    EXPECT_TRUE(changed_soon(*w));
    fs::remove(file);
    EXPECT_TRUE(changed_soon(*w));
}

TEST(FileWatch, AFolderMadeLaterIsFollowedDownToTheFile) {
    TempDir d;
    const auto file = d.path / "var/lib/enflame/state.json";
    auto w = k8s::FileWatch::create(file.string());
    ASSERT_TRUE(w) << w.error().what();
    EXPECT_EQ(w->watching(), d.path.string());
    fs::create_directories(d.path / "var/lib");
    // "var" and "lib" may come in one batch or two; no file yet, so no change
    for (int i = 0; i < 3 && w->watching() != (d.path / "var/lib").string(); ++i)
        EXPECT_FALSE(changed_soon(*w));
    EXPECT_EQ(w->watching(), (d.path / "var/lib").string());
    ASSERT_TRUE(k8s::drs::write_layout_state(file.string(), {"all-1g.11gb", "success"}));
    // the folder and the file may come in one batch or two: a change within a second or two
    bool seen = changed_soon(*w) || changed_soon(*w);
    EXPECT_TRUE(seen);
    EXPECT_EQ(w->watching(), file.parent_path().string());
}

TEST(FileWatch, ARelativePathIsRefused) {
    auto w = k8s::FileWatch::create("state.json");
    ASSERT_FALSE(w);
    EXPECT_EQ(std::string(w.error().what()), "'state.json': want the absolute path of a file");
}

TEST(DrsLayoutState, WrittenAndReadBackMissingIsNoneGarbageIsOneLine) {
    TempDir d;
    const auto file = (d.path / "m/state.json").string();
    auto none = k8s::drs::read_layout_state(file);
    ASSERT_TRUE(none);
    EXPECT_FALSE(*none);
    const k8s::drs::LayoutState s{"mixed", "applying"};
    ASSERT_TRUE(k8s::drs::write_layout_state(file, s));
    auto back = k8s::drs::read_layout_state(file);
    ASSERT_TRUE(back && *back);
    EXPECT_EQ(**back, s);
    EXPECT_FALSE((*back)->settled());
    EXPECT_TRUE((k8s::drs::LayoutState{"mixed", "failed"}.settled()));
    write(file, "{\"layout\": 1}");
    auto bad = k8s::drs::read_layout_state(file);
    ASSERT_FALSE(bad);
    EXPECT_EQ(std::string(bad.error().what()),
              "'" + file + "': want {\"layout\": string, \"state\": string}");
}

}  // namespace

namespace {

TEST(DrsLayoutState, PluginConfigPathPicksTheLabelledFileOrTheFallback) {
    TempDir d;
    write(d.path / "shared4.yaml", "version: v1\n");
    const std::string dir = d.path.string();
    const auto pick = [&](std::string name, std::string in_dir) {
        const std::optional<k8s::drs::LayoutState> st{{"", "", std::move(name)}};
        return k8s::drs::plugin_config_path(st, in_dir, "/etc/p/plugin.yaml");
    };
    EXPECT_EQ(*pick("shared4", dir), dir + "/shared4.yaml");
    EXPECT_EQ(*pick("", dir), "/etc/p/plugin.yaml");                          // no label
    EXPECT_EQ(*pick("shared4", ""), "/etc/p/plugin.yaml");                    // no config folder
    EXPECT_EQ(*k8s::drs::plugin_config_path(std::nullopt, dir, "/f"), "/f");  // no state file
    auto missing = pick("shared8", dir);
    ASSERT_FALSE(missing);
    EXPECT_EQ(std::string(missing.error().what()),
              "enflame.com/device-plugin.config=shared8: no such device plugin config (" + dir +
                  "/shared8.yaml)");
    for (const char* bad : {"..", ".hidden", "a/b"}) {
        auto r = pick(bad, dir);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error().code(), inject::Errc::InvalidInput) << bad;
    }
    // the name goes through the state file and back
    const auto file = (d.path / "state.json").string();
    ASSERT_TRUE(k8s::drs::write_layout_state(file, {"all-full", "success", "shared4"}));
    EXPECT_EQ((*k8s::drs::read_layout_state(file))->device_plugin_config, "shared4");
}

TEST(DrsLayoutState, BootIdGoesThroughTheFileAndAnOlderFileHasNone) {
    TempDir d;
    const auto file = (d.path / "state.json").string();
    const k8s::drs::LayoutState s{"all-1g.11gb", "success", "", "6f1c-b00t"};
    ASSERT_TRUE(k8s::drs::write_layout_state(file, s));
    EXPECT_EQ(**k8s::drs::read_layout_state(file), s);
    write(file, R"({"layout": "all-1g.11gb", "state": "success"})");  // an older manager's
    EXPECT_EQ((*k8s::drs::read_layout_state(file))->boot_id, "");
    write(file, R"({"layout": "all-1g.11gb", "state": "success", "bootId": 7})");
    auto bad = k8s::drs::read_layout_state(file);
    ASSERT_FALSE(bad);
    EXPECT_EQ(std::string(bad.error().what()), "'" + file + "': bootId: want a string");
}

TEST(DrsLayoutState, ReadBootIdDropsTheNewlineAndNamesTheFile) {
    TempDir d;
    const auto file = (d.path / "boot_id").string();
    write(file, "0f3a9c1e-5b7d-4e2a-9c1f-1d2e3f4a5b6c\n");
    EXPECT_EQ(*k8s::drs::read_boot_id(file), "0f3a9c1e-5b7d-4e2a-9c1f-1d2e3f4a5b6c");
    write(file, "\n");
    auto empty = k8s::drs::read_boot_id(file);
    ASSERT_FALSE(empty);
    EXPECT_EQ(std::string(empty.error().what()), "'" + file + "': empty boot id");
    auto missing = k8s::drs::read_boot_id(file + ".no");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code(), inject::Errc::NotFound);
    EXPECT_NE(std::string(missing.error().what()).find(file + ".no"), std::string::npos)
        << missing.error().what();
    EXPECT_TRUE(k8s::drs::read_boot_id(k8s::drs::kBootIdPath));  // the kernel's
}

TEST(DrsLayoutState, APluginWaitsForAnotherBootsStateOrALayoutBeingApplied) {
    using k8s::drs::LayoutState;
    const std::string now = "boot-now";
    struct Case {
        const char* name;
        std::optional<LayoutState> state;
        bool waits;
    };
    const Case cases[] = {
        {"NoStateFile", std::nullopt, false},
        {"AnotherBootSuccess", LayoutState{"all-1g.11gb", "success", "", "boot-before"}, true},
        {"AnotherBootFailed", LayoutState{"all-1g.11gb", "failed", "", "boot-before"}, true},
        {"AnotherBootNoLayout", LayoutState{"", "", "", "boot-before"}, true},
        {"ThisBootSuccess", LayoutState{"all-1g.11gb", "success", "", now}, false},
        {"ThisBootFailed", LayoutState{"all-1g.11gb", "failed", "", now}, false},
        {"ThisBootPending", LayoutState{"all-1g.11gb", "pending", "", now}, true},
        {"ThisBootApplying", LayoutState{"all-1g.11gb", "applying", "", now}, true},
        {"ThisBootNoLayout", LayoutState{"", "", "shared4", now}, false},
        {"OlderManagerSuccess", LayoutState{"all-1g.11gb", "success"}, false},
        {"OlderManagerApplying", LayoutState{"all-1g.11gb", "applying"}, true},
        {"OlderManagerNoLayout", LayoutState{"", ""}, false},
    };
    for (const auto& c : cases)
        EXPECT_EQ(k8s::drs::waits_for_layout(c.state, now), c.waits) << c.name;
}

}  // namespace
