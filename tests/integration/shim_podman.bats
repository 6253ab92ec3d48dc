#!/usr/bin/env bats
# podman --runtime <shim>: podman drives the shim with the plain runc CLI (create --bundle B
# --pid-file F ID, start, kill, delete --force; docs/test-runtimes.md), so the shim edits the
# config.json podman wrote. Isolated storage, containers.conf from the scratch dir.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

setup() {
  requires root podman runc python3
  setup_scratch
  sim_setup 4
  MAJOR=$(stat -c '%t' "$SCRATCH/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
  podman_with_shim
}

teardown() { teardown_scratch; }

PROBE='ls -l /dev/; echo ==; cat /proc/self/mountinfo; echo ==; '"$DEVICE_OPEN"'; env'

@test "podman --runtime shim -e ENFLAME_VISIBLE_DEVICES=1,3: the cards, gcuctl, libefml read-only" {
  local name; name=$(unique_id pmshim)
  run timeout 120 "${PM[@]}" --runtime "$SHIM" run --rm --name "$name" -e ENFLAME_VISIBLE_DEVICES=1,3 \
    --rootfs "$SCRATCH/rootfs" sh -c "$PROBE"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "^c.* $MAJOR, +1 .* gcu1$"
  echo "$output" | grep -E "^c.* $MAJOR, +3 .* gcu3$"
  echo "$output" | grep -E "^c.* $MAJOR, +255 .* gcuctl$"
  echo "$output" | grep -E " /usr/lib/libefml.so(.1)? ro,nosuid,nodev"
  # gcu1, gcu3 and gcuctl open through the device cgroup; cards 0 and 2 are denied or absent
  device_access "1 3"
  # cards 0 and 2 are not there: no node, not their UUID
  no_card "$SCRATCH/desc.yaml" 0 2
  echo "$output" | grep -Fx "ENFLAME_VISIBLE_DEVICES=void"
}

@test "podman --runtime shim: no request runs as plain runc; exec, stop and rm pass through" {
  local name; name=$(unique_id pmshim)
  "${PM[@]}" --runtime "$SHIM" run -d --name "$name" --rootfs "$SCRATCH/rootfs" sleep 300
  run "${PM[@]}" exec "$name" sh -c 'ls /dev; '"$DEVICE_OPEN"'; env; echo exec-ok'
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "exec-ok"
  refute_grep -E "gcu"
  no_card "$SCRATCH/desc.yaml" 0 1 2 3
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
  [ "$status" -eq 0 ]
  refute_grep -Fx "$name"
  # nothing reached runc either: no container of runc's (default) root has its bundle in this
  # podman's storage (runc knows podman's containers by id, not by name)
  run runc list --format json
  [ "$status" -eq 0 ]
  refute_grep -F "$SCRATCH/pm/"
}
