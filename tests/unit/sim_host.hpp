// SPDX-License-Identifier: Apache-2.0
#pragma once
// enflame-sim-host (sim/) for the unit tests that lay out a simulated host and change it:
// the one place that runs it (needs ENFLAME_BINARY_DIR, which every unit test gets).

#include <unistd.h>

#include <string>
#include <vector>

#include "inject/process.hpp"

namespace testutil {

inline const std::string kSimHost = std::string(ENFLAME_BINARY_DIR) + "/sim/enflame-sim-host";

/// Why enflame-sim-host cannot lay out a host here (for GTEST_SKIP), "" when it can.
inline std::string sim_host_unusable() {
    if (::geteuid() != 0) return "needs root (the host builder makes device nodes with mknod)";
    if (::access(kSimHost.c_str(), X_OK) != 0)
        return "no " + kSimHost + " (build enflame-sim-host)";
    return "";
}

/// Runs `enflame-sim-host ARGS...`: "" when it exited 0, else why not ("exit N: <stderr>").
inline std::string sim_host(const std::vector<std::string>& args) {
    inject::process::Command cmd;
    cmd.path = kSimHost;
    cmd.argv = {kSimHost};
    cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
    cmd.env = {"PATH=/usr/bin:/bin"};
    auto r = inject::process::run(cmd);
    if (!r) return r.error().what();
    return r->exit_code == 0 ? "" : "exit " + std::to_string(r->exit_code) + ": " + r->err;
}

}  // namespace testutil
