// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What the GpuResource's status says of the DRS manager's work: each node's layout and state,
/// read from the labels the manager keeps on its Node (enflame.com/drs.config and
/// enflame.com/drs.config.state), and a one-line count for `kubectl get gr`.

#include <vector>

#include "operator/kustomize.hpp"

namespace gpu_operator {

struct DrsStatus {
    Json nodes = Json::object();  ///< node name -> "<layout>: <state>" (state "" until reported)
    std::string summary;          ///< "3 success, 1 pending" by state; "" without a labelled node
};

/// From every Node; nodes without the layout label are left out.
[[nodiscard]] DrsStatus drs_status(const std::vector<Json>& nodes);

}  // namespace gpu_operator
