// SPDX-License-Identifier: Apache-2.0
// libefml simulator: exactly the C ABI of DESIGN.md section 3, answering from the
// enflame-sim.json one folder above the library's own real path (found with dladdr).
// Return codes (docs/efsmi-model.md): 0 ok, 1 error, 2 invalid argument, 3 not initialised.
// Only the Efml* functions are exported (-fvisibility=hidden plus efml.map).

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "model_json.hpp"

#define EFML_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kOk = 0;
constexpr int kError = 1;
constexpr int kInvalid = 2;
constexpr int kUninit = 3;
constexpr std::size_t kBufSize = 128;  // every char buffer of the ABI is 128 bytes

// The library's state, like the real one's: set by EfmlInit, cleared by EfmlShutdown.
std::mutex g_mu;
std::optional<sim::Host> g_host;
// The folder of the description, where the runtime health switch lives.
std::string g_desc_dir;

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

int copy_out(const std::string& s, char* buf) {
    if (buf == nullptr) return kInvalid;
    std::snprintf(buf, kBufSize, "%s", s.c_str());
    return kOk;
}

// Runs `fn(card)` for card `idx` under the lock with the usual checks.
template <typename Fn>
int with_card(std::uint32_t idx, const void* out, Fn fn) {
    const std::lock_guard lock(g_mu);
    if (!g_host) return kUninit;
    if (out == nullptr || idx >= g_host->cards.size()) return kInvalid;
    return fn(g_host->cards[idx]);
}

}  // namespace

EFML_API int EfmlInit(bool no_driver) {
    (void)no_driver;
    const std::lock_guard lock(g_mu);
    try {
        const auto self = self_path();
        if (!self) return kError;
        g_desc_dir = self->parent_path().parent_path().string();
        sim::Host h = sim::load_host(g_desc_dir + "/" + std::string(sim::kDescFile), self->string());
        if (h.faults.efml_init_fails) return kError;
        g_host = std::move(h);
        return kOk;
    } catch (const std::exception&) {
        return kError;
    }
}

EFML_API int EfmlShutdown(void) {
    const std::lock_guard lock(g_mu);
    if (!g_host) return kUninit;
    g_host.reset();
    return kOk;
}

EFML_API int EfmlGetDevCount(std::uint32_t* count) {
    const std::lock_guard lock(g_mu);
    if (!g_host) return kUninit;
    if (count == nullptr) return kInvalid;
    *count = static_cast<std::uint32_t>(g_host->cards.size());
    return kOk;
}

EFML_API int EfmlGetDriverVer(char* buf) {
    const std::lock_guard lock(g_mu);
    if (!g_host) return kUninit;
    return copy_out(g_host->driver_version, buf);
}

EFML_API int EfmlGetDevName(std::uint32_t idx, char* buf) {
    return with_card(idx, buf, [&](const sim::Card& c) { return copy_out(c.product, buf); });
}

EFML_API int EfmlGetDevUuid(std::uint32_t idx, char* buf) {
    return with_card(idx, buf, [&](const sim::Card& c) { return copy_out(c.uuid, buf); });
}

EFML_API int EfmlGetDevMinor(std::uint32_t idx, std::uint32_t* minor) {
    return with_card(idx, minor, [&](const sim::Card& c) {
        *minor = c.minor;
        return kOk;
    });
}

EFML_API int EfmlGetDevPciBusId(std::uint32_t idx, char* buf) {
    return with_card(idx, buf, [&](const sim::Card& c) { return copy_out(c.bus_id, buf); });
}

EFML_API int EfmlGetDevMemTotal(std::uint32_t idx, std::uint64_t* bytes) {
    return with_card(idx, bytes, [&](const sim::Card& c) {
        *bytes = c.memory_mib * 1024U * 1024U;
        return kOk;
    });
}

EFML_API int EfmlGetNumaNode(std::uint32_t idx, std::int32_t* node) {
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
