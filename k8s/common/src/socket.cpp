// SPDX-License-Identifier: Apache-2.0
#include "k8s/socket.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace k8s {

using inject::Errc;
using inject::fail;

inject::Result<std::string> socket_path(const std::string& dir, const std::string& name) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
        return fail(inject::sys_error("socket folder '" + dir + "'"));
    if (!S_ISDIR(st.st_mode))
        return fail(Errc::InvalidInput, "socket folder '" + dir + "' is not a folder");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return fail(inject::sys_error("socket folder '" + dir + "' is not writable"));
    std::string path = dir;
    if (path.empty() || path.back() != '/') path += '/';
    path += name;
    if (path.size() > kMaxSocketPath)
        return fail(Errc::InvalidInput, "socket path '" + path + "' is " +
                                            std::to_string(path.size()) +
                                            " bytes, longer than a unix socket allows (" +
                                            std::to_string(kMaxSocketPath) + ")");
    return path;
}

std::string status_text(const grpc::Status& s) {
    static constexpr const char* kNames[] = {"OK",
                                             "CANCELLED",
                                             "UNKNOWN",
                                             "INVALID_ARGUMENT",
                                             "DEADLINE_EXCEEDED",
                                             "NOT_FOUND",
                                             "ALREADY_EXISTS",
                                             "PERMISSION_DENIED",
                                             "RESOURCE_EXHAUSTED",
                                             "FAILED_PRECONDITION",
                                             "ABORTED",
                                             "OUT_OF_RANGE",
                                             "UNIMPLEMENTED",
                                             "INTERNAL",
                                             "UNAVAILABLE",
                                             "DATA_LOSS",
                                             "UNAUTHENTICATED"};
    const auto c = static_cast<std::size_t>(s.error_code());
    const std::string name = c < std::size(kNames) ? kNames[c] : "code " + std::to_string(c);
    return name + ": " + s.error_message();
}

inject::Result<std::shared_ptr<grpc::Channel>> dial_unix(const std::string& path,
                                                         std::chrono::milliseconds timeout) {
    if (path.size() > kMaxSocketPath)
        return fail(Errc::InvalidInput,
                    "socket path '" + path + "' is longer than a unix socket allows");
    // gRPC waits a whole second before retrying a refused connection by default; a kubelet
    // that just created its socket may not listen yet, and we promise to register within a
    // second of it appearing.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    auto ch = grpc::CreateCustomChannel("unix://" + path, grpc::InsecureChannelCredentials(), args);
    if (!ch->WaitForConnected(std::chrono::system_clock::now() + timeout))
        return fail(Errc::NotFound, "connecting to '" + path + "': no answer within " +
                                        std::to_string(timeout.count()) + " ms");
    return ch;
}

inject::Result<UnixServer> serve_unix(const std::string& path,
                                      const std::vector<grpc::Service*>& services) {
    if (path.size() > kMaxSocketPath)
        return fail(Errc::InvalidInput,
                    "socket path '" + path + "' is longer than a unix socket allows");
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        // A socket left by an earlier run (or one kubelet forgot): replace it, as kubelet's own
        // plugins do. Anything else there is not ours to delete.
        if (!S_ISSOCK(st.st_mode))
            return fail(Errc::Conflict, "'" + path + "' exists and is not a socket");
        if (::unlink(path.c_str()) != 0 && errno != ENOENT)
            return fail(inject::sys_error("removing stale socket '" + path + "'"));
    } else if (errno != ENOENT) {
        return fail(inject::sys_error("stat '" + path + "'"));
    }
    grpc::ServerBuilder b;
    b.AddListeningPort("unix://" + path, grpc::InsecureServerCredentials());
    for (auto* s : services) b.RegisterService(s);
    UnixServer out;
    out.path = path;
    out.server = b.BuildAndStart();
    if (!out.server)
        return fail(Errc::Io, "serving gRPC on '" + path + "' failed (see gRPC's log above)");
    // gRPC creates the socket with the process umask; only root (kubelet) may connect.
    if (::chmod(path.c_str(), 0600) != 0 || ::lstat(path.c_str(), &st) != 0) {
        auto e = inject::sys_error("setting mode 0600 on '" + path + "'");
        out.server->Shutdown();
        return fail(std::move(e));
    }
    out.dev = st.st_dev;
    out.ino = st.st_ino;
    if (auto ch = dial_unix(path, std::chrono::milliseconds(5000)); !ch) {
        stop_unix(out, std::chrono::milliseconds(0));
        return fail(std::move(ch).error().context("checking our own socket answers"));
    }
    return out;
}

bool still_ours(const UnixServer& s) {
    struct stat st {};
    return ::lstat(s.path.c_str(), &st) == 0 && st.st_dev == s.dev && st.st_ino == s.ino;
}

void stop_unix(UnixServer& s, std::chrono::milliseconds grace) {
    if (!s.server) return;
    s.server->Shutdown(std::chrono::system_clock::now() + grace);
    s.server->Wait();
    s.server.reset();
    if (still_ours(s)) ::unlink(s.path.c_str());
}

}  // namespace k8s
