// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// One ext_proc Process stream as Envoy's ext_proc filter plays it for one HTTP request
/// (epp-gateway, k8s/tests/FAKES.md): the request phase that asks the Endpoint Picker where to
/// send the request, then the response phase that passes the upstream's answer through it.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "envoy/service/ext_proc/v3/external_processor.grpc.pb.h"

namespace epp_gateway {

namespace extproc = envoy::service::ext_proc::v3;

/// HTTP headers in order, names in lower case, pseudo-headers (":path") included where they
/// go on the wire to the EPP.
using Headers = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::string_view kDestination = "x-gateway-destination-endpoint";
inline constexpr std::string_view kServed = "x-gateway-destination-endpoint-served";
inline constexpr std::string_view kSubset = "x-gateway-destination-endpoint-subset";
inline constexpr std::string_view kLbNamespace = "envoy.lb";
inline constexpr std::string_view kSubsetNamespace = "envoy.lb.subset_hint";
/// Envoy's recommended ceiling for one streamed body chunk (FULL_DUPLEX_STREAMED).
inline constexpr std::size_t kMaxStreamedChunk = 64 * 1024;

/// The value of header `name` (lower case), or nullopt.
std::optional<std::string> header(const Headers& h, std::string_view name);

/// Applies an ext_proc HeaderMutation as Envoy does: removals first, then each set_header
/// (append_action 0 with `append` unset overwrites, as Envoy reads it). The value must come as
/// raw_value, which is what Envoy reads. Returns "" or what was wrong with the mutation.
/// Changes to host, :authority, :scheme and :method are ignored, as Envoy's default
/// mutation rules ignore them.
std::string apply_mutation(Headers& h, const extproc::HeaderMutation& m);

/// Filter body mode: FULL_DUPLEX_STREAMED (body chunks sent without waiting for the header
/// answer, every chunk echoed as a streamed_response) or BUFFERED (the body in one message
/// after the header answer).
enum class Mode { FullDuplex, Buffered };

struct StreamOptions {
    Mode mode = Mode::FullDuplex;
    std::size_t chunk = 16 * 1024;               ///< request body chunk size (FULL_DUPLEX_STREAMED)
    std::chrono::milliseconds timeout{120'000};  ///< deadline of the whole stream
    /// false: no protocol_config on the first message, as Envoy before 1.35 sends none.
    bool protocol_config = true;
};

/// What the client sent.
struct HttpRequest {
    std::string method, path, authority;
    Headers headers;  ///< without pseudo-headers
    std::string body;
    /// The subset hint sent in the headers message's metadata; nullopt: none.
    std::optional<std::vector<std::string>> subset;
    /// Not sent to the EPP: forward to this endpoint of its list instead of the first (and
    /// report it served), as a gateway that retried down the list would; "": the first.
    std::string use_endpoint;
};

/// The outcome of the request phase.
struct Routing {
    /// 0: forward `upstream` to the first endpoint of `destination`; otherwise the status the
    /// client gets (the EPP's immediate response, 500 for a failed stream, 502 for an answer
    /// Envoy would not take).
    int status = 0;
    std::string body;         ///< the immediate response's body, or why the request failed
    Headers reply_headers;    ///< the immediate response's headers
    std::string destination;  ///< "ip:port[,ip:port...]"
    HttpRequest upstream;     ///< the request after the EPP's header and body mutations
    /// From writing request_headers to reading the message that carried the destination (or
    /// the immediate response).
    std::chrono::nanoseconds decision{0};
};

/// Where the answer to the client goes; called from one thread at a time.
class ResponseSink {
public:
    virtual ~ResponseSink() = default;
    /// The status and headers; false when the client is gone.
    virtual bool headers(int status, const Headers& h) = 0;
    virtual bool body(std::string_view chunk) = 0;
};

/// The first message of a stream: the request headers, the subset hint, the protocol_config.
extproc::ProcessingRequest headers_message(const HttpRequest& r, const StreamOptions& o);
/// The request body as the filter sends it: chunks (FULL_DUPLEX_STREAMED) or one message.
std::vector<extproc::ProcessingRequest> body_messages(const std::string& body,
                                                      const StreamOptions& o);
/// The upstream's status and headers, the endpoint that served as envoy.lb metadata.
extproc::ProcessingRequest response_headers_message(int status, const Headers& h,
                                                    const std::string& served);

/// The request phase's checks of the EPP's answers, as Envoy makes them.
class RequestPhase {
public:
    explicit RequestPhase(StreamOptions options) : options_(options) {}
    /// The first message is being written: the decision latency counts from here.
    void start() { started_ = std::chrono::steady_clock::now(); }
    /// One answer: its header mutation (on out.upstream.headers, pseudo-headers included), its
    /// body, the destination metadata. `done` once the phase is over. "" or what was wrong.
    std::string take(const extproc::ProcessingResponse& m, Routing& out, std::string& body,
                     bool& done);
    /// The phase is over: `out` routed, or failed with 502 and why.
    Routing routed(Routing out, std::string body) const;

private:
    StreamOptions options_;
    std::chrono::steady_clock::time_point started_;
    bool headers_answered_ = false;
    bool destination_seen_ = false;
    std::string metadata_destination_;
};

/// One Process stream; route() once, then respond_headers(), respond_body()..., finish().
class Exchange {
public:
    Exchange(extproc::ExternalProcessor::StubInterface& stub, StreamOptions options);
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    /// The request phase: headers (with the subset hint), body, and the EPP's answers.
    Routing route(const HttpRequest& r);
    /// Sends the upstream's status and headers with the endpoint that served as envoy.lb
    /// metadata. FULL_DUPLEX_STREAMED: the EPP's answers reach `sink` as they come.
    bool respond_headers(int status, const Headers& h, const std::string& served,
                         ResponseSink& sink);
    /// One chunk of the upstream's body.
    bool respond_body(std::string_view chunk);
    /// Ends the response and the stream: "" or what went wrong (the EPP broke the protocol, or
    /// the stream failed).
    std::string finish();
    /// Ends the stream early (the upstream failed): the EPP sees it cancelled.
    void cancel();

private:
    bool write(const extproc::ProcessingRequest& m);
    std::string read_response_phase();
    std::string answer_response_body(const extproc::ProcessingResponse& m, bool& done);
    Routing route_buffered(const HttpRequest& r, Routing out);
    Routing route_full_duplex(const HttpRequest& r, Routing out);
    Routing stream_failed(Routing out);
    std::string sink_headers(const extproc::CommonResponse& c);
    std::string finish_buffered();

    StreamOptions options_;
    grpc::ClientContext context_;
    std::unique_ptr<
        grpc::ClientReaderWriterInterface<extproc::ProcessingRequest, extproc::ProcessingResponse>>
        stream_;
    RequestPhase phase_;
    bool writes_done_ = false;

    // Response phase.
    ResponseSink* sink_ = nullptr;
    int response_status_ = 0;
    Headers response_headers_;
    std::string response_body_;  ///< BUFFERED: the whole upstream body
    std::thread reader_;         ///< FULL_DUPLEX_STREAMED: the EPP's response-phase answers
    std::string reader_error_;
};

}  // namespace epp_gateway
