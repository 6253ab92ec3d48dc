#!/usr/bin/env bats
# podman --runtime <shim>: podman drives the shim with the plain runc CLI (create --bundle B
# --pid-file F ID, start, kill, delete --force; RUNTIMES.md section 1), so the shim edits the
# config.json podman wrote. Isolated storage, containers.conf from the scratch dir.

load helpers

setup() {
  requires root podman runc python3
  setup_scratch
  sim_setup 4
  MAJOR=$(stat -c '%t' "$SCRATCH/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
  podman_with_shim
}

teardown() { teardown_scratch; }

PROBE='ls -l /dev/; echo ==; cat /proc/self/mountinfo; echo ==; cat /sys/fs/cgroup/devices/devices.list; env'

@test "podman --runtime shim -e ENFLAME_VISIBLE_DEVICES=1,3: the cards, gcuctl, libefml read-only" {
  local name; name=$(unique_id pmshim)
  run timeout 120 "${PM[@]}" --runtime "$SHIM" run --rm --name "$name" -e ENFLAME_VISIBLE_DEVICES=1,3 \
    --rootfs "$SCRATCH/rootfs" sh -c "$PROBE"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "^c.* $MAJOR, +1 .* gcu1$"
  echo "$output" | grep -E "^c.* $MAJOR, +3 .* gcu3$"
  echo "$output" | grep -E "^c.* $MAJOR, +255 .* gcuctl$"
  ! echo "$output" | grep -E "gcu0$"
  ! echo "$output" | grep -E "gcu2$"
  echo "$output" | grep -E " /usr/lib/libefml.so(.1)? ro,nosuid,nodev"
  echo "$output" | grep -Fx "c $MAJOR:1 rwm"
  echo "$output" | grep -Fx "c $MAJOR:3 rwm"
  ! echo "$output" | grep -Fx "c $MAJOR:0 rwm"
  echo "$output" | grep -Fx "ENFLAME_VISIBLE_DEVICES=void"
}

@test "podman --runtime shim: no request runs as plain runc; exec, stop and rm pass through" {
  local name; name=$(unique_id pmshim)
  "${PM[@]}" --runtime "$SHIM" run -d --name "$name" --rootfs "$SCRATCH/rootfs" sleep 300
  run "${PM[@]}" exec "$name" sh -c 'ls /dev; echo exec-ok'
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "exec-ok"
  ! echo "$output" | grep -E "gcu"
  run "${PM[@]}" stop -t 1 "$name"
  [ "$status" -eq 0 ]
  run "${PM[@]}" rm "$name"
  [ "$status" -eq 0 ]
}

@test "podman: a bad ENFLAME_VISIBLE_DEVICES fails the run with our message, no container" {
  local name; name=$(unique_id pmshim)
  run timeout 120 "${PM[@]}" --runtime "$SHIM" run --rm --name "$name" -e ENFLAME_VISIBLE_DEVICES=0,9 \
    --rootfs "$SCRATCH/rootfs" true
  echo "$output"
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "ENFLAME_VISIBLE_DEVICES: unknown device '9': no card with index 9 (the host has cards 0,1,2,3)"
  run "${PM[@]}" ps -a --format '{{.Names}}'
  ! echo "$output" | grep -Fx "$name"
  # nothing reached runc either (podman's runc root is the default one)
  ! runc list -q | grep -F "$name"
}
