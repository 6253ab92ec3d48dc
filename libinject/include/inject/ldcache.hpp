// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// Reading glibc's /etc/ld.so.cache, so the legacy hook can tell that a container's cache
/// already resolves the libraries it mounts and skip running ldconfig.
///
/// Format (glibc elf/cache.c, sysdeps/generic/dl-cache.h): ldconfig since glibc 2.32 (Debian
/// 12 ships 2.36) writes the "new" format only: a 48-byte header `glibc-ld.so.cache1.1`,
/// nlibs, len_strings, an endianness byte, extension_offset, then nlibs 24-byte entries
/// {int32 flags; uint32 key, value; uint32 osversion; uint64 hwcap} and the strings; key and
/// value are offsets from the start of that header. The older "compat" layout puts a
/// `ld.so-1.7.0` table (12-byte entries) in front and the new header after it, 8-aligned;
/// that one is read too. A file with only the old table is Unsupported: ld.so of glibc >= 2.32
/// on such an image is rare, and ldconfig then simply runs.
///
/// The parser trusts nothing in the file: every count, offset and string is bounds-checked
/// against the bytes given (a container image is untrusted input). Entries point into those
/// bytes (no copies: a crafted file whose many entries share one long string would otherwise
/// cost gigabytes), strings longer than kMaxStringBytes are refused, and the bytes scanned for
/// all entries' strings together are bounded by kMaxScanBytes.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inject/result.hpp"

namespace inject::ldcache {

/// The new-format magic and version.
inline constexpr std::string_view kMagicNew = "glibc-ld.so.cache1.1";
/// The old-format magic (compat files start with it).
inline constexpr std::string_view kMagicOld = "ld.so-1.7.0";
/// A cache larger than this is refused (a big distribution image has a few hundred KiB).
inline constexpr std::size_t kMaxCacheBytes = 16u << 20;

/// The longest key or value accepted (PATH_MAX less the NUL: no path ld.so opens is longer).
inline constexpr std::size_t kMaxStringBytes = 4095;
/// The most bytes parse() scans for the strings of all entries together (a real cache scans
/// about twice its size; a crafted one with many entries sharing long strings stops here).
inline constexpr std::size_t kMaxScanBytes = 4 * kMaxCacheBytes;

/// One entry: `key` is the soname ld.so looks up, `value` the path it then opens. Both point
/// into the bytes given to parse(), which must outlive the entry.
struct Entry {
    std::int32_t flags = 0;
    std::string_view key;
    std::string_view value;
    std::uint64_t hwcap = 0;
};

/// Parses the bytes of an ld.so.cache, entries in file order (ld.so's order of preference for
/// one key; they point into `data`). InvalidInput with the reason and byte offset for a
/// truncated or inconsistent file, a string longer than kMaxStringBytes or more than
/// kMaxScanBytes of strings in all; Unsupported for an old-format-only or other-endian file.
[[nodiscard]] Result<std::vector<Entry>> parse(std::string_view data);
/// The entries point into `data`: a temporary would leave them dangling, so it does not compile.
Result<std::vector<Entry>> parse(std::string&& data) = delete;

/// True when ld.so of this build would use an entry with these flags (libc6 of this
/// architecture: 0x0303 on x86-64, 0x0a03 on aarch64); false everywhere on other architectures.
[[nodiscard]] bool native(std::int32_t flags) noexcept;

/// For each key, its first native entry (what ld.so opens for that soname), kept when the
/// value's folder is one of `folders` (container paths). Keys with an hwcap entry (glibc-hwcaps
/// subfolders, chosen by CPU at run time) are left out: which one wins is not known here.
[[nodiscard]] std::vector<Entry> first_native_in(const std::vector<Entry>& entries,
                                                 const std::vector<std::string>& folders);

}  // namespace inject::ldcache
