// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// gRPC over unix sockets the way kubelet expects them: our sockets live in a folder kubelet
/// owns (docs/kubelet-wire.md: device plugin, plugin registration), are replaced when stale,
/// readable by root only, and must fit in sockaddr_un's sun_path.

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "inject/result.hpp"

namespace k8s {

/// The longest path a unix socket can have (sun_path is 108 bytes with the NUL).
inline constexpr std::size_t kMaxSocketPath = 107;

/// `dir` + "/" + `name`, after checking that `dir` is an existing folder we can write and the
/// path fits sun_path. Errors name the folder or the path and the reason.
[[nodiscard]] inject::Result<std::string> socket_path(const std::string& dir,
                                                      const std::string& name);

/// A gRPC server on a unix socket, and the identity of the socket file it made (so a watcher
/// can tell our own socket from a stranger's).
struct UnixServer {
    std::unique_ptr<grpc::Server> server;
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
};

/// Serves `services` on the unix socket `path`: a stale socket there is removed first (any
/// other kind of file is an error), the new one gets mode 0600, and the server is checked to
/// answer a connection before this returns.
[[nodiscard]] inject::Result<UnixServer> serve_unix(const std::string& path,
                                                    const std::vector<grpc::Service*>& services);

/// True when `path` is still the socket `s` created (not deleted, not replaced).
[[nodiscard]] bool still_ours(const UnixServer& s);

/// Stops the server (in-flight calls get `grace` to finish) and removes its socket if it is
/// still ours.
void stop_unix(UnixServer& s, std::chrono::milliseconds grace);

/// A channel to the gRPC server on unix socket `path`, connected within `timeout`.
[[nodiscard]] inject::Result<std::shared_ptr<grpc::Channel>> dial_unix(
    const std::string& path, std::chrono::milliseconds timeout);

/// A gRPC status as "CODE: message" for error messages.
[[nodiscard]] std::string status_text(const grpc::Status& s);

}  // namespace k8s
