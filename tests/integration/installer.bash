# Helpers of the enflame-ctk toolkit install|uninstall|status suites (installer_install.bats,
# installer_daemonset.bats, installer_hosts.bats): what the installer DaemonSet runs, against real
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
# shellcheck disable=SC2154  # output and status: set by bats' run in the functions that call it

R=/mnt/host
TK=/usr/local/enflame/toolkit

# installer_setup: each test's setup: the simulated cards, a busybox rootfs, the host namespace,
# the pod's root and a containerd config of the test's own (containerd not started).
installer_setup() {
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

# shellcheck disable=SC2120  # the suites pass it arguments
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
