#!/usr/bin/env bash
# build-images.sh: `make images`. One OCI image holding every daemon of the build in $BUILD_DIR
# (`make images` passes build/release: images carry the release build; the tests pass their own),
# entrypoint chosen per DaemonSet, named as `make print-images` says, labelled with that build's
# CMAKE_BUILD_TYPE, saved with `podman save --format oci-archive` as
# build/images/enflame-toolkit.oci.tar.
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
BUILD_DIR=${BUILD_DIR:-$TOP/build/release}
HOST_BINARIES_DIR=${HOST_BINARIES_DIR:-$TOP/build/static}
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
ARCHIVE=$OUT/enflame-toolkit.oci.tar
mkdir -p "$OUT"
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
for b in ctk/enflame-ctk runtime-shim/enflame-container-runtime hooks/enflame-container-runtime-hook; do
  f=$HOST_BINARIES_DIR/$b
  [ -x "$f" ] || { echo "build-images: no $f: make host-binaries builds it" >&2; exit 1; }
  if readelf -lW "$f" | grep -q INTERP; then
    echo "build-images: $f is not static (it names a loader): build it with make host-binaries" >&2; exit 1
  fi
  install -m 0755 -s "$f" "$host/"
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
libs=$(for b in "$stage"/usr/bin/*; do ldd "$b" | awk '/=> \// {print $3}'; done | sort -u)
pkgs=$(for l in $libs; do pkg_of "$l"; done | sort -u)
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
mmdebstrap --quiet --variant=extract --include="$pkgs" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
  bookworm "$rootfs" "$MIRROR" >&2 ||
  { echo "build-images: mmdebstrap could not fetch Debian 12 packages from $MIRROR" >&2; exit 1; }
# extract does not honour path-exclude (no dpkg runs): drop what no daemon reads
rm -rf "$rootfs"/usr/share/{doc,man,locale,lintian,info,bug} "$rootfs"/var/cache/apt "$rootfs"/var/lib/apt/lists
# glibc's iconv modules (8 MB) and its helper programs: nothing here converts charsets or runs them
rm -rf "${rootfs:?}"/usr/lib/x86_64-linux-gnu/gconv "${rootfs:?}"/usr/bin/* "${rootfs:?}"/usr/sbin/* "${rootfs:?}"/usr/libexec
# shared libraries outside the binaries' ldd closure (libgrpc++'s siblings, libprotoc, glibc's
# libmvec and friends, ...); the loader is no "=>" line of ldd's, so it is kept by name
keep=" ld-linux-x86-64.so.2 $(for l in $libs; do basename "$l"; basename "$(realpath "$l")"; done | tr '\n' ' ') "
for f in "$rootfs"/usr/lib/x86_64-linux-gnu/*.so* "$rootfs"/usr/lib/x86_64-linux-gnu/engines-3 \
         "$rootfs"/usr/lib/x86_64-linux-gnu/ossl-modules "$rootfs"/lib/x86_64-linux-gnu/*.so*; do
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

oci_pack "$rootfs" "$FULL" "$ARCHIVE" "$hash" \
  "LABEL org.opencontainers.image.title=enflame-container-toolkit" \
  "LABEL org.opencontainers.image.version=$VERSION" \
  "LABEL org.opencontainers.image.revision=$REVISION" \
  "LABEL io.enflame.content-hash=$hash" \
  "LABEL io.enflame.build-type=$BUILD_TYPE" \
  "ENTRYPOINT [\"/usr/bin/enflame-ctk\"]" \
  "CMD [\"--help\"]"
size=$(oci_podman image inspect --format '{{.Size}}' "$FULL")
echo "build-images: $ARCHIVE ($BUILD_TYPE build, $(( size / 1000000 )) MB unpacked, archive $(( $(stat -c %s "$ARCHIVE") / 1000000 )) MB; content hash $hash)"
