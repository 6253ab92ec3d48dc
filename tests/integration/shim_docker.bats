#!/usr/bin/env bats
# docker run --runtime=enflame against a dockerd started for this file (private data/exec
# roots and socket) with the shim registered in its daemon.json. dockerd uses containerd's
# runc-v2 shim, which calls ours with --root/--log/--log-format json (docs/test-runtimes.md).
# dockerd runs in a private mount namespace (PRIVATE_RUN): what it and its containerd write to
# /run and /etc/docker stays there, and the daemon is stopped by its pid.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

setup_file() {
  local c   # when something is missing, setup's `requires` skips (fails under CI) each test
  [ "$(id -u)" -eq 0 ] || return 0
  for c in dockerd unshare /usr/bin/docker; do command -v "$c" >/dev/null || return 0; done
  export DK=$(mktemp -d /tmp/ectk-dockerd.XXXXXX)
  chmod 755 "$DK"
  export DK_PARENT=ectk-shim-docker-$$-$RANDOM
  sim_example 4 > "$DK/desc.yaml"
  sim_host "$DK/desc.yaml" "$DK/host" >/dev/null
  write_config "$DK/config.toml" "$DK/host"
  busybox_rootfs "$DK/rootfs"
  tar -C "$DK/rootfs" -cf "$DK/rootfs.tar" .
  cat > "$DK/daemon.json" <<EOF
{
  "data-root": "$DK/root", "exec-root": "$DK/exec", "pidfile": "$DK/dockerd.pid",
  "hosts": ["unix://$DK/docker.sock"], "storage-driver": "overlay2",
  "iptables": false, "ip6tables": false, "ip-forward": false, "ip-masq": false, "bridge": "none",
  "cgroup-parent": "$DK_PARENT",
  "runtimes": {"enflame": {"path": "$SHIM"}}
}
EOF
  # The runtime inherits dockerd's environment (dockerd -> containerd -> runc-v2 shim -> us).
  ENFLAME_CTK_CONFIG=$DK/config.toml setsid "${PRIVATE_RUN[@]}" dockerd --config-file "$DK/daemon.json" \
    > "$DK/dockerd.log" 2>&1 < /dev/null &
  export DOCKERD_PID=$!
  local d=(/usr/bin/docker -H "unix://$DK/docker.sock")
  for _ in $(seq 120); do   # until dockerd answers, or is gone
    "${d[@]}" version >/dev/null 2>&1 && break
    kill -0 "$DOCKERD_PID" 2>/dev/null || break
    sleep 0.5
  done
  "${d[@]}" import "$DK/rootfs.tar" localhost/ectk-bb:shim >/dev/null 2>&1 || true
}

teardown_file() {
  [ -n "${DOCKERD_PID:-}" ] || return 0
  local d=(/usr/bin/docker -H "unix://$DK/docker.sock")
  "${d[@]}" rm -f $("${d[@]}" ps -aq 2>/dev/null) >/dev/null 2>&1
  stop_pid "$DOCKERD_PID"   # this also stops the containerd it started
  local h
  for h in /sys/fs/cgroup/*/; do
    if [ -d "$h$DK_PARENT" ]; then find "$h$DK_PARENT" -depth -type d -exec rmdir {} \; 2>/dev/null; fi
  done
  rm -rf "$DK"
}

setup() {
  requires root dockerd unshare /usr/bin/docker
  D=(/usr/bin/docker -H "unix://$DK/docker.sock")
  "${D[@]}" image inspect localhost/ectk-bb:shim >/dev/null 2>&1 ||
    skip_or_fail "dockerd did not start: $(log_errors "$DK/dockerd.log")"
  # the pid teardown_file stops is the daemon's own (nothing forked on the way)
  [ "$(cat "$DK/dockerd.pid")" = "$DOCKERD_PID" ]
  MAJOR=$(stat -c '%t' "$DK/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
}

@test "docker run --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=1: gcu1, gcuctl, libefml, device cgroup" {
  run timeout 120 "${D[@]}" run --rm --network none --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=1 \
    localhost/ectk-bb:shim sh -c 'ls -l /dev/; cat /proc/self/mountinfo; '"$DEVICE_OPEN"'; env'
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "^c.* $MAJOR, +1 .* gcu1$"
  echo "$output" | grep -E "^c.* $MAJOR, +255 .* gcuctl$"
  refute_grep -E "gcu[023]$"
  echo "$output" | grep -E " /usr/lib/libefml.so(.1)? ro,nosuid,nodev"
  # gcu1 and gcuctl open through the device cgroup; cards 0, 2 and 3 are denied
  device_access "1" denied   # docker gives CAP_MKNOD: cards 0, 2 and 3 made with mknod
  # cards 0, 2 and 3 are not there: no node, not their UUID
  no_card "$DK/desc.yaml" 0 2 3
  echo "$output" | grep -Fx "ENFLAME_VISIBLE_DEVICES=void"
}

@test "docker --runtime=enflame: no request is plain runc; exec, stop, rm pass through" {
  local name; name=$(unique_id dk)
  "${D[@]}" run -d --name "$name" --network none --runtime=enflame localhost/ectk-bb:shim sleep 300
  run "${D[@]}" exec "$name" sh -c 'ls /dev; '"$DEVICE_OPEN"'; env; echo exec-ok'
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "exec-ok"
  refute_grep -E "gcu"
  no_card "$DK/desc.yaml" 0 1 2 3
  "${D[@]}" stop -t 1 "$name"
  "${D[@]}" rm "$name"
}

@test "docker: a bad ENFLAME_VISIBLE_DEVICES fails the run with our message" {
  local name; name=$(unique_id dk)
  run timeout 120 "${D[@]}" run --name "$name" --network none --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=GCU-7 \
    localhost/ectk-bb:shim true
  echo "$output"
  "${D[@]}" rm -f "$name" >/dev/null 2>&1 || true
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "ENFLAME_VISIBLE_DEVICES: unknown device 'GCU-7': no card with index 7"
}
