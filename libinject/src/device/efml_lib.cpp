// SPDX-License-Identifier: Apache-2.0
// inject::efml::Library: libefml as Enflame's public efml.h declares it
// (docs/efsmi-model.md, libefml). Every symbol is dlsym'd once, on its own; a missing one leaves
// its values unknown. Return code 6 (driver not loaded) from any call makes the whole
// count()/sample() an error naming the call.
//
// The NVML-like API of the 2024-2025 header is used only where its layout is public, and
// only when the matching Efml* call is missing: efmlDeviceGetName, efmlDeviceGetMemoryInfo
// ({u64 total, free, used} bytes), efmlDeviceGetPowerUsage (mW). efmlDeviceGetPciInfo_v3 (its
// struct layout is not public), efmlDeviceGetTemperature (its sensor enum values are not public)
// and efmlDeviceGetUtilizationRates (its struct layout is not public) are not called.
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "inject/efml.hpp"
#include "inject/fs.hpp"
#include "inject/log.hpp"

namespace inject::efml {

const std::vector<std::string_view>& known_symbols() {
    static const std::vector<std::string_view> names{
        "EfmlInit",
        "EfmlShutdown",
        "EfmlGetDriverVer",
        "EfmlGetDevCount",
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
    return names;
}

std::uint64_t memory_total_bytes(std::uint64_t mem_total_size) noexcept {
    constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
    if (mem_total_size < (std::uint64_t{1} << 32)) return mem_total_size * kMiB;
    return mem_total_size;
}

namespace {

constexpr std::uint32_t kMaxCards = 4096;      // a count beyond this is a broken library
constexpr std::uint32_t kMaxProcesses = 1024;  // EfmlGetProcessInfo is asked for at most this
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

struct NvmlMemory {  // efmlMemory_t: bytes
    std::uint64_t total, free, used;
};
using NvmlDevice = void*;  // efmlDevice_t, an opaque handle

// The table of calls: one pointer per known symbol, null when the library lacks it.
struct Fns {
    int (*init)(bool) = nullptr;
    void (*shutdown)() = nullptr;
    int (*driver_ver)(char*) = nullptr;
    int (*count)(std::uint32_t*) = nullptr;
    int (*name)(std::uint32_t, char*) = nullptr;
    int (*uuid)(std::uint32_t, char*) = nullptr;
    int (*sn)(std::uint32_t, char*) = nullptr;
    int (*info)(std::uint32_t, abi::DeviceInfo*) = nullptr;
    int (*mem)(std::uint32_t, abi::DevMemInfo*) = nullptr;
    int (*numa)(std::uint32_t, int*) = nullptr;
    int (*health)(std::uint32_t, bool*) = nullptr;
    int (*usage)(std::uint32_t, float*) = nullptr;
    int (*pwr)(std::uint32_t, abi::PwrInfo*) = nullptr;
    int (*temp)(std::uint32_t, abi::TempInfo*) = nullptr;
    int (*temp_v2)(std::uint32_t, abi::TempInfoV2*) = nullptr;
    int (*clk)(std::uint32_t, abi::ClkInfo*) = nullptr;
    int (*ecc)(std::uint32_t, abi::EccStatus*) = nullptr;
    int (*pcie)(std::uint32_t, abi::PcieLinkInfo*) = nullptr;
    int (*procs)(std::uint32_t, std::uint32_t*, abi::ProcessInfo*) = nullptr;
    int (*event)(int, abi::Event*) = nullptr;
    int (*n_init)() = nullptr;
    int (*n_count)(unsigned*) = nullptr;
    int (*n_handle)(unsigned, NvmlDevice*) = nullptr;
    int (*n_name)(NvmlDevice, char*, unsigned) = nullptr;
    int (*n_mem)(NvmlDevice, NvmlMemory*) = nullptr;
    int (*n_power)(NvmlDevice, unsigned*) = nullptr;
};

std::string text(const char* buf) {
    return std::string(buf, ::strnlen(buf, abi::kStr));
}

// "0000:17:00.0" from EfmlGetDevInfo's numbers; empty when they cannot be a PCI address.
std::string bus_id(const abi::DeviceInfo& i) {
    if (i.domain_id > 0xffff || i.bus_id > 0xff || i.dev_id > 0x1f || i.func_id > 7) return {};
    char buf[16];
    (void)std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", i.domain_id, i.bus_id, i.dev_id,
                        i.func_id);
    return buf;
}

// How many initialised Library objects share each loaded file. dlopen hands every open of one
// file the same library and the same global state, so only the last one out may call
// EfmlShutdown: an earlier one would uninitialise the others (e.g. discovery run by a daemon
// that keeps its own Library open).
std::mutex g_users_mu;
std::map<std::string, int> g_users;

void add_user(const std::string& path) {
    const std::lock_guard lock(g_users_mu);
    ++g_users[path];
}

// Whether this was the last user.
bool drop_user(const std::string& path) {
    const std::lock_guard lock(g_users_mu);
    const auto it = g_users.find(path);
    if (it == g_users.end() || --it->second > 0) return false;
    g_users.erase(it);
    return true;
}

}  // namespace

struct Library::Impl {
    void* handle = nullptr;
    bool initialised = false;
    bool nvml = false;  // efmlInit succeeded and handles can be had
    std::string path;
    std::vector<std::string> missing;
    Fns f;

    ~Impl() {
        if (initialised && drop_user(path) && f.shutdown) f.shutdown();
        if (handle) ::dlclose(handle);
    }

    template <typename Fn>
    void bind(Fn& out, const char* name) {
        void* p = ::dlsym(handle, name);
        if (!p) {
            log::debug("libefml: no symbol {}: its values stay unknown", name);
            missing.emplace_back(name);
        }
        out = reinterpret_cast<Fn>(p);
    }

    void bind_all() {
        bind(f.init, "EfmlInit");
        bind(f.shutdown, "EfmlShutdown");
        bind(f.driver_ver, "EfmlGetDriverVer");
        bind(f.count, "EfmlGetDevCount");
        bind(f.name, "EfmlGetDevName");
        bind(f.uuid, "EfmlGetDevUuid");
        bind(f.sn, "EfmlGetDevSn");
        bind(f.info, "EfmlGetDevInfo");
        bind(f.mem, "EfmlGetDevMem");
        bind(f.numa, "EfmlGetNumaNode");
        bind(f.health, "EfmlGetDevIsHealth");
        bind(f.usage, "EfmlGetDevDtuUsage");
        bind(f.pwr, "EfmlGetDevPwr");
        bind(f.temp, "EfmlGetDevTemp");
        bind(f.temp_v2, "EfmlGetDevTempV2");
        bind(f.clk, "EfmlGetDevClk");
        bind(f.ecc, "EfmlGetDevEccStatus");
        bind(f.pcie, "EfmlGetPcieLinkInfo");
        bind(f.procs, "EfmlGetProcessInfo");
        bind(f.event, "EfmlGetEvent");
        bind(f.n_init, "efmlInit");
        bind(f.n_count, "efmlDeviceGetCount_v2");
        bind(f.n_handle, "efmlDeviceGetHandleByIndex_v2");
        bind(f.n_name, "efmlDeviceGetName");
        bind(f.n_mem, "efmlDeviceGetMemoryInfo");
        bind(f.n_power, "efmlDeviceGetPowerUsage");
    }
};

namespace {

// One sampling pass: remembers the first "driver not loaded" answer, which fails the pass.
class Pass {
public:
    explicit Pass(std::uint32_t idx) : idx_(idx) {}

    // Whether call `what` (already made, returning `rc`) succeeded.
    bool ok(const char* what, int rc) {
        if (rc == abi::kSuccess) return true;
        if (rc == abi::kDriverNotLoaded && gone_.empty()) gone_ = what;
        log::debug("libefml: {}({}) returned {}: unknown", what, idx_, rc);
        return false;
    }
    [[nodiscard]] Result<void> verdict() const {
        if (gone_.empty()) return inject::ok();
        return fail(Errc::Io, gone_ + "(" + std::to_string(idx_) + ") returned " +
                                  std::to_string(abi::kDriverNotLoaded) + " (driver not loaded)");
    }

private:
    std::uint32_t idx_;
    std::string gone_;
};

template <typename Fn>
std::string str_call(Pass& p, Fn fn, const char* what, std::uint32_t idx) {
    if (!fn) return {};
    std::array<char, abi::kStr> buf{};
    if (!p.ok(what, fn(idx, buf.data()))) return {};
    buf.back() = '\0';
    return text(buf.data());
}

template <typename T, typename Fn>
std::optional<T> struct_call(Pass& p, Fn fn, const char* what, std::uint32_t idx) {
    if (!fn) return std::nullopt;
    T v{};
    if (!p.ok(what, fn(idx, &v))) return std::nullopt;
    return v;
}

Result<std::string> locate(const discover::Options& opts) {
    for (const char* name : {"libefml.so", "libefml.so.1"}) {
        for (const auto& dir : opts.library_search_paths) {
            const std::string rel = dir + "/" + name;
            // The links are absolute (/usr/lib/libefml.so -> /usr/local/efsmi/...): they must
            // resolve inside driver-root, never on the host running us.
            auto real = fs::resolve_in_root(opts.driver_root, rel);
            if (real) return std::move(*real);
            if (real.error().code() != Errc::NotFound)
                log::debug("libefml: skipping {}: {}", rel, real.error().what());
        }
    }
    std::string dirs;
    for (const auto& d : opts.library_search_paths) dirs += (dirs.empty() ? "" : ", ") + d;
    return fail(Errc::NotFound, "no libefml.so or libefml.so.1 under driver-root '" +
                                    opts.driver_root + "' (searched " + dirs + ")");
}

// The one dlopen of the host's libefml. The static host binaries (ENFLAME_NO_DLOPEN) refuse:
// glibc's static dlopen would map the host's libc.so beside our own (docs/host-binaries.md).
Result<void*> load(const std::string& path) {
#ifdef ENFLAME_NO_DLOPEN
    return fail(Errc::Unsupported, "'" + path + "' not loaded: this static build does not dlopen " +
                                       "host libraries (efsmi answers instead)");
#else
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* e = ::dlerror();
        return fail(Errc::Io, "dlopen: " + std::string(e ? e : "unknown error"));
    }
    return h;
#endif
}

}  // namespace

Result<Probe> probe(const discover::Options& opts) {
    Probe p;
    INJECT_TRY(p.path, locate(opts));
    INJECT_TRY(void* h, load(p.path));
    for (auto name : known_symbols()) {
        if (!::dlsym(h, std::string(name).c_str())) p.missing.emplace_back(name);
    }
    ::dlclose(h);
    return p;
}

Library::Library(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Library::~Library() = default;

Result<std::unique_ptr<Library>> Library::open(const discover::Options& opts) {
    INJECT_TRY(std::string path, locate(opts));
    log::debug("libefml: loading {}", path);
    auto impl = std::make_unique<Impl>();
    impl->path = path;
    INJECT_TRY(impl->handle, load(path));
    impl->bind_all();
    auto& f = impl->f;
    if (!f.init) return fail(Errc::Unsupported, "libefml has no EfmlInit");
    if (!f.count) return fail(Errc::Unsupported, "libefml has no EfmlGetDevCount");
    if (int rc = f.init(false); rc != abi::kSuccess)
        return fail(Errc::Io, "EfmlInit failed with " + std::to_string(rc));
    impl->initialised = true;
    add_user(impl->path);
    impl->nvml = f.n_init && f.n_handle && f.n_init() == abi::kSuccess;
    return std::unique_ptr<Library>(new Library(std::move(impl)));
}

const std::string& Library::path() const noexcept {
    return impl_->path;
}

std::vector<std::string> Library::missing() const {
    return impl_->missing;
}

bool Library::has_events() const noexcept {
    return impl_->f.event != nullptr;
}

std::string Library::driver_version() {
    if (!impl_->f.driver_ver) return {};
    std::array<char, abi::kStr> buf{};
    if (impl_->f.driver_ver(buf.data()) != abi::kSuccess) return {};
    buf.back() = '\0';
    return text(buf.data());
}

Result<std::uint32_t> Library::count() {
    std::uint32_t n = 0;
    if (int rc = impl_->f.count(&n); rc != abi::kSuccess)
        return fail(Errc::Io, "EfmlGetDevCount returned " + std::to_string(rc) +
                                  (rc == abi::kDriverNotLoaded ? " (driver not loaded)" : ""));
    if (n > kMaxCards)
        return fail(Errc::InvalidInput, "EfmlGetDevCount says " + std::to_string(n) + " cards");
    return n;
}

std::optional<bool> Library::healthy(std::uint32_t index) {
    if (!impl_->f.health) return std::nullopt;
    bool h = false;
    if (impl_->f.health(index, &h) != abi::kSuccess) return std::nullopt;
    return h;
}

std::optional<DriverEvent> Library::wait_event(int timeout_ms) {
    if (!impl_->f.event) return std::nullopt;
    abi::Event ev{};
    if (impl_->f.event(timeout_ms, &ev) != abi::kSuccess) return std::nullopt;
    ev.event_msg[abi::kStr - 1] = '\0';
    return DriverEvent{ev.event_id, ev.event_type, text(ev.event_msg)};
}

namespace {

void fill_identity(Pass& p, const Fns& f, Sample& s) {
    const std::uint32_t i = s.index;
    s.name = str_call(p, f.name, "EfmlGetDevName", i);
    s.uuid = str_call(p, f.uuid, "EfmlGetDevUuid", i);
    s.serial = str_call(p, f.sn, "EfmlGetDevSn", i);
    if (auto info = struct_call<abi::DeviceInfo>(p, f.info, "EfmlGetDevInfo", i)) {
        s.pci_bus_id = bus_id(*info);
        if (s.pci_bus_id.empty())
            log::debug("libefml: EfmlGetDevInfo({}) gave no valid PCI address", i);
        s.pci_device_id = info->device_id;
    }
    if (auto m = struct_call<abi::DevMemInfo>(p, f.mem, "EfmlGetDevMem", i)) {
        s.memory_total_bytes = memory_total_bytes(m->mem_total_size);
        s.memory_used_bytes = std::uint64_t{m->mem_used} * kMiB;
    }
    if (f.numa) {
        int node = -1;
        if (p.ok("EfmlGetNumaNode", f.numa(i, &node))) s.numa_node = node < 0 ? -1 : node;
    }
    if (f.health) {
        bool h = false;
        if (p.ok("EfmlGetDevIsHealth", f.health(i, &h))) s.healthy = h;
    }
}

void fill_telemetry(Pass& p, const Fns& f, Sample& s) {
    const std::uint32_t i = s.index;
    if (f.usage) {
        float u = 0;
        if (p.ok("EfmlGetDevDtuUsage", f.usage(i, &u))) s.usage_percent = u;
    }
    if (auto pw = struct_call<abi::PwrInfo>(p, f.pwr, "EfmlGetDevPwr", i)) {
        s.power_w = pw->cur_pwr_consumption;
        s.power_capability_w = pw->pwr_capability;
    }
    if (auto t = struct_call<abi::TempInfoV2>(p, f.temp_v2, "EfmlGetDevTempV2", i)) {
        s.temperature_c = t->cur_asic_temp;
        s.memory_temperature_c = t->cur_mem_temp;
        s.board_temperature_c = t->cur_board_temp;
    } else if (auto t1 = struct_call<abi::TempInfo>(p, f.temp, "EfmlGetDevTemp", i)) {
        s.temperature_c = t1->cur_dev_temp;
        s.memory_temperature_c = t1->cur_hbm0_temp;
    }
    if (auto c = struct_call<abi::ClkInfo>(p, f.clk, "EfmlGetDevClk", i)) {
        s.dtu_clock_mhz = c->cur_dtu_clock;
        s.hbm_clock_mhz = c->cur_hbm_clock;
    }
    if (auto e = struct_call<abi::EccStatus>(p, f.ecc, "EfmlGetDevEccStatus", i)) {
        s.ecc_single_bit = e->ecnt_sb;
        s.ecc_double_bit = e->ecnt_db;
    }
    if (auto l = struct_call<abi::PcieLinkInfo>(p, f.pcie, "EfmlGetPcieLinkInfo", i)) {
        s.pcie_link_speed = l->link_speed;
        s.pcie_max_link_speed = l->max_link_speed;
        s.pcie_link_width = l->link_width;
        s.pcie_max_link_width = l->max_link_width;
    }
}

// EfmlGetProcessInfo: count is in/out. When the library says there are more than the buffer
// holds, ask once more with a buffer of its count (at most kMaxProcesses).
void fill_processes(Pass& p, const Fns& f, Sample& s) {
    if (!f.procs) return;
    std::vector<abi::ProcessInfo> buf(16);
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto n = static_cast<std::uint32_t>(buf.size());
        const int rc = f.procs(s.index, &n, buf.data());
        if (rc == abi::kSuccess && n <= buf.size()) {
            for (std::uint32_t k = 0; k < n; ++k)
                s.processes.push_back({buf[k].pid, buf[k].dev_mem_usage});
            return;
        }
        if (rc != abi::kSuccess && n <= buf.size()) {
            (void)p.ok("EfmlGetProcessInfo", rc);
            return;
        }
        if (attempt > 0 || buf.size() >= kMaxProcesses) break;  // it keeps growing: give up
        buf.resize(std::min(n, kMaxProcesses));
    }
    log::debug("libefml: EfmlGetProcessInfo({}) wants more than {} entries: unknown", s.index,
               buf.size());
}

void fill_from_nvml(const Fns& f, Sample& s) {
    NvmlDevice h = nullptr;
    if (f.n_handle(s.index, &h) != abi::kSuccess) return;
    if (s.name.empty() && f.n_name) {
        std::array<char, abi::kStr> buf{};
        if (f.n_name(h, buf.data(), static_cast<unsigned>(buf.size())) == abi::kSuccess) {
            buf.back() = '\0';
            s.name = text(buf.data());
        }
    }
    if (!s.memory_total_bytes && f.n_mem) {
        NvmlMemory m{};
        if (f.n_mem(h, &m) == abi::kSuccess) {
            s.memory_total_bytes = m.total;
            s.memory_used_bytes = m.used;
        }
    }
    if (!s.power_w && f.n_power) {
        unsigned mw = 0;
        if (f.n_power(h, &mw) == abi::kSuccess) s.power_w = mw / 1000.0;
    }
}

}  // namespace

Result<Sample> Library::sample(std::uint32_t index) {
    INJECT_TRY(const std::uint32_t n, count());
    if (index >= n)
        return fail(Errc::NotFound, "card " + std::to_string(index) +
                                        " does not exist (libefml counts " + std::to_string(n) +
                                        ")");
    Sample s;
    s.index = index;
    Pass p(index);
    fill_identity(p, impl_->f, s);
    fill_telemetry(p, impl_->f, s);
    fill_processes(p, impl_->f, s);
    INJECT_TRY_VOID(p.verdict());
    if (impl_->nvml) fill_from_nvml(impl_->f, s);
    return s;
}

}  // namespace inject::efml
