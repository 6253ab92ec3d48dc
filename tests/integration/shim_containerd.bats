#!/usr/bin/env bats
# ctr run --runc-binary <shim> against a containerd started for this file in a private root.
# containerd's runc-v2 shim calls the runtime with --root/--log/--log-format json before the
# subcommand and reports the last error line of that log (docs/test-runtimes.md).
# containerd runs in a private mount namespace (PRIVATE_RUN): the shim sockets it puts under the
# fixed /run/containerd/s stay there, and the daemon is stopped by its pid. Every ctr call names
# its FIFO dir (default /run/containerd/fifo) in the scratch dir.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

setup_file() {
  local c   # when something is missing, setup's `requires` skips (fails under CI) each test
  [ "$(id -u)" -eq 0 ] || return 0
  for c in containerd ctr unshare; do command -v "$c" >/dev/null || return 0; done
  export CD=$(mktemp -d /tmp/ectk-ctrd.XXXXXX)
  chmod 755 "$CD"
  export CD_NS=ectk-shim-$$-$RANDOM
  sim_example 4 > "$CD/desc.yaml"
  sim_host "$CD/desc.yaml" "$CD/host" >/dev/null
  write_config "$CD/config.toml" "$CD/host"
  busybox_rootfs "$CD/rootfs"
  mkdir -p "$CD/ctrd"
  cat > "$CD/ctrd/config.toml" <<EOF
version = 2
root = "$CD/ctrd/root"
state = "$CD/ctrd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CD/ctrd/containerd.sock"
[ttrpc]
  address = "$CD/ctrd/containerd.sock.ttrpc"
# (default /opt/containerd, which containerd creates on the host)
[plugins."io.containerd.internal.v1.opt"]
  path = "$CD/ctrd/opt"
EOF
  # The runtime inherits containerd's environment (through containerd-shim-runc-v2).
  ENFLAME_CTK_CONFIG=$CD/config.toml setsid "${PRIVATE_RUN[@]}" containerd --config "$CD/ctrd/config.toml" \
    > "$CD/ctrd/containerd.log" 2>&1 < /dev/null &
  export CTRD_PID=$!
  for _ in $(seq 80); do   # until the socket is there, or containerd is gone
    [ ! -S "$CD/ctrd/containerd.sock" ] || break
    kill -0 "$CTRD_PID" 2>/dev/null || break
    sleep 0.25
  done
}

teardown_file() {
  [ -n "${CTRD_PID:-}" ] || return 0
  stop_pid "$CTRD_PID"
  local h
  for h in /sys/fs/cgroup/*/; do
    if [ -d "$h$CD_NS" ]; then find "$h$CD_NS" -depth -type d -exec rmdir {} \; 2>/dev/null; fi
  done
  rm -rf "$CD"
}

teardown() { teardown_scratch; }

setup() {
  requires root containerd ctr runc unshare
  setup_scratch
  [ -S "$CD/ctrd/containerd.sock" ] || skip_or_fail "containerd did not start: $(log_errors "$CD/ctrd/containerd.log")"
  [ -d "$CD/ctrd/opt" ]   # containerd's opt folder is ours, not the host's /opt/containerd
  # the pid teardown_file stops is containerd's own (nothing forked on the way)
  [ "$(readlink "/proc/$CTRD_PID/exe")" = "$(readlink -f "$(command -v containerd)")" ]
  C=(ctr --address "$CD/ctrd/containerd.sock" -n "$CD_NS")
  MAJOR=$(stat -c '%t' "$CD/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
}

# ctr_rm ID: stop and remove a detached container.
ctr_rm() {
  "${C[@]}" container info "$1" >/dev/null 2>&1 || return 0   # already gone (run --rm)
  "${C[@]}" task kill -s KILL "$1" >/dev/null 2>&1
  for _ in $(seq 40); do "${C[@]}" task delete "$1" >/dev/null 2>&1 && break; sleep 0.25; done
  "${C[@]}" container rm "$1" >/dev/null 2>&1
}

# ctr_run ID ENV... -- CMD...: ctr run through the shim with the busybox rootfs.
ctr_run() {
  local id=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=(--env "$1"); shift; done
  shift
  run timeout 120 "${C[@]}" run --rm --runc-binary "$SHIM" --runc-root "$CD/ctrd/runc" \
    --fifo-dir "$CD/ctrd/fifo" "${envs[@]}" --rootfs "$CD/rootfs" "$id" "$@"
}

@test "ctr run --runc-binary shim: ENFLAME_VISIBLE_DEVICES=0,2 inside the container and in its cgroup" {
  local id; id=$(unique_id ctr)
  run timeout 60 "${C[@]}" run -d --runc-binary "$SHIM" --runc-root "$CD/ctrd/runc" --fifo-dir "$CD/ctrd/fifo" \
    --env ENFLAME_VISIBLE_DEVICES=0,2 --rootfs "$CD/rootfs" "$id" /bin/sleep 120
  echo "$output"
  [ "$status" -eq 0 ]
  on_teardown "ctr_rm $id"
  # Under heavy load ctr sometimes returns an exec's status before its stdout fifo delivered
  # anything (seen once, at load 11): retry a few times while the output is empty.
  local try
  for try in 1 2 3 4 5; do
    run timeout 60 "${C[@]}" task exec --fifo-dir "$CD/ctrd/fifo" --exec-id "probe$try" "$id" /bin/sh -c 'ls -l /dev/; cat /proc/self/mountinfo; '"$DEVICE_OPEN"'; /bin/env'
    if [[ $status -eq 0 && -n $output ]]; then break; fi
  done
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "^c.* $MAJOR, +0 .* gcu0"
  echo "$output" | grep -E "^c.* $MAJOR, +2 .* gcu2"
  echo "$output" | grep -E "^c.* $MAJOR, +255 .* gcuctl"
  refute_grep -E "gcu1$"
  echo "$output" | grep -E " /usr/lib/libefml.so(.1)? ro,nosuid,nodev"
  # (exec takes its env from containerd's copy of the spec, not the edited config.json)
  # cards 1 and 3 are not there: no node, not their UUID in the env
  no_card "$CD/desc.yaml" 1 3
  # the device cgroup lets gcu0, gcu2 and gcuctl open; cards 1 and 3 are denied or absent
  device_access "0 2" denied   # ctr gives CAP_MKNOD: cards 1 and 3 made with mknod
}

@test "ctr run --runc-binary shim: all cards, and no request behaves as runc" {
  local id; id=$(unique_id ctr)
  ctr_run "$id" ENFLAME_VISIBLE_DEVICES=all -- /bin/sh -c 'ls /dev; /bin/env'
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "^ENFLAME_VISIBLE_DEVICES=void"
  for m in 0 1 2 3; do echo "$output" | grep -E "^gcu$m"; done
  id=$(unique_id ctr)
  ctr_run "$id" -- /bin/sh -c 'ls /dev; echo plain-ok'
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "plain-ok"
  refute_grep -E "gcu"
}

@test "ctr: a bad ENFLAME_VISIBLE_DEVICES fails with our message (from runc's JSON log), no task" {
  local id; id=$(unique_id ctr)
  ctr_run "$id" ENFLAME_VISIBLE_DEVICES=0,0 -- /bin/true
  echo "$output"
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "ENFLAME_VISIBLE_DEVICES: duplicate entry '0'"
  run "${C[@]}" task ls -q
  [ "$status" -eq 0 ]
  refute_grep -Fx "$id"
  run ! runc --root "$CD/ctrd/runc/$CD_NS" state "$id"
  "${C[@]}" container rm "$id" 2>/dev/null || true
}

@test "ctr: 16 containers started at once through the shim, half with a card: each gets exactly its own" {
  local n=16 i pids=() ids=()
  mkdir -p "$SCRATCH/out"
  for ((i = 0; i < n; i++)); do
    ids[i]=$(unique_id ctrc$i)
    on_teardown "ctr_rm ${ids[i]}"
    local envs=()
    # Even containers ask for card i/2 % 4, odd ones ask for nothing.
    (( i % 2 == 0 )) && envs=(--env "ENFLAME_VISIBLE_DEVICES=$(( i / 2 % 4 ))")
    # Each writes what it sees into a bind-mounted folder (not through ctr's stdout fifo).
    timeout 180 "${C[@]}" run --rm --runc-binary "$SHIM" --runc-root "$CD/ctrd/runc" \
      --fifo-dir "$CD/ctrd/fifo" "${envs[@]}" \
      --mount "type=bind,src=$SCRATCH/out,dst=/out,options=rbind:rw" --rootfs "$CD/rootfs" "${ids[i]}" \
      /bin/sh -c "ls /dev > /out/r$i.tmp; echo probe-done >> /out/r$i.tmp; mv /out/r$i.tmp /out/r$i" \
      > "$SCRATCH/ctr$i.log" 2>&1 < /dev/null &
    pids[i]=$!
  done
  local failed=0 got want
  for ((i = 0; i < n; i++)); do
    if ! wait "${pids[i]}"; then echo "container $i failed: $(cat "$SCRATCH/ctr$i.log")"; failed=1; fi
  done
  [ "$failed" -eq 0 ]
  for ((i = 0; i < n; i++)); do
    grep -Fxq probe-done "$SCRATCH/out/r$i" || { echo "container $i: no result"; return 1; }
    got=$(grep -E '^gcu' "$SCRATCH/out/r$i" | sort | tr '\n' ' ')
    want=""; (( i % 2 == 0 )) && want="gcu$(( i / 2 % 4 )) gcuctl "
    [ "$got" = "$want" ] || { echo "container $i: wanted '$want', got '$got'"; return 1; }
  done
  # No temp file of ours left in any bundle containerd made.
  [ -z "$(find "$CD/ctrd/state" -name 'config.json.tmp.*' -print -quit 2>/dev/null)" ]
}
