// SPDX-License-Identifier: Apache-2.0
#include "epp_gateway_exchange.hpp"

#include <algorithm>
#include <cctype>

namespace epp_gateway {
namespace {

using Clock = std::chrono::steady_clock;
namespace core = envoy::config::core::v3;
using BodySendMode = envoy::extensions::filters::http::ext_proc::v3::ProcessingMode;
using Response = extproc::ProcessingResponse;

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

void add_header(core::HeaderMap* m, std::string_view key, std::string_view value) {
    auto* h = m->add_headers();
    h->set_key(std::string(key));
    h->set_raw_value(std::string(value));
}

// dynamic_metadata[ns][key] when it is a string.
std::optional<std::string> metadata_string(const google::protobuf::Struct& s, std::string_view ns,
                                           std::string_view key) {
    const auto n = s.fields().find(std::string(ns));
    if (n == s.fields().end() || !n->second.has_struct_value()) return std::nullopt;
    const auto& fields = n->second.struct_value().fields();
    const auto k = fields.find(std::string(key));
    if (k == fields.end() || k->second.kind_case() != google::protobuf::Value::kStringValue)
        return std::nullopt;
    return k->second.string_value();
}

// Envoy's default mutation rules leave these alone (they would change the routing of the
// request in ways the route table did not say).
bool protected_header(std::string_view name) {
    return name == "host" || name == ":authority" || name == ":scheme" || name == ":method";
}

bool sets_header(const extproc::HeaderMutation& m, std::string_view name) {
    return std::any_of(m.set_headers().begin(), m.set_headers().end(),
                       [&](const auto& o) { return lower(o.header().key()) == name; });
}

bool empty_mutation(const extproc::HeaderMutation& m) {
    return m.set_headers_size() == 0 && m.remove_headers_size() == 0;
}

const char* answer_name(Response::ResponseCase c) {
    switch (c) {
        case Response::kRequestHeaders:
            return "request_headers";
        case Response::kResponseHeaders:
            return "response_headers";
        case Response::kRequestBody:
            return "request_body";
        case Response::kResponseBody:
            return "response_body";
        case Response::kRequestTrailers:
            return "request_trailers";
        case Response::kResponseTrailers:
            return "response_trailers";
        case Response::kImmediateResponse:
            return "immediate_response";
        case Response::kStreamedImmediateResponse:
            return "streamed_immediate_response";
        case Response::RESPONSE_NOT_SET:
            break;
    }
    return "empty";
}

Routing failed(Routing out, int status, std::string why) {
    out.status = status;
    out.body = std::move(why);
    return out;
}

}  // namespace

extproc::ProcessingRequest headers_message(const HttpRequest& r, const StreamOptions& o) {
    extproc::ProcessingRequest m;
    auto* h = m.mutable_request_headers();
    auto* map = h->mutable_headers();
    add_header(map, ":method", r.method);
    add_header(map, ":path", r.path);
    add_header(map, ":authority", r.authority);
    add_header(map, ":scheme", "http");
    for (const auto& [k, v] : r.headers) add_header(map, k, v);
    h->set_end_of_stream(r.body.empty());
    if (r.subset) {
        auto& hint = (*m.mutable_metadata_context()
                           ->mutable_filter_metadata())[std::string(kSubsetNamespace)];
        auto* list = (*hint.mutable_fields())[std::string(kSubset)].mutable_list_value();
        for (const auto& e : *r.subset) list->add_values()->set_string_value(e);
    }
    // Envoy says its body modes on the first message of a stream (since 1.35).
    if (!o.protocol_config) return m;
    const auto body_mode =
        o.mode == Mode::FullDuplex ? BodySendMode::FULL_DUPLEX_STREAMED : BodySendMode::BUFFERED;
    m.mutable_protocol_config()->set_request_body_mode(body_mode);
    m.mutable_protocol_config()->set_response_body_mode(body_mode);
    return m;
}

std::vector<extproc::ProcessingRequest> body_messages(const std::string& body,
                                                      const StreamOptions& o) {
    const std::size_t chunk = o.mode == Mode::FullDuplex ? o.chunk : body.size();
    std::vector<extproc::ProcessingRequest> out;
    for (std::size_t off = 0; off < body.size(); off += chunk) {
        auto* b = out.emplace_back().mutable_request_body();
        b->set_body(body.substr(off, chunk));
        b->set_end_of_stream(off + chunk >= body.size());
    }
    return out;
}

extproc::ProcessingRequest response_headers_message(int status, const Headers& h,
                                                    const std::string& served) {
    extproc::ProcessingRequest m;
    auto* map = m.mutable_response_headers()->mutable_headers();
    add_header(map, ":status", std::to_string(status));
    for (const auto& [k, v] : h) add_header(map, k, v);
    auto& lb =
        (*m.mutable_metadata_context()->mutable_filter_metadata())[std::string(kLbNamespace)];
    (*lb.mutable_fields())[std::string(kServed)].set_string_value(served);
    return m;
}

std::optional<std::string> header(const Headers& h, std::string_view name) {
    for (const auto& [k, v] : h)
        if (k == name) return v;
    return std::nullopt;
}

std::string apply_mutation(Headers& h, const extproc::HeaderMutation& m) {
    for (const auto& name : m.remove_headers()) {
        const auto n = lower(name);
        if (!protected_header(n)) std::erase_if(h, [&](const auto& e) { return e.first == n; });
    }
    for (const auto& o : m.set_headers()) {
        if (!o.has_header()) continue;
        const auto& hv = o.header();
        const auto n = lower(hv.key());
        if (n.empty()) return "a set_headers entry without a key";
        if (!hv.value().empty() && !hv.raw_value().empty())
            return "header '" + n + "' has both value and raw_value";
        if (hv.raw_value().empty() && !hv.value().empty())
            return "header '" + n + "' set in value; Envoy reads raw_value";
        if (hv.raw_value().find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
            return "header '" + n + "' has CR, LF or NUL in its value";
        if (protected_header(n)) continue;
        const bool exists = header(h, n).has_value();
        bool append = false;
        switch (o.append_action()) {
            case core::HeaderValueOption::APPEND_IF_EXISTS_OR_ADD:
                // The default value: Envoy then goes by the deprecated `append` (default false).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // Envoy still reads it
                append = o.has_append() && o.append().value();
#pragma GCC diagnostic pop
                break;
            case core::HeaderValueOption::ADD_IF_ABSENT:
                if (exists) continue;
                break;
            case core::HeaderValueOption::OVERWRITE_IF_EXISTS_OR_ADD:
                break;
            case core::HeaderValueOption::OVERWRITE_IF_EXISTS:
                if (!exists) continue;
                break;
            default:
                return "header '" + n + "': unknown append_action " +
                       std::to_string(o.append_action());
        }
        if (!append) std::erase_if(h, [&](const auto& e) { return e.first == n; });
        h.emplace_back(n, hv.raw_value());
    }
    return {};
}

Exchange::Exchange(extproc::ExternalProcessor::StubInterface& stub, StreamOptions options)
    : options_(options), phase_(options) {
    context_.set_deadline(std::chrono::system_clock::now() + options_.timeout);
    stream_ = stub.Process(&context_);
}

Exchange::~Exchange() {
    if (!stream_) return;
    cancel();
    extproc::ProcessingResponse m;
    while (stream_->Read(&m)) {
    }
    (void)stream_->Finish();
}

void Exchange::cancel() {
    context_.TryCancel();
    if (reader_.joinable()) reader_.join();
}

bool Exchange::write(const extproc::ProcessingRequest& m) {
    return stream_->Write(m);
}

Routing Exchange::route(const HttpRequest& r) {
    Routing out;
    out.upstream = r;
    phase_.start();
    return options_.mode == Mode::Buffered ? route_buffered(r, std::move(out))
                                           : route_full_duplex(r, std::move(out));
}

std::string RequestPhase::take(const Response& m, Routing& out, std::string& body, bool& done) {
    if (auto d = metadata_string(m.dynamic_metadata(), kLbNamespace, kDestination))
        metadata_destination_ = *d;
    const bool full_duplex = options_.mode == Mode::FullDuplex;
    if (m.has_immediate_response()) {
        const auto& ir = m.immediate_response();
        out.status = ir.status().code();
        out.body = ir.body();
        if (out.status < 200)
            return "an immediate response with status " + std::to_string(out.status);
        if (auto e = apply_mutation(out.reply_headers, ir.headers()); !e.empty()) return e;
        out.decision = Clock::now() - started_;
        done = true;
        return {};
    }
    const bool on_headers = m.has_request_headers();
    if (!on_headers && !m.has_request_body())
        return std::string("a ") + answer_name(m.response_case()) + " answer in the request phase";
    if (!on_headers && !headers_answered_)
        return "a request_body answer before the request_headers answer";
    if (on_headers && headers_answered_) return "a second request_headers answer";
    const auto& c = on_headers ? m.request_headers().response() : m.request_body().response();
    if (!on_headers && full_duplex && !empty_mutation(c.header_mutation()))
        return "a header mutation on a request_body answer in FULL_DUPLEX_STREAMED (the headers "
               "went upstream with the request_headers answer)";
    if (auto e = apply_mutation(out.upstream.headers, c.header_mutation()); !e.empty()) return e;
    if (!destination_seen_ && sets_header(c.header_mutation(), kDestination)) {
        destination_seen_ = true;
        out.decision = Clock::now() - started_;
    }
    if (on_headers) {
        headers_answered_ = true;
        if (c.has_body_mutation()) return "a body mutation on the request_headers answer";
        done = out.upstream.body.empty() || options_.mode == Mode::Buffered;
        return {};
    }
    const auto& bm = c.body_mutation();
    if (full_duplex) {
        if (!bm.has_streamed_response())
            return "a request_body answer without streamed_response in FULL_DUPLEX_STREAMED";
        const auto& chunk = bm.streamed_response().body();
        if (chunk.size() > kMaxStreamedChunk)
            return "a streamed request body chunk of " + std::to_string(chunk.size()) +
                   " bytes (over 64 KiB)";
        body += chunk;
        done = bm.streamed_response().end_of_stream();
        return {};
    }
    if (bm.has_streamed_response()) return "a streamed_response in BUFFERED mode";
    if (bm.has_body()) body = bm.body();
    if (bm.has_clear_body() && bm.clear_body()) body.clear();
    done = true;
    return {};
}

Routing Exchange::route_full_duplex(const HttpRequest& r, Routing out) {
    // Envoy streams the headers and every chunk without waiting for an answer.
    bool open = write(headers_message(r, options_));
    for (const auto& chunk : body_messages(r.body, options_))
        if (open) open = write(chunk);
    out.upstream.headers = {{":method", r.method}, {":path", r.path}};
    out.upstream.headers.insert(out.upstream.headers.end(), r.headers.begin(), r.headers.end());
    std::string body;
    Response m;
    for (bool done = false; !done;) {
        if (!stream_->Read(&m)) return stream_failed(std::move(out));
        if (auto e = phase_.take(m, out, body, done); !e.empty())
            return failed(std::move(out), 502, "the EPP's answer: " + e);
    }
    return phase_.routed(std::move(out), std::move(body));
}

Routing Exchange::route_buffered(const HttpRequest& r, Routing out) {
    out.upstream.headers = {{":method", r.method}, {":path", r.path}};
    out.upstream.headers.insert(out.upstream.headers.end(), r.headers.begin(), r.headers.end());
    std::string body = r.body;
    Response m;
    bool done = false;
    // The headers alone; the body goes once they are answered.
    if (!write(headers_message(r, options_)) || !stream_->Read(&m))
        return stream_failed(std::move(out));
    if (auto e = phase_.take(m, out, body, done); !e.empty())
        return failed(std::move(out), 502, "the EPP's answer: " + e);
    if (out.status != 0) return out;
    if (!r.body.empty()) {
        if (!write(body_messages(r.body, options_).front()) || !stream_->Read(&m))
            return stream_failed(std::move(out));
        done = false;
        if (auto e = phase_.take(m, out, body, done); !e.empty())
            return failed(std::move(out), 502, "the EPP's answer: " + e);
    }
    return phase_.routed(std::move(out), body);
}

Routing Exchange::stream_failed(Routing out) {
    if (!writes_done_) stream_->WritesDone();
    writes_done_ = true;
    extproc::ProcessingResponse m;
    while (stream_->Read(&m)) {
    }
    const auto s = stream_->Finish();
    stream_.reset();
    // Envoy answers a failed ext_proc stream with status_on_error, 500 unless configured.
    return failed(std::move(out), 500,
                  "ext_proc stream ended before an answer: " + std::to_string(s.error_code()) +
                      " " + s.error_message());
}

// The request phase is over: a routed request must have the destination in the header and
// the envoy.lb metadata, the same in both, and a Content-Length that matches its body.
Routing RequestPhase::routed(Routing out, std::string body) const {
    if (out.status != 0) return out;
    auto& hs = out.upstream.headers;
    const auto dest = header(hs, kDestination);
    if (!destination_seen_ || !dest)
        return failed(std::move(out), 502, "the EPP set no x-gateway-destination-endpoint header");
    if (metadata_destination_.empty())
        return failed(std::move(out), 502,
                      "the EPP sent no envoy.lb x-gateway-destination-endpoint metadata");
    if (*dest != metadata_destination_)
        return failed(std::move(out), 502,
                      "destination header '" + *dest + "' and envoy.lb metadata '" +
                          metadata_destination_ + "' differ");
    if (auto cl = header(hs, "content-length"); cl && *cl != std::to_string(body.size()))
        return failed(
            std::move(out), 502,
            "content-length " + *cl + " but the body is " + std::to_string(body.size()) + " bytes");
    out.destination = *dest;
    out.upstream.method = header(hs, ":method").value_or(out.upstream.method);
    out.upstream.path = header(hs, ":path").value_or(out.upstream.path);
    std::erase_if(hs, [](const auto& e) { return e.first.starts_with(':'); });
    out.upstream.body = std::move(body);
    return out;
}

bool Exchange::respond_headers(int status, const Headers& h, const std::string& served,
                               ResponseSink& sink) {
    sink_ = &sink;
    response_status_ = status;
    response_headers_ = h;
    if (!write(response_headers_message(status, h, served))) return false;
    if (options_.mode == Mode::FullDuplex)
        reader_ = std::thread([this] { reader_error_ = read_response_phase(); });
    return true;
}

bool Exchange::respond_body(std::string_view chunk) {
    if (options_.mode == Mode::Buffered) {
        response_body_ += chunk;
        return true;
    }
    extproc::ProcessingRequest m;
    m.mutable_response_body()->set_body(std::string(chunk));
    return write(m);
}

// The response headers as the EPP changed them, to the client.
std::string Exchange::sink_headers(const extproc::CommonResponse& c) {
    Headers hs{{":status", std::to_string(response_status_)}};
    hs.insert(hs.end(), response_headers_.begin(), response_headers_.end());
    if (auto e = apply_mutation(hs, c.header_mutation()); !e.empty()) return e;
    const int status = std::atoi(header(hs, ":status").value_or("0").c_str());
    if (status < 100) return "a :status that is no HTTP status";
    std::erase_if(hs, [](const auto& e) { return e.first.starts_with(':'); });
    sink_->headers(status, hs);
    return {};
}

std::string Exchange::answer_response_body(const Response& m, bool& done) {
    const auto& c = m.response_body().response();
    if (!empty_mutation(c.header_mutation()))
        return "a header mutation on a response_body answer in FULL_DUPLEX_STREAMED (the "
               "headers went to the client)";
    if (!c.body_mutation().has_streamed_response())
        return "a response_body answer without streamed_response in FULL_DUPLEX_STREAMED";
    const auto& sr = c.body_mutation().streamed_response();
    if (sr.body().size() > kMaxStreamedChunk)
        return "a streamed response body chunk of " + std::to_string(sr.body().size()) +
               " bytes (over 64 KiB)";
    if (!sr.body().empty()) sink_->body(sr.body());
    done = sr.end_of_stream();
    return {};
}

// FULL_DUPLEX_STREAMED, on its own thread: the answers to the response headers and chunks,
// passed to the client as they come, until the echoed end_of_stream; then nothing more.
std::string Exchange::read_response_phase() {
    bool headers_sent = false, done = false;
    Response m;
    while (!done) {
        if (!stream_->Read(&m)) return "the stream ended before the response's end_of_stream";
        if (m.has_immediate_response()) {
            if (headers_sent) return "an immediate response after the response headers";
            sink_->headers(m.immediate_response().status().code(), {});
            sink_->body(m.immediate_response().body());
            return {};
        }
        if (m.has_response_headers()) {
            if (headers_sent) return "a second response_headers answer";
            if (auto e = sink_headers(m.response_headers().response()); !e.empty()) return e;
            headers_sent = true;
        } else if (m.has_response_body()) {
            if (!headers_sent) return "a response_body answer before the response_headers answer";
            if (auto e = answer_response_body(m, done); !e.empty()) return e;
        } else {
            return std::string("a ") + answer_name(m.response_case()) +
                   " answer in the response phase";
        }
    }
    if (stream_->Read(&m))
        return std::string("a ") + answer_name(m.response_case()) +
               " answer after the response's end_of_stream";
    return {};
}

// BUFFERED: the header answer, then the whole body and its answer; the client gets both once
// the body is answered (its answer may still change the headers).
std::string Exchange::finish_buffered() {
    Response m;
    if (!stream_->Read(&m)) return "the stream ended before the response_headers answer";
    if (m.has_immediate_response()) {
        sink_->headers(m.immediate_response().status().code(), {});
        sink_->body(m.immediate_response().body());
        return {};
    }
    if (!m.has_response_headers())
        return std::string("a ") + answer_name(m.response_case()) +
               " answer to the response headers";
    Headers hs{{":status", std::to_string(response_status_)}};
    hs.insert(hs.end(), response_headers_.begin(), response_headers_.end());
    if (auto e = apply_mutation(hs, m.response_headers().response().header_mutation()); !e.empty())
        return e;
    extproc::ProcessingRequest b;
    b.mutable_response_body()->set_body(response_body_);
    b.mutable_response_body()->set_end_of_stream(true);
    if (!write(b) || !stream_->Read(&m)) return "the stream ended before the response_body answer";
    if (!m.has_response_body())
        return std::string("a ") + answer_name(m.response_case()) + " answer to the response body";
    const auto& c = m.response_body().response();
    if (auto e = apply_mutation(hs, c.header_mutation()); !e.empty()) return e;
    const auto& bm = c.body_mutation();
    if (bm.has_streamed_response()) return "a streamed_response in BUFFERED mode";
    if (bm.has_body()) response_body_ = bm.body();
    if (bm.has_clear_body() && bm.clear_body()) response_body_.clear();
    // Envoy refuses a replaced body whose content-length the processor left wrong
    if (auto cl = header(hs, "content-length"); cl && *cl != std::to_string(response_body_.size()))
        return "response content-length " + *cl + " but the body is " +
               std::to_string(response_body_.size()) + " bytes";
    const int status = std::atoi(header(hs, ":status").value_or("0").c_str());
    std::erase_if(hs, [](const auto& e) { return e.first.starts_with(':'); });
    sink_->headers(status, hs);
    sink_->body(response_body_);
    return {};
}

std::string Exchange::finish() {
    std::string error;
    if (options_.mode == Mode::Buffered) {
        error = finish_buffered();
    } else {
        extproc::ProcessingRequest m;
        m.mutable_response_body()->set_end_of_stream(true);
        write(m);
    }
    stream_->WritesDone();
    writes_done_ = true;
    if (reader_.joinable()) reader_.join();
    if (error.empty()) error = reader_error_;
    extproc::ProcessingResponse rest;
    while (stream_->Read(&rest)) {
    }
    const auto s = stream_->Finish();
    stream_.reset();
    if (error.empty() && !s.ok())
        error = "ext_proc stream: " + std::to_string(s.error_code()) + " " + s.error_message();
    return error;
}

}  // namespace epp_gateway
