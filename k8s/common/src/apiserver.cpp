// SPDX-License-Identifier: Apache-2.0
// The API-server client: libcurl does HTTP and TLS, nlohmann-json the bodies. Each call takes
// an easy handle from a small pool (so concurrent calls do not wait for each other and a
// handle's kept-alive connection and TLS session are reused by the next call) and returns it.
#include "k8s/apiserver.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "inject/log.hpp"

namespace k8s::api {

using inject::Errc;
using inject::Error;
using inject::Result;

namespace {

struct Response {
    long status = 0;
    std::string body;
    long retry_after_s = -1;  ///< the Retry-After header in seconds (-1: none)
};

struct Request {
    const char* verb;
    std::string path;  ///< with the query string
    const std::string* body = nullptr;
    const char* content_type = "application/json";
};

size_t on_data(char* ptr, size_t size, size_t n, void* user) {
    static_cast<std::string*>(user)->append(ptr, size * n);
    return size * n;
}

std::string_view reason_phrase(long status) {
    static constexpr std::array<std::pair<long, std::string_view>, 14> kReasons{
        {{400, "Bad Request"},
         {401, "Unauthorized"},
         {403, "Forbidden"},
         {404, "Not Found"},
         {405, "Method Not Allowed"},
         {409, "Conflict"},
         {410, "Gone"},
         {415, "Unsupported Media Type"},
         {422, "Unprocessable Entity"},
         {429, "Too Many Requests"},
         {500, "Internal Server Error"},
         {502, "Bad Gateway"},
         {503, "Service Unavailable"},
         {504, "Gateway Timeout"}}};
    for (const auto& [code, text] : kReasons)
        if (code == status) return text;
    return {};
}

/// The server's message: a Status object's `message`, else the start of the body.
std::string server_message(const std::string& body) {
    const Json j = Json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("message") && j["message"].is_string())
        return j["message"].get<std::string>();
    std::string s = body.substr(0, 200);
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
}

Errc status_code(long status) {
    if (status == 404) return Errc::NotFound;
    if (status == 409) return Errc::Conflict;
    if (status == 410) return Errc::Expired;
    if (status == 401 || status == 403) return Errc::Permission;
    if (status >= 400 && status < 500) return Errc::InvalidInput;
    return Errc::Io;
}

bool retryable_status(long status) {
    return status >= 500 || status == 429;
}

/// The wait a 429, or a 503 with Retry-After, asks for (capped); nothing for other answers.
std::optional<std::chrono::milliseconds> retry_after(const Response& r) {
    if (r.retry_after_s < 0 || (r.status != 429 && r.status != 503)) return std::nullopt;
    return std::min<std::chrono::milliseconds>(std::chrono::seconds(r.retry_after_s),
                                               kMaxRetryAfter);
}

/// TLS set-up failures are not transient: retrying them only delays the message.
bool retryable_transport(CURLcode rc) {
    return rc != CURLE_PEER_FAILED_VERIFICATION && rc != CURLE_SSL_CACERT_BADFILE &&
           rc != CURLE_SSL_CERTPROBLEM && rc != CURLE_URL_MALFORMAT &&
           rc != CURLE_UNSUPPORTED_PROTOCOL && rc != CURLE_OUT_OF_MEMORY;
}

std::string query_escape(CURL* h, const std::string& s) {
    char* e = curl_easy_escape(h, s.c_str(), static_cast<int>(s.size()));
    std::string out = e ? e : "";
    curl_free(e);
    return out;
}

void set_blob(CURL* h, CURLoption opt, const std::string& pem) {
    curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, opt, &blob);
}

}  // namespace

struct Client::Impl {
    using Clock = std::chrono::steady_clock;

    Config cfg;
    std::mutex mu;
    std::vector<CURL*> idle;  ///< handles not in use, each with its kept-alive connection
    std::mutex token_mu;      ///< guards token and token_read (calls come from several threads)
    std::string token;
    Clock::time_point token_read = Clock::now();

    ~Impl() {
        for (CURL* h : idle) curl_easy_cleanup(h);
    }

    CURL* acquire() {
        {
            const std::lock_guard lock(mu);
            if (!idle.empty()) {
                CURL* h = idle.back();
                idle.pop_back();
                return h;
            }
        }
        return curl_easy_init();
    }
    void release(CURL* h) {
        const std::lock_guard lock(mu);
        idle.push_back(h);
    }

    /// Re-reads the token file (token_mu held). A file that cannot be read or is empty keeps
    /// the token we have (kubelet swaps the file atomically; a bad moment passes).
    void reread_locked() {
        token_read = Clock::now();
        auto t = read_token(cfg.token_file, "API server " + cfg.server + ": token");
        if (!t) {
            inject::log::warn("{} (keeping the previous token)", t.error().what());
            return;
        }
        if (*t == token) return;
        token = std::move(*t);
        inject::log::info("API server {}: the token in '{}' changed: using the new one", cfg.server,
                          cfg.token_file);
    }

    /// The token to send: a token file is re-read once its period has passed.
    std::string current_token() {
        const std::lock_guard lock(token_mu);
        if (!cfg.token_file.empty() && Clock::now() - token_read >= cfg.token_reload)
            reread_locked();
        return token;
    }

    /// After a 401 with `sent`: re-reads the token file; true when it now holds another token.
    bool token_renewed(const std::string& sent) {
        if (cfg.token_file.empty()) return false;
        const std::lock_guard lock(token_mu);
        if (token == sent) reread_locked();  // another thread may have renewed it already
        return token != sent;
    }

    void set_tls(CURL* h) const {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
        // The cluster's CA alone when one is given; a kubeconfig without one verifies against
        // the system store, as client-go does (insecure-skip-tls-verify is refused on load).
        if (!cfg.ca_data.empty()) {
            curl_easy_setopt(h, CURLOPT_CAINFO, nullptr);
            curl_easy_setopt(h, CURLOPT_CAPATH, nullptr);
            set_blob(h, CURLOPT_CAINFO_BLOB, cfg.ca_data);
        } else if (!cfg.ca_file.empty()) {
            curl_easy_setopt(h, CURLOPT_CAINFO, cfg.ca_file.c_str());
            curl_easy_setopt(h, CURLOPT_CAPATH, nullptr);
        }
        if (!cfg.cert_data.empty()) set_blob(h, CURLOPT_SSLCERT_BLOB, cfg.cert_data);
        if (!cfg.cert_file.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, cfg.cert_file.c_str());
        if (!cfg.key_data.empty()) set_blob(h, CURLOPT_SSLKEY_BLOB, cfg.key_data);
        if (!cfg.key_file.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, cfg.key_file.c_str());
    }

    /// One attempt. A transport failure is an Error; any HTTP answer is a Response.
    Result<Response> once(CURL* h, const Request& r, curl_slist* headers) const {
        curl_easy_reset(h);
        Response resp;
        std::array<char, CURL_ERROR_SIZE> errbuf{};
        const std::string url = cfg.server + r.path;
        curl_easy_setopt(h, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(cfg.timeout.count()));
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf.data());
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp.body);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r.verb);
        if (r.body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, r.body->data());
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(r.body->size()));
        } else if (std::string_view(r.verb) == "GET") {
            curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        }
        set_tls(h);
        const CURLcode rc = curl_easy_perform(h);
        if (rc != CURLE_OK) {
            std::string msg = curl_easy_strerror(rc);
            if (errbuf[0] != '\0') msg += std::string(": ") + errbuf.data();
            if (rc == CURLE_PEER_FAILED_VERIFICATION) {
                const std::string ca = !cfg.ca_data.empty()   ? "certificate-authority-data"
                                       : !cfg.ca_file.empty() ? "'" + cfg.ca_file + "'"
                                                              : "the system store";
                msg = "TLS: the server's certificate does not verify against the CA (" + ca +
                      "): " + errbuf.data();
            }
            return Error(Errc::Io, msg, static_cast<int>(rc));
        }
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
        curl_off_t ra = -1;
        if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
            resp.retry_after_s = static_cast<long>(ra);
        return resp;
    }

    /// The request with `tok`, retried on 5xx, 429 and transport errors. `made`: attempts made;
    /// `gave_up`: why a wait the server asked for was not made (empty: it was, or none asked).
    Result<Response> attempts(CURL* h, const Request& r, const std::string& tok, int& made,
                              std::string& gave_up) {
        curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
        if (r.body)
            headers = curl_slist_append(headers,
                                        (std::string("Content-Type: ") + r.content_type).c_str());
        if (!tok.empty())
            headers = curl_slist_append(headers, ("Authorization: Bearer " + tok).c_str());
        Result<Response> res = Error(Errc::Internal, "no attempt made");
        const auto deadline = Clock::now() + cfg.timeout;
        auto backoff = cfg.backoff;
        const int limit = 1 + std::max(0, cfg.retries);
        for (made = 0; made < limit;) {
            res = once(h, r, headers);
            ++made;
            if (res ? !retryable_status(res->status)
                    : !retryable_transport(static_cast<CURLcode>(res.error().sys_errno())))
                break;
            if (made == limit) break;
            auto wait = backoff;
            backoff *= 2;
            if (auto asked = res ? retry_after(*res) : std::nullopt) {
                if (Clock::now() + *asked > deadline) {
                    gave_up = "Retry-After " + std::to_string(res->retry_after_s) +
                              " s is past the call's " + std::to_string(cfg.timeout.count()) +
                              " ms timeout";
                    break;
                }
                wait = *asked;
            }
            std::this_thread::sleep_for(wait);
        }
        curl_slist_free_all(headers);
        return res;
    }

    Result<Response> perform(const Request& r) {
        CURL* h = acquire();
        if (!h)
            return Error(Errc::Io, std::string(r.verb) + " " + r.path + ": curl_easy_init failed");
        int made = 0;
        std::string gave_up;
        const std::string tok = current_token();
        Result<Response> res = attempts(h, r, tok, made, gave_up);
        // A rotated token: the file holds a new one. Retry once with it; an unchanged one is
        // the answer.
        const bool renewed = res && res->status == 401 && token_renewed(tok);
        if (renewed) res = attempts(h, r, current_token(), made, gave_up);
        release(h);
        const std::string what = std::string(r.verb) + " " + r.path;
        if (!res) {
            std::string msg = what + ": " + res.error().message();
            if (made > 1) msg += " (after " + std::to_string(made) + " attempts)";
            return Error(Errc::Io, msg);
        }
        if (res->status >= 200 && res->status < 300) return res;
        std::string msg = what + ": " + std::to_string(res->status);
        if (auto phrase = reason_phrase(res->status); !phrase.empty())
            msg += " " + std::string(phrase);
        if (auto m = server_message(res->body); !m.empty()) msg += ": " + m;
        if (res->status == 401)
            msg = "API server " + cfg.server + ": " + msg +
                  (cfg.token_file.empty() ? std::string()
                   : renewed ? " (also with the new token from '" + cfg.token_file + "')"
                             : " (the token in '" + cfg.token_file + "' has not changed)");
        if (!gave_up.empty()) msg += " (" + gave_up + ")";
        return Error(status_code(res->status), msg);
    }

    /// The state of one watch stream, shared with curl's callbacks.
    struct Stream {
        CURL* h = nullptr;
        const std::function<bool(const WatchEvent&)>* on_event = nullptr;
        const std::atomic<bool>* stop = nullptr;
        std::string buf;     ///< bytes of a line not yet complete
        std::string error;   ///< the body of a non-2xx answer
        std::string bad;     ///< a line that was not a watch event
        bool ended = false;  ///< on_event said stop
    };

    static size_t on_stream(char* ptr, size_t size, size_t n, void* user) {
        auto& s = *static_cast<Stream*>(user);
        long status = 0;
        curl_easy_getinfo(s.h, CURLINFO_RESPONSE_CODE, &status);
        if (status < 200 || status >= 300) {
            if (s.error.size() < 4096) s.error.append(ptr, size * n);
            return size * n;
        }
        s.buf.append(ptr, size * n);
        std::size_t start = 0;
        for (std::size_t nl; (nl = s.buf.find('\n', start)) != std::string::npos; start = nl + 1) {
            const std::string_view line(s.buf.data() + start, nl - start);
            if (line.find_first_not_of(" \r") == std::string_view::npos) continue;
            Json j = Json::parse(line, nullptr, false);
            if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
                s.bad = std::string(line.substr(0, 80));
                return 0;
            }
            WatchEvent ev{j["type"].get<std::string>(), std::move(j["object"])};
            if (!(*s.on_event)(ev)) {
                s.ended = true;
                return 0;
            }
        }
        s.buf.erase(0, start);
        return size * n;
    }

    static int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
        return static_cast<Stream*>(user)->stop->load() ? 1 : 0;
    }

    Result<void> watch(const std::string& path, const WatchOptions& w,
                       const std::function<bool(const WatchEvent&)>& on_event,
                       const std::atomic<bool>& stop) {
        std::string q =
            "watch=1&allowWatchBookmarks=" + std::string(w.bookmarks ? "true" : "false") +
            "&timeoutSeconds=" + std::to_string(w.timeout_seconds);
        if (!w.resource_version.empty())
            q += "&resourceVersion=" + query_escape(nullptr, w.resource_version);
        if (!w.label_selector.empty())
            q += "&labelSelector=" + query_escape(nullptr, w.label_selector);
        if (!w.field_selector.empty())
            q += "&fieldSelector=" + query_escape(nullptr, w.field_selector);
        const std::string what = "GET " + path + "?" + q;
        CURL* h = curl_easy_init();
        if (!h) return Error(Errc::Io, what + ": curl_easy_init failed");
        Stream s;
        s.h = h;
        s.on_event = &on_event;
        s.stop = &stop;
        const std::string tok = current_token();
        curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
        if (!tok.empty())
            headers = curl_slist_append(headers, ("Authorization: Bearer " + tok).c_str());
        std::array<char, CURL_ERROR_SIZE> errbuf{};
        const std::string url = cfg.server + path + "?" + q;
        curl_easy_setopt(h, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(cfg.timeout.count()));
        // The server ends the stream at timeoutSeconds; this is for one that does not.
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                         static_cast<long>(w.timeout_seconds * 1000L + cfg.timeout.count()));
        curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
        curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf.data());
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s);
        set_tls(h);
        const CURLcode rc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(headers);
        curl_easy_cleanup(h);
        if (rc == CURLE_ABORTED_BY_CALLBACK || s.ended) return inject::ok();
        if (!s.bad.empty()) return Error(Errc::Io, what + ": not a watch event: " + s.bad);
        if (rc != CURLE_OK) {
            std::string msg = curl_easy_strerror(rc);
            if (errbuf[0] != '\0') msg += std::string(": ") + errbuf.data();
            return Error(Errc::Io, what + ": " + msg);
        }
        if (status >= 200 && status < 300) return inject::ok();
        std::string msg = what + ": " + std::to_string(status);
        if (auto phrase = reason_phrase(status); !phrase.empty()) msg += " " + std::string(phrase);
        if (auto m = server_message(s.error); !m.empty()) msg += ": " + m;
        if (status == 401) token_renewed(tok);  // the next watch carries a rotated token
        return Error(status_code(status), msg);
    }

    Result<Json> call(const Request& r) {
        INJECT_TRY(Response resp, perform(r));
        if (resp.body.empty()) return Json::object();
        Json j = Json::parse(resp.body, nullptr, false);
        if (j.is_discarded())
            return Error(Errc::Io, std::string(r.verb) + " " + r.path +
                                       ": the answer is not JSON: " + resp.body.substr(0, 80));
        return j;
    }
};

inject::Result<std::unique_ptr<Client>> Client::create(Config cfg) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    if (cfg.server.rfind("https://", 0) != 0)
        return inject::fail(Errc::InvalidInput,
                            "API server '" + cfg.server + "': want an https:// URL");
    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    if (cfg.timeout.count() <= 0)
        return inject::fail(Errc::InvalidInput, "API server timeout: want more than 0 ms");
    auto impl = std::make_unique<Impl>();
    impl->token = cfg.token;
    impl->cfg = std::move(cfg);
    return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

inject::Result<Json> Client::get(const std::string& path) {
    return impl_->call({"GET", path});
}

inject::Result<Json> Client::list(const std::string& path, const std::string& label_selector,
                                  const std::string& field_selector) {
    std::string q;
    // curl_easy_escape has ignored its handle since curl 7.82.
    if (!label_selector.empty()) q += "labelSelector=" + query_escape(nullptr, label_selector);
    if (!field_selector.empty())
        q += (q.empty() ? "" : "&") + std::string("fieldSelector=") +
             query_escape(nullptr, field_selector);
    return impl_->call({"GET", q.empty() ? path : path + "?" + q});
}

inject::Result<Json> Client::create(const std::string& path, const Json& body) {
    const std::string s = body.dump();
    return impl_->call({"POST", path, &s});
}

inject::Result<Json> Client::update(const std::string& path, const Json& body) {
    const std::string s = body.dump();
    return impl_->call({"PUT", path, &s});
}

inject::Result<void> Client::remove(const std::string& path) {
    auto r = impl_->perform({"DELETE", path});
    if (!r && r.error().code() != Errc::NotFound) return inject::fail(std::move(r).error());
    return inject::ok();
}

inject::Result<Json> Client::patch_merge(const std::string& path, const Json& patch) {
    const std::string s = patch.dump();
    return impl_->call({"PATCH", path, &s, "application/merge-patch+json"});
}

inject::Result<Json> Client::patch_json(const std::string& path, const Json& ops) {
    const std::string s = ops.dump();
    return impl_->call({"PATCH", path, &s, "application/json-patch+json"});
}

inject::Result<Json> Client::apply(const std::string& path, const Json& body,
                                   const std::string& field_manager) {
    const std::string s = body.dump();
    return impl_->call(
        {"PATCH", path + "?fieldManager=" + query_escape(nullptr, field_manager) + "&force=true",
         &s, "application/apply-patch+yaml"});
}

inject::Result<Json> Client::update_with_retry(const std::string& path,
                                               const std::function<bool(Json&)>& mutate) {
    const int attempts = 1 + std::max(0, impl_->cfg.retries);
    for (int i = 0;; ++i) {
        INJECT_TRY(Json obj, get(path));
        if (!mutate(obj)) return obj;
        auto r = update(path, obj);
        if (r || r.error().code() != Errc::Conflict || i + 1 >= attempts) return r;
    }
}

inject::Result<void> Client::watch(const std::string& path, const WatchOptions& opts,
                                   const std::function<bool(const WatchEvent&)>& on_event,
                                   const std::atomic<bool>& stop) {
    return impl_->watch(path, opts, on_event, stop);
}

std::string str(const Json& j, const char* field) {
    return j.is_object() && j.contains(field) && j[field].is_string() ? j[field].get<std::string>()
                                                                      : "";
}

bool gone(const inject::Error& e) {
    return e.code() == Errc::Expired;
}

bool gone(const WatchEvent& ev) {
    return ev.type == "ERROR" && ev.object.is_object() && ev.object.value("code", 0) == 410;
}

inject::Result<std::string> Client::resource_api_version() {
    INJECT_TRY(Json group, get("/apis/resource.k8s.io"));
    std::vector<std::string> offered;
    if (group.contains("versions") && group["versions"].is_array()) {
        for (const auto& v : group["versions"])
            if (v.is_object() && v.contains("version") && v["version"].is_string())
                offered.push_back(v["version"].get<std::string>());
    }
    for (const char* want : {"v1", "v1beta1"})
        if (std::find(offered.begin(), offered.end(), want) != offered.end())
            return std::string(want);
    std::string list;
    for (const auto& v : offered) list += (list.empty() ? "" : ", ") + v;
    return inject::fail(
        Errc::Unsupported,
        "GET /apis/resource.k8s.io: the server offers neither v1 nor v1beta1 (offers: " +
            (list.empty() ? std::string("none") : list) + ")");
}

inject::Result<int> Client::server_minor() {
    INJECT_TRY(Json v, get("/version"));
    const std::string minor =
        v.contains("minor") && v["minor"].is_string() ? v["minor"].get<std::string>() : "";
    std::size_t digits = 0;
    while (digits < minor.size() && digits < 4 &&
           std::isdigit(static_cast<unsigned char>(minor[digits])))
        ++digits;
    if (digits == 0)
        return inject::fail(Errc::InvalidInput,
                            "GET /version: minor: want a number, got '" + minor + "'");
    return std::stoi(minor.substr(0, digits));
}

}  // namespace k8s::api
