// SPDX-License-Identifier: Apache-2.0
// glibc's ld.so.cache, read-only and bounds-checked (inject/ldcache.hpp). The layout is
// glibc's sysdeps/generic/dl-cache.h; every read goes through Reader, which refuses to step
// outside the bytes it was given.
#include "inject/ldcache.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <set>

namespace inject::ldcache {
namespace {

constexpr std::size_t kNewHeader =
    48;  // magic+version 20, nlibs, len_strings, flags+3, ext, unused[3]
constexpr std::size_t kNewEntry = 24;   // flags, key, value, osversion, hwcap
constexpr std::size_t kOldHeader = 16;  // "ld.so-1.7.0" (11) padded to 12, nlibs
constexpr std::size_t kOldEntry = 12;   // flags, key, value
// The header's endianness byte (cache_file_new.flags).
constexpr std::uint8_t kEndianUnset = 0;
constexpr std::uint8_t kEndianLittle = 2;
constexpr std::uint8_t kEndianBig = 3;

Error bad(std::size_t at, const std::string& why) {
    return Error(Errc::InvalidInput, "ld.so.cache: byte " + std::to_string(at) + ": " + why);
}

template <typename T>
T load(std::string_view d, std::size_t at) {
    T v{};
    std::memcpy(&v, d.data() + at, sizeof v);
    return v;
}

/// The NUL-terminated string at `off` of `table` (a view into it), or an error naming `what`.
/// At most kMaxStringBytes + 1 bytes are looked at; `budget` counts them down.
Result<std::string_view> string_at(std::string_view table, std::uint32_t off, std::size_t base,
                                   const char* what, std::size_t& budget) {
    if (off >= table.size())
        return fail(
            bad(base, std::string(what) + " offset " + std::to_string(off) + " past the end"));
    const std::string_view rest = table.substr(off, kMaxStringBytes + 1);
    const auto end = rest.find('\0');
    if (end == std::string_view::npos) {
        if (rest.size() > kMaxStringBytes)
            return fail(bad(base, std::string(what) + " string is longer than " +
                                      std::to_string(kMaxStringBytes) + " bytes"));
        return fail(bad(base, std::string(what) + " string is not terminated"));
    }
    if (end + 1 > budget)
        return fail(bad(base, "the strings of the entries add up to more than " +
                                  std::to_string(kMaxScanBytes) + " bytes"));
    budget -= end + 1;
    return rest.substr(0, end);
}

/// Where the new-format header starts: 0, or after the old table of a compat file.
Result<std::size_t> new_header_offset(std::string_view d) {
    if (d.starts_with(kMagicNew)) return std::size_t{0};
    if (!d.starts_with(kMagicOld)) return fail(bad(0, "not an ld.so.cache (no known magic)"));
    if (d.size() < kOldHeader) return fail(bad(d.size(), "old header cut short"));
    const auto nlibs = load<std::uint32_t>(d, 12);
    // nlibs * 12 cannot overflow a 64-bit size_t; the size check bounds it.
    const std::size_t old_end = kOldHeader + std::size_t{nlibs} * kOldEntry;
    if (old_end > d.size())
        return fail(bad(kOldHeader, std::to_string(nlibs) + " old entries do not fit"));
    const std::size_t aligned = (old_end + 7) & ~std::size_t{7};
    if (aligned + kMagicNew.size() > d.size() || d.substr(aligned, kMagicNew.size()) != kMagicNew)
        return fail(Errc::Unsupported,
                    "ld.so.cache: old format only (no glibc-ld.so.cache1.1 table)");
    return aligned;
}

}  // namespace

Result<std::vector<Entry>> parse(std::string_view data) {
    if (data.size() > kMaxCacheBytes)
        return fail(
            bad(kMaxCacheBytes, "larger than " + std::to_string(kMaxCacheBytes) + " bytes"));
    INJECT_TRY(const std::size_t base, new_header_offset(data));
    const std::string_view d = data.substr(base);  // offsets of the new table count from here
    if (d.size() < kNewHeader) return fail(bad(data.size(), "new header cut short"));
    const auto endian = load<std::uint8_t>(d, 28);
    const std::uint8_t ours =
        std::endian::native == std::endian::little ? kEndianLittle : kEndianBig;
    if (endian != kEndianUnset && endian != ours)
        return fail(Errc::Unsupported, "ld.so.cache: written for the other byte order (flag " +
                                           std::to_string(endian) + ")");
    const auto nlibs = load<std::uint32_t>(d, 20);
    const std::size_t entries_end = kNewHeader + std::size_t{nlibs} * kNewEntry;
    if (entries_end > d.size())
        return fail(bad(base + kNewHeader, std::to_string(nlibs) + " entries do not fit"));
    std::vector<Entry> out;
    out.reserve(nlibs);
    std::size_t budget = kMaxScanBytes;
    for (std::size_t i = 0; i < nlibs; ++i) {
        const std::size_t at = kNewHeader + i * kNewEntry;
        Entry e;
        e.flags = load<std::int32_t>(d, at);
        // Strings live after the entries; an offset into the header or entries is corrupt.
        const auto key = load<std::uint32_t>(d, at + 4);
        const auto value = load<std::uint32_t>(d, at + 8);
        if (key < entries_end || value < entries_end)
            return fail(
                bad(base + at, "entry " + std::to_string(i) + " points into the entry table"));
        INJECT_TRY(e.key, string_at(d, key, base + at, "key", budget));
        INJECT_TRY(e.value, string_at(d, value, base + at, "value", budget));
        e.hwcap = load<std::uint64_t>(d, at + 16);
        out.push_back(e);
    }
    return out;
}

bool native(std::int32_t flags) noexcept {
    // FLAG_ELF_LIBC6 (0x03) | the architecture's FLAG_*_LIB64 (glibc sysdeps/*/dl-cache.h).
#if defined(__x86_64__) && defined(__LP64__)
    return flags == 0x0303;
#elif defined(__aarch64__)
    return flags == 0x0a03;
#else
    (void)flags;
    return false;
#endif
}

std::vector<Entry> first_native_in(const std::vector<Entry>& entries,
                                   const std::vector<std::string>& folders) {
    // ld.so takes the first acceptable entry of a key. An entry with hwcap bits may win on
    // some CPUs and not on others: a key that has one is left out (not known to resolve).
    std::map<std::string_view, const Entry*> first;
    std::set<std::string_view> hwcap_keys;
    for (const auto& e : entries) {
        if (!native(e.flags)) continue;
        if (e.hwcap != 0) hwcap_keys.insert(e.key);
        first.emplace(e.key, &e);
    }
    std::vector<Entry> out;
    for (const auto& [key, e] : first) {
        if (hwcap_keys.count(key) != 0) continue;
        const auto slash = e->value.rfind('/');
        if (slash == std::string::npos) continue;
        const std::string_view folder = slash == 0 ? "/" : e->value.substr(0, slash);
        if (std::find(folders.begin(), folders.end(), folder) != folders.end()) out.push_back(*e);
    }
    return out;
}

}  // namespace inject::ldcache
