// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The seam between the ext_proc stream (wire/) and the scheduler (scheduling/): what one HTTP
/// request is once its body has ended, what the scheduler decides for it, and the calls the
/// stream makes as the request goes on. docs/epp.md has the whole flow.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace epp {

/// One inference request as the gateway sent it, after its body ended.
struct Request {
    std::string id;  ///< x-request-id, or one generated when the gateway sent none
    /// Header names in lower case (pseudo-headers such as ":path" included), values as sent.
    std::map<std::string, std::string> headers;
    nlohmann::json body;  ///< the parsed JSON body (an object)
    std::string model;    ///< body "model"
    /// The gateway's subset hint ("ip:port" or "ip"); nullopt when it sent none, which is not
    /// the same as an empty list (an empty list leaves no endpoint: 503).
    std::optional<std::vector<std::string>> subset;
    std::string fairness_id = "default-flow";  ///< x-gateway-inference-fairness-id
    std::string objective;                     ///< x-gateway-inference-objective
    /// x-gateway-model-name-rewrite: the model to send upstream instead of `model`, unless a
    /// model rewrite rule matches `model` (the rule wins, as upstream's). Empty: none.
    std::string model_rewrite{};
};

/// What the scheduler says for one request.
struct Decision {
    /// 200: routed to `endpoints`; otherwise the HTTP status of the immediate response
    /// (400 bad request, 429 shed, 503 no endpoint).
    int status = 200;
    std::string message;                 ///< why, for the immediate response body and the log
    std::vector<std::string> endpoints;  ///< "ip:port", the primary first, then fallbacks
    /// Headers set on the upstream request besides the destination (x-prefiller-host-port).
    std::vector<std::pair<std::string, std::string>> headers;
    /// The model the request goes upstream with when a model rewrite (or the request's
    /// x-gateway-model-name-rewrite) changed it: the stream puts it in the body, and the
    /// client's model back in the response. Empty: unchanged.
    std::string model{};
};

/// The scheduling side as the ext_proc stream sees it; called from the stream's thread.
class Picker {
public:
    virtual ~Picker() = default;
    /// May block while the request waits its turn (fair queuing under saturation).
    [[nodiscard]] virtual Decision decide(const Request& r) = 0;
    /// decide() when it need not wait: nullopt when the request would wait its turn, and the
    /// caller then calls decide() on a thread that may block. The default decides at once.
    [[nodiscard]] virtual std::optional<Decision> try_decide(const Request& r) { return decide(r); }
    /// The gateway reported on the response which endpoint served the request.
    virtual void served(const Request& r, const std::string& endpoint) = 0;
    /// The stream ended (answered, refused or cancelled): called once per decide().
    virtual void finished(const Request& r) = 0;
};

}  // namespace epp
