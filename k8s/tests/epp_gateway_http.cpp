// SPDX-License-Identifier: Apache-2.0
#include "epp_gateway_http.hpp"

#include <civetweb.h>
#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

#include "k8s/http_server.hpp"

namespace epp_gateway {
namespace {

using Clock = std::chrono::steady_clock;

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
}

// Hop-by-hop headers: each HTTP/1 hop has its own, none goes through the gateway.
bool hop_by_hop(std::string_view name) {
    return name == "connection" || name == "transfer-encoding" || name == "keep-alive" ||
           name == "expect" || name == "upgrade" || name == "te";
}

double ms(std::chrono::nanoseconds d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

void reply(mg_connection* conn, int status, const std::string& body, const Headers& extra = {}) {
    mg_response_header_start(conn, status);
    bool typed = false;
    for (const auto& [k, v] : extra) {
        if (hop_by_hop(k) || k == "content-length") continue;
        typed = typed || k == "content-type";
        mg_response_header_add(conn, k.c_str(), v.c_str(), -1);
    }
    if (!typed) mg_response_header_add(conn, "content-type", "text/plain; charset=utf-8", -1);
    const auto length = std::to_string(body.size());
    mg_response_header_add(conn, "content-length", length.c_str(), -1);
    mg_response_header_send(conn);
    mg_write(conn, body.data(), body.size());
}

// The client's side of the answer: chunked, as the gateway does not know the length before
// the EPP has passed the last chunk back.
class ClientSink final : public ResponseSink {
public:
    ClientSink(mg_connection* conn, std::string destination, std::string served)
        : conn_(conn), destination_(std::move(destination)), served_(std::move(served)) {}

    bool headers(int status, const Headers& h) override {
        status_ = status;
        mg_response_header_start(conn_, status);
        for (const auto& [k, v] : h)
            if (!hop_by_hop(k) && k != "content-length")
                mg_response_header_add(conn_, k.c_str(), v.c_str(), -1);
        mg_response_header_add(conn_, "x-epp-destination", destination_.c_str(), -1);
        mg_response_header_add(conn_, "x-epp-served", served_.c_str(), -1);
        mg_response_header_add(conn_, "transfer-encoding", "chunked", -1);
        sent_ = mg_response_header_send(conn_) >= 0;
        return sent_;
    }
    bool body(std::string_view chunk) override {
        if (chunk.empty()) return true;
        return mg_send_chunk(conn_, chunk.data(), static_cast<unsigned>(chunk.size())) > 0;
    }
    void end() {
        if (sent_) mg_send_chunk(conn_, "", 0);
    }
    [[nodiscard]] bool sent() const { return sent_; }
    [[nodiscard]] int status() const { return status_; }

private:
    mg_connection* conn_;
    std::string destination_, served_;
    bool sent_ = false;
    int status_ = 0;
};

// One forward with libcurl; the upstream's status line, headers and body chunks go into the
// exchange as they arrive.
class Upstream {
public:
    Upstream(Exchange& exchange, ClientSink& sink, std::string served)
        : exchange_(exchange), sink_(sink), served_(std::move(served)) {}

    // "" or curl's reason.
    std::string forward(const HttpRequest& r, const std::string& endpoint,
                        std::chrono::milliseconds timeout) {
        std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(),
                                                                 curl_easy_cleanup);
        if (!curl) return "curl_easy_init failed";
        curl_slist* list = nullptr;
        std::string host = "host: " + r.authority;
        list = curl_slist_append(list, host.c_str());
        list = curl_slist_append(list, "expect:");  // no 100-continue round trip
        for (const auto& [k, v] : r.headers) {
            if (hop_by_hop(k) || k == "content-length" || k == "host") continue;
            list = curl_slist_append(list, (k + ": " + v).c_str());
        }
        std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(list,
                                                                            curl_slist_free_all);
        const std::string url = "http://" + endpoint + r.path;
        CURL* c = curl.get();
        curl_easy_setopt(c, CURLOPT_URL, url.c_str());
        curl_easy_setopt(c, CURLOPT_PROXY, "");  // never a proxy from the environment
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
        if (r.method == "GET") {
            curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        } else {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, r.body.data());
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                             static_cast<curl_off_t>(r.body.size()));
            if (r.method != "POST") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r.method.c_str());
        }
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &Upstream::on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, this);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Upstream::on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, this);
        const auto rc = curl_easy_perform(c);
        if (rc == CURLE_OK && !answered_ && status_ >= 200) answer_headers();
        if (rc != CURLE_OK && !broken_) return curl_easy_strerror(rc);
        if (broken_) return "the ext_proc stream broke while passing the response";
        return {};
    }
    [[nodiscard]] bool answered() const { return answered_; }

private:
    static std::size_t on_header(char* p, std::size_t size, std::size_t n, void* self) {
        auto& u = *static_cast<Upstream*>(self);
        const std::string_view line(p, size * n);
        if (line.starts_with("HTTP/")) {
            // A new status line (after a 1xx interim answer too) starts the headers again.
            u.status_ = std::atoi(std::string(line.substr(line.find(' ') + 1, 3)).c_str());
            u.headers_.clear();
        } else if (const auto colon = line.find(':'); colon != std::string_view::npos) {
            u.headers_.emplace_back(lower(std::string(line.substr(0, colon))),
                                    trimmed(line.substr(colon + 1)));
        } else if (trimmed(line).empty() && u.status_ >= 200 && !u.answered_) {
            if (!u.answer_headers()) return 0;
        }
        return size * n;
    }
    static std::size_t on_body(char* p, std::size_t size, std::size_t n, void* self) {
        auto& u = *static_cast<Upstream*>(self);
        if (!u.exchange_.respond_body(std::string_view(p, size * n))) {
            u.broken_ = true;
            return 0;
        }
        return size * n;
    }
    bool answer_headers() {
        answered_ = true;
        std::erase_if(headers_, [](const auto& h) { return hop_by_hop(h.first); });
        if (exchange_.respond_headers(status_, headers_, served_, sink_)) return true;
        broken_ = true;
        return false;
    }

    Exchange& exchange_;
    ClientSink& sink_;
    std::string served_;
    int status_ = 0;
    Headers headers_;
    bool answered_ = false, broken_ = false;
};

// The request as the client sent it; "" or why it cannot go on.
std::string read_request(mg_connection* conn, const std::optional<std::vector<std::string>>& dflt,
                         HttpRequest& r) {
    const auto* ri = mg_get_request_info(conn);
    r.method = ri->request_method;
    r.path = ri->request_uri;
    if (ri->query_string) r.path += std::string("?") + ri->query_string;
    r.subset = dflt;
    for (int i = 0; i < ri->num_headers; ++i) {
        const auto name = lower(ri->http_headers[i].name);
        const std::string value = ri->http_headers[i].value ? ri->http_headers[i].value : "";
        if (name == "host") {
            r.authority = value;  // HTTP/1's Host is HTTP/2's :authority
        } else if (name == "x-test-subset") {
            r.subset = split_list(value);
        } else if (name == "x-test-endpoint") {
            r.use_endpoint = trimmed(value);
        } else if (!hop_by_hop(name)) {
            r.headers.emplace_back(name, value);
        }
    }
    if (r.authority.empty()) r.authority = "epp-gateway";
    std::array<char, 64 * 1024> buf{};
    for (;;) {
        const int n = mg_read(conn, buf.data(), buf.size());
        if (n < 0) return "reading the request body failed";
        if (n == 0) break;
        r.body.append(buf.data(), static_cast<std::size_t>(n));
    }
    return {};
}

}  // namespace

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        const auto comma = s.find(',', start);
        const auto item = trimmed(std::string_view(s).substr(
            start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!item.empty()) out.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

std::unique_ptr<Gateway> Gateway::start(const GatewayConfig& config,
                                        extproc::ExternalProcessor::StubInterface& stub,
                                        Stats& stats, std::string& error) {
    mg_init_library(0);
    std::unique_ptr<Gateway> g(new Gateway(config, stub, stats));
    const auto threads = std::to_string(config.threads);
    const char* options[] = {"listening_ports",
                             config.listen.c_str(),
                             "num_threads",
                             threads.c_str(),
                             "request_timeout_ms",
                             "600000",
                             "enable_keep_alive",
                             "yes",
                             nullptr};
    mg_callbacks callbacks{};
    callbacks.log_message = [](const mg_connection*, const char* message) {
        spdlog::debug("civetweb: {}", message);
        return 1;
    };
    mg_init_data init{&callbacks, g.get(), options};
    std::array<char, 256> text{};
    unsigned code = 0;
    mg_error_data err{&code, text.data(), text.size()};
    g->ctx_ = mg_start2(&init, &err);
    if (!g->ctx_) {
        error = "--listen '" + config.listen + "': " + text.data();
        return nullptr;
    }
    mg_set_request_handler(g->ctx_, "/", &Gateway::handle, g.get());
    return g;
}

Gateway::~Gateway() {
    k8s::stop_civetweb(ctx_, port());
}

int Gateway::port() const {
    mg_server_port p{};
    return mg_get_server_ports(ctx_, 1, &p) == 1 ? p.port : 0;
}

int Gateway::handle(mg_connection* conn, void* self) {
    return static_cast<Gateway*>(self)->serve(conn);
}

int Gateway::serve(mg_connection* conn) {
    HttpRequest r;
    if (auto e = read_request(conn, config_.subset, r); !e.empty()) {
        reply(conn, 400, e + "\n");
        stats_.record(400, std::nullopt);
        return 400;
    }
    const auto line = r.method + " " + r.path;
    Exchange exchange(stub_, config_.stream);
    auto routing = exchange.route(r);
    if (routing.status != 0) {
        if (routing.status >= 500 && routing.status != 503)
            spdlog::error("{}: {} {}", line, routing.status, routing.body);
        else
            spdlog::info("{}: {} from the EPP ({:.3f} ms): {}", line, routing.status,
                         ms(routing.decision), routing.body);
        reply(conn, routing.status, routing.body, routing.reply_headers);
        stats_.record(routing.status, std::nullopt);
        return routing.status;
    }
    const auto list = split_list(routing.destination);
    std::string endpoint = list.empty() ? "" : list.front();
    if (!r.use_endpoint.empty()) {
        if (std::find(list.begin(), list.end(), r.use_endpoint) == list.end()) {
            const auto why = "x-test-endpoint " + r.use_endpoint + " is not in the EPP's list " +
                             routing.destination;
            spdlog::error("{}: 502 {}", line, why);
            reply(conn, 502, why + "\n");
            stats_.record(502, routing.decision);
            return 502;
        }
        endpoint = r.use_endpoint;
    }
    ClientSink sink(conn, routing.destination, endpoint);
    Upstream upstream(exchange, sink, endpoint);
    const auto failure = upstream.forward(routing.upstream, endpoint, config_.stream.timeout);
    if (!upstream.answered()) {
        // As Envoy: no retry down the fallback list here, a 503 for an upstream that did not
        // answer.
        exchange.cancel();
        spdlog::warn("{}: 503, upstream {} did not answer: {}", line, endpoint, failure);
        reply(conn, 503, "upstream connect error: " + failure + "\n");
        stats_.record(503, routing.decision);
        return 503;
    }
    const auto broken = exchange.finish();
    if (!broken.empty() && !sink.sent()) {
        spdlog::error("{}: 502 in the response phase: {}", line, broken);
        reply(conn, 502, "the EPP's answer: " + broken + "\n");
        stats_.record(502, routing.decision);
        return 502;
    }
    sink.end();
    if (!broken.empty()) spdlog::error("{}: response cut short: {}", line, broken);
    if (!failure.empty())
        spdlog::error("{}: upstream {} failed mid-answer: {}", line, endpoint, failure);
    spdlog::info("{}: {} via {} (destination {}, decision {:.3f} ms)", line, sink.status(),
                 endpoint, routing.destination, ms(routing.decision));
    stats_.record(sink.status(), routing.decision);
    return sink.status();
}

}  // namespace epp_gateway
