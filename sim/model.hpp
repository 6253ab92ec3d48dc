// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The simulated host description, normalised: every default filled in. The host builder
/// reads it from YAML (desc_yaml.cpp), validates it and writes it as JSON next to the
/// simulators, which read that JSON back (model_json.cpp). Deliberately independent of
/// libinject's parsers, so tests of those parsers against the simulator are not circular.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sim {

/// A DRS profile; offered by every card of `product` (every card when `product` is empty).
struct Profile {
    std::uint32_t id = 0;
    std::string name;
    std::uint32_t max_instances = 1;
    std::uint64_t memory_mib = 0;
    std::string product;
    std::uint32_t sips = 0;  ///< SIPs of an instance; 0: 6 per slice (the S60's 24 in 4)
};

/// A DRS instance living on card `card` (an index).
struct Instance {
    std::uint32_t card = 0;
    std::uint32_t instance_id = 0;
    std::string profile;
    std::string uuid;
    std::string placement = {};  ///< "<first slice>:<slices>"; empty: first fit (drs.hpp)
};

struct Card {
    std::uint32_t index = 0;
    std::uint32_t minor = 0;
    std::string product = "S60";
    std::string uuid;
    std::string serial;
    std::string bus_id;     ///< "0000:17:00.0", lowercase
    std::string device_id;  ///< "c035"
    std::uint64_t memory_mib = 0;
    std::uint64_t used_mib = 0;
    std::int32_t numa_node = 0;
    bool healthy = true;
};

struct Faults {
    bool efsmi_absent = false;
    int efsmi_exit_code = 0;
    std::uint32_t efsmi_sleep_ms = 0;
    bool json_unsupported = false;
    std::string efsmi_output = "normal";  ///< normal | garbage | truncated
    bool efsmi_flood = false;             ///< -q prints its output again and again, without end
    int efsmi_signal = 0;                 ///< efsmi kills itself with this signal (0: no)
    bool old_keys = false;
    bool efml_absent = false;
    std::vector<std::string> efml_missing_symbols;
    bool efml_init_fails = false;
    std::string drs_instance_layout = "uuid";  ///< --list-instance rows: uuid | placement
    bool drs_needs_card = false;  ///< the --drs commands without -i print usage, exit 1
};

struct Host {
    std::string driver_version = "1.4.3.4";
    std::uint32_t major = 238;
    std::uint32_t control_major = 238;
    std::uint32_t control_minor = 255;
    std::string class_dir = "enflame";
    std::vector<Card> cards;  ///< sorted by index; indices are 0..N-1
    std::vector<Profile> profiles;
    std::vector<Instance> instances;
    std::vector<std::string> runtime_libraries;
    Faults faults;
};

/// What a product looks like when the description does not say.
struct ProductDefaults {
    std::string_view name;
    std::string_view device_id;
    std::uint64_t memory_mib;
};

/// The defaults of a known product, or nullopt.
[[nodiscard]] std::optional<ProductDefaults> product_defaults(std::string_view product);

/// "S60, T10, I20, T20 or T21" for error messages.
[[nodiscard]] std::string known_products();

/// The libefml symbols the simulator exports (docs/efsmi-model.md, libefml).
inline constexpr std::string_view kEfmlSymbols[] = {
    "EfmlInit",
    "EfmlShutdown",
    "EfmlGetDevCount",
    "EfmlGetDriverVer",
    "EfmlGetDevName",
    "EfmlGetDevUuid",
    "EfmlGetDevSn",
    "EfmlGetDevInfo",
    "EfmlGetDevMem",
    "EfmlGetNumaNode",
    "EfmlGetDevIsHealth",
    "EfmlGetDevDtuUsage",
    "EfmlGetDevPwr",
    "EfmlGetDevTemp",
    "EfmlGetDevTempV2",
    "EfmlGetDevClk",
    "EfmlGetDevEccStatus",
    "EfmlGetPcieLinkInfo",
    "EfmlGetProcessInfo",
    "EfmlGetEvent",
    "efmlInit",
    "efmlDeviceGetCount_v2",
    "efmlDeviceGetHandleByIndex_v2",
    "efmlDeviceGetName",
    "efmlDeviceGetMemoryInfo",
    "efmlDeviceGetPowerUsage",
};

/// The profiles card `c` offers (those of its product, or product-less ones).
[[nodiscard]] std::vector<const Profile*> profiles_of(const Host& h, const Card& c);

/// The soname-style symlinks for a runtime library file, as (link, target) pairs with
/// relative targets: libtopsrt.so.2.1.0 gives {libtopsrt.so.2, libtopsrt.so.2.1.0} and
/// {libtopsrt.so, libtopsrt.so.2}.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> library_links(
    const std::string& file);

/// The description file name the simulators look for next to themselves.
inline constexpr std::string_view kDescFile = "enflame-sim.json";

}  // namespace sim
