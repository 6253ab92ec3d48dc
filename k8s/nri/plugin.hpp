// SPDX-License-Identifier: Apache-2.0
#pragma once
// One NRI connection, served in one thread: RegisterPlugin on connection 2, then the runtime's
// Configure (we take CreateContainer only), Synchronize (echoed, O(1)) and CreateContainer
// calls on connection 1, answered inline in arrival order.

#include <functional>
#include <string>

#include "inject/config.hpp"
#include "inject/request_edits.hpp"
#include "inject/result.hpp"

namespace nri_plugin {

/// CreateContainer's bit in ConfigureResponse.events (1 << (CREATE_CONTAINER=4 - 1)).
inline constexpr int kCreateContainerEvent = 1 << 3;

struct PluginOptions {
    std::string name = "enflame-gcu";  ///< [A-Za-z0-9_.+-]+
    std::string idx = "10";            ///< two digits: the order among plugins
    inject::config::Config cfg;
    inject::request::EditsOptions edits;
};

/// Checks the name and index as the runtime would refuse them (InvalidInput naming the value).
[[nodiscard]] inject::Result<void> check_identity(const PluginOptions& o);

/// Connects to the unix socket `path` (non-blocking connect is not needed: a local socket).
[[nodiscard]] inject::Result<int> connect_socket(const std::string& path);

/// What serve() tells its caller.
struct ServeHooks {
    /// Once: the runtime has us (its last Synchronize answered, so its Configure went through).
    std::function<void()> synchronized;
    /// About once a second, whatever the runtime does (or not).
    std::function<void()> tick;
};

/// Serves the connected NRI socket `fd` until the runtime closes it (ok) or `stop_fd` (a
/// signalfd, or -1) is readable (ok). Errors: registration refused, a protocol error, I/O.
[[nodiscard]] inject::Result<void> serve(int fd, const PluginOptions& o, int stop_fd,
                                         const ServeHooks& hooks = {});

}  // namespace nri_plugin
