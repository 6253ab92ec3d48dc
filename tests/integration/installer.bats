#!/usr/bin/env bats
# enflame-ctk toolkit install|uninstall|status: what the installer DaemonSet runs, against real
# containerd 1.6 (and 1.7 from Debian 13, unpacked by scripts/fetch-trixie.sh and bind-mounted
# over the node's containerd). The "host" is a private mount namespace held open by a sleep (HOLDER_PID):
# /run and /usr/local are empty tmpfs there, /etc an overlay whose writes land in that /run,
# and the whole of it is bind-mounted again at /mnt/host, the way the DaemonSet mounts the
# node's root. That root has the links of a merged-/usr Debian (`/var/run` -> `/run`, `/lib` ->
# `usr/lib`, ...). The installer runs as the DaemonSet's container does (in_pod): chrooted into a
# pod root of its own, whose /run is not the node's, with the node's root at /mnt/host, and with
# --host-root /mnt/host --cdi-dir=/var/run/cdi. containerd runs in the node's namespace on
# /etc/containerd/config.toml and is restarted by the test (standing in for systemd) after the
# installer stops it. Nothing reaches the real /etc, /run or /usr/local.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

R=/mnt/host
TK=/usr/local/enflame/toolkit
NRI_PLUGIN=$BUILD_DIR/k8s/nri/enflame-nri-plugin

setup() {
  requires root containerd ctr runc unshare nsenter
  setup_scratch
  CD=$SCRATCH
  CD_NS=ectk-inst-$$-$RANDOM
  sim_example 2 > "$CD/desc.yaml"
  sim_host "$CD/desc.yaml" "$CD/host" >/dev/null
  busybox_rootfs "$CD/rootfs"
  mkdir -p "$CD/ctrd" "$CD/src"
  # what the image holds: the three binaries side by side
  cp "$CTK" "$SHIM" "$HOOK" "$CD/src/"
  CTRD_BIN=
  if [[ $BATS_TEST_DESCRIPTION == "containerd 1.7"* ]]; then
    if [ ! -x "$BUILD_DIR/trixie/usr/bin/containerd" ]; then
      "$TOP/scripts/fetch-trixie.sh" "$BUILD_DIR/trixie" containerd > "$CD/fetch.log" 2>&1 ||
        skip_or_fail "containerd 1.7 from Debian 13: $(tail -n 1 "$CD/fetch.log")"
    fi
    CTRD_BIN=$BUILD_DIR/trixie/usr/bin
  fi
  start_host
  make_pod_root
  in_host mkdir -p /etc/containerd
  in_host sh -c "cat > /etc/containerd/config.toml" <<TOML
version = 2
root = "$CD/ctrd/root"
state = "$CD/ctrd/state"
[grpc]
  address = "$CD/ctrd/containerd.sock"
[ttrpc]
  address = "$CD/ctrd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CD/ctrd/opt"
TOML
  in_host cat /etc/containerd/config.toml > "$CD/before.toml"
  on_teardown "cleanup_cgroups"
  on_teardown 'stop_containerd'
  C=(ctr --address "$CD/ctrd/containerd.sock" -n "$CD_NS")
}

teardown() { teardown_scratch; }

# start_host: the simulated node, a mount namespace held open by a sleep (HOLDER_PID). With
# CTRD_BIN set (a folder holding another containerd and its runc shim), those are bind-mounted
# over the host's /usr/bin/containerd and containerd-shim-runc-v2 first: the node then runs that
# containerd, and the installer (chrooted into /mnt/host) checks its config with it.
start_host() {
  # shellcheck disable=SC2016  # expands in the namespace's shell
  setsid unshare --mount --propagation private /bin/sh -c '
    if [ -n "$1" ]; then
      mount --bind "$1/containerd" /usr/bin/containerd &&
        mount --bind "$1/containerd-shim-runc-v2" /usr/bin/containerd-shim-runc-v2 || exit 125
    fi
    mount -t tmpfs -o mode=755 tmpfs /run || exit 125
    mkdir /run/.etc /run/.etc-work &&
      mount -t overlay overlay -o lowerdir=/etc,upperdir=/run/.etc,workdir=/run/.etc-work /etc || exit 125
    # dockerd'"'"'s own containerd makes /opt/containerd: its writes stay here too
    mkdir /run/.opt /run/.opt-work &&
      mount -t overlay overlay -o lowerdir=/opt,upperdir=/run/.opt,workdir=/run/.opt-work /opt || exit 125
    mount -t tmpfs -o mode=755 tmpfs /usr/local || exit 125
    mount -t tmpfs -o mode=755 tmpfs /mnt || exit 125
    mkdir /mnt/host && mount --rbind / /mnt/host || exit 125
    touch /run/.ready
    exec sleep 100000' holder "${CTRD_BIN:-}" > "$CD/holder.log" 2>&1 < /dev/null &
  HOLDER_PID=$!
  on_teardown "stop_pid $HOLDER_PID"
  wait_for in_host test -e /run/.ready
}

# in_host CMD...: run CMD in the simulated host's mount namespace.
in_host() { nsenter -t "$HOLDER_PID" -m -- "$@"; }

# make_pod_root: the installer container's own root, $CD/pod: /usr, /proc and /dev are the
# node's (bound in by in_pod), /etc holds only the loader's cache, /run is its own empty folder,
# and the node's /mnt (with the host root at /mnt/host) is bound in at /mnt.
make_pod_root() {
  local p=$CD/pod l
  mkdir -p "$p"/{usr,proc,dev,etc,run,tmp,mnt} "$p$CD/src"
  for l in bin lib lib64 sbin; do ln -s "usr/$l" "$p/$l"; done
  cp /etc/ld.so.cache "$p/etc/"
}

# in_pod CMD...: run CMD as the installer DaemonSet's container does: in a mount namespace of its
# own (below the node's), chrooted into $CD/pod. Its /run is not the node's /run.
in_pod() {
  # shellcheck disable=SC2016  # expands in the namespace's shell
  nsenter -t "$HOLDER_PID" -m -- unshare --mount --propagation private /bin/sh -c '
    p=$1 src=$2; shift 2
    mount --rbind /usr "$p/usr" && mount -o remount,bind,ro "$p/usr" &&
      mount --rbind /proc "$p/proc" && mount --rbind /dev "$p/dev" &&
      mount --rbind /mnt "$p/mnt" && mount --bind "$src" "$p$src" || exit 125
    exec chroot "$p" "$@"' pod "$CD/pod" "$CD/src" "$@"
}

start_containerd() {
  setsid nsenter -t "$HOLDER_PID" -m -- containerd --config /etc/containerd/config.toml \
    >> "$CD/ctrd/containerd.log" 2>&1 < /dev/null &
  CTRD_PID=$!
  for _ in $(seq 80); do
    "${C[@]}" version >/dev/null 2>&1 && return 0
    kill -0 "$CTRD_PID" 2>/dev/null || break
    sleep 0.25
  done
  echo "containerd did not start: $(log_errors "$CD/ctrd/containerd.log")"
  return 1
}

stop_containerd() {
  [ -n "${CTRD_PID:-}" ] || return 0
  local id
  for id in $("${C[@]}" task ls -q 2>/dev/null); do "${C[@]}" task kill -s KILL "$id" >/dev/null 2>&1; done
  stop_pid "$CTRD_PID"
  CTRD_PID=
}

cleanup_cgroups() {
  local h
  for h in /sys/fs/cgroup/*/; do
    if [ -d "$h$CD_NS" ]; then find "$h$CD_NS" -depth -type d -exec rmdir {} \; 2>/dev/null; fi
  done
}

# gone PID: true once PID has exited (or is a zombie).
gone() { case $(ps -o stat= -p "$1") in ''|Z*) return 0 ;; esac; return 1; }

# install_tk [ARGS]: install as the shipped DaemonSet does (--cdi-dir=/var/run/cdi), from the pod.
install_tk() {
  run in_pod "$CD/src/enflame-ctk" toolkit install --host-root "$R" --engine-socket "$CD/ctrd/containerd.sock" \
    --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host" "$@"
  echo "$output"
}

uninstall_tk() {
  run in_pod "$CD/src/enflame-ctk" toolkit uninstall --host-root "$R" --engine-socket "$CD/ctrd/containerd.sock" "$@"
  echo "$output"
}

status_tk() { run in_pod "$CD/src/enflame-ctk" toolkit status --host-root "$R"; }

# host_files: a checksum line for every file the installer may touch, and each folder's name.
host_files() {
  in_host sh -c 'find /etc/containerd /etc/enflame-container-runtime /run/cdi /usr/local 2>/dev/null | sort |
    while read -r f; do if [ -f "$f" ]; then sha256sum "$f"; else echo "$f"; fi; done'
}

# installed [ARG...]: `toolkit install ARG...` succeeds and stops containerd; the test starts it
# again, as systemd would.
installed() {
  install_tk "$@"
  [ "$status" -eq 0 ]
  wait_for gone "$CTRD_PID"
  start_containerd
}

# install_gets_card: install stops containerd once (the test starts it again, as systemd
# would); it comes back with our runtime, the copies and the CDI spec are in place, status is
# ready, and a container started through containerd with that runtime gets the card it asks for.
install_gets_card() {
  start_containerd
  local first=$CTRD_PID
  install_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: containerd (pid $first) with SIGTERM (its service manager restarts it)"
  wait_for gone "$first"
  start_containerd
  run in_host containerd --config /etc/containerd/config.toml config dump
  [ "$status" -eq 0 ]
  # the merged config's CRI runtime `enflame` runs our copy through runc's shim
  run python3 -c 'import sys, tomllib
r = tomllib.loads(sys.stdin.read())["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["enflame"]
print(r["runtime_type"], r["options"]["BinaryName"])' <<<"$output"
  [ "$output" = "io.containerd.runc.v2 $TK/enflame-container-runtime" ]
  # the copies are the binaries we ship
  in_host cmp "$TK/enflame-container-runtime" "$SHIM"
  in_host cmp "$TK/enflame-ctk" "$CTK"
  in_host cmp "$TK/enflame-container-runtime-hook" "$HOOK"
  # the CDI spec names host paths and the copied enflame-ctk as its hook
  run in_host cat /run/cdi/enflame.com-gpu.yaml
  echo "$output" | grep -F "hostPath: $CD/host/dev/gcu1"
  echo "$output" | grep -F "path: $TK/enflame-ctk"
  refute_grep -F "$R/"
  status_tk
  [ "$status" -eq 0 ]
  # the toolkit config it writes gives no card through an unprivileged container's env
  in_host grep -Fx 'accept-envvar-when-unprivileged = false' /etc/enflame-container-runtime/config.toml
  ctr_via_runtime --env ENFLAME_VISIBLE_DEVICES=all
  [ "$status" -eq 0 ]
  refute_grep -E '^gcu[0-9]'
  # a container started through containerd with the runtime it now names, given card 1 the way
  # kubelet passes a device plugin's answer (a container annotation, which a pod cannot set)
  ctr_via_runtime --annotation cdi.k8s.io/enflame-device-plugin_1=enflame.com/gpu=1
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx gcu1
  echo "$output" | grep -Fx gcuctl
  refute_grep -Fx gcu0
}

# ctr_via_runtime ARGS...: `ctr run` of a busybox container through the installed runtime with
# ARGS (--env, --annotation, --privileged), listing its /dev; output in $output.
ctr_via_runtime() {
  local id; id=$(unique_id inst)
  run timeout 120 "${C[@]}" run --rm --runtime io.containerd.runc.v2 --runc-binary "$TK/enflame-container-runtime" \
    --runc-root "$CD/ctrd/runc" --fifo-dir "$CD/ctrd/fifo" "$@" \
    --rootfs "$CD/rootfs" "$id" /bin/sh -c 'ls /dev'
  echo "$output"
}

# uninstall_restores: uninstall stops containerd once more; its config is byte-identical to
# before the install, no file of ours is left, and containerd comes back without the runtime.
uninstall_restores() {
  local second=$CTRD_PID
  uninstall_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: containerd (pid $second) with SIGTERM (its service manager restarts it)"
  in_host cat /etc/containerd/config.toml | cmp - "$CD/before.toml"
  [ "$(host_files)" = "$1" ]
  wait_for gone "$second"
  start_containerd
  run in_host containerd --config /etc/containerd/config.toml config dump
  [ "$status" -eq 0 ]
  refute_grep -F enflame
}

@test "install: containerd is stopped once, comes back with our runtime, and a container through it gets a card" {
  # the host root has a merged-/usr Debian's links, and the pod's /run is not the host's: an
  # installer that resolved /var/run/cdi from the pod would look into the pod's /run
  [ "$(in_host readlink "$R/var/run")" = /run ]
  [ "$(in_host readlink "$R/lib")" = usr/lib ]
  [ "$(in_host readlink "$R/bin")" = usr/bin ]
  [ "$(in_host readlink "$R/sbin")" = usr/sbin ]
  [ "$(in_host readlink "$R/lib64")" = usr/lib64 ]
  in_host test -e /run/.ready
  run ! in_pod test -e /run/.ready
  install_gets_card

}

@test "accept-envvar-when-unprivileged: false unless asked; the flag (or its env) sets it, an administrator's edit survives a re-install, an older installer's true does not" {
  local cfg=/etc/enflame-container-runtime/config.toml
  start_containerd
  installed
  in_host grep -Fx 'accept-envvar-when-unprivileged = false' "$cfg"
  # the administrator trusts every tenant and turns it on: a re-install (the DaemonSet's restart,
  # the waiting installer's repair) keeps it
  in_host sed -i 's/^accept-envvar-when-unprivileged = false$/accept-envvar-when-unprivileged = true/' "$cfg"
  install_tk
  [ "$status" -eq 0 ]
  in_host grep -Fx 'accept-envvar-when-unprivileged = true' "$cfg"
  # an unprivileged container's env now gives its card, as the administrator chose
  kill -0 "$CTRD_PID"
  ctr_via_runtime --env ENFLAME_VISIBLE_DEVICES=1
  echo "$output" | grep -Fx gcu1
  # the flag, or ACCEPT_ENVVAR_WHEN_UNPRIVILEGED as the DaemonSet sets it, wins
  install_tk --accept-envvar-when-unprivileged=false
  [ "$status" -eq 0 ]
  in_host grep -Fx 'accept-envvar-when-unprivileged = false' "$cfg"
  run in_pod env ACCEPT_ENVVAR_WHEN_UNPRIVILEGED=true "$CD/src/enflame-ctk" toolkit install --host-root "$R" \
    --engine-socket "$CD/ctrd/containerd.sock" --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host"
  [ "$status" -eq 0 ]
  in_host grep -Fx 'accept-envvar-when-unprivileged = true' "$cfg"
  install_tk --accept-envvar-when-unprivileged=yes
  [ "$status" -ne 0 ]
  [[ $output == *"--accept-envvar-when-unprivileged: yes not in {true,false}"* || $output == *"--accept-envvar-when-unprivileged"*"yes"* ]]
  # a config an older installer wrote (true, and no record of it in the state) is not an
  # administrator's choice: the upgrade writes false
  in_host python3 -c 'import json, sys; p = sys.argv[1]; s = json.load(open(p)); s.pop("accept_envvar_written"); json.dump(s, open(p, "w"))' \
    "$TK/.install-state.json"
  install_tk
  [ "$status" -eq 0 ]
  in_host grep -Fx 'accept-envvar-when-unprivileged = false' "$cfg"
}

@test "install twice: the second changes no file and does not touch containerd" {
  start_containerd
  installed
  local files; files=$(host_files)
  install_tk
  [ "$status" -eq 0 ]
  refute_grep -E "^(signalled|updated|installed): /"
  refute_grep -F "signalled"
  echo "$output" | grep -F "unchanged: $R$TK/enflame-ctk"
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
}

@test "uninstall: containerd's config byte-identical to before, nothing of ours left, containerd without the runtime" {
  local files_before; files_before=$(host_files)
  start_containerd
  installed
  uninstall_restores "$files_before"
  # uninstall again: nothing to undo, still fine
  uninstall_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "nothing to undo"
  run ! in_pod "$CD/src/enflame-ctk" toolkit status --host-root "$R"
}

@test "bad input: an engine that is not installed, a read-only host folder, a config containerd refuses: one line, nothing left" {
  local files_before; files_before=$(host_files)
  # CRI-O is not on this host (a host that has it is not this test's)
  if in_host test -e /usr/bin/crio; then skip_or_fail "this host has crio"; fi
  install_tk --runtime crio
  [ "$status" -ne 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [ "$output" = "error: --runtime crio: crio is not installed under '$R' (no usr/bin, usr/local/bin, usr/sbin or bin/crio)" ]
  [ "$(host_files)" = "$files_before" ]
  # containerd's folder read-only: binaries, toolkit config and CDI spec were written first,
  # and are all gone again
  in_host mkdir /etc/containerd/conf.d
  files_before=$(host_files)
  in_host sh -c "mount --bind $R/etc/containerd $R/etc/containerd && mount -o remount,bind,ro $R/etc/containerd"
  install_tk
  [ "$status" -ne 0 ]
  echo "$output" | tail -n 1 | grep -E "^error: .*'/etc/containerd/conf.d/99-enflame.toml'.*Read-only file system"
  [ "$(host_files)" = "$files_before" ]
  in_host umount "$R/etc/containerd"
  # a config containerd refuses (a key of the wrong type): the change is rolled back byte for byte
  in_host sed -i '1a oom_score = "high"' /etc/containerd/config.toml
  files_before=$(host_files)
  install_tk
  [ "$status" -ne 0 ]
  echo "$output" | tail -n 1 | grep -E "^error: rolled back: containerd rejects '/etc/containerd/config.toml' with our runtime: .*Can't convert high\(string\) to int"
  [ "$(host_files)" = "$files_before" ]
}

@test "containerd 1.7 (Debian 13) as the node's engine: install, a container gets its card, uninstall restores the config" {
  run in_host containerd --version
  [[ $output == *" 1.7."* ]]
  local files_before; files_before=$(host_files)
  install_gets_card
  uninstall_restores "$files_before"
}

# nri_dump: "disable disable_connections socket_path" of the NRI plugin in containerd's merged config.
nri_dump() {
  in_host containerd --config /etc/containerd/config.toml config dump | python3 -c 'import sys, tomllib
n = tomllib.loads(sys.stdin.read())["plugins"]["io.containerd.nri.v1.nri"]
print(n["disable"], n["disable_connections"], n["socket_path"])'
}

@test "containerd 1.7 (Debian 13) with --enable-nri: NRI on after one restart, enflame-nri-plugin registers; again: untouched; without it: off; uninstall: byte-identical" {
  [ -x "$NRI_PLUGIN" ] || skip_or_fail "no $NRI_PLUGIN (build enflame-nri-plugin)"
  local files_before; files_before=$(host_files)
  start_containerd
  [ "$(nri_dump)" = "True False /var/run/nri/nri.sock" ]   # 1.7 ships it off
  local first=$CTRD_PID
  # the DaemonSet's way: ENABLE_NRI in the environment
  run in_pod env ENABLE_NRI=true "$CD/src/enflame-ctk" toolkit install --host-root "$R" \
    --engine-socket "$CD/ctrd/containerd.sock" --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: containerd (pid $first) with SIGTERM (its service manager restarts it)"
  echo "$output" | grep -F "installed: enflame runtime for containerd, NRI on"
  # the main config gains only its imports line; the drop-in holds NRI
  in_host grep -Fx '[plugins."io.containerd.nri.v1.nri"]' /etc/containerd/conf.d/99-enflame.toml
  [ "$(in_host diff "$CD/before.toml" /etc/containerd/config.toml | grep -c '^[<>]')" = 1 ]
  wait_for gone "$first"
  start_containerd
  [ "$(nri_dump)" = "False False /var/run/nri/nri.sock" ]
  wait_for in_host test -S /var/run/nri/nri.sock || { grep -i -E "nri|cri" "$CD/ctrd/containerd.log" | tail -n 20; false; }
  # the plugin connects on the socket containerd now makes (in the node's namespace)
  setsid nsenter -t "$HOLDER_PID" -m -- "$NRI_PLUGIN" --retry-interval 0.2 > "$CD/nri.log" 2>&1 < /dev/null &
  local nri=$!
  on_teardown "stop_pid $nri"
  wait_for grep -q 'registered as 10-enflame-gcu' "$CD/nri.log"
  grep -F "configured by containerd" "$CD/nri.log"
  status_tk
  [ "$status" -eq 0 ]
  # again, same choice: no file changes, containerd untouched
  local files; files=$(host_files)
  install_tk --enable-nri
  [ "$status" -eq 0 ]
  refute_grep -F "signalled"
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
  # re-installed without it: NRI off again, one more restart
  local second=$CTRD_PID
  install_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: containerd (pid $second) with SIGTERM (its service manager restarts it)"
  wait_for gone "$second"
  start_containerd
  [ "$(nri_dump)" = "True False /var/run/nri/nri.sock" ]
  run ! in_host grep -F nri /etc/containerd/conf.d/99-enflame.toml
  installed --enable-nri
  uninstall_restores "$files_before"
  [ "$(nri_dump)" = "True False /var/run/nri/nri.sock" ]
}

@test "status (the readiness probe): ready only while every piece is in place; install puts a removed piece back" {
  # containerd is not running: install says so and signals nothing
  install_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "note: containerd is not running (nothing answers on '$R$CD/ctrd/containerd.sock')"
  refute_grep -F "signalled"
  status_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "installed: containerd uses $TK/enflame-container-runtime"
  in_host rm /etc/containerd/conf.d/99-enflame.toml
  status_tk
  [ "$status" -ne 0 ]
  [ "$output" = "error: '$R/etc/containerd/conf.d/99-enflame.toml' lacks the enflame runtime" ]
  install_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "updated: $R/etc/containerd/conf.d/99-enflame.toml"
  status_tk
  [ "$status" -eq 0 ]
  in_host rm "$TK/enflame-container-runtime-hook"
  status_tk
  [ "$status" -ne 0 ]
  [ "$output" = "error: missing: enflame-container-runtime-hook" ]
}

@test "--wait re-checks: containerd's config rewritten by someone else is repaired and containerd signalled once; unchanged, nothing is touched; after the preStop's uninstall, nothing is repaired" {
  start_containerd
  local first=$CTRD_PID
  # the DaemonSet's main process, re-checking every second
  in_pod "$CD/src/enflame-ctk" toolkit install --host-root "$R" --engine-socket "$CD/ctrd/containerd.sock" \
    --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host" --wait --recheck-interval 1 \
    > "$CD/wait.log" 2>&1 &
  # $! is the subshell running in_pod; the installer is its child (nsenter, unshare, sh and
  # chroot each exec the next): stop that one, or it outlives the test holding bats' output
  local sub=$! inst=""
  on_teardown "stop_pid $sub"
  for _ in $(seq 100); do
    inst=$(pgrep -P "$sub" | head -n 1) || true
    if [ -n "$inst" ]; then break; fi
    sleep 0.1
  done
  [ -n "$inst" ]
  on_teardown "stop_pid $inst"
  wait_for gone "$first"
  start_containerd
  local files; files=$(host_files)
  # nothing changed: over 3 s of re-checks no file is written and containerd is left alone
  sleep 3
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
  run ! grep -F drift "$CD/wait.log"
  # a config manager writes containerd's config back as it knows it (without our import)
  local second=$CTRD_PID
  in_host sh -c "cat > /etc/containerd/config.toml" < "$CD/before.toml"
  wait_for gone "$second"
  cat "$CD/wait.log"
  grep -F "drift: '$R/etc/containerd/config.toml' lacks the enflame runtime: installing again" "$CD/wait.log"
  [ "$(grep -c "^signalled: containerd" "$CD/wait.log")" -eq 2 ]
  start_containerd
  [ "$(host_files)" = "$files" ]
  status_tk
  [ "$status" -eq 0 ]
  # repaired once: containerd left alone from then on
  sleep 3
  kill -0 "$CTRD_PID"
  [ "$(grep -c "^signalled: containerd" "$CD/wait.log")" -eq 2 ]
  # the pod's preStop uninstalls while this process still waits (SIGTERM comes after it): the
  # re-check finds nothing installed and repairs nothing, the config stays as it was before
  local third=$CTRD_PID
  run -0 in_pod "$CD/src/enflame-ctk" toolkit uninstall --host-root "$R" --engine-socket "$CD/ctrd/containerd.sock"
  wait_for gone "$third"
  start_containerd
  sleep 3
  kill -0 "$CTRD_PID"
  [ "$(grep -c drift "$CD/wait.log")" -eq 1 ]
  [ "$(grep -c "^signalled: containerd" "$CD/wait.log")" -eq 2 ]
  in_host cat /etc/containerd/config.toml | cmp - "$CD/before.toml"
  status_tk
  [ "$status" -ne 0 ]
  # SIGTERM ends the wait
  kill -TERM "$inst"
  wait_for gone "$inst"
}

@test "handover (the operator replaces the pod, same flags): status not ready, uninstall undoes nothing and leaves containerd running; without the mark it uninstalls" {
  start_containerd
  installed
  local files; files=$(host_files)
  # the pod's annotations as a downward API volume writes them, in the pod's own root
  printf 'enflame.com/pod-template-hash="0123"\nenflame.com/toolkit-handover="true"' > "$CD/pod/tmp/annotations"
  run in_pod "$CD/src/enflame-ctk" toolkit status --host-root "$R" --handover-file /tmp/annotations
  [ "$status" -ne 0 ]
  [ "$output" = "error: handing over to a new installer (enflame.com/toolkit-handover)" ]
  uninstall_tk --handover-file /tmp/annotations
  [ "$status" -eq 0 ]
  refute_grep -F "signalled"
  echo "$output" | grep -F "handing over: "
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
  # the new pod's install: no file changed, containerd not touched
  install_tk
  [ "$status" -eq 0 ]
  refute_grep -F "signalled"
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
  # another value, or no mark: the usual uninstall
  printf 'enflame.com/toolkit-handover="false"\n' > "$CD/pod/tmp/annotations"
  run in_pod "$CD/src/enflame-ctk" toolkit status --host-root "$R" --handover-file /tmp/annotations
  [ "$status" -eq 0 ]
  uninstall_tk --handover-file /tmp/annotations
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: containerd (pid $CTRD_PID) with SIGTERM (its service manager restarts it)"
  in_host cat /etc/containerd/config.toml | cmp - "$CD/before.toml"
}

@test "docker as the node's engine: install reloads dockerd (SIGHUP), docker run --runtime=enflame gets a card; uninstall restores daemon.json" {
  requires dockerd /usr/bin/docker
  local d=$CD/docker cg=ectk-inst-$$-$BATS_TEST_NUMBER
  mkdir -p "$d"
  in_host mkdir -p /etc/docker
  # a dockerd of its own: private roots and socket, no iptables or bridge, its own cgroup parent
  python3 -c 'import json, sys
d, cg = sys.argv[1:]
print(json.dumps({"data-root": d + "/root", "exec-root": d + "/exec", "pidfile": d + "/dockerd.pid",
                  "hosts": ["unix://" + d + "/docker.sock"], "storage-driver": "overlay2",
                  "iptables": False, "ip6tables": False, "ip-forward": False, "ip-masq": False,
                  "bridge": "none", "cgroup-parent": cg}, indent=4))' "$d" "$cg" |
    in_host sh -c "cat > /etc/docker/daemon.json"
  in_host cat /etc/docker/daemon.json > "$d/before.json"
  on_teardown "for h in /sys/fs/cgroup/*/$cg; do [ ! -d \"\$h\" ] || find \"\$h\" -depth -type d -exec rmdir {} \\; 2>/dev/null; done"
  setsid nsenter -t "$HOLDER_PID" -m -- dockerd --config-file /etc/docker/daemon.json > "$d/dockerd.log" 2>&1 < /dev/null &
  local pid=$!
  on_teardown "stop_pid $pid"
  local D=(/usr/bin/docker -H "unix://$d/docker.sock")
  wait_for "${D[@]}" version
  local files_before; files_before=$(in_host ls -A /etc/docker)
  # Docker 20.10 sets no OCI annotations (docker run --annotation came in 24), so a Docker node
  # asks by env; whoever may run docker is root on the node anyway, and the flag says so
  run in_pod "$CD/src/enflame-ctk" toolkit install --host-root "$R" --runtime docker --engine-socket "$d/docker.sock" \
    --driver-root "$CD/host" --dev-root "$CD/host" --accept-envvar-when-unprivileged=true
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: docker (pid $pid) with SIGHUP (reload)"
  local i
  for i in $(seq 40); do "${D[@]}" info 2>/dev/null | grep -qE '^ *Runtimes:.*enflame' && break; sleep 0.25; done
  run "${D[@]}" info
  echo "$output" | grep -E '^ *Runtimes:.*enflame'
  tar -C "$CD/rootfs" -cf "$d/rootfs.tar" .
  "${D[@]}" import "$d/rootfs.tar" "localhost/ectk-inst-bb:$$" > /dev/null
  on_teardown "${D[*]} rmi -f localhost/ectk-inst-bb:$$ >/dev/null 2>&1"
  run "${D[@]}" run --rm --network none --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=1 "localhost/ectk-inst-bb:$$" /bin/sh -c 'ls /dev'
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx gcu1
  refute_grep -Fx gcu0
  run in_pod "$CD/src/enflame-ctk" toolkit uninstall --host-root "$R" --engine-socket "$d/docker.sock"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: docker (pid $pid) with SIGHUP (reload)"
  # dockerd 20.10 keeps a runtime its reloaded file no longer names: uninstall says so
  echo "$output" | grep -Fx "note: dockerd lists the runtime until it restarts (its SIGHUP reload keeps runtimes the file no longer names)"
  in_host cat /etc/docker/daemon.json | cmp - "$d/before.json"
  [ "$(in_host ls -A /etc/docker)" = "$files_before" ]   # no backup left either
}

@test "--engine-config elsewhere: the drop-in goes beside it, containerd started on it reads it, uninstall restores it" {
  local alt=/etc/alt-containerd
  in_host mkdir -p "$alt"
  in_host cp /etc/containerd/config.toml "$alt/config.toml"
  local files_before; files_before=$(host_files)
  install_tk --engine-config "$alt/config.toml"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "updated: $R$alt/conf.d/99-enflame.toml"
  echo "$output" | grep -Fx "updated: $R$alt/config.toml"
  in_host grep -E "^imports = \[\"$alt/conf.d/99-enflame.toml\"\]" "$alt/config.toml"
  run ! in_host test -e /etc/containerd/conf.d
  # containerd started on that config reads the drop-in: its merged config names our runtime
  run in_host containerd --config "$alt/config.toml" config dump
  [ "$status" -eq 0 ]
  echo "$output" | grep -F 'BinaryName = "/usr/local/enflame/toolkit/enflame-container-runtime"'
  status_tk
  [ "$status" -eq 0 ]
  uninstall_tk
  [ "$status" -eq 0 ]
  in_host cat "$alt/config.toml" | cmp - "$CD/before.toml"
  [ "$(in_host ls -A "$alt")" = config.toml ]
  [ "$(host_files)" = "$files_before" ]
}

# hostile_root LINK: a node root at /mnt/hostile (on the node namespace's tmpfs, seen by the pod)
# whose /etc/containerd is a symlink to LINK. It has the node's /usr (read-only, with a /usr/local
# of its own) and /proc, the loader's cache, `/var/run` -> `/run`, and the simulated cards at $CD/host.
hostile_root() {
  # shellcheck disable=SC2016  # expands in the namespace's shell
  in_host sh -c '
    h=/mnt/hostile; mkdir -p $h/usr $h/proc $h/etc $h/run $h/var "$h$2" || exit 125
    mount --rbind /usr $h/usr && mount -o remount,bind,ro $h/usr && mount --rbind /proc $h/proc &&
      mount -t tmpfs -o mode=755 tmpfs $h/usr/local && mount --bind "$2" "$h$2" || exit 125
    for l in bin lib lib64 sbin; do ln -s usr/$l $h/$l; done
    ln -s /run $h/var/run && cp /etc/ld.so.cache $h/etc/ && ln -s "$1" $h/etc/containerd' sh "$1" "$CD/host"
  in_host find /mnt/hostile -xdev | sort > "$CD/hostile.before"
}

@test "hostile host root: /etc/containerd a link to /../../.. or to a folder outside the root: every write stays inside the root" {
  local link pod_before host_before
  pod_before=$(find "$CD/pod" | sort)
  host_before=$(host_files)
  for link in /../../.. /mnt/host/etc/containerd; do
    hostile_root "$link"
    # the link's target inside the root, where an absolute link leads
    if [ "$link" != /../../.. ]; then in_host mkdir -p "/mnt/hostile$link"; fi
    local inside=/mnt/hostile${link#/../../..}
    run in_pod "$CD/src/enflame-ctk" toolkit install --host-root /mnt/hostile --runtime containerd \
      --restart-mode none --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host"
    echo "$output"
    [ "$status" -eq 0 ]
    # inside the root: containerd's config and our drop-in behind the link, the spec behind /var/run
    in_host grep -F '/etc/containerd/conf.d/99-enflame.toml' "$inside/config.toml"
    in_host grep -F 'BinaryName = "/usr/local/enflame/toolkit/enflame-container-runtime"' "$inside/conf.d/99-enflame.toml"
    in_host test -f /mnt/hostile/run/cdi/enflame.com-gpu.yaml
    # outside it: nothing, neither in the pod's own root nor in the other host root
    [ "$(find "$CD/pod" | sort)" = "$pod_before" ]
    [ "$(host_files)" = "$host_before" ]
    run in_pod "$CD/src/enflame-ctk" toolkit uninstall --host-root /mnt/hostile
    echo "$output"
    [ "$status" -eq 0 ]
    # the config we created is gone again with our drop-in: the root is as it was
    if [ "$link" != /../../.. ]; then
      [ -z "$(in_host find /mnt/hostile/mnt ! -type d)" ]
      in_host rm -r /mnt/hostile/mnt
    fi
    in_host find /mnt/hostile -xdev | sort | diff "$CD/hostile.before" -
    [ -z "$(in_host find /mnt/hostile/usr/local -mindepth 1)" ]
    [ "$(find "$CD/pod" | sort)" = "$pod_before" ]
    [ "$(host_files)" = "$host_before" ]
    in_host umount -R /mnt/hostile/usr /mnt/hostile/proc "/mnt/hostile$CD/host"
    in_host rm -rf /mnt/hostile
  done
}
