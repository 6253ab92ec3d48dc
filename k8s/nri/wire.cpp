// SPDX-License-Identifier: Apache-2.0
#include "nri/wire.hpp"

namespace nri_plugin {
namespace {

using inject::Errc;
using inject::fail;

void put32(std::string& s, std::uint32_t v) {
    s.push_back(static_cast<char>(v >> 24));
    s.push_back(static_cast<char>(v >> 16));
    s.push_back(static_cast<char>(v >> 8));
    s.push_back(static_cast<char>(v));
}

std::uint32_t get32(std::string_view s, std::size_t at) {
    const auto b = [&](std::size_t i) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + i]));
    };
    return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

}  // namespace

inject::Result<std::string> encode(std::uint32_t conn, std::uint32_t stream, std::uint8_t type,
                                   std::string_view body) {
    if (body.size() > kMaxMessage)
        return fail(Errc::InvalidInput, "ttrpc message of " + std::to_string(body.size()) +
                                            " bytes is over the " + std::to_string(kMaxMessage) +
                                            "-byte limit");
    std::string msg;
    msg.reserve(kTtrpcHeader + body.size());
    put32(msg, static_cast<std::uint32_t>(body.size()));
    put32(msg, stream);
    msg.push_back(static_cast<char>(type));
    msg.push_back(0);  // flags: unary calls use none
    msg.append(body);
    std::string out;
    out.reserve(msg.size() + kMuxHeader * (msg.size() / kMaxSendFrame + 1));
    for (std::size_t at = 0; at < msg.size(); at += kMaxSendFrame) {
        const std::size_t n = std::min(kMaxSendFrame, msg.size() - at);
        put32(out, conn);
        put32(out, static_cast<std::uint32_t>(n));
        out.append(msg, at, n);
    }
    return out;
}

inject::Result<void> Demux::feed(std::string_view bytes, std::vector<Message>& out) {
    trunk_.append(bytes);
    std::size_t at = 0;
    while (trunk_.size() - at >= kMuxHeader) {
        const std::uint32_t conn = get32(trunk_, at);
        const std::uint32_t len = get32(trunk_, at + 4);
        if (conn != kPluginConn && conn != kRuntimeConn)
            return fail(Errc::InvalidInput,
                        "NRI socket: a frame on unknown connection " + std::to_string(conn) +
                            " (want 1 or 2): not an NRI runtime, or out of step");
        if (len > kMaxFrame)
            return fail(Errc::InvalidInput, "NRI socket: a frame of " + std::to_string(len) +
                                                " bytes on connection " + std::to_string(conn) +
                                                " is over the " + std::to_string(kMaxFrame) +
                                                "-byte limit");
        if (trunk_.size() - at - kMuxHeader < len) break;
        conn_[conn].append(trunk_, at + kMuxHeader, len);
        at += kMuxHeader + len;
        INJECT_TRY_VOID(take_messages(conn, out));
    }
    trunk_.erase(0, at);
    return inject::ok();
}

inject::Result<void> Demux::take_messages(std::uint32_t conn, std::vector<Message>& out) {
    std::string& buf = conn_[conn];
    std::size_t at = 0;
    while (buf.size() - at >= kTtrpcHeader) {
        const std::uint32_t len = get32(buf, at);
        if (len > kMaxMessage)
            return fail(Errc::InvalidInput, "NRI socket: a ttrpc message of " +
                                                std::to_string(len) + " bytes on connection " +
                                                std::to_string(conn) + " is over the " +
                                                std::to_string(kMaxMessage) + "-byte limit");
        const auto type = static_cast<std::uint8_t>(buf[at + 8]);
        if (type != kRequest && type != kResponse)
            return fail(Errc::InvalidInput,
                        "NRI socket: ttrpc message type " + std::to_string(type) +
                            " on connection " + std::to_string(conn) +
                            " (want 1 request or 2 response: NRI streams nothing)");
        if (buf.size() - at - kTtrpcHeader < len) break;
        Message m;
        m.conn = conn;
        m.stream = get32(buf, at + 4);
        m.type = type;
        m.flags = static_cast<std::uint8_t>(buf[at + 9]);
        m.body.assign(buf, at + kTtrpcHeader, len);
        out.push_back(std::move(m));
        at += kTtrpcHeader + len;
    }
    buf.erase(0, at);
    return inject::ok();
}

inject::Result<void> Demux::finish() const {
    if (!trunk_.empty())
        return fail(Errc::InvalidInput, "NRI socket closed inside a frame (" +
                                            std::to_string(trunk_.size()) +
                                            " bytes of it arrived)");
    for (const auto& [conn, buf] : conn_)
        if (!buf.empty())
            return fail(Errc::InvalidInput,
                        "NRI socket closed inside a ttrpc message on connection " +
                            std::to_string(conn) + " (" + std::to_string(buf.size()) +
                            " bytes of it arrived)");
    return inject::ok();
}

}  // namespace nri_plugin
