# shellcheck shell=bash
# lib-oci.sh: sourced by build-images.sh and build-node-exporter-image.sh, which pack a root
# filesystem into an OCI archive under $OUT (build/images/) the same way: `podman import` into a
# private storage there (the host's image store is not touched), `podman save --format
# oci-archive`, and a cache keyed by a content hash kept beside the archive (NAME.oci.tar,
# NAME.hash). Needs OUT set.

# oci_podman ARGS...: podman on the private storage under $OUT.
oci_podman() {
  podman --root "$OUT/.storage" --runroot "$OUT/.runroot" --storage-driver vfs "$@"
}

# oci_fresh ARCHIVE HASH: ARCHIVE exists and was packed from content HASH (a rerun may skip).
oci_fresh() {
  [ -f "$1" ] && [ "$(cat "${1%.oci.tar}.hash" 2>/dev/null)" = "$2" ]
}

# oci_pack [--arch ARCH] ROOTFS IMAGE ARCHIVE HASH CHANGE...: ROOTFS imported as the one layer
# of IMAGE (any older image of that name removed first), each CHANGE a Dockerfile instruction for
# `podman import --change`; saved as ARCHIVE (whole or not at all: written beside it, then
# renamed), and HASH recorded as what it was packed from. --arch names the image's architecture
# (OCI's: arm64) when it is not this host's.
oci_pack() {
  local platform=()
  if [ "$1" = --arch ]; then platform=(--os linux --arch "$2"); shift 2; fi
  local rootfs=$1 image=$2 archive=$3 hash=$4 changes=() c
  shift 4
  for c in "$@"; do changes+=(--change "$c"); done
  oci_podman rmi -f "$image" > /dev/null 2>&1 || true
  tar -C "$rootfs" -c . | oci_podman import "${platform[@]}" "${changes[@]}" - "$image" > /dev/null
  rm -f "$archive.tmp"
  oci_podman save --format oci-archive -o "$archive.tmp" "$image" > /dev/null
  mv "$archive.tmp" "$archive"
  echo "$hash" > "${archive%.oci.tar}.hash"
}
