// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/evict.hpp"

#include <algorithm>

namespace drs_manager {

inject::Result<EvictionPolicy> parse_eviction_policy(const std::string& flag,
                                                     const std::string& value) {
    if (value == "wait") return EvictionPolicy::Wait;
    if (value == "evict") return EvictionPolicy::Evict;
    return inject::fail(inject::Errc::InvalidInput, flag + " '" + value + "': want wait or evict");
}

std::vector<BlockingPod> blocking_pods(const Plan& plan) {
    static constexpr std::string_view kPod = "pod ";
    std::vector<BlockingPod> out;
    for (const auto& card : plan.cards)
        for (const auto& hold : card.holds)
            for (const auto& who : hold.holders) {
                if (who.rfind(kPod, 0) != 0) continue;
                const auto slash = who.find('/', kPod.size());
                if (slash == std::string::npos) continue;
                BlockingPod p{
                    who.substr(kPod.size(), slash - kPod.size()), who.substr(slash + 1), {}};
                auto it = std::find_if(out.begin(), out.end(), [&](const BlockingPod& q) {
                    return q.ns == p.ns && q.name == p.name;
                });
                if (it == out.end()) it = out.insert(out.end(), std::move(p));
                it->holds.push_back(hold.instance);
            }
    return out;
}

inject::Result<void> evict_pod(k8s::api::Client& api, const BlockingPod& pod) {
    const nlohmann::json body{{"apiVersion", "policy/v1"},
                              {"kind", "Eviction"},
                              {"metadata", {{"name", pod.name}, {"namespace", pod.ns}}}};
    auto r = api.create("/api/v1/namespaces/" + pod.ns + "/pods/" + pod.name + "/eviction", body);
    if (!r && r.error().code() == inject::Errc::NotFound) return inject::ok();
    if (!r) return inject::fail(std::move(r).error());
    return inject::ok();
}

}  // namespace drs_manager
