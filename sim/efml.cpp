// SPDX-License-Identifier: Apache-2.0
// libefml simulator: exactly the C ABI of docs/efsmi-model.md, libefml (Enflame's efml.h names
// and struct layouts, plus the NVML-like calls whose layout is public), answering from the
// enflame-sim.json one folder above the library's own real path (found with dladdr). Telemetry,
// events and the driver-gone switch are files beside it, read on every call (sim/README.md).
// Return codes (docs/efsmi-model.md): 0 ok, 1 error, 2 invalid argument, 3 not initialised,
// 6 driver not loaded, 10 timeout (EfmlGetEvent).
// Only the ABI is exported (-fvisibility=hidden plus efml.map).

#include <dlfcn.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "model_json.hpp"
#include "telemetry.hpp"

#define EFML_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kOk = 0;
constexpr int kError = 1;
constexpr int kInvalid = 2;
constexpr int kUninit = 3;
constexpr int kDriverNotLoaded = 6;
constexpr int kTimeout = 10;
constexpr std::size_t kBufSize = 128;  // every char buffer of the ABI is 128 bytes
constexpr std::uint64_t kMiB = 1024 * 1024;

// efml.h's structs, written out here from docs/efsmi-model.md (not shared with libinject, so a
// layout mistake on either side shows up in the tests).
struct DeviceInfo {
    char name[kBufSize];
    std::uint32_t vendor_id, device_id, domain_id, bus_id, dev_id, func_id, logic_id;
};
struct DevMemInfo {
    std::uint64_t mem_total_size;
    std::uint32_t mem_used;
};
struct PwrInfo {
    float pwr_capability, cur_pwr_consumption;
};
struct TempInfo {
    float cur_dev_temp, cur_hbm0_temp, cur_hbm1_temp;
};
struct TempInfoV2 {
    float cur_asic_temp, cur_mem_temp, cur_board_temp;
};
struct ClkInfo {
    std::uint32_t cur_hbm_clock, cur_dtu_clock;
};
struct EccStatus {
    bool enabled, pending, pdblack;
    std::uint32_t ecnt_sb, ecnt_db;
};
struct PcieLinkInfo {
    int link_speed, max_link_speed, link_width, max_link_width;
};
struct ProcessInfo {
    std::uint32_t pid;
    std::uint64_t dev_mem_usage, sys_mem_usage;
};
struct Event {
    std::uint32_t event_id;
    int event_type;
    char event_msg[kBufSize];
};
struct Memory {  // efmlMemory_t
    std::uint64_t total, free, used;
};

// The library's state, like the real one's: set by EfmlInit, cleared by EfmlShutdown.
std::mutex g_mu;
std::optional<sim::Host> g_host;
// The folder of the description, where the runtime switches live.
std::string g_desc_dir;
// Events of the events file this process has returned or that predate EfmlInit.
std::size_t g_events_seen = 0;

// The library's own real path.
std::optional<std::filesystem::path> self_path() {
    Dl_info info{};
    if (dladdr(&g_mu, &info) == 0 || info.dli_fname == nullptr) {
        return std::nullopt;
    }
    std::error_code ec;
    const auto self = std::filesystem::canonical(info.dli_fname, ec);
    if (ec) return std::nullopt;
    return self;
}

int copy_out(const std::string& s, char* buf, std::size_t len = kBufSize) {
    if (buf == nullptr || len == 0) return kInvalid;
    std::snprintf(buf, len, "%s", s.c_str());
    return kOk;
}

// The state check every call but EfmlInit makes (g_mu held).
int state() {
    if (!g_desc_dir.empty()) sim::efml_stall(g_desc_dir);
    if (!g_desc_dir.empty() && sim::driver_gone(g_desc_dir)) return kDriverNotLoaded;
    return g_host ? kOk : kUninit;
}

// Runs `fn(card)` for card `idx` under the lock with the usual checks.
template <typename Fn>
int with_card(std::uint32_t idx, const void* out, Fn fn) {
    const std::lock_guard lock(g_mu);
    if (int rc = state(); rc != kOk) return rc;
    if (out == nullptr || idx >= g_host->cards.size()) return kInvalid;
    return fn(g_host->cards[idx]);
}

// The same with the card's current telemetry.
template <typename Fn>
int with_telemetry(std::uint32_t idx, const void* out, Fn fn) {
    return with_card(idx, out,
                     [&](const sim::Card& c) { return fn(sim::telemetry_of(c, g_desc_dir)); });
}

int init() {
    const std::lock_guard lock(g_mu);
    try {
        const auto self = self_path();
        if (!self) return kError;
        g_desc_dir = self->parent_path().parent_path().string();
        sim::efml_stall(g_desc_dir);
        if (sim::driver_gone(g_desc_dir)) return kDriverNotLoaded;
        if (g_host) return kOk;
        sim::Host h =
            sim::load_host(g_desc_dir + "/" + std::string(sim::kDescFile), self->string());
        if (h.faults.efml_init_fails) return kError;
        g_host = std::move(h);
        g_events_seen = sim::read_events(g_desc_dir).size();
        return kOk;
    } catch (const std::exception&) {
        return kError;
    }
}

// Exported calls never call each other: a symbol the builder hides (efml_missing_symbols) would
// leave the caller with an undefined reference, and dlopen would fail.
int count_cards(std::uint32_t* count) {
    const std::lock_guard lock(g_mu);
    if (int rc = state(); rc != kOk) return rc;
    if (count == nullptr) return kInvalid;
    *count = static_cast<std::uint32_t>(g_host->cards.size());
    return kOk;
}

std::uint32_t handle_index(void* h) {
    return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(h) - 1);
}

}  // namespace

EFML_API int EfmlInit(bool no_driver) {
    (void)no_driver;
    return init();
}

EFML_API void EfmlShutdown(void) {
    const std::lock_guard lock(g_mu);
    g_host.reset();
}

EFML_API int EfmlGetDevCount(std::uint32_t* count) {
    return count_cards(count);
}

EFML_API int EfmlGetDriverVer(char* buf) {
    const std::lock_guard lock(g_mu);
    if (int rc = state(); rc != kOk) return rc;
    return copy_out(g_host->driver_version, buf);
}

EFML_API int EfmlGetDevName(std::uint32_t idx, char* buf) {
    return with_card(idx, buf, [&](const sim::Card& c) { return copy_out(c.product, buf); });
}

EFML_API int EfmlGetDevUuid(std::uint32_t idx, char* buf) {
    return with_card(idx, buf, [&](const sim::Card& c) { return copy_out(c.uuid, buf); });
}

EFML_API int EfmlGetDevSn(std::uint32_t idx, char* buf) {
    return with_card(idx, buf, [&](const sim::Card& c) { return copy_out(c.serial, buf); });
}

EFML_API int EfmlGetDevInfo(std::uint32_t idx, DeviceInfo* info) {
    return with_card(idx, info, [&](const sim::Card& c) {
        *info = DeviceInfo{};
        (void)copy_out(c.product, info->name);
        unsigned dom = 0, bus = 0, dev = 0, fn = 0, id = 0;
        if (std::sscanf(c.bus_id.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return kError;
        if (std::sscanf(c.device_id.c_str(), "%x", &id) != 1) return kError;
        info->vendor_id = 0x1e36;
        info->device_id = id;
        info->domain_id = dom;
        info->bus_id = bus;
        info->dev_id = dev;
        info->func_id = fn;
        info->logic_id = c.index;
        return kOk;
    });
}

// mem_total_size in MiB, like mem_used (the real library's unit is undocumented).
EFML_API int EfmlGetDevMem(std::uint32_t idx, DevMemInfo* mem) {
    return with_card(idx, mem, [&](const sim::Card& c) {
        const auto t = sim::telemetry_of(c, g_desc_dir);
        mem->mem_total_size = c.memory_mib;
        mem->mem_used = static_cast<std::uint32_t>(t.memory_used_mib);
        return kOk;
    });
}

EFML_API int EfmlGetNumaNode(std::uint32_t idx, int* node) {
    return with_card(idx, node, [&](const sim::Card& c) {
        *node = c.numa_node;
        return kOk;
    });
}

EFML_API int EfmlGetDevIsHealth(std::uint32_t idx, bool* healthy) {
    return with_card(idx, healthy, [&](const sim::Card& c) {
        // The health switch is read on every call, so a test can flip it while a daemon
        // keeps the library initialised.
        sim::Host now;
        now.cards = {c};
        sim::apply_health_switch(now, g_desc_dir);
        *healthy = now.cards[0].healthy;
        return kOk;
    });
}

EFML_API int EfmlGetDevDtuUsage(std::uint32_t idx, float* usage) {
    return with_telemetry(idx, usage, [&](const sim::Telemetry& t) {
        *usage = static_cast<float>(t.usage);
        return kOk;
    });
}

EFML_API int EfmlGetDevPwr(std::uint32_t idx, PwrInfo* p) {
    return with_telemetry(idx, p, [&](const sim::Telemetry& t) {
        p->pwr_capability = static_cast<float>(t.power_capability);
        p->cur_pwr_consumption = static_cast<float>(t.power);
        return kOk;
    });
}

EFML_API int EfmlGetDevTemp(std::uint32_t idx, TempInfo* p) {
    return with_telemetry(idx, p, [&](const sim::Telemetry& t) {
        p->cur_dev_temp = static_cast<float>(t.temperature);
        p->cur_hbm0_temp = static_cast<float>(t.memory_temperature);
        p->cur_hbm1_temp = static_cast<float>(t.memory_temperature);
        return kOk;
    });
}

EFML_API int EfmlGetDevTempV2(std::uint32_t idx, TempInfoV2* p) {
    return with_telemetry(idx, p, [&](const sim::Telemetry& t) {
        p->cur_asic_temp = static_cast<float>(t.temperature);
        p->cur_mem_temp = static_cast<float>(t.memory_temperature);
        p->cur_board_temp = static_cast<float>(t.board_temperature);
        return kOk;
    });
}

EFML_API int EfmlGetDevClk(std::uint32_t idx, ClkInfo* p) {
    return with_telemetry(idx, p, [&](const sim::Telemetry& t) {
        p->cur_hbm_clock = t.hbm_clock;
        p->cur_dtu_clock = t.dtu_clock;
        return kOk;
    });
}

EFML_API int EfmlGetDevEccStatus(std::uint32_t idx, EccStatus* p) {
    return with_telemetry(idx, p, [&](const sim::Telemetry& t) {
        *p = EccStatus{};
        p->enabled = true;
        p->pending = true;
        p->ecnt_sb = static_cast<std::uint32_t>(t.ecc_single_bit);
        p->ecnt_db = static_cast<std::uint32_t>(t.ecc_double_bit);
        return kOk;
    });
}

EFML_API int EfmlGetPcieLinkInfo(std::uint32_t idx, PcieLinkInfo* p) {
    return with_telemetry(idx, p, [&](const sim::Telemetry& t) {
        p->link_speed = t.pcie_link_speed;
        p->max_link_speed = t.pcie_max_link_speed;
        p->link_width = t.pcie_link_width;
        p->max_link_width = t.pcie_max_link_width;
        return kOk;
    });
}

// count is in/out: the buffer's size in, the number of processes out. A buffer too small gets
// nothing but the count (and kError), so the caller can retry.
EFML_API int EfmlGetProcessInfo(std::uint32_t idx, std::uint32_t* count, ProcessInfo* out) {
    return with_telemetry(idx, count, [&](const sim::Telemetry& t) {
        const auto n = static_cast<std::uint32_t>(t.processes.size());
        if (n > *count || (n > 0 && out == nullptr)) {
            *count = n;
            return kError;
        }
        *count = n;
        for (std::uint32_t i = 0; i < n; ++i) {
            out[i] = ProcessInfo{t.processes[i].first, t.processes[i].second * kMiB, 0};
        }
        return kOk;
    });
}

// The next event appended to the events file after EfmlInit that this process has not seen,
// waiting up to timeout_ms for one; event_id is the card's index. It sleeps in poll(2) on an
// inotify watch of the simulator's folder (the events file, the driver-gone switch), so an
// idle caller costs no CPU, as a driver's blocking wait would not; without inotify it looks
// every 10 ms.
EFML_API int EfmlGetEvent(int timeout_ms, Event* ev) {
    using Clock = std::chrono::steady_clock;
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
    int ifd = -1;  // set up before the first look, so a change right after it wakes the poll
    {
        const std::lock_guard lock(g_mu);
        if (!g_desc_dir.empty()) {
            ifd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
            if (ifd >= 0 && ::inotify_add_watch(ifd, g_desc_dir.c_str(),
                                                IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO |
                                                    IN_CREATE | IN_DELETE) < 0) {
                ::close(ifd);
                ifd = -1;
            }
        }
    }
    const auto done = [&](int rc) {
        if (ifd >= 0) ::close(ifd);
        return rc;
    };
    for (;;) {
        {
            const std::lock_guard lock(g_mu);
            if (int rc = state(); rc != kOk) return done(rc);
            if (ev == nullptr) return done(kInvalid);
            const auto events = sim::read_events(g_desc_dir);
            if (events.size() > g_events_seen) {
                const auto& e = events[g_events_seen++];
                *ev = Event{};
                ev->event_id = e.card;
                ev->event_type = e.type;
                (void)copy_out(e.message, ev->event_msg);
                return done(kOk);
            }
        }
        const auto now = Clock::now();
        if (now >= until) return done(kTimeout);
        if (ifd < 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            continue;
        }
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
        pollfd p{ifd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left)) > 0) {
            char buf[4096];
            while (::read(ifd, buf, sizeof buf) > 0) {
            }
        }
    }
}

// The NVML-like API of the 2024-2025 header, for the calls whose layout is public.
EFML_API int efmlInit(void) {
    return init();
}

EFML_API int efmlDeviceGetCount_v2(unsigned* count) {
    return count_cards(count);
}

EFML_API int efmlDeviceGetHandleByIndex_v2(unsigned idx, void** handle) {
    return with_card(idx, handle, [&](const sim::Card& c) {
        *handle = reinterpret_cast<void*>(static_cast<std::uintptr_t>(c.index) + 1);
        return kOk;
    });
}

EFML_API int efmlDeviceGetName(void* handle, char* buf, unsigned len) {
    return with_card(handle_index(handle), buf,
                     [&](const sim::Card& c) { return copy_out(c.product, buf, len); });
}

EFML_API int efmlDeviceGetMemoryInfo(void* handle, Memory* m) {
    return with_card(handle_index(handle), m, [&](const sim::Card& c) {
        const auto t = sim::telemetry_of(c, g_desc_dir);
        m->total = c.memory_mib * kMiB;
        m->used = t.memory_used_mib * kMiB;
        m->free = m->total > m->used ? m->total - m->used : 0;
        return kOk;
    });
}

EFML_API int efmlDeviceGetPowerUsage(void* handle, unsigned* mw) {
    return with_card(handle_index(handle), mw, [&](const sim::Card& c) {
        *mw = static_cast<unsigned>(sim::telemetry_of(c, g_desc_dir).power * 1000.0);
        return kOk;
    });
}
