#!/usr/bin/env bats
# enflame-ctk toolkit uninstall while containers created through the runtime still run (issue
# 37): the installer's preStop runs while `kubectl delete -k` deletes every pod at once, and a
# container created through enflame-container-runtime needs that binary until containerd has
# killed and deleted it. The simulated node and pod: installer.bash; containerd 1.7 with its CRI,
# driven as kubelet drives it (fake-cri).

load helpers
load installer
load cri
bats_require_minimum_version 1.5.0   # `run !`

setup() {
  installer_setup
  K=(ctr --address "$CD/ctrd/containerd.sock" -n k8s.io)
}
teardown() { teardown_scratch; }

# cri_node: the node's containerd config gets the CRI settings a test machine needs (the busybox
# image as sandbox image, as no registry is reachable; no CNI, the pods use the node's network),
# containerd started, the image (cri.bash) imported into k8s.io, and what ran removed at
# teardown (cleanup_tasks).
cri_node() {
  requires podman
  mkdir -p "$CD/cni/bin" "$CD/cni/conf" "$CD/pods"
  in_host sh -c "cat >> /etc/containerd/config.toml" <<TOML
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/dra-bb:latest"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CD/cni/bin"
    conf_dir = "$CD/cni/conf"
TOML
  in_host cat /etc/containerd/config.toml > "$CD/before.toml"
  cri_image_archive
  on_teardown cleanup_tasks
  start_containerd
  "${K[@]}" image import "$SCRATCH/bb.tar" >/dev/null
}

# cleanup_tasks: teardown of what ran through the runtime, pass or fail: the binary put back
# when a failing run left the toolkit folder without it, containerd started again when the test
# stopped there, every task of the test's namespace and of the CRI's killed and removed, and any
# shim of this containerd left over stopped.
cleanup_tasks() {
  [ -z "${FAKE_CRI_PID:-}" ] || stop_pid "$FAKE_CRI_PID"
  if ! in_host test -e "$TK/enflame-container-runtime"; then
    in_host mkdir -p "$TK" && in_host cp "$SHIM" "$TK/enflame-container-runtime"
  fi
  if [ -n "${CTRD_PID:-}" ] && gone "$CTRD_PID"; then start_containerd || return 0; fi
  remove_tasks "${C[@]}"
  remove_tasks "${K[@]}"
  # a shim containerd lost track of (it could not ask the runtime after a restart): its
  # containers and itself, by pid
  local shim child
  for shim in $(ps -eo pid=,args= | awk -v a="-address $CD/ctrd/containerd.sock" 'index($0, a) { print $1 }'); do
    for child in $(ps -o pid= --ppid "$shim"); do kill -KILL "$child" 2>/dev/null; done
    stop_pid "$shim"
  done
}

# remove_tasks CTR...: every task killed and every container removed, through the ctr CTR...
remove_tasks() {
  local id
  for id in $("$@" task ls -q 2>/dev/null); do "$@" task kill -s KILL "$id" >/dev/null 2>&1; done
  for id in $("$@" container ls -q 2>/dev/null); do
    "$@" task rm -f "$id" >/dev/null 2>&1
    "$@" container rm "$id" >/dev/null 2>&1
  done
}

# running N: N tasks of the CRI's namespace are running.
running() { [ "$("${K[@]}" task ls 2>/dev/null | grep -c RUNNING)" -eq "$1" ]; }

@test "containerd 1.7 (Debian 13) with its CRI: uninstall while a pod runs through the runtime keeps the binary; the pod is then stopped and removed as kubelet does; a second uninstall removes the binary" {
  cri_node
  local files_before; files_before=$(host_files)
  installed
  # a pod of RuntimeClass enflame (its sandbox and its container, both through the runtime),
  # deleted as kubelet deletes it once $CD/delete exists
  timeout 180 "$BUILD_DIR/k8s/tests/fake-cri" run --socket "$CD/ctrd/containerd.sock" \
    --image localhost/dra-bb:latest --log-dir "$CD/pods" --cgroup-parent "/$CD_NS" \
    --runtime-handler enflame --delete-when "$CD/delete" --timeout-ms 150000 -- /bin/sleep 100000 \
    > "$CD/fake-cri.log" 2>&1 &
  FAKE_CRI_PID=$!
  for _ in $(seq 300); do running 2 && break; sleep 0.1; done
  running 2
  local ids pids; ids=$("${K[@]}" task ls -q)
  pids=$("${K[@]}" task ls | awk 'NR > 1 { print $2 }')
  # the installer's preStop, while the pod still runs
  local ctrd=$CTRD_PID
  uninstall_tk
  [ "$status" -eq 0 ]
  local said=$output
  # containerd comes back without the runtime (as systemd restarts it) and still runs the pod
  wait_for gone "$ctrd"
  start_containerd
  wait_for running 2
  # kubelet deletes the pod: StopContainer, StopPodSandbox, RemovePodSandbox through containerd,
  # whose shim kills and deletes through the runtime binary
  touch "$CD/delete"
  local rc=0
  wait "$FAKE_CRI_PID" || rc=$?
  FAKE_CRI_PID=
  cat "$CD/fake-cri.log"
  [ "$rc" -eq 0 ]
  local pid
  for pid in $pids; do wait_for gone "$pid"; done
  [ -z "$("${K[@]}" task ls -q)" ]
  [ -z "$("${K[@]}" container ls -q)" ]
  # the uninstall named the kept binary and the two containers
  local id line
  line=$(grep -F "kept: $R$TK/enflame-container-runtime: 2 containers still run through it (" <<<"$said")
  for id in $ids; do [[ $line == *"${id:0:12}"* ]]; done
  [[ $line == *"the next 'enflame-ctk toolkit install' or 'uninstall' removes it once they are gone" ]]
  # everything else was undone at once: the engine's config, the CDI spec, the toolkit config,
  # the hook and enflame-ctk
  in_host cat /etc/containerd/config.toml | cmp - "$CD/before.toml"
  in_host test ! -e /run/cdi/enflame.com-gpu.yaml
  in_host test ! -e /etc/enflame-container-runtime/config.toml
  in_host test ! -e "$TK/enflame-ctk"
  in_host test ! -e "$TK/enflame-container-runtime-hook"
  in_host test ! -e "$TK/.install-state.json"
  # nothing holds it now: the next uninstall removes it, and nothing of ours is left
  uninstall_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "removed: $R$TK/enflame-container-runtime (no container runs through it any more)"
  [ "$(host_files)" = "$files_before" ]
  uninstall_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "nothing to undo"
}

@test "containerd 1.7 (Debian 13): a runtime binary kept for a running container is the next install's; its uninstall removes it" {
  on_teardown cleanup_tasks
  start_containerd
  local files_before; files_before=$(host_files)
  installed
  local id; id=$(unique_id kept)
  "${C[@]}" run -d --runtime io.containerd.runc.v2 --runc-binary "$TK/enflame-container-runtime" \
    --runc-root "$CD/ctrd/runc" --fifo-dir "$CD/ctrd/fifo" --rootfs "$CD/rootfs" "$id" /bin/sleep 100000
  uninstall_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "kept: $R$TK/enflame-container-runtime: 1 container still runs through it ($id)"
  wait_for gone "$CTRD_PID"
  start_containerd
  # still held: a second uninstall keeps it again
  uninstall_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "kept: $R$TK/enflame-container-runtime: 1 container still runs through it ($id)"
  in_host test -x "$TK/enflame-container-runtime"
  installed
  in_host test ! -e "$TK/.kept-runtime.json"
  "${C[@]}" task kill -s KILL "$id"
  for _ in $(seq 100); do "${C[@]}" task ls | grep -q "$id.*STOPPED" && break; sleep 0.1; done
  "${C[@]}" task rm "$id"
  "${C[@]}" container rm "$id"
  local ctrd=$CTRD_PID
  uninstall_tk
  [ "$status" -eq 0 ]
  refute_grep -F kept
  wait_for gone "$ctrd"
  [ "$(host_files)" = "$files_before" ]
}
