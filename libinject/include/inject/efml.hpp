// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// libefml, the Enflame management library, as Enflame's public `efml.h` declares it
/// (docs/efsmi-model.md, libefml): the C structs of its ABI, and a loaded library that discovery,
/// the device plugin's health checks, the labeler and the exporter share. Every symbol is looked
/// up on its own: a missing one makes its values unknown (nullopt), never a crash, and `missing()`
/// names it so `enflame-ctk info` can say what a host's library lacks.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inject/discover.hpp"
#include "inject/result.hpp"

namespace inject::efml {

/// The ABI as efml.h has it. Layouts are checked by a unit test (sizes and offsets).
namespace abi {
inline constexpr std::size_t kStr = 128;  ///< every char buffer of the ABI

/// efmlReturn_t: an int enum.
enum Return : int {
    kSuccess = 0,
    kNotSupported = 3,
    kDriverNotLoaded = 6,
    kNoDevice = 12,
};

struct DeviceInfo {  // efmlDeviceInfo_t
    char name[kStr];
    std::uint32_t vendor_id, device_id, domain_id, bus_id, dev_id, func_id, logic_id;
};
struct DevMemInfo {  // efmlDevMemInfo_t (units undocumented: mem_used is MiB, total bytes or MiB)
    std::uint64_t mem_total_size;
    std::uint32_t mem_used;
};
struct PwrInfo {  // efmlPwrInfo_t, watts
    float pwr_capability;
    float cur_pwr_consumption;
};
struct TempInfo {  // efmlTempInfo_t (older), Celsius
    float cur_dev_temp, cur_hbm0_temp, cur_hbm1_temp;
};
struct TempInfoV2 {  // efmlTempInfoV2_t (2024+), Celsius
    float cur_asic_temp, cur_mem_temp, cur_board_temp;
};
struct ClkInfo {  // efmlClkInfo_t, MHz
    std::uint32_t cur_hbm_clock, cur_dtu_clock;
};
struct EccStatus {  // efmlEccStatus_t
    bool enabled, pending, pdblack;
    std::uint32_t ecnt_sb, ecnt_db;
};
struct PcieLinkInfo {  // efmlPcieLinkInfo_t
    int link_speed, max_link_speed, link_width, max_link_width;
};
struct ProcessInfo {  // efmlProcessInfo_t, bytes
    std::uint32_t pid;
    std::uint64_t dev_mem_usage, sys_mem_usage;
};
struct Event {  // efmlEvent_t
    std::uint32_t event_id;
    int event_type;  ///< 3 suspend, 10 reset start, 11 reset finish, 20 EID
    char event_msg[kStr];
};
}  // namespace abi

/// Every symbol we may use, in the order `info` lists them.
[[nodiscard]] const std::vector<std::string_view>& known_symbols();

/// efmlDevMemInfo_t.mem_total_size in bytes. Its unit is undocumented: a value below 2^32 is
/// MiB (no card has 4 PiB, and no card has less than 4 GiB in bytes), anything larger bytes.
[[nodiscard]] std::uint64_t memory_total_bytes(std::uint64_t mem_total_size) noexcept;

/// What a host's library offers, without initialising it (for `enflame-ctk info`).
struct Probe {
    std::string path;                  ///< the host path that was loaded
    std::vector<std::string> missing;  ///< known symbols it does not export, in known order
};

/// Finds and dlopens the library like Library::open, but calls nothing in it. NotFound when
/// there is none; Io when dlopen fails.
[[nodiscard]] Result<Probe> probe(const discover::Options& opts);

/// One process using a card.
struct Process {
    std::uint32_t pid = 0;
    std::uint64_t device_memory_bytes = 0;
};

/// One card's readings at one moment; nullopt = the library cannot say (symbol missing or the
/// call failed).
struct Sample {
    std::uint32_t index = 0;
    std::string name, uuid, serial, pci_bus_id;  ///< empty when unknown
    std::optional<std::uint64_t> memory_total_bytes, memory_used_bytes;
    std::optional<double> usage_percent;         ///< DTU usage
    std::optional<double> temperature_c;         ///< ASIC (V2) or device (older) temperature
    std::optional<double> memory_temperature_c;  ///< HBM (V2 mem, older hbm0)
    std::optional<double> board_temperature_c;   ///< V2 only
    std::optional<double> power_w, power_capability_w;
    std::optional<std::uint32_t> dtu_clock_mhz, hbm_clock_mhz;
    std::optional<std::uint64_t> ecc_single_bit, ecc_double_bit;
    std::optional<int> pcie_link_width, pcie_max_link_width, pcie_link_speed;
    std::optional<bool> healthy;
    std::optional<std::int32_t> numa_node;
    std::vector<Process> processes;  ///< empty when none or unknown
    std::optional<int> pcie_max_link_speed;
    std::optional<std::uint32_t> pci_device_id;  ///< EfmlGetDevInfo device_id
};

/// A driver event.
struct DriverEvent {
    std::uint32_t id = 0;
    int type = 0;
    std::string message;
};

/// The loaded, initialised library. dlclose runs in the destructor, and EfmlShutdown when this
/// is the last Library of that file in the process (they share the library's global state).
/// Not thread-safe: one thread at a time.
class Library {
public:
    /// Finds libefml.so / libefml.so.1 under driver-root (opts.library_search_paths), dlopens
    /// it and calls EfmlInit(false). NotFound when there is none; Unsupported when it lacks
    /// EfmlInit or EfmlGetDevCount; Io when EfmlInit fails (with its return code).
    [[nodiscard]] static Result<std::unique_ptr<Library>> open(const discover::Options& opts);

    ~Library();
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;

    /// The host path of the library that was loaded.
    [[nodiscard]] const std::string& path() const noexcept;
    /// The known symbols this library does not export.
    [[nodiscard]] std::vector<std::string> missing() const;
    /// EfmlGetDriverVer, or empty.
    [[nodiscard]] std::string driver_version();
    /// EfmlGetDevCount. An error when the driver is gone (e.g. return code 6).
    [[nodiscard]] Result<std::uint32_t> count();
    /// Everything the library can say about card `index`. An error only when the card cannot
    /// be asked at all (the driver is gone, the index is out of range); a single call failing
    /// leaves its field nullopt.
    [[nodiscard]] Result<Sample> sample(std::uint32_t index);
    /// EfmlGetDevIsHealth only (cheap; for health polling).
    [[nodiscard]] std::optional<bool> healthy(std::uint32_t index);
    /// EfmlGetEvent: waits up to timeout_ms; nullopt on timeout, when the call is missing or
    /// fails.
    [[nodiscard]] std::optional<DriverEvent> wait_event(int timeout_ms);
    /// Whether EfmlGetEvent exists.
    [[nodiscard]] bool has_events() const noexcept;

    struct Impl;

private:
    explicit Library(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace inject::efml
