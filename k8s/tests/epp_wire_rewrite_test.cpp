// SPDX-License-Identifier: Apache-2.0
// A model rewrite on the ext_proc stream (k8s/epp/wire/stream.cpp, model_restore.cpp): the
// request body sent on with the target model and its new length, in FULL_DUPLEX_STREAMED
// chunks or as BUFFERED's replaced body; the client's model put back into the response, also
// when a chunk ends inside the name; a request no rewrite touches passed on byte for byte.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epp/wire/model_restore.hpp"
#include "epp_wire_stream_fixture.hpp"

namespace {

using namespace epp_stream_test;
using nlohmann::json;

// A completion request for `model` of about `size` bytes, written with spaces as curl users do.
std::string request_of(const std::string& model, std::size_t size) {
    std::string prompt;
    for (std::size_t i = 0; prompt.size() < size; ++i) prompt += static_cast<char>('a' + i % 26);
    return "{\"model\": \"" + model + "\",  \"max_tokens\": 3, \"prompt\": \"" + prompt + "\"}";
}

// The request body the stream sent on: the streamed chunks after the header answer, each
// checked against the chunk size and end_of_stream on the last alone.
std::string resent(const std::vector<ProcessingResponse>& out, std::size_t chunk_bytes) {
    std::string body;
    for (std::size_t i = 1; i < out.size(); ++i) {
        const auto& sr = out[i].request_body().response().body_mutation().streamed_response();
        EXPECT_LE(sr.body().size(), chunk_bytes);
        EXPECT_EQ(sr.end_of_stream(), i + 1 == out.size());
        body += sr.body();
    }
    return body;
}

// Feeds `body` in 16 KiB chunks, as Envoy's FULL_DUPLEX_STREAMED does; the last answers.
std::vector<ProcessingResponse> send(epp::Stream& s, const std::string& body) {
    std::vector<ProcessingResponse> out;
    for (std::size_t at = 0; at < body.size(); at += 16384)
        out = feed(s, request_body(body.substr(at, 16384), at + 16384 >= body.size()));
    return out;
}

TEST(EppWireRewrite, FullDuplexSendsTheBodyWithTheTargetModelAndItsNewLength) {
    RecordingPicker p;
    p.answer.model = "llama-canary-v2";
    epp::Stream s(p, {.chunk_bytes = 20000});
    const std::string body = request_of("llama", 100000);
    auto headers = post_headers();
    headers.push_back({"x-gateway-model-name-rewrite", "", "forced"});
    feed(s, request_headers(headers, false));
    const auto out = send(s, body);
    ASSERT_EQ(out.size(), 7u);  // the header answer, then 5 x 20000 and the rest
    const std::string sent = resent(out, 20000);
    EXPECT_EQ(set_header(out[0].request_headers().response(), "content-length"),
              std::to_string(sent.size()));
    const json was = json::parse(body), now = json::parse(sent);
    EXPECT_EQ(now["model"], "llama-canary-v2");
    EXPECT_EQ(now["prompt"], was["prompt"]);
    EXPECT_EQ(now["max_tokens"], 3);
    EXPECT_EQ(now.size(), was.size());
    // the picker saw the client's model and the header
    ASSERT_EQ(p.decided.size(), 1u);
    EXPECT_EQ(p.decided[0].model, "llama");
    EXPECT_EQ(p.decided[0].model_rewrite, "forced");
}

TEST(EppWireRewrite, BufferedReplacesTheBodyAndSetsItsLength) {
    RecordingPicker p;
    p.answer.model = "b";
    epp::Stream s(p, {});
    feed(s, request_headers(post_headers(), false, ProcessingMode::BUFFERED));
    const std::string body = request_of("a-longer-name", 300);
    const auto out = feed(s, request_body(body, true));
    ASSERT_EQ(out.size(), 1u);
    const auto& c = out[0].request_body().response();
    EXPECT_EQ(set_header(c, "x-gateway-destination-endpoint"), "10.0.0.7:8000,10.0.0.8:8000");
    ASSERT_TRUE(c.body_mutation().has_body());
    const std::string& sent = c.body_mutation().body();
    EXPECT_EQ(json::parse(sent)["model"], "b");
    EXPECT_EQ(json::parse(sent)["prompt"], json::parse(body)["prompt"]);
    EXPECT_EQ(set_header(c, "content-length"), std::to_string(sent.size()));
    EXPECT_LT(sent.size(), body.size());
}

TEST(EppWireRewrite, ARequestNoRewriteTouchesIsSentOnByteForByte) {
    const std::string body = request_of("tiny", 70000);
    for (const std::string model : {"", "tiny"}) {  // no rewrite; one to the same model
        RecordingPicker p;
        p.answer.model = model;
        epp::Stream full(p, {});
        feed(full, request_headers(post_headers(), false));
        const auto out = send(full, body);
        EXPECT_EQ(resent(out, 62000), body) << model;
        EXPECT_EQ(set_header(out[0].request_headers().response(), "content-length"),
                  std::to_string(body.size()));
        epp::Stream buffered(p, {});
        feed(buffered, request_headers(post_headers(), false, ProcessingMode::BUFFERED));
        const auto b = feed(buffered, request_body(body, true));
        ASSERT_EQ(b.size(), 1u);
        EXPECT_FALSE(b[0].request_body().response().has_body_mutation()) << model;
        EXPECT_EQ(set_header(b[0].request_body().response(), "content-length"), "") << model;
    }
}

// The stream routed a request for "llama" to "llama-v2", its response headers `headers` in.
void routed(epp::Stream& s, RecordingPicker& p, ProcessingMode::BodySendMode mode,
            const std::vector<Header>& headers) {
    p.answer.model = "llama-v2";
    auto in = request_headers(post_headers(), false, mode);
    in.mutable_protocol_config()->set_response_body_mode(mode);
    feed(s, in);
    feed(s, request_body(R"({"model":"llama","prompt":"q"})", true));
    auto h = response_headers_served("10.0.0.7:8000");
    for (const auto& [key, value, raw] : headers) {
        auto* v = h.mutable_response_headers()->mutable_headers()->add_headers();
        v->set_key(key);
        v->set_raw_value(raw);
    }
    feed(s, h);
}

ProcessingRequest response_chunk(const std::string& bytes, bool end_of_stream) {
    ProcessingRequest in;
    in.mutable_response_body()->set_body(bytes);
    in.mutable_response_body()->set_end_of_stream(end_of_stream);
    return in;
}

const std::string kEvents =
    "data: {\"id\":\"1\",\"model\":\"llama-v2\",\"choices\":[{\"text\":\"llama-v2 \"}]}\n\n"
    "data: {\"id\":\"2\", \"model\" : \"llama-v2\", \"nested\": {\"model\":\"llama-v2\"}}\n\n"
    "data: {\"model\":\"llama-v2-extra\",\"modality\":\"text\"}\n\n"
    "data: [DONE]\n\n";
const std::string kRestored =
    "data: {\"id\":\"1\",\"model\":\"llama\",\"choices\":[{\"text\":\"llama-v2 \"}]}\n\n"
    "data: {\"id\":\"2\", \"model\" : \"llama\", \"nested\": {\"model\":\"llama\"}}\n\n"
    "data: {\"model\":\"llama-v2-extra\",\"modality\":\"text\"}\n\n"
    "data: [DONE]\n\n";

TEST(EppWireRewrite, StreamedResponseChunksGetTheClientsModelBackAcrossChunkEnds) {
    for (std::size_t size : {1u, 5u, 7u, 13u, 64u, 1000u}) {
        RecordingPicker p;
        epp::Stream s(p, {.chunk_bytes = 32});
        routed(s, p, ProcessingMode::FULL_DUPLEX_STREAMED,
               {{"content-type", "", "text/event-stream"}});
        std::string got;
        bool ended = false;
        for (std::size_t at = 0; at < kEvents.size(); at += size) {
            const bool last = at + size >= kEvents.size();
            for (const auto& r : feed(s, response_chunk(kEvents.substr(at, size), last))) {
                const auto& sr = r.response_body().response().body_mutation().streamed_response();
                EXPECT_LE(sr.body().size(), 32u);
                EXPECT_FALSE(ended) << "an answer after end_of_stream";
                ended = sr.end_of_stream();
                got += sr.body();
            }
        }
        EXPECT_TRUE(ended) << size;
        EXPECT_EQ(got, kRestored) << "chunks of " << size;
    }
}

TEST(EppWireRewrite, BufferedResponseGetsTheClientsModelBackAndItsLength) {
    const std::string body = R"({"id":"x","object":"text_completion","model":"llama-v2"})";
    for (const bool length : {true, false}) {
        RecordingPicker p;
        epp::Stream s(p, {});
        std::vector<Header> headers = {{"content-type", "", "application/json"}};
        if (length) headers.push_back({"Content-Length", "", std::to_string(body.size())});
        routed(s, p, ProcessingMode::BUFFERED, headers);
        const auto out = feed(s, response_chunk(body, true));
        ASSERT_EQ(out.size(), 1u);
        const auto& c = out[0].response_body().response();
        EXPECT_EQ(c.body_mutation().body(),
                  R"({"id":"x","object":"text_completion","model":"llama"})");
        EXPECT_EQ(set_header(c, "content-length"),
                  length ? std::to_string(body.size() - 3) : std::string());
    }
}

TEST(EppWireRewrite, ACompressedResponseIsLeftAlone) {
    RecordingPicker p;
    epp::Stream s(p, {});
    routed(s, p, ProcessingMode::FULL_DUPLEX_STREAMED, {{"Content-Encoding", "", "gzip"}});
    const std::string bytes = "\"model\":\"llama-v2\"";  // as if it were gzip's
    const auto out = feed(s, response_chunk(bytes, true));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].response_body().response().body_mutation().streamed_response().body(), bytes);
}

TEST(EppWireRewrite, TheRestorerGivesTheSameTextWhereverTheBodyIsCut) {
    for (std::size_t i = 0; i <= kEvents.size(); ++i) {
        for (std::size_t j = i; j <= kEvents.size(); j += 7) {
            epp::ModelRestorer r("llama-v2", "llama");
            std::string got = r.feed(kEvents.substr(0, i), false);
            got += r.feed(kEvents.substr(i, j - i), false);
            got += r.feed(kEvents.substr(j), true);
            ASSERT_EQ(got, kRestored) << "cut at " << i << " and " << j;
        }
    }
    // what may begin the name is held back only until it is known not to
    epp::ModelRestorer r("b", "a");
    EXPECT_EQ(r.feed("{\"mod", false), "{");
    EXPECT_EQ(r.feed("e", false), "");
    EXPECT_EQ(r.feed("st\":1}", false), "\"modest\":1}");
    EXPECT_EQ(r.feed("\"model\" :", false), "");
    EXPECT_EQ(r.feed("\"", true), "\"model\" :\"");
}

}  // namespace
