#!/usr/bin/env bash
# build-node-exporter-image.sh: `make node-exporter-image`. The system layer's exporter
# (deployments/node-exporter/) as an OCI image built as build-images.sh builds ours, offline from
# Debian 12 packages and no Dockerfile: Debian's prometheus-node-exporter and libc6 unpacked with
# mmdebstrap --variant=extract (no shell, no dpkg, no maintainer scripts), only the binary and its
# ldd closure kept, imported with podman into the private storage under build/images/, saved as
# build/images/node-exporter.oci.tar. Named as `make print-node-exporter-image` says (the
# toolkit version: the tag names our build of it; the label io.enflame.node-exporter-version
# names Debian's).
# Cached by the hash of this script, lib-oci.sh and the mirror: a second run rebuilds nothing.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib-oci.sh
. "$TOP/scripts/lib-oci.sh"
OUT=${IMAGES_DIR:-$TOP/build/images}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
NAME=$(make -s -C "$TOP" print-node-exporter-image)
FULL=docker.io/$NAME
ARCHIVE=$OUT/node-exporter.oci.tar
mkdir -p "$OUT"
hash=$( { sha256sum "$0" "$TOP/scripts/lib-oci.sh"; echo "$MIRROR $NAME"; } | sha256sum | cut -c1-16)
if oci_fresh "$ARCHIVE" "$hash"; then
  echo "build-node-exporter-image: $ARCHIVE is up to date (content hash $hash)"
  exit 0
fi
work=$(mktemp -d "$OUT/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

fetched=$work/fetched rootfs=$work/rootfs
mmdebstrap --quiet --variant=extract --include=prometheus-node-exporter,libc6 \
  bookworm "$fetched" "$MIRROR" >&2 ||
  { echo "build-node-exporter-image: mmdebstrap could not fetch Debian 12 packages from $MIRROR" >&2; exit 1; }
bin=usr/bin/prometheus-node-exporter
[ -x "$fetched/$bin" ] || { echo "build-node-exporter-image: no $bin in the package" >&2; exit 1; }
version=$("$fetched/$bin" --version 2>&1 | sed -n 's/^node_exporter, version \([^ ]*\).*/\1/p')
# the binary and the libraries it loads (libc and the loader; usrmerge: /lib -> usr/lib)
mkdir -p "$rootfs"/{usr/bin,etc,tmp} "$rootfs/usr/lib/x86_64-linux-gnu" "$rootfs/usr/lib64"
cp -a "$fetched/$bin" "$rootfs/$bin"
# in_fetched PATH: PATH's file inside the unpacked packages (not merged: /lib or /usr/lib), its
# symbolic links followed there, never on the host
in_fetched() {
  local p=$1 f t i
  for (( i = 0; i < 10; i++ )); do
    for f in "$fetched$p" "$fetched/usr${p#/usr}" "$fetched${p#/usr}"; do [ -e "$f" ] || [ -L "$f" ] && break; done
    [ -L "$f" ] || { echo "$f"; return 0; }
    t=$(readlink "$f")
    case $t in /*) p=$t ;; *) p=$(dirname "${f#"$fetched"}")/$t ;; esac
  done
  return 1
}
for lib in $(ldd "$fetched/$bin" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}'); do
  lib=${lib#/usr}
  src=$(in_fetched "$lib") || { echo "build-node-exporter-image: $lib is not in the packages" >&2; exit 1; }
  cp "$src" "$rootfs/usr$lib"
done
ln -s usr/lib "$rootfs/lib"
ln -s usr/lib64 "$rootfs/lib64"
chmod 1777 "$rootfs/tmp"
# nobody: the DaemonSet runs it as 65534
printf 'root:x:0:0:root:/root:/nonexistent\nnobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$rootfs/etc/group"

oci_pack "$rootfs" "$FULL" "$ARCHIVE" "$hash" \
  "LABEL org.opencontainers.image.title=prometheus-node-exporter" \
  "LABEL io.enflame.node-exporter-version=$version" \
  "LABEL io.enflame.content-hash=$hash" \
  "USER 65534:65534" \
  "ENTRYPOINT [\"/usr/bin/prometheus-node-exporter\"]"
size=$(oci_podman image inspect --format '{{.Size}}' "$FULL")
echo "build-node-exporter-image: $ARCHIVE (node_exporter $version, $(( size / 1000000 )) MB unpacked; content hash $hash)"
