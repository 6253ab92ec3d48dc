// SPDX-License-Identifier: Apache-2.0
#pragma once
// Shared helpers for the unit tests: a fresh temp dir per test, small file helpers.

#include <string>
#include <string_view>

namespace testutil {

/// A temporary directory removed (recursively) on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] const std::string& path() const { return path_; }
    /// path() + "/" + rel
    [[nodiscard]] std::string operator/(std::string_view rel) const;

private:
    std::string path_;
};

/// Writes a file, creating parent folders.
void write_file(const std::string& path, std::string_view content);
/// Reads a whole file ("" if missing).
std::string read_file(const std::string& path);
/// The source tree's path of a committed fixture: tests/fixtures/<rel>.
std::string fixture(std::string_view rel);
/// Expects `got` to equal the golden file at `path`. With ENFLAME_UPDATE_GOLDEN=1 (only 1: unset,
/// empty or 0 compares) it rewrites the file instead and fails the test, so a rewritten golden
/// file never approves itself: the diff is for a person to review, and the next run compares.
void expect_golden(const std::string& path, const std::string& got);

/// `text` with the first occurrence of `from` replaced by `to`; a failed expectation (and `text`
/// as it was) when there is none, so a variant that no longer edits anything cannot pass unseen.
std::string edit(std::string text, const std::string& from, const std::string& to);

/// True when CI=true: a test that cannot run must then fail, not skip (skip_or_fail in bats).
bool in_ci();

}  // namespace testutil

/// Ends the test: a skip with `why` locally, a failure under CI=true.
#define TESTUTIL_SKIP_OR_FAIL(why)              \
    do {                                        \
        if (testutil::in_ci()) FAIL() << (why); \
        GTEST_SKIP() << (why);                  \
    } while (0)

namespace testutil {}  // namespace testutil
