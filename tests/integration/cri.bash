# containerd 1.7 through the CRI, as kubelet starts a pod's container: shared by the daemons'
# bats files (load cri, after helpers). CDI specs are read from $CDIR, which the caller sets.

# cri_setup: containerd 1.7 (Debian 13's, unpacked by scripts/fetch-trixie.sh into the build
# folder) with the CRI plugin, enable_cdi and cdi_spec_dirs = [$CDIR], every folder under
# $SCRATCH; it runs in a private mount namespace whose /run is a tmpfs (containerd's fixed
# /run/containerd paths stay there). The busybox image (CMD sleep, also the sandbox image, as no
# registry is reachable) is built with podman and imported into containerd's k8s.io namespace.
# Pods get the cgroup parent $CRI_CG, removed at teardown. Besides runc (the default runtime, as
# a node's containerd keeps it), the runtime handler `enflame` runs our shim, as the installer
# registers it (RuntimeClass enflame); the shim reads $ENFLAME_CTK_CONFIG, which containerd passes on.
cri_setup() {
  requires podman unshare
  [ -x /bin/busybox ] || skip_or_fail "needs /bin/busybox"
  local tr=$BUILD_DIR/trixie/usr/bin
  if [ ! -x "$tr/containerd" ]; then
    "$TOP/scripts/fetch-trixie.sh" "$BUILD_DIR/trixie" containerd > "$SCRATCH/fetch.log" 2>&1 ||
      skip_or_fail "containerd 1.7 from Debian 13: $(tail -n 1 "$SCRATCH/fetch.log")"
  fi
  CTR=("$tr/ctr" --address "$SCRATCH/ctrd/containerd.sock" -n k8s.io)
  busybox_rootfs "$SCRATCH/rootfs"
  cri_image_archive
  mkdir -p "$SCRATCH/ctrd" "$SCRATCH/pods"
  cat > "$SCRATCH/ctrd/config.toml" <<TOML
version = 2
root = "$SCRATCH/ctrd/root"
state = "$SCRATCH/ctrd/state"
[grpc]
  address = "$SCRATCH/ctrd/containerd.sock"
[ttrpc]
  address = "$SCRATCH/ctrd/containerd.sock.ttrpc"
# (default /opt/containerd, which containerd creates on the host)
[plugins."io.containerd.internal.v1.opt"]
  path = "$SCRATCH/ctrd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/dra-bb:latest"
  enable_cdi = true
  cdi_spec_dirs = ["$CDIR"]
  # the sandbox's oom_score_adj -998 needs CAP_SYS_RESOURCE, which this machine's bounding set lacks
  restrict_oom_score_adj = true
  # naming one runtime replaces containerd's default table: runc is named too
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.enflame]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.enflame.options]
      BinaryName = "$SHIM"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$SCRATCH/cni/bin"
    conf_dir = "$SCRATCH/cni/conf"
TOML
  cri_start
  CRI_CG=/ectk-dra-$$-$RANDOM
  on_teardown cri_teardown
  wait_for ctr_up
  [ -d "$SCRATCH/ctrd/opt" ]   # containerd's opt folder is ours, not the host's /opt/containerd
  "${CTR[@]}" image import "$SCRATCH/bb.tar" >/dev/null
}
# cri_image_archive: the busybox rootfs in $SCRATCH/rootfs as the image localhost/dra-bb:latest
# (CMD sleep), built with podman (its storage removed at teardown) and saved as an OCI archive,
# $SCRATCH/bb.tar, for `ctr image import`.
cri_image_archive() {
  tar -C "$SCRATCH/rootfs" -cf "$SCRATCH/rootfs.tar" .
  podman_conf "$SCRATCH/containers.conf"
  local pm=(podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --tmpdir "$SCRATCH/pm/tmp" --storage-driver vfs)
  CONTAINERS_CONF=$SCRATCH/containers.conf "${pm[@]}" import -q --change 'CMD ["/bin/sleep", "100000"]' \
    "$SCRATCH/rootfs.tar" localhost/dra-bb:latest >/dev/null
  on_teardown 'CONTAINERS_CONF=$SCRATCH/containers.conf podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --storage-driver vfs rmi -af >/dev/null 2>&1'
  CONTAINERS_CONF=$SCRATCH/containers.conf "${pm[@]}" save -q --format oci-archive -o "$SCRATCH/bb.tar" localhost/dra-bb:latest
}
ctr_up() { "${CTR[@]}" version >/dev/null 2>&1; }
# cri_image_with_env NAME K=V: the busybox image again as NAME with ENV K=V in its config (what
# an image's Dockerfile ENV sets), imported into containerd (after cri_setup).
cri_image_with_env() {
  local pm=(podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --tmpdir "$SCRATCH/pm/tmp" --storage-driver vfs)
  CONTAINERS_CONF=$SCRATCH/containers.conf "${pm[@]}" import -q --change "ENV $2" \
    --change 'CMD ["/bin/sleep", "100000"]' "$SCRATCH/rootfs.tar" "$1" >/dev/null
  CONTAINERS_CONF=$SCRATCH/containers.conf "${pm[@]}" save -q --format oci-archive -o "$SCRATCH/env-image.tar" "$1"
  "${CTR[@]}" image import "$SCRATCH/env-image.tar" >/dev/null
}
# cri_start: containerd on $SCRATCH/ctrd/config.toml in its private mount namespace ($CTRD_PID).
cri_start() {
  # shellcheck disable=SC2016  # expands in the namespace's shell
  setsid unshare --mount --propagation private /bin/sh -c \
    'mount -t tmpfs -o mode=755 tmpfs /run || exit 125; PATH=$1:$PATH exec containerd --config "$2"' \
    ctrd "$BUILD_DIR/trixie/usr/bin" "$SCRATCH/ctrd/config.toml" >> "$SCRATCH/ctrd/containerd.log" 2>&1 < /dev/null &
  CTRD_PID=$!
}
# cri_restart: containerd stopped by PID and started again on the same (possibly edited) config.
cri_restart() {
  stop_pid "$CTRD_PID"
  cri_start
  wait_for ctr_up
}
cri_teardown() {
  local id h
  for id in $("${CTR[@]}" task ls -q 2>/dev/null); do "${CTR[@]}" task kill -s KILL "$id" >/dev/null 2>&1; done
  for id in $("${CTR[@]}" container ls -q 2>/dev/null); do
    "${CTR[@]}" task rm -f "$id" >/dev/null 2>&1
    "${CTR[@]}" container rm "$id" >/dev/null 2>&1
  done
  stop_pid "$CTRD_PID"
  for h in /sys/fs/cgroup/*/; do
    if [ -d "$h${CRI_CG#/}" ]; then find "$h${CRI_CG#/}" -depth -type d -exec rmdir {} \; 2>/dev/null; fi
  done
}
# in_cri_pod [--cdi-device ID]... [--env K=V]... [--runtime-handler H] -- CMD...: a pod's
# container (image $CRI_IMAGE, default localhost/dra-bb:latest) through containerd's CRI, as
# kubelet starts it (fake-cri: RunPodSandbox,
# CreateContainer with CDI_devices and envs, StartContainer).
in_cri_pod() {
  timeout 120 "$BUILD_DIR/k8s/tests/fake-cri" run --socket "$SCRATCH/ctrd/containerd.sock" \
    --image "${CRI_IMAGE:-localhost/dra-bb:latest}" --log-dir "$SCRATCH/pods" --cgroup-parent "$CRI_CG" "$@"
}
