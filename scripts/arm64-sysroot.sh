#!/usr/bin/env bash
# The arm64 sysroot the static-arm64 preset links against (cmake/aarch64-linux-gnu.cmake,
# docs/host-binaries.md): Debian 12's arm64 -dev packages of what the static host binaries
# link (the static archives of yaml-cpp, libseccomp, libcap, glibc; the header-only spdlog,
# fmt, toml++, CLI11, nlohmann-json), unpacked with mmdebstrap --variant=extract into
# build/arm64-sysroot (no dpkg, no maintainer scripts: nothing arm64 runs, no qemu needed).
# The host's apt sources and dpkg architectures are not touched.
#
# Cached: the folder holds the package list it was made from (.packages); a second run with
# the same list does nothing. A changed list, or a folder left half-made, is made again.
# Usage: scripts/arm64-sysroot.sh [DIR]   (DIR defaults to build/arm64-sysroot)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$TOP/build/arm64-sysroot}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# What the static preset links (CMakeLists.txt's find_package/pkg_check_modules and
# runtime-shim's find_library of the .a files), with glibc's and libstdc++'s arm64 -dev beside
# them: the compiler, given --sysroot, takes crt*.o, libc.a and the C headers from here.
PKGS=(
  libc6-dev libstdc++-12-dev libgcc-12-dev linux-libc-dev
  libyaml-cpp-dev libseccomp-dev libcap-dev
  libspdlog-dev libfmt-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
)
want="${PKGS[*]} $MIRROR"

if [ -f "$DIR/.packages" ] && [ "$(cat "$DIR/.packages")" = "$want" ]; then exit 0; fi
command -v mmdebstrap > /dev/null || { echo "arm64-sysroot: needs mmdebstrap (scripts/install-deps.sh)" >&2; exit 1; }

part=$DIR.part
rm -rf "$part" "$DIR"
mkdir -p "$(dirname "$DIR")"
pkgs=$(IFS=,; echo "${PKGS[*]}")
echo "arm64-sysroot: unpacking $pkgs (bookworm arm64) into $DIR" >&2
mmdebstrap --quiet --variant=extract --arch=arm64 --include="$pkgs" bookworm "$part" "$MIRROR" >&2 ||
  { rm -rf "$part"; echo "arm64-sysroot: mmdebstrap could not fetch Debian 12's arm64 packages from $MIRROR" >&2; exit 1; }
# what no compile or link reads
rm -rf "$part"/usr/share/{doc,man,locale,lintian,info,bug} "$part"/var/cache/apt "$part"/var/lib/apt/lists
# The -dev packages' .so links are absolute (/lib/aarch64-linux-gnu/...): inside the sysroot
# they would name this host's files. Made relative, so find_library and the linker stay here.
while IFS= read -r -d '' l; do
  t=$(readlink "$l")
  case $t in /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$part$t")" "$l" ;; esac
done < <(find "$part" -type l -print0)
echo "$want" > "$part/.packages"
mv "$part" "$DIR"
