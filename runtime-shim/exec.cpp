// SPDX-License-Identifier: Apache-2.0
#include "exec.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace shim {
namespace {

constexpr std::string_view kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool is_executable_file(const std::string& p, const struct stat* self) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (self != nullptr && st.st_dev == self->st_dev && st.st_ino == self->st_ino) return false;
    return ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

inject::Result<std::string> find_runtime(const std::vector<std::string>& runtimes,
                                         std::string_view path_env, const std::string& self_exe) {
    struct stat self {};
    const struct stat* self_p = ::stat(self_exe.c_str(), &self) == 0 ? &self : nullptr;
    if (path_env.empty()) path_env = kDefaultPath;
    std::string tried;
    for (const auto& rt : runtimes) {
        tried += (tried.empty() ? "'" : ", '") + rt + "'";
        if (rt.empty()) continue;
        if (rt.find('/') != std::string::npos) {
            if (rt.front() == '/' && is_executable_file(rt, self_p)) return rt;
            continue;
        }
        std::string_view dirs = path_env;
        for (;;) {
            auto colon = dirs.find(':');
            std::string_view dir = dirs.substr(0, colon);
            if (!dir.empty() && dir.front() == '/') {
                std::string cand = std::string(dir) + "/" + rt;
                if (is_executable_file(cand, self_p)) return cand;
            }
            if (colon == std::string_view::npos) break;
            dirs.remove_prefix(colon + 1);
        }
    }
    return inject::fail(inject::Errc::NotFound,
                        "no low-level runtime found: tried " +
                            (tried.empty() ? std::string("nothing") : tried) +
                            " (PATH=" + std::string(path_env) + ")");
}

inject::Error exec_runtime(const std::string& runtime, int argc, char** argv, char** envp) {
    std::vector<char*> args(argv, argv + argc);
    args.push_back(nullptr);
    args[0] = const_cast<char*>(runtime.c_str());  // NOLINT: execve's historical signature
    ::execve(runtime.c_str(), args.data(), envp);
    return inject::sys_error("executing " + runtime);
}

}  // namespace shim
