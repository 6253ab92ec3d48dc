// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The device model: what we know about the Enflame cards of a host. Plain data; discovery
/// (inject/discover.hpp) fills it in.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inject::device {

/// A character device node on the host.
struct DeviceNode {
    std::string path;       ///< container path, e.g. "/dev/gcu0" (host numbering is kept)
    std::string host_path;  ///< host path (under dev-root), e.g. "/dev/gcu0"
    std::uint32_t major = 0;
    std::uint32_t minor = 0;
    std::uint32_t mode = 0666;  ///< permission bits read from the host node
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
};

/// A DRS profile a card offers ("1g.11gb", up to 4 instances).
struct DrsProfile {
    std::string name;
    std::uint32_t id = 0;  ///< the profile id efsmi prints
    std::uint32_t max_instances = 0;
    std::uint64_t memory_bytes = 0;
    std::uint32_t sips = 0;  ///< SIPs (compute cores) of an instance; 0 = unknown
    friend bool operator==(const DrsProfile&, const DrsProfile&) = default;
};

/// A DRS instance (a hard partition of one card).
struct DrsInstance {
    std::uint32_t parent_index = 0;  ///< index of the card it lives on
    std::uint32_t instance_id = 0;   ///< instance id within the card
    std::string profile;             ///< profile name, e.g. "1g.11gb"
    std::string uuid;                ///< older efsmi prints one ("DRS-<uuid>"); empty if not
    std::optional<std::uint32_t> profile_id = std::nullopt;  ///< newer efsmi prints it
    std::string placement = {};  ///< newer efsmi prints it ("0:1"), as printed
};

/// "<card>:<profile>:<instance-id>" ("0:1g.11gb:1"): how every DRS instance can be named.
[[nodiscard]] std::string drs_name(const DrsInstance& in);
/// "DRS-<uuid>" where efsmi gave a UUID, else drs_name(): what a container is told
/// (TOPS_VISIBLE_DEVICES) and what the device plugin advertises.
[[nodiscard]] std::string drs_address(const DrsInstance& in);

/// One card.
struct Device {
    std::uint32_t index = 0;         ///< efsmi's DEV ID
    std::uint32_t minor = 0;         ///< minor of /dev/gcu<minor>
    std::string uuid;                ///< "TR6Y46010302", "GCU-U53000080105"
    std::string serial;              ///< "A0A1650510676" (empty if unknown)
    std::string product;             ///< "S60", "T10", ...
    std::string architecture;        ///< "GCU300" (derived from the product; empty if unknown)
    std::string family;              ///< "scorpio", "LEO" (empty if unknown)
    std::uint64_t memory_bytes = 0;  ///< total memory as the driver reports it
    std::string pci_bus_id;          ///< "0000:17:00.0"
    std::string pci_device_id;       ///< "c035" (empty if unknown)
    std::int32_t numa_node = -1;     ///< -1 = unknown
    std::optional<bool> healthy;     ///< empty = unknown
    std::string driver_version;      ///< "1.4.3.4"
    DeviceNode node;                 ///< /dev/gcu<minor>
    std::vector<DrsInstance> drs_instances;
};

/// Everything discovery found.
struct Host {
    std::string driver_version;
    std::vector<Device> devices;        ///< sorted by index
    std::optional<DeviceNode> control;  ///< /dev/gcuctl, when present
    std::vector<DrsProfile> drs_profiles;
    std::string backend;  ///< "efsmi-json", "efsmi-text" or "libefml"
    /// Why the backends before the one that answered did not (one line each).
    std::vector<std::string> fallbacks;
};

/// Architecture and family we know for a product name ("S60" -> {"GCU300", "scorpio"}).
struct ProductInfo {
    std::string architecture;
    std::string family;
};
[[nodiscard]] ProductInfo product_info(const std::string& product);

}  // namespace inject::device
