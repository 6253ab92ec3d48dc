#!/usr/bin/env bats
# make images (scripts/build-images.sh): the one image every DaemonSet runs. Built once into
# $BUILD_DIR/images (the script skips the build when the content hash of what goes in is
# unchanged), loaded into a private podman storage, and run: every entrypoint answers
# --version, and a daemon does its work with the simulated host mounted in.

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
  export IMAGES=$BUILD_DIR/images
  IMG_LOG=$(mktemp /tmp/ectk-img.XXXXXX)
  export IMG_LOG
  [ "$(id -u)" -eq 0 ] || return 0
  command -v podman >/dev/null && command -v mmdebstrap >/dev/null || return 0
  BUILD_DIR=$BUILD_DIR IMAGES_DIR=$IMAGES "$TOP/scripts/build-images.sh" > "$IMG_LOG" 2>&1 || return 0
}

teardown_file() { rm -f "$IMG_LOG"; }

setup() {
  requires root podman mmdebstrap
  setup_scratch
  [ -f "$IMAGES/enflame-toolkit.oci.tar" ] || skip_or_fail "make images failed: $(tail -n 1 "$IMG_LOG")"
  podman_conf "$SCRATCH/containers.conf"
  export CONTAINERS_CONF=$SCRATCH/containers.conf
  PM=(podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --tmpdir "$SCRATCH/pm/tmp" --storage-driver vfs)
  on_teardown "pm_cleanup"
  "${PM[@]}" load -q -i "$IMAGES/enflame-toolkit.oci.tar" > /dev/null
  mapfile -t NAMES < <(make -s -C "$TOP" print-images)
  IMG=${NAMES[0]}
}

teardown() { teardown_scratch; }

@test "make images: the image the manifests use, labels version and revision, under 70 MB, no shell; a second run reuses it" {
  cat "$IMG_LOG"
  local n
  for n in "${NAMES[@]}"; do "${PM[@]}" image exists "$n"; done
  run "${PM[@]}" image inspect --format '{{index .Labels "org.opencontainers.image.version"}} {{index .Labels "org.opencontainers.image.revision"}}' "$IMG"
  [ "$status" -eq 0 ]
  [ "$output" = "${IMG##*:} $(git -C "$TOP" rev-parse --short HEAD)" ]
  # it says which build it carries: the one in $BUILD_DIR (make images: build/release)
  run "${PM[@]}" image inspect --format '{{index .Labels "io.enflame.build-type"}}' "$IMG"
  [ "$output" = "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")" ]
  run "${PM[@]}" image inspect --format '{{.Size}}' "$IMG"
  echo "image size: $output bytes"
  [ "$output" -lt 70000000 ]   # 11 MB of it the static host binaries, 2 MB the DRS manager
  run ! "${PM[@]}" run --rm --entrypoint /bin/sh "$IMG" -c true
  # nothing changed: the archive is not rebuilt
  local before; before=$(stat -c %Y "$IMAGES/enflame-toolkit.oci.tar")
  run env BUILD_DIR="$BUILD_DIR" IMAGES_DIR="$IMAGES" "$TOP/scripts/build-images.sh"
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "is up to date"
  [ "$(stat -c %Y "$IMAGES/enflame-toolkit.oci.tar")" = "$before" ]
}

@test "make images packs the release build whatever PRESET is, building only the targets the image installs" {
  run make -s -n -C "$TOP" PRESET=dev images
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "cmake --build --preset release --target "
  echo "$output" | grep -F "BUILD_DIR=$TOP/build/release scripts/build-images.sh"
  refute_grep -F "build/dev"
  # every binary `cmake --install` puts in the image is built first (install fails otherwise)
  local t targets
  targets=$(grep -rhoE --include=CMakeLists.txt --exclude-dir=build 'install\(TARGETS [a-z0-9-]+' "$TOP" | cut -d' ' -f2)
  [ -n "$targets" ]
  for t in $targets; do
    echo "$output" | grep -E -- "--target( [a-z0-9-]+)* $t( |$)"
  done
}

@test "every daemon in the image answers --version under podman (its libraries are all there)" {
  local bins b
  bins=$(cd "$BUILD_DIR" && find . -maxdepth 3 -type f -perm -u+x -name 'enflame-*' ! -name 'enflame-sim-*' -printf '%f\n' | sort -u)
  [ -n "$bins" ]
  for b in $bins; do
    local path=/usr/bin/$b
    # the node's copies live apart (the next test); the image runs neither
    case $b in enflame-container-runtime | enflame-container-runtime-hook) path=/usr/lib/enflame/host/$b ;; esac
    run "${PM[@]}" run --rm --entrypoint "$path" "$IMG" --version
    echo "$b: $output"
    [[ $output == "$b "* ]]
    # the runtime (copied to hosts, never run in the image) goes on to ask runc, which is not there
    [ "$b" = enflame-container-runtime ] || [ "$status" -eq 0 ]
  done
}

@test "the installer, run from the image as its DaemonSet runs it, puts exactly the image's static host binaries on the node" {
  local host=$SCRATCH/node tk=$SCRATCH/node/usr/local/enflame/toolkit m b
  mkdir -p "$host"/{proc,etc,tmp,usr/bin}
  install -m 755 /dev/null "$host/usr/bin/dockerd"   # the engine it finds (never run: restart-mode none)
  sim_example 2 > "$SCRATCH/desc.yaml"
  "$SIM_HOST" build --desc "$SCRATCH/desc.yaml" --root "$host/sim" > /dev/null
  local cmd; cmd=$(python3 -c 'import sys,yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o and o["kind"] == "DaemonSet": print(o["spec"]["template"]["spec"]["containers"][0]["command"][0])' \
    "$TOP/deployments/installer/daemonset.yaml")
  [ "$cmd" = /usr/lib/enflame/host/enflame-ctk ]
  # /proc as a node's root has it: the installer runs the copied enflame-ctk chrooted there
  run "${PM[@]}" run --rm -v "$host:/host" -v /proc:/host/proc --entrypoint "$cmd" "$IMG" \
    toolkit install --host-root=/host --runtime=docker --restart-mode=none --driver-root=/sim --dev-root=/sim
  echo "$output"
  [ "$status" -eq 0 ]
  grep -F 'enflame.com/gpu' "$host/var/run/cdi/enflame.com-gpu.yaml"
  m=$("${PM[@]}" image mount "$IMG")
  on_teardown "'${PM[0]}' ${PM[*]:1} image unmount '$IMG' >/dev/null 2>&1"
  for b in enflame-ctk enflame-container-runtime enflame-container-runtime-hook; do
    cmp "$m/usr/lib/enflame/host/$b" "$tk/$b"
    run readelf -lW "$tk/$b"
    [ "$status" -eq 0 ]
    refute_grep -F INTERP    # no loader: nothing of the host's but its kernel
  done
}

@test "the labeler in the image labels the simulated host mounted at /host" {
  sim_example 3 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" > /dev/null
  mkdir -p "$SCRATCH/etc" "$SCRATCH/out"
  write_config "$SCRATCH/etc/config.toml" /host
  run "${PM[@]}" run --rm --privileged -v "$SCRATCH/host:/host:ro" -v "$SCRATCH/etc:/etc/enflame-container-runtime:ro" \
    -v "$SCRATCH/out:/out" --entrypoint /usr/bin/enflame-feature-discovery "$IMG" --oneshot --no-timestamp --output /out/enflame
  echo "$output"
  [ "$status" -eq 0 ]
  run cat "$SCRATCH/out/enflame"
  echo "$output"
  echo "$output" | grep -Fx "enflame.com/gpu.present=true"
  echo "$output" | grep -Fx "enflame.com/gpu.count=3"
}

@test "an air-gapped node: ctr -n k8s.io images import gives the very name kubelet asks for, and it runs" {
  requires containerd ctr unshare
  local c=$SCRATCH/ctrd
  mkdir -p "$c"
  printf '%s\n' 'version = 2' "root = \"$c/root\"" "state = \"$c/state\"" \
    'disabled_plugins = ["io.containerd.grpc.v1.cri"]' '[grpc]' "  address = \"$c/sock\"" \
    '[plugins."io.containerd.internal.v1.opt"]' "  path = \"$c/opt\"" > "$c/config.toml"
  setsid "${PRIVATE_RUN[@]}" containerd --config "$c/config.toml" > "$c/log" 2>&1 < /dev/null &
  local pid=$!
  on_teardown "stop_pid $pid"
  # its own namespace (a node's is k8s.io): the cgroups ctr run makes are /<namespace>/<id>
  local ns=ectk-img-$$-$RANDOM
  on_teardown "for h in /sys/fs/cgroup/*/$ns; do [ ! -d \"\$h\" ] || find \"\$h\" -depth -type d -exec rmdir {} \\; 2>/dev/null; done"
  local C=(ctr --address "$c/sock" -n "$ns")
  wait_for "${C[@]}" version
  run "${C[@]}" images import "$IMAGES/enflame-toolkit.oci.tar"
  echo "$output"
  [ "$status" -eq 0 ]
  # kubelet (CRI) normalises the manifests' enflame-container-toolkit/... to docker.io/...
  run "${C[@]}" images ls -q
  echo "$output" | grep -Fx "docker.io/$IMG"
  run timeout 60 "${C[@]}" run --rm --runc-root "$c/runc" --fifo-dir "$c/fifo" "docker.io/$IMG" "img-$$-$RANDOM" /usr/bin/enflame-ctk --version
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == "enflame-ctk ${IMG##*:} "* ]]
}
