// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// One ext_proc Process stream (one HTTP request through the gateway) as a state machine fed
/// the gateway's messages and giving back the answers, with no gRPC in it: the server
/// (wire/server.hpp) moves messages, this decides what they say. docs/epp.md, "The ext_proc
/// stream", has the message order in both body modes.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "envoy/service/ext_proc/v3/external_processor.pb.h"
#include "epp/request.hpp"
#include "epp/wire/model_restore.hpp"
#include "inject/result.hpp"

namespace epp {

namespace ext_proc = envoy::service::ext_proc::v3;

/// How the gateway sends a body: all chunks without waiting for our header answer
/// (FULL_DUPLEX_STREAMED), or the whole body in one message after it (BUFFERED).
enum class BodyMode { FullDuplex, Buffered };

/// The destination header and its dynamic-metadata twin (namespace "envoy.lb").
inline constexpr const char* kDestinationKey = "x-gateway-destination-endpoint";
/// What the gateway reports on the response (namespace "envoy.lb").
inline constexpr const char* kServedKey = "x-gateway-destination-endpoint-served";
/// The gateway's subset hint: namespace and key.
inline constexpr const char* kSubsetNamespace = "envoy.lb.subset_hint";
inline constexpr const char* kSubsetKey = "x-gateway-destination-endpoint-subset";
inline constexpr const char* kLbNamespace = "envoy.lb";

struct StreamOptions {
    /// The mode when the gateway sends no protocol_config on its first message (Envoy before
    /// 1.35 sends none): it must match the gateway's processing_mode.
    BodyMode default_mode = BodyMode::FullDuplex;
    /// Bodies re-sent in FULL_DUPLEX_STREAMED go in chunks of at most this many bytes (some
    /// Envoy builds refuse messages over 64 KiB).
    std::size_t chunk_bytes = 62000;
    /// A longer request body is refused with 413.
    std::size_t max_body_bytes = std::size_t{16} << 20;
};

/// One stream's state. Not thread-safe: the server feeds it from the stream's one thread.
class Stream {
public:
    Stream(Picker& picker, StreamOptions options) : picker_(picker), options_(options) {}
    ~Stream() { close(); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    /// Takes one message from the gateway and appends the answers to `out` (none while a
    /// FULL_DUPLEX_STREAMED request body is still coming, none after a refusal). InvalidInput
    /// for a message out of order (a body before the headers, a second request_headers): the
    /// server ends the stream with that error.
    [[nodiscard]] inject::Result<void> feed(const ext_proc::ProcessingRequest& in,
                                            std::vector<ext_proc::ProcessingResponse>& out);

    /// The request's decision must wait its turn (Picker::try_decide said so): the server
    /// calls resume() on a thread that may block, and feeds nothing before it returns.
    [[nodiscard]] bool waiting() const { return phase_ == Phase::Waiting; }
    /// Waits for the decision (Picker::decide) and appends the answers feed() would have.
    void resume(std::vector<ext_proc::ProcessingResponse>& out);

    /// The stream ended (completed, failed or cancelled by the gateway): tells the picker the
    /// request is finished, once, if it decided on it. Idempotent.
    void close();

    /// The HTTP status this stream gave the request: 200 once routed, the immediate
    /// response's otherwise; nothing before either.
    [[nodiscard]] std::optional<int> status() const { return status_; }
    /// The body mode in use (known after request_headers).
    [[nodiscard]] BodyMode request_mode() const { return request_mode_; }
    /// The request as given to the picker (valid after the decision).
    [[nodiscard]] const Request& request() const { return request_; }

private:
    enum class Phase { Start, RequestBody, Waiting, Routed, Done };

    void on_request_headers(const ext_proc::ProcessingRequest& in,
                            std::vector<ext_proc::ProcessingResponse>& out);
    void on_request_body(const ext_proc::HttpBody& body,
                         std::vector<ext_proc::ProcessingResponse>& out);
    void on_request_trailers(std::vector<ext_proc::ProcessingResponse>& out);
    void on_response_headers(const ext_proc::ProcessingRequest& in,
                             std::vector<ext_proc::ProcessingResponse>& out);
    void on_response_body(const ext_proc::HttpBody& body,
                          std::vector<ext_proc::ProcessingResponse>& out);
    /// The body ended (end_of_stream, trailers, or none at all): parse, decide, answer.
    /// `body_end_of_stream`: whether the last re-sent chunk ends the request.
    void decide_and_answer(bool has_body, bool body_end_of_stream,
                           std::vector<ext_proc::ProcessingResponse>& out);
    void answer(const Decision& d, std::vector<ext_proc::ProcessingResponse>& out);
    void refuse(int status, const std::string& message,
                std::vector<ext_proc::ProcessingResponse>& out);

    Picker& picker_;
    StreamOptions options_;
    Phase phase_ = Phase::Start;
    BodyMode request_mode_ = BodyMode::FullDuplex;
    BodyMode response_mode_ = BodyMode::FullDuplex;
    Request request_;
    std::string body_;
    std::string subset_error_;  ///< a subset hint we could not read: refused at the decision
    /// After a model rewrite: the client's model put back into the response body.
    std::optional<ModelRestorer> restore_;
    bool response_length_ = false;  ///< the response headers carry content-length
    bool has_body_ = false, body_end_of_stream_ = false;  ///< how the body ended
    bool id_generated_ = false;
    bool decided_ = false;
    bool finished_ = false;
    std::optional<int> status_;
};

/// "inference error: <Code> - <message>", the body of an immediate response; Code is the
/// name of the HTTP status as upstream's EPP gives it (BadRequest, ResourceExhausted, ...).
[[nodiscard]] std::string inference_error(int status, const std::string& message);

}  // namespace epp
