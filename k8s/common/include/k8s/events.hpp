// SPDX-License-Identifier: Apache-2.0
#pragma once

// Kubernetes Events (core/v1) as the plane's daemons write them: one object per report, the
// one way every daemon builds it (`kubectl describe` shows it under the involved object).

#include <ctime>
#include <string>

#include "k8s/apiserver.hpp"

namespace k8s {

/// What one Event says.
struct EventReport {
    std::string ns;         ///< where the Event is stored
    api::Json involved;     ///< involvedObject: {apiVersion, kind, [namespace,] name, [uid]}
    std::string type;       ///< "Normal" or "Warning"
    std::string reason;     ///< CamelCase: "DrsLayoutFailed"
    std::string message;    ///< one line
    std::string component;  ///< the daemon: "enflame-drs-manager"
    std::string host;       ///< the node it runs on
};

/// Now as RFC 3339 in UTC, to the second ("2025-01-02T03:04:05Z"), as Events carry it.
[[nodiscard]] inline std::string rfc3339_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/// The Event object for `r`, named after its involved object (generateName "<name>.").
[[nodiscard]] inline api::Json event_object(const EventReport& r) {
    const auto now = rfc3339_now();
    return {
        {"metadata", {{"generateName", api::str(r.involved, "name") + "."}, {"namespace", r.ns}}},
        {"involvedObject", r.involved},
        {"reason", r.reason},
        {"message", r.message},
        {"type", r.type},
        {"source", {{"component", r.component}, {"host", r.host}}},
        {"firstTimestamp", now},
        {"lastTimestamp", now},
        {"count", 1}};
}

/// POSTs the Event; errors as api::Client's.
[[nodiscard]] inline inject::Result<void> post_event(api::Client& client, const EventReport& r) {
    auto made = client.create("/api/v1/namespaces/" + r.ns + "/events", event_object(r));
    if (!made) return inject::fail(std::move(made).error());
    return inject::ok();
}

}  // namespace k8s
