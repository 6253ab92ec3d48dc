// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the ext_proc stream's tests (epp_wire_stream_test.cpp, epp_wire_rewrite_test.cpp) feed
// epp::Stream with and read back: a Picker that records what it was asked, the gateway's
// messages, and the answers' header mutations.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "epp/wire/stream.hpp"

namespace epp_stream_test {

using envoy::extensions::filters::http::ext_proc::v3::ProcessingMode;
using epp::ext_proc::ProcessingRequest;
using epp::ext_proc::ProcessingResponse;

// Records every call; decide() answers with `answer`.
struct RecordingPicker : epp::Picker {
    epp::Decision answer{200, "", {"10.0.0.7:8000", "10.0.0.8:8000"}, {}};
    std::vector<epp::Request> decided;
    std::vector<std::string> served_endpoints;
    int finished_calls = 0;

    epp::Decision decide(const epp::Request& r) override {
        decided.push_back(r);
        return answer;
    }
    void served(const epp::Request&, const std::string& endpoint) override {
        served_endpoints.push_back(endpoint);
    }
    void finished(const epp::Request&) override { ++finished_calls; }
};

struct Header {
    std::string key, value, raw_value;
};

inline ProcessingRequest request_headers(const std::vector<Header>& headers, bool end_of_stream,
                                         std::optional<ProcessingMode::BodySendMode> mode = {}) {
    ProcessingRequest in;
    auto* h = in.mutable_request_headers();
    for (const auto& [key, value, raw] : headers) {
        auto* v = h->mutable_headers()->add_headers();
        v->set_key(key);
        v->set_value(value);
        v->set_raw_value(raw);
    }
    h->set_end_of_stream(end_of_stream);
    if (mode) in.mutable_protocol_config()->set_request_body_mode(*mode);
    return in;
}

inline ProcessingRequest request_body(const std::string& bytes, bool end_of_stream) {
    ProcessingRequest in;
    in.mutable_request_body()->set_body(bytes);
    in.mutable_request_body()->set_end_of_stream(end_of_stream);
    return in;
}

// The headers of a POST with x-request-id, as raw_value (Envoy's way since 1.28).
inline std::vector<Header> post_headers() {
    return {{":method", "", "POST"}, {":path", "", "/v1/completions"}, {"x-request-id", "", "r-1"}};
}

inline const std::string kBody = R"({"model":"tiny","prompt":"hello"})";

inline std::vector<ProcessingResponse> feed(epp::Stream& s, const ProcessingRequest& in) {
    std::vector<ProcessingResponse> out;
    EXPECT_TRUE(s.feed(in, out).has_value());
    return out;
}

// The header mutation's value for `name` (raw_value), or "" if not set.
inline std::string set_header(const epp::ext_proc::CommonResponse& c, const std::string& name) {
    for (const auto& o : c.header_mutation().set_headers())
        if (o.header().key() == name) return o.header().raw_value();
    return "";
}

inline ProcessingRequest response_headers_served(const std::string& endpoint) {
    ProcessingRequest in;
    in.mutable_response_headers();
    auto& ns = (*in.mutable_metadata_context()->mutable_filter_metadata())["envoy.lb"];
    (*ns.mutable_fields())["x-gateway-destination-endpoint-served"].set_string_value(endpoint);
    return in;
}

}  // namespace epp_stream_test
