// SPDX-License-Identifier: Apache-2.0
#pragma once
// argv/envp arrays for execve, built before fork (after fork only async-signal-safe calls).

#include <string>
#include <vector>

namespace inject::detail {

/// Pointers into `v` plus the terminating nullptr; `v` must outlive the result.
inline std::vector<char*> cstrings(const std::vector<std::string>& v) {
    std::vector<char*> out;
    out.reserve(v.size() + 1);
    for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

}  // namespace inject::detail
