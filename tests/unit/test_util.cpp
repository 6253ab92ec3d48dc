// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace testutil {

TempDir::TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ectk-unit-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
}

namespace {

// Mount points at or below `dir`, deepest last (from /proc/self/mountinfo, field 5).
std::vector<std::string> mounts_below(const std::string& dir) {
    std::vector<std::string> out;
    std::istringstream in(read_file("/proc/self/mountinfo"));
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string id, parent, devno, root, mount_point;
        f >> id >> parent >> devno >> root >> mount_point;
        if (mount_point == dir || mount_point.rfind(dir + "/", 0) == 0) out.push_back(mount_point);
    }
    return out;
}

}  // namespace

TempDir::~TempDir() {
    // A test that mounted something in its folder and failed (or forgot) must not leave the
    // folder behind: remove_all stops at a busy mount point.
    auto mounts = mounts_below(path_);
    for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string TempDir::operator/(std::string_view rel) const {
    return path_ + "/" + std::string(rel);
}

void write_file(const std::string& path, std::string_view content) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << content;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string fixture(std::string_view rel) {
    return std::string(ENFLAME_SOURCE_DIR) + "/tests/fixtures/" + std::string(rel);
}

std::string edit(std::string text, const std::string& from, const std::string& to) {
    const auto pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << "the text has no '" << from << "'";
    if (pos != std::string::npos) text.replace(pos, from.size(), to);
    return text;
}

void expect_golden(const std::string& path, const std::string& got) {
    const char* update = std::getenv("ENFLAME_UPDATE_GOLDEN");
    if (update != nullptr && std::string_view(update) == "1") {
        write_file(path, got);
        ADD_FAILURE() << "golden file rewritten: review the diff (" << path << ")";
        return;
    }
    EXPECT_EQ(got, read_file(path))
        << "golden file " << path << " differs (ENFLAME_UPDATE_GOLDEN=1 rewrites it)";
}

bool in_ci() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string_view(ci) == "true";
}

}  // namespace testutil
