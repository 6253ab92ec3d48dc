// SPDX-License-Identifier: Apache-2.0
#include "epp/wire/stream.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <random>
#include <string_view>

#include "inject/text.hpp"

namespace epp {
namespace {

using envoy::config::core::v3::HeaderValueOption;
using envoy::extensions::filters::http::ext_proc::v3::ProcessingMode;
using inject::Errc;

std::string lower(std::string_view s) {
    std::string out(s);
    std::ranges::transform(out, out.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// A random version-4 UUID, for a request the gateway sent without x-request-id.
std::string random_request_id() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::array<unsigned char, 16> b{};
    for (std::size_t i = 0; i < b.size(); i += 8) {
        const auto v = rng();
        for (std::size_t j = 0; j < 8; ++j) b[i + j] = static_cast<unsigned char>(v >> (8 * j));
    }
    b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
    b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
    std::array<char, 37> s{};
    std::snprintf(s.data(), s.size(),
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    return s.data();
}

// The subset hint of one request_headers message: a list of strings or one comma-separated
// string, entries "ip" or "ip:port". nullopt: no hint. An error text: a hint we cannot read.
std::optional<std::vector<std::string>> subset_hint(const ext_proc::ProcessingRequest& in,
                                                    std::string& error) {
    const auto& ns = in.metadata_context().filter_metadata();
    const auto n = ns.find(kSubsetNamespace);
    if (n == ns.end()) return std::nullopt;
    const auto& fields = n->second.fields();
    const auto k = fields.find(kSubsetKey);
    if (k == fields.end()) return std::nullopt;
    std::vector<std::string> out;
    auto add = [&out](std::string_view entries) {
        while (!entries.empty()) {
            const auto comma = entries.find(',');
            const auto e = inject::text::trim(entries.substr(0, comma));
            if (!e.empty()) out.emplace_back(e);
            entries = comma == std::string_view::npos ? "" : entries.substr(comma + 1);
        }
    };
    const auto& v = k->second;
    if (v.has_string_value()) {
        add(v.string_value());
    } else if (v.has_list_value()) {
        for (const auto& e : v.list_value().values()) {
            if (!e.has_string_value()) {
                error = std::string("subset hint ") + kSubsetKey + " holds a non-string entry";
                return out;
            }
            add(e.string_value());
        }
    } else {
        error = std::string("subset hint ") + kSubsetKey + " is neither a string nor a list";
    }
    return out;
}

BodyMode mode_of(ProcessingMode::BodySendMode m, BodyMode fallback) {
    switch (m) {
        case ProcessingMode::FULL_DUPLEX_STREAMED:
            return BodyMode::FullDuplex;
        case ProcessingMode::BUFFERED:
        case ProcessingMode::BUFFERED_PARTIAL:
            return BodyMode::Buffered;
        default:
            return fallback;
    }
}

void set_header(ext_proc::HeaderMutation& m, const std::string& name, const std::string& value) {
    auto* o = m.add_set_headers();
    o->mutable_header()->set_key(name);
    o->mutable_header()->set_raw_value(value);
    o->set_append_action(HeaderValueOption::OVERWRITE_IF_EXISTS_OR_ADD);
}

// The decision as the gateway reads it: the destination header (plus the scheduler's headers
// and, where the body is re-sent, its length) on `common`, and the same destination string in
// the envoy.lb dynamic metadata of `resp`.
void route(const Decision& d, const std::string& generated_id, std::optional<std::size_t> length,
           ext_proc::CommonResponse& common, ext_proc::ProcessingResponse& resp) {
    std::string destination;
    for (const auto& e : d.endpoints) destination += (destination.empty() ? "" : ",") + e;
    common.set_clear_route_cache(true);
    auto& m = *common.mutable_header_mutation();
    set_header(m, kDestinationKey, destination);
    if (length) set_header(m, "content-length", std::to_string(*length));
    if (!generated_id.empty()) set_header(m, "x-request-id", generated_id);
    for (const auto& [name, value] : d.headers) set_header(m, name, value);
    auto& lb = (*resp.mutable_dynamic_metadata()->mutable_fields())[kLbNamespace];
    (*lb.mutable_struct_value()->mutable_fields())[kDestinationKey].set_string_value(destination);
}

void stream_body(std::string_view body, std::size_t chunk, bool end_of_stream, bool request,
                 std::vector<ext_proc::ProcessingResponse>& out) {
    do {
        const auto n = std::min(chunk, body.size());
        ext_proc::ProcessingResponse r;
        auto* b = request ? r.mutable_request_body() : r.mutable_response_body();
        auto* s = b->mutable_response()->mutable_body_mutation()->mutable_streamed_response();
        s->set_body(std::string(body.substr(0, n)));
        body.remove_prefix(n);
        s->set_end_of_stream(end_of_stream && body.empty());
        out.push_back(std::move(r));
    } while (!body.empty());
}

}  // namespace

std::string inference_error(int status, const std::string& message) {
    std::string_view code;
    switch (status) {
        case 400:
            code = "BadRequest";
            break;
        case 401:
            code = "Unauthorized";
            break;
        case 403:
            code = "Forbidden";
            break;
        case 404:
            code = "NotFound";
            break;
        case 413:
            code = "BadRequest";
            break;
        case 429:
            code = "ResourceExhausted";
            break;
        case 503:
            code = "ServiceUnavailable";
            break;
        default:
            code = "Internal";
            break;
    }
    return "inference error: " + std::string(code) + " - " + message;
}

inject::Result<void> Stream::feed(const ext_proc::ProcessingRequest& in,
                                  std::vector<ext_proc::ProcessingResponse>& out) {
    using R = ext_proc::ProcessingRequest;
    const auto kind = in.request_case();
    // After an immediate response the gateway drops the stream; what it had already sent
    // needs no answer.
    if (phase_ == Phase::Done) return inject::ok();
    if (phase_ == Phase::Waiting)
        return inject::fail(Errc::InvalidInput, "a message while the request waits its turn");
    const bool request_part =
        kind == R::kRequestHeaders || kind == R::kRequestBody || kind == R::kRequestTrailers;
    if (kind == R::kRequestHeaders && phase_ != Phase::Start)
        return inject::fail(Errc::InvalidInput, "a second request_headers on one stream");
    if (kind != R::kRequestHeaders && phase_ == Phase::Start)
        return inject::fail(Errc::InvalidInput, "a message before request_headers");
    if (!request_part && phase_ != Phase::Routed)
        return inject::fail(Errc::InvalidInput, "a response message before the request was routed");
    switch (kind) {
        case R::kRequestHeaders:
            on_request_headers(in, out);
            break;
        case R::kRequestBody:
            if (phase_ != Phase::RequestBody)
                return inject::fail(Errc::InvalidInput, "request_body after the request ended");
            on_request_body(in.request_body(), out);
            break;
        case R::kRequestTrailers:
            on_request_trailers(out);
            break;
        case R::kResponseHeaders:
            on_response_headers(in, out);
            break;
        case R::kResponseBody:
            on_response_body(in.response_body(), out);
            break;
        case R::kResponseTrailers:
            out.emplace_back().mutable_response_trailers();
            break;
        case R::REQUEST_NOT_SET:
            return inject::fail(Errc::InvalidInput, "a ProcessingRequest with no message set");
    }
    return inject::ok();
}

void Stream::on_request_headers(const ext_proc::ProcessingRequest& in,
                                std::vector<ext_proc::ProcessingResponse>& out) {
    request_mode_ = response_mode_ = options_.default_mode;
    if (in.has_protocol_config()) {
        request_mode_ = mode_of(in.protocol_config().request_body_mode(), request_mode_);
        response_mode_ = mode_of(in.protocol_config().response_body_mode(), response_mode_);
    }
    for (const auto& h : in.request_headers().headers().headers())
        request_.headers[lower(h.key())] = h.raw_value().empty() ? h.value() : h.raw_value();
    auto header = [this](const char* name) -> const std::string* {
        const auto it = request_.headers.find(name);
        return it == request_.headers.end() || it->second.empty() ? nullptr : &it->second;
    };
    if (const auto* id = header("x-request-id")) {
        request_.id = *id;
    } else {
        request_.id = random_request_id();
        id_generated_ = true;
    }
    if (const auto* f = header("x-gateway-inference-fairness-id")) request_.fairness_id = *f;
    if (const auto* o = header("x-gateway-inference-objective")) request_.objective = *o;
    if (const auto* m = header("x-gateway-model-name-rewrite")) request_.model_rewrite = *m;
    request_.subset = subset_hint(in, subset_error_);

    if (in.request_headers().end_of_stream()) {
        decide_and_answer(false, false, out);
        return;
    }
    phase_ = Phase::RequestBody;
    // The gateway waits for this answer before it sends a buffered body: answer now, route in
    // the body answer. In FULL_DUPLEX_STREAMED the header answer carries the route: later.
    if (request_mode_ == BodyMode::Buffered) out.emplace_back().mutable_request_headers();
}

void Stream::on_request_body(const ext_proc::HttpBody& body,
                             std::vector<ext_proc::ProcessingResponse>& out) {
    if (body_.size() + body.body().size() > options_.max_body_bytes) {
        refuse(413, "request body over " + std::to_string(options_.max_body_bytes) + " bytes", out);
        return;
    }
    body_ += body.body();
    // BUFFERED sends the whole body in one message (end_of_stream false only when trailers
    // follow).
    if (body.end_of_stream() || request_mode_ == BodyMode::Buffered)
        decide_and_answer(true, body.end_of_stream(), out);
}

void Stream::on_request_trailers(std::vector<ext_proc::ProcessingResponse>& out) {
    if (phase_ == Phase::RequestBody) decide_and_answer(true, false, out);
    if (phase_ == Phase::Routed) out.emplace_back().mutable_request_trailers();
}

void Stream::decide_and_answer(bool has_body, bool body_end_of_stream,
                               std::vector<ext_proc::ProcessingResponse>& out) {
    if (has_body) {
        auto json = nlohmann::json::parse(body_, nullptr, false);
        if (json.is_discarded() || !json.is_object()) {
            refuse(400, "request body is not a JSON object", out);
            return;
        }
        const auto m = json.find("model");
        if (m == json.end() || !m->is_string() || m->get_ref<const std::string&>().empty()) {
            refuse(400, "model not found in request body", out);
            return;
        }
        request_.model = m->get<std::string>();
        request_.body = std::move(json);
    } else {
        request_.body = nlohmann::json::object();
    }
    if (!subset_error_.empty()) {
        refuse(500, subset_error_, out);
        return;
    }
    decided_ = true;
    has_body_ = has_body;
    body_end_of_stream_ = body_end_of_stream;
    const auto d = picker_.try_decide(request_);
    if (!d) {
        phase_ = Phase::Waiting;
        return;
    }
    answer(*d, out);
}

void Stream::resume(std::vector<ext_proc::ProcessingResponse>& out) {
    if (phase_ == Phase::Waiting) answer(picker_.decide(request_), out);
}

void Stream::answer(const Decision& d, std::vector<ext_proc::ProcessingResponse>& out) {
    if (d.status != 200 || d.endpoints.empty()) {
        refuse(d.status == 200 ? 503 : d.status,
               d.message.empty() ? std::string("no endpoint") : d.message, out);
        return;
    }
    phase_ = Phase::Routed;
    status_ = 200;
    const std::string id = id_generated_ ? request_.id : std::string();
    // A model rewrite: the body again with the target model (keys in order, as upstream's
    // re-marshalled body), and the client's model back in the response.
    const bool rewritten = has_body_ && !d.model.empty() && d.model != request_.model;
    if (rewritten) {
        request_.body["model"] = d.model;
        body_ = request_.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        restore_.emplace(d.model, request_.model);
    }
    ext_proc::ProcessingResponse r;
    if (!has_body_) {
        route(d, id, std::nullopt, *r.mutable_request_headers()->mutable_response(), r);
        out.push_back(std::move(r));
    } else if (request_mode_ == BodyMode::Buffered) {
        // BUFFERED: a replaced body's length is ours to set (Envoy refuses a mismatch)
        auto& common = *r.mutable_request_body()->mutable_response();
        route(d, id, rewritten ? std::optional(body_.size()) : std::nullopt, common, r);
        if (rewritten) common.mutable_body_mutation()->set_body(body_);
        out.push_back(std::move(r));
    } else {
        route(d, id, body_.size(), *r.mutable_request_headers()->mutable_response(), r);
        out.push_back(std::move(r));
        stream_body(body_, options_.chunk_bytes, body_end_of_stream_, true, out);
    }
    body_.clear();
    body_.shrink_to_fit();
}

void Stream::refuse(int status, const std::string& message,
                    std::vector<ext_proc::ProcessingResponse>& out) {
    phase_ = Phase::Done;
    status_ = status;
    auto* i = out.emplace_back().mutable_immediate_response();
    i->mutable_status()->set_code(static_cast<envoy::type::v3::StatusCode>(status));
    i->set_body(inference_error(status, message));
    i->set_details("enflame_epp_" + std::to_string(status));
    body_.clear();
}

void Stream::on_response_headers(const ext_proc::ProcessingRequest& in,
                                 std::vector<ext_proc::ProcessingResponse>& out) {
    const auto& ns = in.metadata_context().filter_metadata();
    if (const auto n = ns.find(kLbNamespace); n != ns.end()) {
        const auto& fields = n->second.fields();
        if (const auto s = fields.find(kServedKey);
            s != fields.end() && s->second.has_string_value())
            picker_.served(request_, s->second.string_value());
    }
    for (const auto& h : in.response_headers().headers().headers()) {
        const std::string name = lower(h.key());
        const std::string& value = h.raw_value().empty() ? h.value() : h.raw_value();
        response_length_ = response_length_ || name == "content-length";
        // a compressed body's bytes are not its text: left alone
        if (name == "content-encoding" && lower(inject::text::trim(value)) != "identity")
            restore_.reset();
    }
    out.emplace_back().mutable_response_headers();
}

void Stream::on_response_body(const ext_proc::HttpBody& body,
                              std::vector<ext_proc::ProcessingResponse>& out) {
    // FULL_DUPLEX_STREAMED: the gateway forwards only what we send back, so every chunk is
    // echoed at once (a streamed answer reaches the client token by token); after a model
    // rewrite, less a tail that may begin the target's name, sent with the next chunk.
    if (response_mode_ == BodyMode::FullDuplex) {
        if (!restore_) {
            stream_body(body.body(), options_.chunk_bytes, body.end_of_stream(), false, out);
            return;
        }
        const std::string text = restore_->feed(body.body(), body.end_of_stream());
        if (!text.empty() || body.end_of_stream())
            stream_body(text, options_.chunk_bytes, body.end_of_stream(), false, out);
        return;
    }
    // BUFFERED: the whole body in one message; replaced when the client's model goes back in
    auto& answer = *out.emplace_back().mutable_response_body();
    if (!restore_) return;
    const std::string text = restore_->feed(body.body(), true);
    if (text == body.body()) return;
    auto& common = *answer.mutable_response();
    common.mutable_body_mutation()->set_body(text);
    if (response_length_)
        set_header(*common.mutable_header_mutation(), "content-length",
                   std::to_string(text.size()));
}

void Stream::close() {
    if (decided_ && !finished_) {
        finished_ = true;
        picker_.finished(request_);
    }
}

}  // namespace epp
