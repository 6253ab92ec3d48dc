// SPDX-License-Identifier: Apache-2.0
#include "operator/drs_status.hpp"

#include <map>

#include "k8s/apiserver.hpp"
#include "k8s/drs_layout_state.hpp"

namespace gpu_operator {

DrsStatus drs_status(const std::vector<Json>& nodes) {
    DrsStatus out;
    std::map<std::string, int> by_state;
    for (const auto& n : nodes) {
        const Json meta = n.value("metadata", Json::object());
        const Json labels = meta.value("labels", Json::object());
        const std::string layout = k8s::api::str(labels, k8s::drs::kLayoutLabel);
        if (layout.empty()) continue;
        std::string state = k8s::api::str(labels, k8s::drs::kStateLabel);
        out.nodes[k8s::api::str(meta, "name")] = layout + ": " + (state.empty() ? "-" : state);
        ++by_state[state.empty() ? "unreported" : state];
    }
    for (const auto& [state, count] : by_state)
        out.summary += (out.summary.empty() ? "" : ", ") + std::to_string(count) + " " + state;
    return out;
}

}  // namespace gpu_operator
