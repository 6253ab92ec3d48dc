// SPDX-License-Identifier: Apache-2.0
// One thread, one completion queue, every stream on it (grpc's async client API): as Envoy is
// event-driven, the driver should cost little CPU next to the EPP it measures.
#include "epp_gateway_drive.hpp"

#include <grpcpp/alarm.h>

#include <cmath>
#include <deque>

#include "epp_gateway_http.hpp"
#include "epp_gateway_stats.hpp"

namespace epp_gateway {
namespace {

using Clock = std::chrono::steady_clock;
using Request = extproc::ProcessingRequest;
using Response = extproc::ProcessingResponse;

// What the driver's stand-in model server answers (a completion's shape, small).
constexpr std::string_view kAnswer =
    R"({"id":"cmpl-drive","object":"text_completion","choices":[{"index":0,"text":"ok"}],)"
    R"("usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}})";

Request response_body(std::string_view chunk, bool end) {
    Request m;
    m.mutable_response_body()->set_body(std::string(chunk));
    m.mutable_response_body()->set_end_of_stream(end);
    return m;
}

// One Process stream, one operation at a time: the messages in `out_` are written, then the
// answers read; each completion on the queue moves it on (step()).
class Call {
public:
    Call(const DriveConfig& config, extproc::ExternalProcessor::StubInterface& stub,
         grpc::CompletionQueue& cq)
        : config_(config), phase_(config.stream) {
        context_.set_deadline(std::chrono::system_clock::now() + config.stream.timeout);
        request_ = {"POST",
                    "/v1/completions",
                    "epp-gateway",
                    {{"content-type", "application/json"},
                     {"content-length", std::to_string(config.body.size())}},
                    config.body,
                    config.subset,
                    ""};
        routing_.upstream = request_;
        if (!full_duplex()) body_ = request_.body;  // the EPP's answer may replace it
        out_.push_back(headers_message(request_, config.stream));
        if (full_duplex())
            for (auto& m : body_messages(request_.body, config.stream)) out_.push_back(m);
        stream_ = stub.PrepareAsyncProcess(&context_, &cq);
        stream_->StartCall(this);
    }

    // An operation of this stream completed; false once the stream is over (status recorded).
    bool step(bool ok, Stats& stats) {
        if (stage_ == Stage::Finishing) {
            const bool fine = error_.empty() && status_.ok();
            stats.record(routing_.status != 0 ? routing_.status : (fine ? 200 : 502), decision_);
            return false;
        }
        if (!ok && stage_ != Stage::Drained && stage_ != Stage::Route)
            error_ = "the stream ended before the response's end_of_stream";
        if (!ok || !error_.empty()) return finish();
        if (reading_ && !take()) return finish();
        reading_ = false;
        if (!out_.empty()) {
            if (stage_ == Stage::Route && !started_) phase_.start();
            started_ = true;
            writing_ = std::move(out_.front());
            out_.pop_front();
            grpc::WriteOptions o;
            if (!out_.empty()) o.set_buffer_hint();  // more follows at once: one flush for all
            stream_->Write(writing_, o, this);
            return true;
        }
        if (stage_ == Stage::Closing) {
            stage_ = Stage::Drained;
            stream_->WritesDone(this);
            return true;
        }
        reading_ = true;
        stream_->Read(&in_, this);
        return true;
    }

private:
    enum class Stage { Route, Respond, Closing, Drained, Finishing };

    bool full_duplex() const { return config_.stream.mode == Mode::FullDuplex; }

    bool finish() {
        if (stage_ == Stage::Route && routing_.status == 0)
            routing_.status = 500;  // the stream ended before an answer: Envoy's status_on_error
        if (stage_ != Stage::Drained) context_.TryCancel();
        stage_ = Stage::Finishing;
        stream_->Finish(&status_, this);
        return true;
    }

    // The answer in `in_`; false to end the stream.
    bool take() {
        if (stage_ == Stage::Route) return take_request_answer();
        const bool expected =
            stage_ == Stage::Respond &&
            (in_.has_response_headers() || in_.has_response_body() || in_.has_immediate_response());
        if (!expected) {
            error_ = "an answer the response phase did not expect";
            return false;
        }
        if (in_.has_immediate_response()) {
            stage_ = Stage::Closing;
        } else if (!full_duplex()) {  // the headers answer, then the whole body and its answer
            if (in_.has_response_headers()) out_.push_back(response_body(kAnswer, true));
            if (in_.has_response_body()) stage_ = Stage::Closing;
        } else if (in_.has_response_body() && in_.response_body()
                                                  .response()
                                                  .body_mutation()
                                                  .streamed_response()
                                                  .end_of_stream()) {
            stage_ = Stage::Closing;
        }
        return true;
    }

    bool take_request_answer() {
        bool done = false;
        if (auto e = phase_.take(in_, routing_, body_, done); !e.empty()) {
            routing_.status = 502;
            error_ = e;
            return false;
        }
        // BUFFERED: the body goes once the headers are answered.
        if (done && !full_duplex() && !body_sent_ && routing_.status == 0 &&
            !request_.body.empty()) {
            body_sent_ = true;
            out_.push_back(body_messages(request_.body, config_.stream).front());
            return true;
        }
        if (!done) return true;
        if (routing_.status != 0) return false;  // an immediate response
        routing_ = phase_.routed(std::move(routing_), std::move(body_));
        if (routing_.status != 0) return false;
        decision_ = routing_.decision;
        stage_ = Stage::Respond;
        const auto endpoints = split_list(routing_.destination);
        out_.push_back(response_headers_message(200, {{"content-type", "application/json"}},
                                                endpoints.front()));
        if (full_duplex()) {
            out_.push_back(response_body(kAnswer, false));
            out_.push_back(response_body("", true));
        }
        return true;
    }

    const DriveConfig& config_;
    RequestPhase phase_;
    HttpRequest request_;
    Routing routing_;
    std::string body_;
    grpc::ClientContext context_;
    std::unique_ptr<grpc::ClientAsyncReaderWriterInterface<Request, Response>> stream_;
    std::deque<Request> out_;
    Request writing_;
    Response in_;
    Stage stage_ = Stage::Route;
    bool started_ = false, reading_ = false, body_sent_ = false;
    std::optional<std::chrono::nanoseconds> decision_;
    std::string error_;
    grpc::Status status_;
};

}  // namespace

nlohmann::json drive(const DriveConfig& config, extproc::ExternalProcessor::StubInterface& stub) {
    Stats stats;
    grpc::CompletionQueue cq;
    grpc::Alarm alarm;
    int alarm_tag = 0;  // its address tells the alarm from the streams
    const auto start = Clock::now();
    const auto interval = std::chrono::duration<double>(1.0 / config.rate);
    const auto due = [&](int i) {
        return start + std::chrono::duration_cast<Clock::duration>(interval * i);
    };
    const auto deadline = [](Clock::time_point t) {
        return std::chrono::system_clock::now() +
               std::chrono::duration_cast<std::chrono::system_clock::duration>(t - Clock::now());
    };
    Clock::duration late_max{0};
    int started = 0, open = 0;
    alarm.Set(&cq, deadline(due(0)), &alarm_tag);
    void* tag = nullptr;
    bool ok = false;
    while ((started < config.requests || open > 0) && cq.Next(&tag, &ok)) {
        if (tag != &alarm_tag) {
            auto* call = static_cast<Call*>(tag);
            if (!call->step(ok, stats)) {
                delete call;
                --open;
            }
            continue;
        }
        // Every stream that is due starts now; the alarm waits for the next one.
        for (const auto now = Clock::now(); started < config.requests && due(started) <= now;
             ++started, ++open) {
            late_max = std::max(late_max, now - due(started));
            new Call(config, stub, cq);
        }
        if (started < config.requests) alarm.Set(&cq, deadline(due(started)), &alarm_tag);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    auto out = stats.json();
    out["rate"] = config.rate;
    out["seconds"] = std::round(seconds * 1000.0) / 1000.0;
    out["achieved_rate"] = std::round(config.requests / seconds * 10.0) / 10.0;
    out["late_ms_max"] =
        std::round(std::chrono::duration<double, std::micro>(late_max).count()) / 1e3;
    return out;
}

}  // namespace epp_gateway
