// SPDX-License-Identifier: Apache-2.0
#pragma once
// The create/run path: read the bundle's config.json, work out the request, build the edits
// for the configured mode, write config.json back atomically. The caller then execs the
// low-level runtime either way.

#include <memory>
#include <string>

#include "inject/cdi.hpp"
#include "inject/config.hpp"
#include "inject/request.hpp"
#include "inject/result.hpp"
#include "runc_log.hpp"

namespace shim {

/// config.json larger than this is refused (runc's own are a few KiB, podman's tens).
inline constexpr std::size_t kMaxConfigJson = 8u << 20;

/// What the shim knows about itself and its caller (the library never reads env or /proc).
struct ShimEnv {
    std::string self_dir;     ///< folder of the shim's real path (for the hook, enflame-ctk)
    std::string config_path;  ///< ENFLAME_CTK_CONFIG when set, else empty
    std::string path_env;     ///< PATH given to hooks we add
};

/// What prepare_bundle() did.
struct Outcome {
    bool rewritten = false;  ///< config.json was rewritten
    std::string summary;     ///< one line for the log
    /// The parsed config.json. main() keeps the outcome until it execs the runtime, so the
    /// document is never torn down: freeing its thousand nodes was 5 % of a create's work.
    std::shared_ptr<void> document;
};

/// Edits `<bundle>/config.json` for the request it carries. A container that asks for nothing
/// leaves the file untouched (not even rewritten). Any error leaves it untouched too.
[[nodiscard]] inject::Result<Outcome> prepare_bundle(const inject::config::Config& cfg,
                                                     const std::string& bundle, const ShimEnv& env,
                                                     RuncLog& log);

/// The edits for a request in the configured mode (exposed for tests).
[[nodiscard]] inject::Result<inject::cdi::ContainerEdits> build_edits(
    const inject::config::Config& cfg, const inject::request::Request& req, const ShimEnv& env,
    RuncLog& log);

}  // namespace shim
