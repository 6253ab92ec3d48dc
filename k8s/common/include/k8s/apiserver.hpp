// SPDX-License-Identifier: Apache-2.0
#pragma once

// A small Kubernetes API-server client (docs/kubelet-wire.md, "API-server access"): libcurl
// for HTTP and TLS, nlohmann-json for bodies. TLS is always verified: against the configured
// CA, or the system store when none is configured (as client-go does).
// Every call has a timeout; 5xx and connection errors are retried with backoff, a 429 (or a 503
// with Retry-After) after the server's Retry-After (at most kMaxRetryAfter, never past the
// call's timeout). A token from a file (service account, kubeconfig tokenFile) is re-read every
// kTokenReload and on a 401; a changed token retries the 401'd request once. Errors carry
// the verb, the path, the HTTP status and the server's message:
//   "GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c: 404 Not Found:
//    resourceclaims.resource.k8s.io \"c\" not found"
// Error codes: 404 -> Errc::NotFound, 409 -> Errc::Conflict, 410 -> Errc::Expired,
// 401/403 -> Errc::Permission, other 4xx -> Errc::InvalidInput, 5xx and transport failures
// (after the retries) -> Errc::Io.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "inject/result.hpp"

namespace k8s::api {

using Json = nlohmann::json;

/// How often a token file is re-read (client-go's file token source: about a minute). Kubelet
/// rotates projected service-account tokens at 80 % of their life.
inline constexpr std::chrono::milliseconds kTokenReload{60000};
/// The longest Retry-After wait honoured; a longer one waits this long.
inline constexpr std::chrono::milliseconds kMaxRetryAfter{10000};

/// Where the server is and how we prove who we are.
struct Config {
    std::string server;      ///< "https://10.0.0.1:443"
    std::string ca_file;     ///< PEM file; or:
    std::string ca_data;     ///< PEM text (kubeconfig certificate-authority-data, decoded)
    std::string token;       ///< bearer token (empty: none)
    std::string token_file;  ///< where `token` came from: re-read (empty: the token is fixed)
    std::chrono::milliseconds token_reload = kTokenReload;  ///< period of the re-read
    std::string cert_file, key_file;                        ///< client certificate (files)
    std::string cert_data, key_data;           ///< client certificate (PEM text, decoded)
    std::chrono::milliseconds timeout{10000};  ///< per attempt
    int retries = 3;                           ///< extra attempts on 5xx / transport errors
    std::chrono::milliseconds backoff{200};    ///< first backoff, doubled each retry
};

/// In-cluster config: `KUBERNETES_SERVICE_HOST`/`_PORT` and the service account's `token` and
/// `ca.crt` under `sa_dir`. Errors name the variable or file that is missing.
[[nodiscard]] inject::Result<Config> in_cluster_config(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

/// A token file's token (trailing newline and blanks trimmed). Errors name `what` and the file;
/// an empty file is an error.
[[nodiscard]] inject::Result<std::string> read_token(const std::string& path,
                                                     const std::string& what);

/// A kubeconfig file: the current context's cluster (server, certificate-authority or
/// -data) and user (token, token-file, client-certificate(-data), client-key(-data)).
/// Errors name the file and the field.
[[nodiscard]] inject::Result<Config> load_kubeconfig(const std::string& path);

/// One event of a watch stream: "ADDED", "MODIFIED", "DELETED", "BOOKMARK" or "ERROR" (then
/// `object` is a Status, e.g. code 410 when the resourceVersion is too old).
struct WatchEvent {
    std::string type;
    Json object;
};

/// What a watch asks for (`GET <path>?watch=1&...`).
struct WatchOptions {
    std::string label_selector, field_selector;  ///< empty: left out
    std::string resource_version;                ///< from the LIST (or the last event / bookmark)
    bool bookmarks = true;                       ///< allowWatchBookmarks
    int timeout_seconds = 300;                   ///< the server ends the stream after this
};

class Client {
public:
    [[nodiscard]] static inject::Result<std::unique_ptr<Client>> create(Config cfg);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// `path` is absolute from the server root ("/apis/resource.k8s.io/v1/resourceslices").
    [[nodiscard]] inject::Result<Json> get(const std::string& path);
    /// GET with `labelSelector` / `fieldSelector` query parameters (empty: left out).
    [[nodiscard]] inject::Result<Json> list(const std::string& path,
                                            const std::string& label_selector = {},
                                            const std::string& field_selector = {});
    [[nodiscard]] inject::Result<Json> create(const std::string& path, const Json& body);  ///< POST
    [[nodiscard]] inject::Result<Json> update(const std::string& path, const Json& body);  ///< PUT
    [[nodiscard]] inject::Result<void> remove(const std::string& path);  ///< DELETE (404 is ok)
    [[nodiscard]] inject::Result<Json> patch_merge(const std::string& path, const Json& patch);
    [[nodiscard]] inject::Result<Json> patch_json(const std::string& path, const Json& ops);
    /// Server-side apply: PATCH `path` (the object's own path) with `body` as
    /// application/apply-patch+yaml (JSON is YAML), `fieldManager=field_manager&force=true`:
    /// the fields in `body` become ours even when another manager set them.
    [[nodiscard]] inject::Result<Json> apply(const std::string& path, const Json& body,
                                             const std::string& field_manager);
    /// GET `path`, apply `mutate` to the object, PUT it back; on 409 re-read and try again
    /// (up to `retries` times). `mutate` returning false means nothing to change (no PUT).
    [[nodiscard]] inject::Result<Json> update_with_retry(const std::string& path,
                                                         const std::function<bool(Json&)>& mutate);

    /// A watch stream: each event goes to `on_event` as it arrives (returning false ends the
    /// stream). Returns when the server ends the stream (its timeoutSeconds), `on_event` says
    /// stop, or `stop` becomes true (checked at least once a second): all three are success.
    /// An HTTP error is an error as for the other calls (410 Gone: Errc::Expired; see gone());
    /// a dropped connection is Errc::Io. No retries: the caller
    /// lists again or reconnects. TCP keep-alive notices a dead peer on an idle stream.
    [[nodiscard]] inject::Result<void> watch(const std::string& path, const WatchOptions& opts,
                                             const std::function<bool(const WatchEvent&)>& on_event,
                                             const std::atomic<bool>& stop);

    /// API discovery (`GET /apis/resource.k8s.io`): "v1" when the server offers it, else
    /// "v1beta1", else NotFound / Unsupported.
    [[nodiscard]] inject::Result<std::string> resource_api_version();

    /// `GET /version`: Kubernetes' minor version ("34", or "34+" as some providers say -> 34).
    [[nodiscard]] inject::Result<int> server_minor();

    struct Impl;

private:
    explicit Client(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// `j[field]` when `j` is an object holding that field as a string; "" otherwise.
[[nodiscard]] std::string str(const Json& j, const char* field);

/// True for a watch's "410 Gone"/"Expired" (an HTTP 410 or an ERROR event's Status 410): the
/// resourceVersion is too old, list again.
[[nodiscard]] bool gone(const inject::Error& e);
[[nodiscard]] bool gone(const WatchEvent& ev);

}  // namespace k8s::api
