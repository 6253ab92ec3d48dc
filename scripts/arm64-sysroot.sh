#!/usr/bin/env bash
# The arm64 sysroots the cross presets link against (cmake/aarch64-linux-gnu.cmake,
# docs/host-binaries.md): Debian 12's arm64 -dev packages, unpacked with mmdebstrap
# --variant=extract (no dpkg, no maintainer scripts: nothing arm64 runs, no qemu needed). The
# host's apt sources and dpkg architectures are not touched. Two of them:
#   - build/arm64-sysroot (static-arm64, the host binaries): what the static host binaries link
#     (the static archives of yaml-cpp, libseccomp, libcap, glibc; the header-only spdlog, fmt,
#     toml++, CLI11, nlohmann-json), 119 MB;
#   - build/arm64-sysroot-image (--image; release-arm64, the image's daemons): that and the
#     Kubernetes plane's libraries (gRPC, protobuf, prometheus-cpp, civetweb, libcurl, OpenSSL).
#     It also keeps, in .dpkg-files, which package put each file there ("PACKAGE<TAB>/path"):
#     scripts/build-images.sh ARCH=arm64 maps the daemons' DT_NEEDED libraries to Debian
#     packages with it (dpkg -S cannot: no dpkg database is written, and the host's is amd64).
# Kept apart so the host binaries' build stays small and its cache untouched by the image's.
#
# Cached: the folder holds the package list it was made from (.packages); a second run with
# the same list does nothing. A changed list, or a folder left half-made, is made again.
# Usage: scripts/arm64-sysroot.sh [--image] [DIR]
#   (DIR defaults to build/arm64-sysroot, or build/arm64-sysroot-image with --image)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
image=0
if [ "${1:-}" = --image ]; then image=1; shift; fi
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# What the static preset links (CMakeLists.txt's find_package/pkg_check_modules and
# runtime-shim's find_library of the .a files), with glibc's and libstdc++'s arm64 -dev beside
# them: the compiler, given --sysroot, takes crt*.o, libc.a and the C headers from here.
PKGS=(
  libc6-dev libstdc++-12-dev libgcc-12-dev linux-libc-dev
  libyaml-cpp-dev libseccomp-dev libcap-dev
  libspdlog-dev libfmt-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
)
# What k8s/ adds (k8s/CMakeLists.txt and its subfolders: pkg_check_modules grpc++ and protobuf,
# libcurl and libxxhash (enflame-epp's prefix cache); find_package prometheus-cpp, civetweb,
# OpenSSL). protoc and grpc_cpp_plugin are the host's (the same Debian versions), never run from
# here.
IMAGE_PKGS=(
  libgrpc++-dev libprotobuf-dev prometheus-cpp-dev libcivetweb-dev libcurl4-openssl-dev libssl-dev
  libxxhash-dev
)
if [ $image = 1 ]; then
  DIR=${1:-$TOP/build/arm64-sysroot-image}
  PKGS+=("${IMAGE_PKGS[@]}")
  want="${PKGS[*]} $MIRROR files-index"
else
  DIR=${1:-$TOP/build/arm64-sysroot}
  want="${PKGS[*]} $MIRROR"
fi

if [ -f "$DIR/.packages" ] && [ "$(cat "$DIR/.packages")" = "$want" ]; then exit 0; fi
command -v mmdebstrap > /dev/null || { echo "arm64-sysroot: needs mmdebstrap (scripts/install-deps.sh)" >&2; exit 1; }

part=$DIR.part
rm -rf "$part" "$DIR"
mkdir -p "$(dirname "$DIR")"
pkgs=$(IFS=,; echo "${PKGS[*]}")
hooks=()
# the .debs are still in the apt cache when the extract hook runs (removed afterwards): each
# one's file list, under its package name, as dpkg -S would answer
# shellcheck disable=SC2016  # expanded by mmdebstrap's hook shell
[ $image = 0 ] || hooks=(--extract-hook='for f in "$1"/var/cache/apt/archives/*.deb; do
    p=$(dpkg-deb -f "$f" Package)
    dpkg-deb -c "$f" | awk -v p="$p" "{ n = \$6; sub(/^\\./, \"\", n); if (n != \"/\" && \$1 !~ /^d/) print p \"\\t\" n }"
  done > "$1/.dpkg-files"')
echo "arm64-sysroot: unpacking $pkgs (bookworm arm64) into $DIR" >&2
mmdebstrap --quiet --variant=extract --arch=arm64 --include="$pkgs" "${hooks[@]}" bookworm "$part" "$MIRROR" >&2 ||
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
