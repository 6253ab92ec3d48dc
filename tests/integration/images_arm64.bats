#!/usr/bin/env bats
# The arm64 image and the two-architecture OCI index (`make images ARCH=all`,
# scripts/build-images.sh arm64 and index; docs/host-binaries.md, "In the image"). This file
# builds nothing: the cross build and the image take minutes, so it reads what `make images
# ARCH=all` left in build/images (IMAGES_DIR names another folder) and skips, with one line
# saying so, when the arm64 image is not there (`make test` does not build it; under CI too).
# The arm64 image's layers are unpacked into a scratch root and its binaries run there by
# qemu-aarch64-static -L ROOT (binfmt_misc need not be registered): the loader and every
# library they load are the image's, as on an arm64 node.

load helpers
bats_require_minimum_version 1.5.0

IMAGES=${IMAGES_DIR:-$TOP/build/images}
ARM=$IMAGES/enflame-toolkit-arm64.oci.tar
INDEX=$IMAGES/enflame-toolkit.index.oci.tar
QEMU=/usr/bin/qemu-aarch64-static
HOST_BINS=(enflame-ctk enflame-container-runtime enflame-container-runtime-hook)

# oci_unpack ARCHIVE DIR: ARCHIVE's blobs and index.json into DIR.
oci_unpack() { mkdir -p "$2" && tar -C "$2" -xf "$1"; }
# blob DIR DIGEST: the path of DIGEST's blob in an unpacked layout.
blob() { echo "$1/blobs/${2%%:*}/${2#*:}"; }

setup_file() {
  if [ ! -f "$ARM" ]; then
    export FILE_SKIP_REASON="no $ARM: make images ARCH=all builds it (the cross build takes minutes; make test does not)"
    return 0
  fi
  command -v jq > /dev/null || return 0
  FILE_DIR=$(mktemp -d /tmp/ectk-img-arm64.XXXXXX)
  export FILE_DIR
  local o=$FILE_DIR/oci r=$FILE_DIR/root m l
  oci_unpack "$ARM" "$o"
  m=$(blob "$o" "$(jq -r '.manifests[0].digest' "$o/index.json")")
  cp "$(blob "$o" "$(jq -r '.config.digest' "$m")")" "$FILE_DIR/config.json"
  mkdir -p "$r"
  # the layers in order (one: podman import); tar reads gzip or zstd ones by their magic
  for l in $(jq -r '.layers[].digest' "$m"); do tar -C "$r" -xf "$(blob "$o" "$l")"; done
  rm -rf "$o"
}

teardown_file() {
  [ -z "${FILE_DIR:-}" ] || rm -rf --one-file-system "$FILE_DIR"
}

setup() {
  [ -z "${FILE_SKIP_REASON:-}" ] || skip "$FILE_SKIP_REASON"
  requires jq file readelf qemu-aarch64-static
  [ -d "${FILE_DIR:-}/root" ] || { echo "setup_file did not unpack $ARM"; return 1; }
  R=$FILE_DIR/root
  setup_scratch
}

teardown() { teardown_scratch; }

@test "the index names linux/amd64 and linux/arm64 under the manifests' image name, each pointing at its architecture's image" {
  [ -f "$INDEX" ] || skip "no $INDEX: make images ARCH=all builds it"
  local o=$SCRATCH/index top d p c
  oci_unpack "$INDEX" "$o"
  cat "$o/index.json"
  # one entry, the index, named as kubelet and containerd name the image
  run jq -r '.manifests | length' "$o/index.json"
  [ "$output" = 1 ]
  run jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$o/index.json"
  [ "$output" = "docker.io/$(make -s -C "$TOP" print-images | head -n 1)" ]
  run jq -r '.manifests[0].mediaType' "$o/index.json"
  [ "$output" = application/vnd.oci.image.index.v1+json ]
  top=$(blob "$o" "$(jq -r '.manifests[0].digest' "$o/index.json")")
  cat "$top"
  run jq -r '[.manifests[].platform | .os + "/" + .architecture] | sort | join(" ")' "$top"
  [ "$output" = "linux/amd64 linux/arm64" ]
  # every image is in the archive, and its config says the platform the index gives it
  for d in $(jq -r '.manifests[].digest' "$top"); do
    p=$(jq -r --arg d "$d" '.manifests[] | select(.digest == $d) | .platform.architecture' "$top")
    c=$(blob "$o" "$(jq -r '.config.digest' "$(blob "$o" "$d")")")
    [ "$(jq -r '.os + "/" + .architecture' "$c")" = "linux/$p" ]
    for l in $(jq -r '.layers[].digest' "$(blob "$o" "$d")"); do [ -f "$(blob "$o" "$l")" ]; done
  done
  # a client asking for either platform gets that image under the one name (as containerd on an
  # arm64 or x86_64 node does): podman pull --arch from the archive, into a scratch storage
  requires podman
  PM=(podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --storage-driver vfs)
  local a
  on_teardown "pm_cleanup"
  for a in arm64 amd64; do
    run -0 "${PM[@]}" pull -q --arch "$a" "oci-archive:$INDEX"
    run -0 "${PM[@]}" image inspect --format '{{.Os}}/{{.Architecture}}' "docker.io/$(make -s -C "$TOP" print-images | head -n 1)"
    [ "$output" = "linux/$a" ]
  done
}

@test "the arm64 image is linux/arm64, labelled as the x86_64 one, and every ELF file in it is AArch64" {
  run jq -r '.os + "/" + .architecture' "$FILE_DIR/config.json"
  [ "$output" = linux/arm64 ]
  run jq -r '.config.Labels["org.opencontainers.image.version"] + " " + .config.Labels["io.enflame.build-type"]' "$FILE_DIR/config.json"
  [ "$output" = "$(make -s -C "$TOP" print-images | head -n 1 | cut -d: -f2) Release" ]
  run jq -r '.config.Entrypoint | join(" ")' "$FILE_DIR/config.json"
  [ "$output" = /usr/bin/enflame-ctk ]
  local f n=0
  while IFS= read -r -d '' f; do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
    n=$((n + 1))
    readelf -h "$f" | grep -qE '^ +Machine: +AArch64$' || { echo "not AArch64: ${f#"$R"}: $(file -b "$f")"; return 1; }
  done < <(find "$R" -type f -print0)
  echo "$n ELF files, all AArch64"
  [ "$n" -gt 10 ]
  for f in "$R"/usr/bin/enflame-*; do
    run -0 file -b "$f"
    echo "${f#"$R"}: $output"
    [[ $output == *"ARM aarch64"* ]]
    [[ $output == *"interpreter /lib/ld-linux-aarch64.so.1"* ]]
  done
  [ -e "$R/lib/ld-linux-aarch64.so.1" ]
  # no shell, as in the x86_64 image
  [ ! -e "$R/bin/sh" ] && [ ! -e "$R/usr/bin/sh" ]
}

@test "every daemon of the arm64 image answers --version under qemu-aarch64-static, with the image's loader and libraries alone" {
  # the daemons the image is built from: the Makefile's IMAGE_TARGETS, less the shim and hook
  # (nothing in the image runs them; their static copies are the node's, the next test)
  local targets t b path
  targets=$(make -s -n -C "$TOP" images ARCH=arm64 | sed -n 's/.*cmake --build --preset release-arm64 --target //p')
  [ -n "$targets" ]
  for t in $targets; do
    case $t in enflame-container-runtime | enflame-container-runtime-hook) continue ;; esac
    [ -x "$R/usr/bin/$t" ] || { echo "not in the image: /usr/bin/$t"; return 1; }
  done
  for b in "$R"/usr/bin/enflame-*; do
    b=${b##*/}
    run "$QEMU" -L "$R" "$R/usr/bin/$b" --version
    echo "$b: $output"
    [ "$status" -eq 0 ]
    [[ $output == "$b "* ]]
  done
  # the libraries come from the root: with one of them gone the loader says so
  local lib; lib=$(cd "$R/usr/lib/aarch64-linux-gnu" && ls libgrpc++.so.1.* | head -n 1)
  mv "$R/usr/lib/aarch64-linux-gnu/$lib" "$SCRATCH/"
  on_teardown "mv '$SCRATCH/$lib' '$R/usr/lib/aarch64-linux-gnu/'"
  run -127 "$QEMU" -L "$R" "$R/usr/bin/enflame-device-plugin" --version
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"libgrpc++.so"* ]]
}

@test "/usr/lib/enflame/host holds the arm64 static three, and each runs under qemu-aarch64-static" {
  local b f
  for b in "${HOST_BINS[@]}"; do
    f=$R/usr/lib/enflame/host/$b
    run -0 file -b "$f"
    echo "$b: $output"
    [[ $output == *"ARM aarch64"* ]]
    [[ $output == *"static-pie linked"* ]]
    run -0 readelf -lW "$f"
    refute_grep -F INTERP
    # no root given: nothing but the binary is read
    run "$QEMU" "$f" --version
    echo "$output"
    [[ $output == "$b "* ]]
    # the runtime goes on to ask runc for its version, which is not there
    [ "$b" = enflame-container-runtime ] || [ "$status" -eq 0 ]
  done
  run ls "$R/usr/lib/enflame/host"
  [ "$(echo "$output" | sort | tr '\n' ' ')" = "$(printf '%s\n' "${HOST_BINS[@]}" | sort | tr '\n' ' ')" ]
  # and the image's /usr/bin carries no dynamic shim or hook
  [ ! -e "$R/usr/bin/enflame-container-runtime" ] && [ ! -e "$R/usr/bin/enflame-container-runtime-hook" ]
}
