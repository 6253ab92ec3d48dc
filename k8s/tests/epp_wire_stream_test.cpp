// SPDX-License-Identifier: Apache-2.0
// The ext_proc stream state machine (k8s/epp/wire/stream.hpp) fed the messages a gateway sends,
// in both body modes, against a Picker that records what it was asked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "epp_wire_stream_fixture.hpp"

namespace {

using namespace epp_stream_test;

std::string destination_metadata(const ProcessingResponse& r) {
    const auto& f = r.dynamic_metadata().fields();
    const auto lb = f.find("envoy.lb");
    if (lb == f.end()) return "";
    const auto& g = lb->second.struct_value().fields();
    const auto d = g.find("x-gateway-destination-endpoint");
    return d == g.end() ? "" : d->second.string_value();
}

TEST(EppWireStream, FullDuplexAnswersNothingUntilTheBodyEndsThenRoutesAndResendsTheBody) {
    RecordingPicker p;
    epp::Stream s(p, {});
    EXPECT_TRUE(feed(s, request_headers(post_headers(), false)).empty());
    EXPECT_TRUE(feed(s, request_body(kBody.substr(0, 10), false)).empty());
    const auto out = feed(s, request_body(kBody.substr(10), true));
    ASSERT_EQ(out.size(), 2u);
    ASSERT_TRUE(out[0].has_request_headers());
    const auto& c = out[0].request_headers().response();
    EXPECT_TRUE(c.clear_route_cache());
    EXPECT_EQ(set_header(c, "x-gateway-destination-endpoint"), "10.0.0.7:8000,10.0.0.8:8000");
    EXPECT_EQ(set_header(c, "content-length"), std::to_string(kBody.size()));
    EXPECT_EQ(destination_metadata(out[0]), "10.0.0.7:8000,10.0.0.8:8000");
    ASSERT_TRUE(out[1].has_request_body());
    const auto& sr = out[1].request_body().response().body_mutation().streamed_response();
    EXPECT_EQ(sr.body(), kBody);
    EXPECT_TRUE(sr.end_of_stream());
    ASSERT_EQ(p.decided.size(), 1u);
    EXPECT_EQ(p.decided[0].model, "tiny");
    EXPECT_EQ(p.decided[0].id, "r-1");
    EXPECT_EQ(s.request_mode(), epp::BodyMode::FullDuplex);
    EXPECT_EQ(s.status(), 200);
}

// A picker whose requests must wait their turn: try_decide says so, decide() answers.
struct WaitingPicker : RecordingPicker {
    int tries = 0;
    std::optional<epp::Decision> try_decide(const epp::Request&) override {
        ++tries;
        return std::nullopt;
    }
};

TEST(EppWireStream, ARequestThatMustWaitIsAnsweredByResumeWithTheSameAnswers) {
    for (const auto mode : {ProcessingMode::FULL_DUPLEX_STREAMED, ProcessingMode::BUFFERED}) {
        WaitingPicker p;
        epp::Stream s(p, {});
        const bool buffered = mode == ProcessingMode::BUFFERED;
        EXPECT_EQ(feed(s, request_headers(post_headers(), false, mode)).size(), buffered ? 1u : 0u);
        EXPECT_TRUE(feed(s, request_body(kBody, true)).empty());  // nothing yet: it waits
        EXPECT_TRUE(s.waiting());
        EXPECT_EQ(p.tries, 1);
        EXPECT_TRUE(p.decided.empty());
        // Nothing may come from the gateway meanwhile (the server reads nothing while it waits).
        std::vector<ProcessingResponse> out;
        EXPECT_FALSE(s.feed(request_body("x", true), out).has_value());
        s.resume(out);
        EXPECT_FALSE(s.waiting());
        ASSERT_EQ(p.decided.size(), 1u);
        ASSERT_EQ(out.size(), buffered ? 1u : 2u);
        const auto& c =
            buffered ? out[0].request_body().response() : out[0].request_headers().response();
        EXPECT_EQ(set_header(c, "x-gateway-destination-endpoint"), "10.0.0.7:8000,10.0.0.8:8000");
        if (!buffered) {
            const auto& sr = out[1].request_body().response().body_mutation().streamed_response();
            EXPECT_EQ(sr.body(), kBody);
            EXPECT_TRUE(sr.end_of_stream());
        }
        EXPECT_EQ(s.status(), 200);
        s.close();
        EXPECT_EQ(p.finished_calls, 1);
    }
}

TEST(EppWireStream, BufferedAnswersTheHeadersAtOnceAndRoutesInTheBodyAnswer) {
    RecordingPicker p;
    epp::Stream s(p, {});
    const auto first = feed(s, request_headers(post_headers(), false, ProcessingMode::BUFFERED));
    ASSERT_EQ(first.size(), 1u);
    ASSERT_TRUE(first[0].has_request_headers());
    EXPECT_FALSE(first[0].request_headers().response().has_header_mutation());
    EXPECT_TRUE(p.decided.empty());
    const auto out = feed(s, request_body(kBody, true));
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].has_request_body());
    const auto& c = out[0].request_body().response();
    EXPECT_TRUE(c.clear_route_cache());
    EXPECT_EQ(set_header(c, "x-gateway-destination-endpoint"), "10.0.0.7:8000,10.0.0.8:8000");
    EXPECT_EQ(destination_metadata(out[0]), "10.0.0.7:8000,10.0.0.8:8000");
    EXPECT_FALSE(c.body_mutation().has_streamed_response());
    EXPECT_EQ(s.request_mode(), epp::BodyMode::Buffered);
}

TEST(EppWireStream, DefaultModeAppliesWhenTheGatewaySendsNoProtocolConfig) {
    RecordingPicker p;
    epp::Stream s(p, {.default_mode = epp::BodyMode::Buffered});
    EXPECT_EQ(feed(s, request_headers(post_headers(), false)).size(), 1u);
    EXPECT_EQ(s.request_mode(), epp::BodyMode::Buffered);
}

ProcessingResponse only_answer(epp::Stream& s, const std::string& body) {
    EXPECT_TRUE(feed(s, request_headers(post_headers(), false)).empty());
    auto out = feed(s, request_body(body, true));
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? ProcessingResponse{} : out[0];
}

TEST(EppWireStream, BodyWithoutAModelIsRefusedWith400WithoutAskingThePicker) {
    for (const std::string body : {"not json", "[1]", R"({"prompt":"x"})", R"({"model":7})"}) {
        RecordingPicker p;
        epp::Stream s(p, {});
        const auto r = only_answer(s, body);
        ASSERT_TRUE(r.has_immediate_response()) << body;
        EXPECT_EQ(r.immediate_response().status().code(), 400) << body;
        EXPECT_TRUE(r.immediate_response().body().starts_with("inference error: BadRequest - "));
        EXPECT_TRUE(p.decided.empty());
        s.close();
        EXPECT_EQ(p.finished_calls, 0);
    }
}

TEST(EppWireStream, PickerRefusalsBecomeImmediateResponsesWithTheirStatus) {
    for (const int status : {503, 429}) {
        RecordingPicker p;
        p.answer = {status, "saturated", {}, {}};
        epp::Stream s(p, {});
        const auto r = only_answer(s, kBody);
        ASSERT_TRUE(r.has_immediate_response());
        EXPECT_EQ(r.immediate_response().status().code(), status);
        EXPECT_NE(r.immediate_response().body().find("saturated"), std::string::npos);
        EXPECT_EQ(s.status(), status);
        // The gateway has dropped the stream: later messages get no answer.
        std::vector<ProcessingResponse> more;
        EXPECT_TRUE(s.feed(request_body("x", true), more).has_value());
        EXPECT_TRUE(more.empty());
    }
}

TEST(EppWireStream, ADecisionWithNoEndpointIs503) {
    RecordingPicker p;
    p.answer = {200, "", {}, {}};
    epp::Stream s(p, {});
    EXPECT_EQ(only_answer(s, kBody).immediate_response().status().code(), 503);
}

TEST(EppWireStream, BodyOverTheLimitIsRefusedWith413) {
    RecordingPicker p;
    epp::Stream s(p, {.max_body_bytes = 20});
    EXPECT_TRUE(feed(s, request_headers(post_headers(), false)).empty());
    EXPECT_TRUE(feed(s, request_body(kBody.substr(0, 15), false)).empty());
    const auto out = feed(s, request_body(kBody.substr(15), true));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].immediate_response().status().code(), 413);
    EXPECT_TRUE(p.decided.empty());
}

void add_subset(ProcessingRequest& in, const google::protobuf::Value& v) {
    auto& ns = (*in.mutable_metadata_context()->mutable_filter_metadata())["envoy.lb.subset_hint"];
    (*ns.mutable_fields())["x-gateway-destination-endpoint-subset"] = v;
}

TEST(EppWireStream, SubsetHintIsReadFromRequestHeadersAsAListOrACommaSeparatedString) {
    google::protobuf::Value list;
    list.mutable_list_value()->add_values()->set_string_value("10.0.0.7:8000");
    list.mutable_list_value()->add_values()->set_string_value("10.0.0.9");
    google::protobuf::Value csv;
    csv.set_string_value("10.0.0.7:8000, 10.0.0.9");
    for (const auto& v : {list, csv}) {
        RecordingPicker p;
        epp::Stream s(p, {});
        auto in = request_headers(post_headers(), false);
        add_subset(in, v);
        feed(s, in);
        feed(s, request_body(kBody, true));
        ASSERT_EQ(p.decided.size(), 1u);
        ASSERT_TRUE(p.decided[0].subset.has_value());
        EXPECT_EQ(*p.decided[0].subset, (std::vector<std::string>{"10.0.0.7:8000", "10.0.0.9"}));
    }
}

TEST(EppWireStream, SubsetHintOnALaterMessageIsIgnoredAndAnEmptyOneIsKept) {
    RecordingPicker p;
    epp::Stream s(p, {});
    feed(s, request_headers(post_headers(), false));
    auto body = request_body(kBody, true);
    google::protobuf::Value v;
    v.set_string_value("10.0.0.9:8000");
    add_subset(body, v);
    feed(s, body);
    ASSERT_EQ(p.decided.size(), 1u);
    EXPECT_FALSE(p.decided[0].subset.has_value());

    RecordingPicker q;
    epp::Stream t(q, {});
    auto in = request_headers(post_headers(), false);
    google::protobuf::Value empty;
    empty.mutable_list_value();
    add_subset(in, empty);
    feed(t, in);
    feed(t, request_body(kBody, true));
    ASSERT_EQ(q.decided.size(), 1u);
    ASSERT_TRUE(q.decided[0].subset.has_value());
    EXPECT_TRUE(q.decided[0].subset->empty());
}

TEST(EppWireStream, LargeBodyIsResentIn62000ByteChunksWithTheSameBytes) {
    RecordingPicker p;
    epp::Stream s(p, {});
    std::string body = R"({"model":"tiny","prompt":")";
    for (std::size_t i = 0; body.size() < 150000 - 2; ++i) body += static_cast<char>('a' + i % 26);
    body += "\"}";
    ASSERT_EQ(body.size(), 150000u);
    feed(s, request_headers(post_headers(), false));
    std::vector<ProcessingResponse> out;
    for (std::size_t at = 0; at < body.size(); at += 16384) {
        out = feed(s, request_body(body.substr(at, 16384), at + 16384 >= body.size()));
    }
    ASSERT_EQ(out.size(), 4u);  // the header answer, then 62000 + 62000 + 26000
    EXPECT_EQ(set_header(out[0].request_headers().response(), "content-length"), "150000");
    std::string resent;
    for (std::size_t i = 1; i < out.size(); ++i) {
        const auto& sr = out[i].request_body().response().body_mutation().streamed_response();
        EXPECT_LE(sr.body().size(), 62000u);
        EXPECT_EQ(sr.end_of_stream(), i == out.size() - 1);
        resent += sr.body();
    }
    EXPECT_EQ(out[1].request_body().response().body_mutation().streamed_response().body().size(),
              62000u);
    EXPECT_EQ(resent, body);
}

TEST(EppWireStream, ServedEndpointIsReadBackAndResponseChunksAreEchoed) {
    RecordingPicker p;
    epp::Stream s(p, {});
    feed(s, request_headers(post_headers(), false));
    feed(s, request_body(kBody, true));
    const auto h = feed(s, response_headers_served("10.0.0.8:8000"));
    ASSERT_EQ(h.size(), 1u);
    EXPECT_TRUE(h[0].has_response_headers());
    EXPECT_EQ(p.served_endpoints, std::vector<std::string>{"10.0.0.8:8000"});
    ProcessingRequest chunk;
    chunk.mutable_response_body()->set_body("data: tok\n\n");
    const auto echoed = feed(s, chunk);
    ASSERT_EQ(echoed.size(), 1u);
    const auto& sr = echoed[0].response_body().response().body_mutation().streamed_response();
    EXPECT_EQ(sr.body(), "data: tok\n\n");
    EXPECT_FALSE(sr.end_of_stream());
    ProcessingRequest trailers;
    trailers.mutable_response_trailers();
    const auto t = feed(s, trailers);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_TRUE(t[0].has_response_trailers());
}

TEST(EppWireStream, BufferedResponseBodyIsLetThrough) {
    RecordingPicker p;
    epp::Stream s(p, {});
    auto in = request_headers(post_headers(), false, ProcessingMode::BUFFERED);
    in.mutable_protocol_config()->set_response_body_mode(ProcessingMode::BUFFERED);
    feed(s, in);
    feed(s, request_body(kBody, true));
    feed(s, response_headers_served("10.0.0.7:8000"));
    ProcessingRequest body;
    body.mutable_response_body()->set_body("{}");
    body.mutable_response_body()->set_end_of_stream(true);
    const auto out = feed(s, body);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].has_response_body());
    EXPECT_FALSE(out[0].response_body().response().has_body_mutation());
}

TEST(EppWireStream, FinishedIsCalledOnceWhetherTheStreamCompletesOrIsCancelled) {
    RecordingPicker done;
    {
        epp::Stream s(done, {});
        feed(s, request_headers(post_headers(), false));
        feed(s, request_body(kBody, true));
        feed(s, response_headers_served("10.0.0.7:8000"));
        s.close();
        s.close();
    }
    EXPECT_EQ(done.finished_calls, 1);

    RecordingPicker cancelled;  // the gateway drops the stream after the decision
    {
        epp::Stream s(cancelled, {});
        feed(s, request_headers(post_headers(), false));
        feed(s, request_body(kBody, true));
    }
    EXPECT_EQ(cancelled.finished_calls, 1);

    RecordingPicker early;  // cancelled before any decision: nothing to finish
    {
        epp::Stream s(early, {});
        feed(s, request_headers(post_headers(), false));
    }
    EXPECT_EQ(early.finished_calls, 0);
}

TEST(EppWireStream, RawValueIsPreferredToValueAndNamesAreLowerCased) {
    RecordingPicker p;
    epp::Stream s(p, {});
    feed(s, request_headers({{"X-Request-Id", "from-value", ""},
                             {"x-gateway-inference-fairness-id", "old", "tenant-a"},
                             {"X-Gateway-Inference-Objective", "", "fast"}},
                            false));
    feed(s, request_body(kBody, true));
    ASSERT_EQ(p.decided.size(), 1u);
    EXPECT_EQ(p.decided[0].id, "from-value");
    EXPECT_EQ(p.decided[0].fairness_id, "tenant-a");
    EXPECT_EQ(p.decided[0].objective, "fast");
    EXPECT_EQ(p.decided[0].headers.at("x-request-id"), "from-value");
}

TEST(EppWireStream, MissingRequestIdIsGeneratedAndSetOnTheUpstreamRequest) {
    RecordingPicker p;
    epp::Stream s(p, {});
    feed(s, request_headers({{":method", "", "POST"}}, false));
    const auto out = feed(s, request_body(kBody, true));
    ASSERT_EQ(p.decided.size(), 1u);
    EXPECT_EQ(p.decided[0].id.size(), 36u);
    EXPECT_EQ(set_header(out[0].request_headers().response(), "x-request-id"), p.decided[0].id);
}

TEST(EppWireStream, RequestWithoutBodyIsRoutedOnItsHeadersWithoutAModel) {
    RecordingPicker p;
    epp::Stream s(p, {});
    const auto out = feed(s, request_headers({{":method", "", "GET"}}, true));
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].has_request_headers());
    EXPECT_EQ(set_header(out[0].request_headers().response(), "x-gateway-destination-endpoint"),
              "10.0.0.7:8000,10.0.0.8:8000");
    ASSERT_EQ(p.decided.size(), 1u);
    EXPECT_EQ(p.decided[0].model, "");
}

TEST(EppWireStream, MessagesOutOfOrderAreErrors) {
    RecordingPicker p;
    epp::Stream s(p, {});
    std::vector<ProcessingResponse> out;
    EXPECT_FALSE(s.feed(request_body(kBody, true), out).has_value());
    EXPECT_TRUE(s.feed(request_headers(post_headers(), false), out).has_value());
    EXPECT_FALSE(s.feed(request_headers(post_headers(), false), out).has_value());
    EXPECT_FALSE(s.feed(response_headers_served("10.0.0.7:8000"), out).has_value());
}

}  // namespace
