// SPDX-License-Identifier: Apache-2.0
#pragma once
// NRI's transport, byte level: one unix socket carries a multiplex of connections (frames of
// an 8-byte header, ConnID and payload length, both big-endian), and each connection carries
// ttrpc messages (a 10-byte header: body length, stream ID, type, flags). Connection 1 is the
// runtime calling us (service Plugin), connection 2 us calling the runtime (service Runtime).
// Pure functions and a parser: no socket here (plugin.cpp owns it).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "inject/result.hpp"

namespace nri_plugin {

inline constexpr std::uint32_t kPluginConn = 1;   ///< runtime -> plugin requests
inline constexpr std::uint32_t kRuntimeConn = 2;  ///< plugin -> runtime requests
inline constexpr std::size_t kMuxHeader = 8;
inline constexpr std::size_t kTtrpcHeader = 10;
/// The largest mux frame payload we accept (NRI v0.6.1's limit; v0.12 sends at most 4 MiB + 10).
inline constexpr std::size_t kMaxFrame = 1u << 24;
/// The largest ttrpc message body (ttrpc's own limit).
inline constexpr std::size_t kMaxMessage = 4u << 20;
/// The Go side reads each frame into a 4096-byte buffer: no frame we send is larger, and none
/// holds bytes of two messages.
inline constexpr std::size_t kMaxSendFrame = 4096;

inline constexpr std::uint8_t kRequest = 1;
inline constexpr std::uint8_t kResponse = 2;

/// One ttrpc message as it arrived on a connection.
struct Message {
    std::uint32_t conn = 0;
    std::uint32_t stream = 0;
    std::uint8_t type = 0;
    std::uint8_t flags = 0;
    std::string body;
};

/// The mux frames carrying one ttrpc message on `conn`: header and body cut into frames of at
/// most kMaxSendFrame payload bytes. InvalidInput when the body is over kMaxMessage.
[[nodiscard]] inject::Result<std::string> encode(std::uint32_t conn, std::uint32_t stream,
                                                 std::uint8_t type, std::string_view body);

/// Reassembles messages from the trunk's bytes, in any cut: feed() what read() returned, then
/// take the complete messages. Errors are final (the trunk is out of step): a frame or message
/// over the limits, a frame on a connection other than 1 and 2, a ttrpc type we do not speak.
class Demux {
public:
    /// Adds bytes; appends every message they complete to `out`.
    [[nodiscard]] inject::Result<void> feed(std::string_view bytes, std::vector<Message>& out);
    /// At end of stream: an error when it cut a frame or a message short.
    [[nodiscard]] inject::Result<void> finish() const;

private:
    [[nodiscard]] inject::Result<void> take_messages(std::uint32_t conn, std::vector<Message>& out);
    std::string trunk_;                          ///< bytes of an incomplete frame
    std::map<std::uint32_t, std::string> conn_;  ///< per connection: bytes of incomplete messages
};

}  // namespace nri_plugin
