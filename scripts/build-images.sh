#!/usr/bin/env bash
# build-images.sh: `make images`. One OCI image holding every daemon of the build in $BUILD_DIR
# (`make images` passes build/release: images carry the release build; the tests pass their own),
# entrypoint chosen per DaemonSet, named as `make print-images` says, labelled with that build's
# CMAKE_BUILD_TYPE, saved with `podman save --format oci-archive` as
# build/images/enflame-toolkit.oci.tar.
#
# Usage: build-images.sh [x86_64|arm64|index]   (the argument, else $ARCH, else x86_64)
#   arm64: the same image for arm64 nodes from the cross build (BUILD_DIR defaults to
#     build/release-arm64, HOST_BINARIES_DIR to build/static-arm64), as
#     build/images/enflame-toolkit-arm64.oci.tar, tagged <version>-arm64 in the private storage;
#     its libraries are found with readelf's DT_NEEDED (ldd cannot read arm64 binaries) and
#     mapped to Debian packages with the file index of build/arm64-sysroot-image
#     (scripts/arm64-sysroot.sh --image; ARM64_SYSROOT names another);
#   index: the two images in one OCI index (linux/amd64, linux/arm64) named as the manifests
#     name the image, build/images/enflame-toolkit.index.oci.tar (`make images ARCH=all`):
#     podman manifest create/add, then `podman manifest push --all` to an oci-archive.
#   - our files: `cmake --install --strip` of $BUILD_DIR into a staging folder;
#   - the host binaries the installer copies onto a node (the shim, the hook, enflame-ctk, static:
#     docs/host-binaries.md) from $HOST_BINARIES_DIR (`make host-binaries`: build/static), in
#     /usr/lib/enflame/host; the installer runs that enflame-ctk, which copies its own folder;
#   - their libraries: ldd of every installed binary, mapped to Debian 12 packages (dpkg -S),
#     unpacked with mmdebstrap --variant=extract (those packages and their dependencies, no
#     shell, no dpkg, no maintainer scripts), without docs, man pages or locales;
#   - podman import into a private storage under build/images/ (the host's image store is not
#     touched), with labels version and revision (scripts/lib-oci.sh, shared with
#     build-node-exporter-image.sh).
# Cached by a content hash of the staged files, the package list, this script and lib-oci.sh: a
# second run with nothing changed rebuilds nothing. Prints the archive's path and the image size.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib-oci.sh
. "$TOP/scripts/lib-oci.sh"
ARCH=${1:-${ARCH:-x86_64}}
case $ARCH in
  x86_64 | amd64) ARCH=x86_64 MA=x86_64-linux-gnu LOADER=ld-linux-x86-64.so.2 SUFFIX= ;;
  arm64 | aarch64) ARCH=arm64 MA=aarch64-linux-gnu LOADER=ld-linux-aarch64.so.1 SUFFIX=-arm64 ;;
  index) ;;
  *) echo "build-images: ARCH=$ARCH: x86_64, arm64 or index (make images ARCH=all builds both and the index)" >&2; exit 2 ;;
esac
if [ "$ARCH" = arm64 ]; then
  BUILD_DIR=${BUILD_DIR:-$TOP/build/release-arm64}
  HOST_BINARIES_DIR=${HOST_BINARIES_DIR:-$TOP/build/static-arm64}
  ARM64_SYSROOT=${ARM64_SYSROOT:-$TOP/build/arm64-sysroot-image}
else
  BUILD_DIR=${BUILD_DIR:-$TOP/build/release}
  HOST_BINARIES_DIR=${HOST_BINARIES_DIR:-$TOP/build/static}
fi
OUT=${IMAGES_DIR:-$TOP/build/images}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mapfile -t NAMES < <(make -s -C "$TOP" print-images)
VERSION=${NAMES[0]##*:}
REVISION=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
BUILD_TYPE=${BUILD_TYPE:-unknown}
# fully qualified, as containerd's CRI normalises the manifests' name: an archive imported with
# `ctr -n k8s.io images import` then holds the very image kubelet asks for (podman would name an
# unqualified one localhost/...)
FULL=docker.io/${NAMES[0]}
mkdir -p "$OUT"

# The index: both archives' images (loaded into the private storage if it lost them) in one
# manifest list, pushed with the images as an OCI index named $FULL; cached by the two images'
# content hashes.
if [ "$ARCH" = index ]; then
  INDEX=$OUT/enflame-toolkit.index.oci.tar
  list=localhost/enflame-toolkit-index:$VERSION
  hash=$( { for s in "" -arm64; do
              a=$OUT/enflame-toolkit$s.oci.tar
              [ -f "$a" ] || { echo "build-images: no $a: make images ARCH=all builds it" >&2; exit 1; }
              cat "${a%.oci.tar}.hash"; done; sha256sum "$0"; } | sha256sum | cut -c1-16)
  if oci_fresh "$INDEX" "$hash"; then echo "build-images: $INDEX is up to date (content hash $hash)"; exit 0; fi
  oci_podman manifest rm "$list" > /dev/null 2>&1 || true
  oci_podman manifest create "$list" > /dev/null
  for s in "" -arm64; do
    oci_podman image exists "$FULL$s" || oci_podman load -q -i "$OUT/enflame-toolkit$s.oci.tar" > /dev/null
    oci_podman manifest add "$list" "containers-storage:$FULL$s" > /dev/null
  done
  rm -f "$INDEX.tmp"
  oci_podman manifest push --quiet --all --format oci "$list" "oci-archive:$INDEX.tmp:$FULL" > /dev/null
  oci_podman manifest rm "$list" > /dev/null
  mv "$INDEX.tmp" "$INDEX"
  echo "$hash" > "${INDEX%.oci.tar}.hash"
  echo "build-images: $INDEX (linux/amd64 and linux/arm64 as $FULL; archive $(( $(stat -c %s "$INDEX") / 1000000 )) MB; content hash $hash)"
  exit 0
fi

ARCHIVE=$OUT/enflame-toolkit$SUFFIX.oci.tar
work=$(mktemp -d "$OUT/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

stage=$work/stage
DESTDIR=$stage cmake --install "$BUILD_DIR" --prefix /usr --strip > /dev/null
# only what the daemons run: binaries, the toolkit config; no docs, man pages, units, completion
rm -rf "${stage:?}/usr/share" "${stage:?}/usr/lib/systemd"
# the operator renders the stack from the same kustomize tree users apply (one source of truth)
mkdir -p "$stage/usr/share/enflame"
cp -r "$TOP/deployments" "$stage/usr/share/enflame/manifests"
[ -n "$(ls "$stage/usr/bin")" ] || { echo "build-images: nothing installed from $BUILD_DIR" >&2; exit 1; }
# the node's copies: static, so they run on any host; nothing in the image runs the dynamic shim
# or hook, so those are not shipped twice
host=$stage/usr/lib/enflame/host
mkdir -p "$host"
STRIP=$(sed -n 's/^CMAKE_STRIP:FILEPATH=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
STRIP=${STRIP:-strip}
for b in ctk/enflame-ctk runtime-shim/enflame-container-runtime hooks/enflame-container-runtime-hook; do
  f=$HOST_BINARIES_DIR/$b
  [ -x "$f" ] || { echo "build-images: no $f: make host-binaries builds it" >&2; exit 1; }
  if [[ $(readelf -lW "$f") == *INTERP* ]]; then
    echo "build-images: $f is not static (it names a loader): build it with make host-binaries" >&2; exit 1
  fi
  install -m 0755 -s --strip-program="$STRIP" "$f" "$host/"
done
rm -f "$stage/usr/bin/enflame-container-runtime" "$stage/usr/bin/enflame-container-runtime-hook"

# pkg_of LIB: the Debian package holding LIB (usrmerge: /lib and /usr/lib both tried).
pkg_of() {
  local p c
  for p in "$1" "$(realpath "$1")"; do
    for c in "$p" "${p#/usr}" "/usr$p"; do
      dpkg -S "$c" 2>/dev/null | sed -n 1p | cut -d: -f1 && return 0
    done
  done
  echo "build-images: no package holds $1" >&2
  return 1
}
# needed_of FILE: the sonames FILE names (DT_NEEDED); readelf reads any architecture's ELF.
needed_of() { readelf -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }
# arm64_pkg_of SONAME: the Debian package of the sysroot holding SONAME (its file index; usrmerge
# not done in the .debs: /lib and /usr/lib both tried).
arm64_pkg_of() {
  awk -F '\t' -v a="/lib/$MA/$1" -v b="/usr/lib/$MA/$1" '$2 == a || $2 == b { print $1; exit }' \
    "$ARM64_SYSROOT/.dpkg-files" | grep . || { echo "build-images: no package of $ARM64_SYSROOT holds $1" >&2; return 1; }
}
if [ "$ARCH" = arm64 ]; then
  [ -f "$ARM64_SYSROOT/.dpkg-files" ] ||
    { echo "build-images: no $ARM64_SYSROOT/.dpkg-files: scripts/arm64-sysroot.sh --image makes it" >&2; exit 1; }
  # the binaries' own sonames only: their packages' dependencies bring the rest
  libs=$(for b in "$stage"/usr/bin/*; do needed_of "$b"; done | sort -u)
  pkgs=$(for l in $libs; do arm64_pkg_of "$l"; done | sort -u)
else
  libs=$(for b in "$stage"/usr/bin/*; do ldd "$b" | awk '/=> \// {print $3}'; done | sort -u)
  pkgs=$(for l in $libs; do pkg_of "$l"; done | sort -u)
fi
# shellcheck disable=SC2086  # one word per package
pkgs=$(printf "%s\n" $pkgs libc6 | sort -u | tr '\n' ',' | sed 's/,$//')

hash=$( { (cd "$stage" && find . -type f -print0 | sort -z | xargs -0 sha256sum); echo "$pkgs";
          sha256sum "$0" "$TOP/scripts/lib-oci.sh"; echo "$REVISION $BUILD_TYPE"; } | sha256sum | cut -c1-16)
if oci_fresh "$ARCHIVE" "$hash"; then
  echo "build-images: $ARCHIVE is up to date (content hash $hash)"
  exit 0
fi

rootfs=$work/rootfs
echo "build-images: packages: $pkgs" >&2
arch_opt=()
[ "$ARCH" = x86_64 ] || arch_opt=(--arch="$ARCH")
mmdebstrap --quiet --variant=extract "${arch_opt[@]}" --include="$pkgs" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
  bookworm "$rootfs" "$MIRROR" >&2 ||
  { echo "build-images: mmdebstrap could not fetch Debian 12 packages from $MIRROR" >&2; exit 1; }
# extract does not honour path-exclude (no dpkg runs): drop what no daemon reads
rm -rf "$rootfs"/usr/share/{doc,man,locale,lintian,info,bug} "$rootfs"/var/cache/apt "$rootfs"/var/lib/apt/lists
# glibc's iconv modules (8 MB) and its helper programs: nothing here converts charsets or runs them
rm -rf "${rootfs:?}/usr/lib/$MA/gconv" "${rootfs:?}"/usr/bin/* "${rootfs:?}"/usr/sbin/* "${rootfs:?}"/usr/libexec
# in_root FILE: FILE of the rootfs with its links followed inside the rootfs (an absolute link
# names the rootfs' file, not this host's)
in_root() {
  local f=$1 t n=0
  while [ -L "$f" ] && [ $n -lt 20 ]; do
    t=$(readlink "$f"); n=$((n + 1))
    case $t in /*) f=$rootfs$t ;; *) f=$(dirname "$f")/$t ;; esac
  done
  echo "$f"
}
if [ "$ARCH" = arm64 ]; then
  # the closure ldd would give: DT_NEEDED followed through the rootfs' libraries
  todo=$libs seen=" "
  while [ -n "$todo" ]; do
    next=
    for l in $todo; do
      case $seen in *" $l "*) continue ;; esac
      seen="$seen$l "
      for d in "$rootfs/usr/lib/$MA" "$rootfs/lib/$MA"; do
        [ -e "$d/$l" ] || continue
        next="$next $(needed_of "$(in_root "$d/$l")" | tr '\n' ' ')"
        break
      done
    done
    todo=$next
  done
  libs=$(for l in $seen; do for d in "$rootfs/usr/lib/$MA" "$rootfs/lib/$MA"; do
           [ -e "$d/$l" ] && { echo "$d/$l"; break; }; done; done)
  [ -n "$libs" ] || { echo "build-images: none of the binaries' libraries is in the rootfs" >&2; exit 1; }
fi
# shared libraries outside the binaries' ldd closure (libgrpc++'s siblings, libprotoc, glibc's
# libmvec and friends, ...); the loader is no "=>" line of ldd's, so it is kept by name
keep=" $LOADER $(for l in $libs; do basename "$l"; basename "$(if [ "$ARCH" = arm64 ]; then in_root "$l"; else realpath "$l"; fi)"; done | tr '\n' ' ') "
for f in "$rootfs/usr/lib/$MA"/*.so* "$rootfs/usr/lib/$MA/engines-3" \
         "$rootfs/usr/lib/$MA/ossl-modules" "$rootfs/lib/$MA"/*.so*; do
  case $keep in *" $(basename "$f") "*) ;; *) rm -rf "$f" ;; esac
done
[ -z "${IMAGES_DU:-}" ] || du -ak "$rootfs" | sort -n | tail -n 25 >&2
cp -a "$stage"/. "$rootfs"/
mkdir -p "$rootfs"/{etc,tmp,run,var/run/cdi,host}
chmod 1777 "$rootfs/tmp"
# a non-root account for daemons that allow it (runAsUser: 65532); the default user stays root:
# the installer, device plugin and DRA plugin write the host's folders and sockets
printf 'root:x:0:0:root:/root:/nonexistent\nenflame:x:65532:65532:enflame:/nonexistent:/nonexistent\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nenflame:x:65532:\n' > "$rootfs/etc/group"

platform=()
[ "$ARCH" = x86_64 ] || platform=(--arch "$ARCH")
oci_pack "${platform[@]}" "$rootfs" "$FULL$SUFFIX" "$ARCHIVE" "$hash" \
  "LABEL org.opencontainers.image.title=enflame-container-toolkit" \
  "LABEL org.opencontainers.image.version=$VERSION" \
  "LABEL org.opencontainers.image.revision=$REVISION" \
  "LABEL io.enflame.content-hash=$hash" \
  "LABEL io.enflame.build-type=$BUILD_TYPE" \
  "ENTRYPOINT [\"/usr/bin/enflame-ctk\"]" \
  "CMD [\"--help\"]"
size=$(oci_podman image inspect --format '{{.Size}}' "$FULL$SUFFIX")
echo "build-images: $ARCHIVE ($ARCH, $BUILD_TYPE build, $(( size / 1000000 )) MB unpacked, archive $(( $(stat -c %s "$ARCHIVE") / 1000000 )) MB; content hash $hash)"
