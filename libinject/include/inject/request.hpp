// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// What a container asks for (docs/requests.md): ENFLAME_VISIBLE_DEVICES,
/// ENFLAME_DRIVER_CAPABILITIES and cdi.k8s.io/* annotations, parsed into a Request.
/// Parsing is pure: the caller passes the container's env and annotations.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "inject/device.hpp"
#include "inject/result.hpp"

namespace inject::request {

inline constexpr std::string_view kVisibleDevicesEnv = "ENFLAME_VISIBLE_DEVICES";
inline constexpr std::string_view kDriverCapabilitiesEnv = "ENFLAME_DRIVER_CAPABILITIES";

/// Capabilities (bit set).
enum Capability : unsigned {
    kUtility = 1u << 0,
    kCompute = 1u << 1,
    kAllCapabilities = kUtility | kCompute
};

/// One requested card selector, as written by the user.
struct Selector {
    enum class Kind {
        Index,    ///< "0" or the end points of a range "0-3" (expanded)
        GcuName,  ///< "GCU-1" (an index)
        Uuid,     ///< "TR6Y46010302", "GCU-U53000080105"
        Drs,      ///< "DRS-<uuid>" or "<card>:<profile>:<instance-id>" ("0:1g.11gb:1")
        CdiName,  ///< "enflame.com/gpu=0" (fully qualified)
    };
    Kind kind = Kind::Index;
    std::string text;         ///< the entry as written ("GCU-1", "DRS-x")
    std::uint32_t index = 0;  ///< for Index / GcuName
};

/// The parsed request.
struct Request {
    enum class Mode {
        None,     ///< nothing asked (unset, empty, "void"): behave exactly like runc
        NoCards,  ///< "none": control node and utilities, no card
        All,      ///< "all"
        List,     ///< selectors
    };
    Mode mode = Mode::None;
    std::vector<Selector> selectors;  ///< for List, in order, duplicates rejected
    unsigned capabilities = kUtility | kCompute;
    std::vector<std::string> cdi_names;  ///< fully qualified CDI names from annotations/env
    /// Where the request came from, for messages ("ENFLAME_VISIBLE_DEVICES", an annotation key).
    std::string source;

    [[nodiscard]] bool empty() const { return mode == Mode::None && cdi_names.empty(); }
};

/// True for a fully qualified CDI device name "vendor.com/class=name" (CDI spec character rules).
[[nodiscard]] bool is_qualified_cdi_name(std::string_view name);

/// Parses the request from a container's env ("K=V" entries; the last one of a key wins, as
/// in execve) and annotations. Errors (InvalidInput) quote the bad entry:
/// "ENFLAME_VISIBLE_DEVICES: bad entry 'x1': not an index, range, GCU-n, UUID, DRS-uuid or
/// card:profile:id".
[[nodiscard]] Result<Request> parse(const std::vector<std::string>& env,
                                    const std::map<std::string, std::string>& annotations);

/// Resolves a request against discovered cards: the indices of the cards to give (sorted,
/// unique) and the DRS instances asked for. NotFound names the entry no card matches.
struct Selection {
    std::vector<std::uint32_t> card_indices;
    std::vector<device::DrsInstance> drs_instances;
};
[[nodiscard]] Result<Selection> select(const Request& req, const device::Host& host);

}  // namespace inject::request
