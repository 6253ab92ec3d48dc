#!/usr/bin/env bats
# docker run --runtime=enflame against a dockerd started for this file (private data/exec
# roots and socket) with the shim registered in its daemon.json. dockerd uses containerd's
# runc-v2 shim, which calls ours with --root/--log/--log-format json (RUNTIMES.md section 3).

load helpers

setup_file() {
  [ "$(id -u)" -eq 0 ] && command -v dockerd >/dev/null && [ -x /usr/bin/docker ] || return 0
  export DK=$(mktemp -d /tmp/ectk-dockerd.XXXXXX)
  chmod 755 "$DK"
  export DK_PARENT=ectk-shim-docker-$$-$RANDOM
  export PRE_RUN_DOCKER=0; [ -e /run/docker ] && PRE_RUN_DOCKER=1
  export PRE_RUN_CONTAINERD=0; [ -e /run/containerd ] && PRE_RUN_CONTAINERD=1
  export PRE_KEYJSON=0; [ -e /etc/docker/key.json ] && PRE_KEYJSON=1
  export PRE_ETC_DOCKER=0; [ -e /etc/docker ] && PRE_ETC_DOCKER=1
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
  ENFLAME_CTK_CONFIG=$DK/config.toml setsid dockerd --config-file "$DK/daemon.json" \
    > "$DK/dockerd.log" 2>&1 < /dev/null &
  export DOCKERD_PID=$!
  local d=(/usr/bin/docker -H "unix://$DK/docker.sock")
  for _ in $(seq 120); do "${d[@]}" version >/dev/null 2>&1 && break; sleep 0.5; done
  "${d[@]}" import "$DK/rootfs.tar" localhost/ectk-bb:shim >/dev/null 2>&1 || true
}

teardown_file() {
  [ -n "${DOCKERD_PID:-}" ] || return 0
  local d=(/usr/bin/docker -H "unix://$DK/docker.sock")
  "${d[@]}" rm -f $("${d[@]}" ps -aq 2>/dev/null) >/dev/null 2>&1
  if kill -0 "$DOCKERD_PID" 2>/dev/null; then
    kill "$DOCKERD_PID"   # this also stops the containerd it started
    for _ in $(seq 60); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$DOCKERD_PID" 2>/dev/null && kill -KILL "$DOCKERD_PID"
  fi
  local h m
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h$DK_PARENT" ] && find "$h$DK_PARENT" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  for m in $(awk -v s="$DK" 'index($5, s) == 1 {print $5}' /proc/self/mountinfo | sort -r); do umount -l "$m"; done
  [ "$PRE_RUN_DOCKER" -eq 0 ] && rm -rf /run/docker
  [ "$PRE_RUN_CONTAINERD" -eq 0 ] && rm -rf /run/containerd
  [ "$PRE_KEYJSON" -eq 0 ] && rm -f /etc/docker/key.json
  [ "$PRE_ETC_DOCKER" -eq 0 ] && rmdir /etc/docker 2>/dev/null
  rm -rf "$DK"
}

setup() {
  requires root dockerd
  [ -x /usr/bin/docker ] || skip "needs /usr/bin/docker"
  D=(/usr/bin/docker -H "unix://$DK/docker.sock")
  "${D[@]}" image inspect localhost/ectk-bb:shim >/dev/null 2>&1 || skip "dockerd did not start: $(tail -n 3 "$DK/dockerd.log")"
  MAJOR=$(stat -c '%t' "$DK/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
}

@test "docker run --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=1: gcu1, gcuctl, libefml, device cgroup" {
  run timeout 120 "${D[@]}" run --rm --network none --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=1 \
    localhost/ectk-bb:shim sh -c 'ls -l /dev/; cat /proc/self/mountinfo; cat /sys/fs/cgroup/devices/devices.list; env'
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "^c.* $MAJOR, +1 .* gcu1$"
  echo "$output" | grep -E "^c.* $MAJOR, +255 .* gcuctl$"
  ! echo "$output" | grep -E "gcu[023]$"
  echo "$output" | grep -E " /usr/lib/libefml.so(.1)? ro,nosuid,nodev"
  echo "$output" | grep -Fx "c $MAJOR:1 rwm"
  echo "$output" | grep -Fx "c $MAJOR:255 rwm"
  ! echo "$output" | grep -Fx "c $MAJOR:0 rwm"
  echo "$output" | grep -Fx "ENFLAME_VISIBLE_DEVICES=void"
}

@test "docker --runtime=enflame: no request is plain runc; exec, stop, rm pass through" {
  local name; name=$(unique_id dk)
  "${D[@]}" run -d --name "$name" --network none --runtime=enflame localhost/ectk-bb:shim sleep 300
  run "${D[@]}" exec "$name" sh -c 'ls /dev; echo exec-ok'
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "exec-ok"
  ! echo "$output" | grep -E "gcu"
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
