// SPDX-License-Identifier: Apache-2.0
#include "nri/plugin.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "inject/log.hpp"
#include "nri/adjust.hpp"
#include "nri/proto/ttrpc.pb.h"
#include "nri/wire.hpp"

namespace nri_plugin {
namespace {

using inject::Errc;
using inject::fail;

constexpr std::string_view kPluginService = "nri.pkg.api.v1alpha1.Plugin";
constexpr std::string_view kRuntimeService = "nri.pkg.api.v1alpha1.Runtime";
// gRPC status codes we answer with.
constexpr int kInvalidArgument = 3;
constexpr int kNotFound = 5;
constexpr int kUnknown = 2;
constexpr int kUnimplemented = 12;

inject::Result<void> write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(inject::sys_error("NRI socket: write"));
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return inject::ok();
}

inject::Result<void> send_msg(int fd, std::uint32_t conn, std::uint32_t stream, std::uint8_t type,
                              const google::protobuf::MessageLite& m) {
    std::string body;
    if (!m.SerializeToString(&body))
        return fail(Errc::Internal, "protobuf: serializing a message failed");
    INJECT_TRY(auto frames, encode(conn, stream, type, body));
    return write_all(fd, frames);
}

inject::Result<void> reply(int fd, std::uint32_t stream,
                           const google::protobuf::MessageLite* payload, int code = 0,
                           const std::string& message = {}) {
    ::ttrpc::Response r;
    r.mutable_status()->set_code(code);
    if (!message.empty()) r.mutable_status()->set_message(message);
    if (payload != nullptr && !payload->SerializeToString(r.mutable_payload()))
        return fail(Errc::Internal, "protobuf: serializing a reply failed");
    return send_msg(fd, kPluginConn, stream, kResponse, r);
}

int code_of(Errc e) {
    switch (e) {
        case Errc::InvalidInput:
            return kInvalidArgument;
        case Errc::NotFound:
            return kNotFound;
        default:
            return kUnknown;
    }
}

/// One request of the runtime's, answered. `closing` is set by Shutdown, `synced` by the last
/// Synchronize.
inject::Result<void> handle(int fd, const Message& m, const PluginOptions& o, SpecCache& specs,
                            bool& closing, bool& synced) {
    ::ttrpc::Request req;
    if (!req.ParseFromString(m.body))
        return fail(Errc::InvalidInput, "NRI socket: a request on stream " +
                                            std::to_string(m.stream) + " is not a ttrpc Request");
    const std::string& method = req.method();
    if (req.service() != kPluginService)
        return reply(fd, m.stream, nullptr, kUnimplemented,
                     "service " + req.service() + " is not served here");
    if (method == "CreateContainer") {
        const auto t0 = std::chrono::steady_clock::now();
        const auto us = [&] {
            return std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - t0)
                .count();
        };
        api::CreateContainerRequest in;
        if (!in.ParseFromString(req.payload()))
            return reply(fd, m.stream, nullptr, kInvalidArgument, "bad CreateContainerRequest");
        const auto& c = in.container();
        auto d = decide(o.cfg, c, o.edits, specs);
        if (!d) {
            const std::string why = "enflame-nri-plugin: container " + c.name() + " (pod " +
                                    in.pod().namespace_() + "/" + in.pod().name() +
                                    "): " + d.error().what();
            inject::log::warn("refused ({} us): {}", us(), why);
            return reply(fd, m.stream, nullptr, code_of(d.error().code()), why);
        }
        api::CreateContainerResponse out;
        if (d->asked) *out.mutable_adjust() = std::move(d->adjust);
        INJECT_TRY_VOID(reply(fd, m.stream, &out));
        // Timed from the request's arrival to the reply written: the plugin's share of a create.
        if (d->asked)
            inject::log::info("container {} (pod {}/{}): {} ({} us)", c.name(),
                              in.pod().namespace_(), in.pod().name(), d->summary, us());
        else
            inject::log::debug("container {} (pod {}/{}): no request ({} us)", c.name(),
                               in.pod().namespace_(), in.pod().name(), us());
        return inject::ok();
    }
    if (method == "Configure") {
        api::ConfigureRequest in;
        if (!in.ParseFromString(req.payload()))
            return reply(fd, m.stream, nullptr, kInvalidArgument, "bad ConfigureRequest");
        inject::log::info("configured by {} {}", in.runtime_name(), in.runtime_version());
        api::ConfigureResponse out;
        out.set_events(kCreateContainerEvent);
        return reply(fd, m.stream, &out);
    }
    if (method == "Synchronize") {
        api::SynchronizeRequest in;
        if (!in.ParseFromString(req.payload()))
            return reply(fd, m.stream, nullptr, kInvalidArgument, "bad SynchronizeRequest");
        const auto t0 = std::chrono::steady_clock::now();
        api::SynchronizeResponse out;
        out.set_more(in.more());
        INJECT_TRY_VOID(reply(fd, m.stream, &out));
        if (in.more()) return inject::ok();
        // Answered past the runtime's deadline (timeout_nano: what was left of it when sent), the
        // runtime has dropped us but keeps the connection: not registered, so we reconnect.
        const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - t0)
                              .count();
        if (req.timeout_nano() != 0 && took >= req.timeout_nano())
            return fail(Errc::Io, "the runtime's Synchronize deadline (" +
                                      std::to_string(req.timeout_nano()) +
                                      " ns) passed before our answer: it does not have us");
        synced = true;
        return inject::ok();
    }
    if (method == "Shutdown") {
        closing = true;
        api::Empty out;
        return reply(fd, m.stream, &out);
    }
    return reply(fd, m.stream, nullptr, kUnimplemented, "method " + method + " is not served here");
}

}  // namespace

inject::Result<void> check_identity(const PluginOptions& o) {
    if (o.name.empty() ||
        o.name.find_first_not_of(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-") !=
            std::string::npos)
        return fail(Errc::InvalidInput,
                    "plugin name '" + o.name + "': want letters, digits and _.+-");
    if (o.idx.size() != 2 || !std::isdigit(static_cast<unsigned char>(o.idx[0])) ||
        !std::isdigit(static_cast<unsigned char>(o.idx[1])))
        return fail(Errc::InvalidInput, "plugin index '" + o.idx + "': want two digits (00-99)");
    return inject::ok();
}

inject::Result<int> connect_socket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path))
        return fail(Errc::InvalidInput,
                    "NRI socket '" + path + "': longer than a unix socket path can be");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(inject::sys_error("socket"));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
        auto e = inject::sys_error("NRI socket '" + path + "': connect");
        ::close(fd);
        return fail(std::move(e));
    }
    return fd;
}

inject::Result<void> serve(int fd, const PluginOptions& o, int stop_fd, const ServeHooks& hooks) {
    {
        ::ttrpc::Request r;
        r.set_service(std::string(kRuntimeService));
        r.set_method("RegisterPlugin");
        api::RegisterPluginRequest reg;
        reg.set_plugin_name(o.name);
        reg.set_plugin_idx(o.idx);
        reg.SerializeToString(r.mutable_payload());
        INJECT_TRY_VOID(send_msg(fd, kRuntimeConn, 1, kRequest, r));
    }
    Demux demux;
    SpecCache specs;
    std::vector<Message> msgs;
    std::string buf(64 * 1024, '\0');
    bool registered = false, closing = false, synced = false, told = false;
    constexpr auto kTick = std::chrono::seconds(1);
    auto last_tick = std::chrono::steady_clock::now();
    while (!closing) {
        if (hooks.tick && std::chrono::steady_clock::now() - last_tick >= kTick) {
            last_tick = std::chrono::steady_clock::now();
            hooks.tick();
        }
        pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
        const int n_ready = ::poll(p, stop_fd >= 0 ? 2 : 1, hooks.tick ? 1000 : -1);
        if (n_ready < 0) {
            if (errno == EINTR) continue;
            return fail(inject::sys_error("poll"));
        }
        if (n_ready == 0) continue;
        if (stop_fd >= 0 && (p[1].revents & POLLIN) != 0) return inject::ok();
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return fail(inject::sys_error("NRI socket: read"));
        }
        if (n == 0) {
            INJECT_TRY_VOID(demux.finish());
            if (!registered)
                return fail(
                    Errc::Io,
                    "NRI socket: the runtime closed the connection before registration finished");
            return inject::ok();
        }
        msgs.clear();
        INJECT_TRY_VOID(
            demux.feed(std::string_view(buf.data(), static_cast<std::size_t>(n)), msgs));
        for (const auto& m : msgs) {
            if (m.conn == kRuntimeConn && m.type == kResponse) {
                ::ttrpc::Response r;
                if (!r.ParseFromString(m.body) || m.stream != 1)
                    return fail(
                        Errc::InvalidInput,
                        "NRI socket: an unexpected response on stream " + std::to_string(m.stream));
                if (r.status().code() != 0)
                    return fail(Errc::Permission, "the runtime refused registration as " + o.idx +
                                                      "-" + o.name + ": " + r.status().message());
                registered = true;
                inject::log::info("registered as {}-{}", o.idx, o.name);
            } else if (m.conn == kPluginConn && m.type == kRequest) {
                INJECT_TRY_VOID(handle(fd, m, o, specs, closing, synced));
                if (synced && !told) {
                    told = true;
                    inject::log::info("synchronized by the runtime: it has us");
                    if (hooks.synchronized) hooks.synchronized();
                }
            } else {
                return fail(
                    Errc::InvalidInput,
                    "NRI socket: a " + std::string(m.type == kRequest ? "request" : "response") +
                        " on connection " + std::to_string(m.conn) + ", which carries none");
            }
        }
    }
    return inject::ok();
}

}  // namespace nri_plugin
