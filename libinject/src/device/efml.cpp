// SPDX-License-Identifier: Apache-2.0
// The libefml backend: dlopen of libefml.so / libefml.so.1 found under driver-root. Only calls
// that pass scalars and strings are used (struct layouts differ between driver versions), each
// symbol is looked up on its own, and a missing one leaves its field unknown: an older or
// newer library must never crash discovery.
#include "device/backends.hpp"
#include "inject/fs.hpp"
#include "inject/log.hpp"

#include <dlfcn.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <utility>

namespace inject::discover::detail {
namespace {

constexpr std::size_t kBuf = 128;       // every char buffer of the ABI
constexpr std::uint32_t kMaxCards = 4096;  // a count beyond this is a broken library

using InitFn = int (*)(bool);
using VoidFn = int (*)();
using CountFn = int (*)(std::uint32_t*);
using StrFn = int (*)(char*);
using IdxStrFn = int (*)(std::uint32_t, char*);
using IdxU32Fn = int (*)(std::uint32_t, std::uint32_t*);
using IdxU64Fn = int (*)(std::uint32_t, std::uint64_t*);
using IdxI32Fn = int (*)(std::uint32_t, std::int32_t*);
using IdxBoolFn = int (*)(std::uint32_t, bool*);

// The loaded library. Owns the handle and the initialised state: EfmlShutdown and dlclose run
// on every path out, in that order.
class Efml {
public:
    Efml() = default;
    Efml(const Efml&) = delete;
    Efml& operator=(const Efml&) = delete;
    ~Efml() {
        if (initialised_ && shutdown_) shutdown_();
        if (handle_) ::dlclose(handle_);
    }

    static Result<std::string> locate(const Options& opts);
    Result<void> load(const std::string& path);
    Result<Report> query();

private:
    template <typename Fn>
    Fn sym(const char* name) {
        void* p = ::dlsym(handle_, name);
        if (!p) log::debug("libefml: no symbol {}: that field stays unknown", name);
        return reinterpret_cast<Fn>(p);
    }
    std::optional<std::string> str(IdxStrFn fn, std::uint32_t idx, const char* what);

    void* handle_ = nullptr;
    bool initialised_ = false;
    VoidFn shutdown_ = nullptr;
};

Result<std::string> Efml::locate(const Options& opts) {
    std::string tried;
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
    return fail(Errc::NotFound, "no libefml.so or libefml.so.1 under driver-root '" + opts.driver_root +
                                    "' (searched " + dirs + ")");
}

Result<void> Efml::load(const std::string& path) {
    handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
        const char* e = ::dlerror();
        return fail(Errc::Io, "dlopen: " + std::string(e ? e : "unknown error"));
    }
    return ok();
}

std::optional<std::string> Efml::str(IdxStrFn fn, std::uint32_t idx, const char* what) {
    if (!fn) return std::nullopt;
    char buf[kBuf] = {};
    if (int rc = fn(idx, buf); rc != 0) {
        log::debug("libefml: {}({}) returned {}: unknown", what, idx, rc);
        return std::nullopt;
    }
    buf[kBuf - 1] = '\0';
    return std::string(buf);
}

// "0000:17:00.0" in lower case, or nullopt when it is not a PCI address.
std::optional<std::string> normal_bus_id(const std::string& s) {
    // from_chars reports an out-of-range field; sscanf's %x would silently wrap it.
    std::array<unsigned, 4> v{};
    const char* p = s.data();
    const char* const end = s.data() + s.size();
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) {
            if (p == end || *p != (i == 3 ? '.' : ':')) return std::nullopt;
            ++p;
        }
        auto [next, ec] = std::from_chars(p, end, v[i], 16);
        if (ec != std::errc{} || next == p) return std::nullopt;
        p = next;
    }
    if (p != end) return std::nullopt;
    const auto [dom, bus, dev, fn] = v;
    if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7) return std::nullopt;
    char buf[32];
    (void)std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    return std::string(buf);
}

Result<Report> Efml::query() {
    auto init = sym<InitFn>("EfmlInit");
    auto count = sym<CountFn>("EfmlGetDevCount");
    if (!init) return fail(Errc::Unsupported, "libefml has no EfmlInit");
    if (!count) return fail(Errc::Unsupported, "libefml has no EfmlGetDevCount");
    shutdown_ = sym<VoidFn>("EfmlShutdown");
    if (int rc = init(false); rc != 0)
        return fail(Errc::Io, "EfmlInit failed with " + std::to_string(rc));
    initialised_ = true;
    std::uint32_t n = 0;
    if (int rc = count(&n); rc != 0)
        return fail(Errc::Io, "EfmlGetDevCount failed with " + std::to_string(rc));
    if (n > kMaxCards) return fail(Errc::InvalidInput, "EfmlGetDevCount says " + std::to_string(n) + " cards");

    Report rep;
    if (auto ver = sym<StrFn>("EfmlGetDriverVer")) {
        char buf[kBuf] = {};
        if (ver(buf) == 0) {
            buf[kBuf - 1] = '\0';
            rep.driver_version = buf;
        }
    }
    const auto name = sym<IdxStrFn>("EfmlGetDevName");
    const auto uuid = sym<IdxStrFn>("EfmlGetDevUuid");
    const auto bus = sym<IdxStrFn>("EfmlGetDevPciBusId");
    const auto minor = sym<IdxU32Fn>("EfmlGetDevMinor");
    const auto mem = sym<IdxU64Fn>("EfmlGetDevMemTotal");
    const auto numa = sym<IdxI32Fn>("EfmlGetNumaNode");
    const auto health = sym<IdxBoolFn>("EfmlGetDevIsHealth");
    for (std::uint32_t i = 0; i < n; ++i) {
        RawCard c;
        c.index = i;
        c.driver_version = rep.driver_version;
        c.product = str(name, i, "EfmlGetDevName").value_or("");
        c.uuid = str(uuid, i, "EfmlGetDevUuid").value_or("");
        if (auto b = str(bus, i, "EfmlGetDevPciBusId")) {
            auto nb = normal_bus_id(*b);
            if (!nb) return fail(Errc::InvalidInput, "EfmlGetDevPciBusId(" + std::to_string(i) +
                                                         ") gave a bad bus id '" + *b + "'");
            c.pci_bus_id = *nb;
        }
        std::uint32_t m = 0;
        if (minor && minor(i, &m) == 0) c.minor = m;
        std::uint64_t bytes = 0;
        if (mem && mem(i, &bytes) == 0) c.memory_bytes = bytes;
        std::int32_t node = -1;
        if (numa && numa(i, &node) == 0) c.numa_node = node < 0 ? -1 : node;
        bool h = false;
        if (health && health(i, &h) == 0) c.healthy = h;
        rep.cards.push_back(std::move(c));
    }
    return rep;
}

}  // namespace

Result<Report> query_efml(const Options& opts) {
    INJECT_TRY(std::string path, Efml::locate(opts));
    log::debug("libefml: loading {}", path);
    Efml lib;
    INJECT_TRY_VOID(lib.load(path));
    return lib.query();
}

}  // namespace inject::discover::detail
