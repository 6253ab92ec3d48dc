// SPDX-License-Identifier: Apache-2.0
// NRI's framing against hand-built bytes: the mux frame and ttrpc headers, a message cut
// anywhere, frames and messages over the limits, a connection NRI does not have.
#include <gtest/gtest.h>

#include "nri/proto/nri.pb.h"
#include "nri/proto/ttrpc.pb.h"
#include "nri/wire.hpp"

namespace {

using nri_plugin::Demux;
using nri_plugin::Message;

std::string be32(std::uint32_t v) {
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
            static_cast<char>(v)};
}
std::string frame(std::uint32_t conn, const std::string& payload) {
    return be32(conn) + be32(payload.size()) + payload;
}
std::string ttrpc_msg(std::uint32_t stream, char type, const std::string& body) {
    return be32(body.size()) + be32(stream) + std::string{type, 0} + body;
}

TEST(NriWire, RegisterPluginIsByteForByteTheWorkedExample) {
    ::ttrpc::Request r;
    r.set_service("nri.pkg.api.v1alpha1.Runtime");
    r.set_method("RegisterPlugin");
    nri::pkg::api::v1alpha1::RegisterPluginRequest reg;
    reg.set_plugin_name("enflame-gcu");
    reg.set_plugin_idx("10");
    reg.SerializeToString(r.mutable_payload());
    std::string body;
    r.SerializeToString(&body);
    auto bytes = nri_plugin::encode(nri_plugin::kRuntimeConn, 1, nri_plugin::kRequest, body);
    ASSERT_TRUE(bytes);
    const std::string want = be32(2) + be32(0x4b) + be32(0x41) + be32(1) +
                             std::string("\x01\x00", 2) +
                             "\x0a\x1c"
                             "nri.pkg.api.v1alpha1.Runtime"
                             "\x12\x0e"
                             "RegisterPlugin"
                             "\x1a\x11"
                             "\x0a\x0b"
                             "enflame-gcu"
                             "\x12\x02"
                             "10";
    EXPECT_EQ(*bytes, want);
}

TEST(NriWire, BigMessageGoesOutInFramesOfAtMost4096AndComesBackWhole) {
    const std::string body(10000, 'x');
    auto bytes = nri_plugin::encode(nri_plugin::kPluginConn, 7, nri_plugin::kResponse, body);
    ASSERT_TRUE(bytes);
    // frames: 4096 + 4096 + (10010 - 8192)
    std::size_t at = 0, frames = 0;
    while (at < bytes->size()) {
        const auto len = static_cast<std::size_t>(static_cast<unsigned char>((*bytes)[at + 6]))
                             << 8 |
                         static_cast<unsigned char>((*bytes)[at + 7]);
        EXPECT_LE(len, nri_plugin::kMaxSendFrame);
        at += 8 + len;
        ++frames;
    }
    EXPECT_EQ(frames, 3u);
    Demux d;
    std::vector<Message> out;
    ASSERT_TRUE(d.feed(*bytes, out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].conn, nri_plugin::kPluginConn);
    EXPECT_EQ(out[0].stream, 7u);
    EXPECT_EQ(out[0].type, nri_plugin::kResponse);
    EXPECT_EQ(out[0].body, body);
    EXPECT_TRUE(d.finish());
}

TEST(NriWire, MessageCutAtEveryByteArrivesOnceAtItsLastByte) {
    // Two messages in one frame on connection 1 (Go may write them so), then one spanning two
    // frames on connection 2 interleaved with nothing.
    const std::string a = ttrpc_msg(1, 1, "first"), b = ttrpc_msg(3, 1, "second"),
                      c = ttrpc_msg(1, 2, "third");
    const std::string trunk = frame(1, a + b) + frame(2, c.substr(0, 4)) + frame(2, c.substr(4));
    for (std::size_t cut = 0; cut <= trunk.size(); ++cut) {
        Demux d;
        std::vector<Message> out;
        ASSERT_TRUE(d.feed(std::string_view(trunk).substr(0, cut), out));
        ASSERT_TRUE(d.feed(std::string_view(trunk).substr(cut), out));
        ASSERT_EQ(out.size(), 3u) << cut;
        EXPECT_EQ(out[0].body, "first");
        EXPECT_EQ(out[1].body, "second");
        EXPECT_EQ(out[1].stream, 3u);
        EXPECT_EQ(out[2].body, "third");
        EXPECT_EQ(out[2].conn, 2u);
        EXPECT_TRUE(d.finish());
    }
}

TEST(NriWire, EndOfStreamInsideAFrameOrMessageIsAnError) {
    const std::string m = ttrpc_msg(1, 1, "hello");
    {
        Demux d;
        std::vector<Message> out;
        ASSERT_TRUE(d.feed(frame(1, m).substr(0, 12), out));
        EXPECT_TRUE(out.empty());
        auto r = d.finish();
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().what(),
                  std::string("NRI socket closed inside a frame (12 bytes of it arrived)"));
    }
    {
        Demux d;
        std::vector<Message> out;
        ASSERT_TRUE(d.feed(frame(1, m.substr(0, 11)), out));
        EXPECT_TRUE(out.empty());
        auto r = d.finish();
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().what(), std::string("NRI socket closed inside a ttrpc message on "
                                                "connection 1 (11 bytes of it arrived)"));
    }
}

TEST(NriWire, OversizedFrameAndMessageAreRefusedBeforeTheirBytesArrive) {
    Demux d;
    std::vector<Message> out;
    auto r = d.feed(be32(1) + be32((1u << 24) + 1), out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), std::string("NRI socket: a frame of 16777217 bytes on connection 1 "
                                            "is over the 16777216-byte limit"));

    Demux e;
    r = e.feed(frame(2, be32((4u << 20) + 1) + be32(1) + std::string("\x02\x00", 2)), out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              std::string("NRI socket: a ttrpc message of 4194305 bytes on connection 2 is over "
                          "the 4194304-byte limit"));
    EXPECT_TRUE(out.empty());
    EXPECT_FALSE(nri_plugin::encode(1, 1, nri_plugin::kRequest, std::string((4u << 20) + 1, 'x')));
}

TEST(NriWire, UnknownConnectionAndStreamingTypeAreClearErrors) {
    Demux d;
    std::vector<Message> out;
    auto r = d.feed(frame(7, ttrpc_msg(1, 1, "x")), out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              std::string("NRI socket: a frame on unknown connection 7 (want 1 or 2): not an NRI "
                          "runtime, or out of step"));
    Demux e;
    r = e.feed(frame(1, ttrpc_msg(1, 3, "x")), out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(),
              std::string("NRI socket: ttrpc message type 3 on connection 1 (want 1 request or 2 "
                          "response: NRI streams nothing)"));
}

}  // namespace
