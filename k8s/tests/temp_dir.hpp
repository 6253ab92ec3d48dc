// SPDX-License-Identifier: Apache-2.0
#pragma once

// A fresh, short temp folder per test (socket paths must stay under 108 bytes), removed with
// everything in it when the test ends.

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace k8s_test {

class TempDir {
public:
    TempDir() {
        char tmpl[] = "/tmp/k8st.XXXXXX";
        if (const char* p = ::mkdtemp(tmpl)) path_ = p;
    }
    ~TempDir() {
        std::error_code ec;
        if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] const std::string& path() const { return path_; }

private:
    std::string path_;
};

}  // namespace k8s_test
