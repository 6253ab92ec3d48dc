#!/usr/bin/env bats
# Faults: a full disk, a read-only folder or a failing disk (EIO) while writing config.json
# (through the shim), the CDI spec (cdi generate --output) or a runtime config (runtime
# configure); an efsmi that hangs, floods its output or dies by a signal. The old file stays
# intact byte for byte, no temp file is left, the command fails with one line naming the file
# and the reason, and every command returns within a bounded time.
#
# EIO comes from the kernel itself: an ext4 filesystem in a loop-mounted file whose backing file
# is then made immutable, so every write the filesystem sends to the device fails and ext4
# returns EIO (device-mapper's error target and the kernel's fault injection are not available
# on our VMs; a loop device is).

load helpers
bats_require_minimum_version 1.5.0

setup() {
  requires root
  [ -x "$CTK" ] || skip "no $CTK (build enflame-ctk)"
  setup_scratch
  sim_example 2 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  RR=$SCRATCH/runc-root
}

teardown() { teardown_scratch; }

# small_fs DIR: a 64 KiB tmpfs at DIR, unmounted in teardown.
small_fs() {
  mkdir -p "$1"
  mount -t tmpfs -o size=64k,mode=0755 tmpfs "$1"
  on_teardown "umount -l '$1'"
}

# fill DIR: fill the filesystem of DIR to the last block.
fill() { dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null || true; }

# read_only DIR: bind DIR on itself read-only (undone in teardown).
read_only() {
  mount --bind "$1" "$1"
  on_teardown "umount -l '$1'"
  mount -o remount,bind,ro "$1"
}

# intact FILE SHA: FILE still has content SHA and no temp file sits beside it.
intact() {
  [ "$(sha256sum < "$1" | cut -d' ' -f1)" = "$2" ]
  [ -z "$(find "$(dirname "$1")" -maxdepth 1 -name "$(basename "$1")*tmp*" -print -quit)" ]
  [ -z "$(find "$(dirname "$1")" -maxdepth 1 -name ".$(basename "$1")*" -print -quit)" ]
}

sha() { sha256sum < "$1" | cut -d' ' -f1; }

# intact_after_eio FILE SHA: as intact, except that a temp name ext4 itself left in the folder's
# listing when the create failed with EIO (the entry is listed, but looking it up finds no file:
# unlink gets ENOENT) is not counted: no temp file can be opened beside FILE.
intact_after_eio() {
  [ "$(sha "$1")" = "$2" ]
  local f
  for f in "$(dirname "$1")/$(basename "$1")"*tmp* "$(dirname "$1")/.$(basename "$1")"*; do
    [ ! -e "$f" ]
  done
}

# failing_disk DIR [sync]: a 16 MiB ext4 filesystem (no journal, errors=continue) in a file,
# loop-mounted at DIR (with `sync` if asked: writes reach the device at write(), not at fsync()).
# Unmounted, and its backing file made mutable again, in teardown.
failing_disk() {
  requires mkfs.ext4 chattr losetup
  [ -e /dev/loop-control ] || skip "no loop devices here (/dev/loop-control is missing)"
  local img; img=$(disk_image "$1")
  truncate -s 16M "$img"
  mkfs.ext4 -q -F -O ^has_journal -e continue "$img"
  chattr -i "$img" 2>/dev/null || skip "chattr is not supported on the filesystem of $SCRATCH"
  mkdir -p "$1"
  on_teardown "chattr -i '$img'"
  mount -o "loop${2:+,$2}" "$img" "$1" || skip "loop-mounting a file is not allowed here"
  on_teardown "umount '$1'"
  chmod 755 "$1"
}

disk_image() { echo "$SCRATCH/disk-$(basename "$1").img"; }

# break_disk DIR: flush what DIR's filesystem holds, then make its backing file immutable: from
# now on the loop device fails every write (EPERM from the backing file, EIO to the filesystem).
break_disk() {
  sync -f "$1"
  chattr +i "$(disk_image "$1")"
}

# --- config.json through the shim ---

# fault_bundle DIR: a bundle at DIR (on the small fs) whose rootfs is elsewhere, asking for card 0.
fault_bundle() {
  busybox_rootfs "$SCRATCH/rootfs"
  (cd "$1" && runc spec)
  python3 - "$1/config.json" "$SCRATCH/rootfs" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["true"]
c["process"]["env"].append("ENFLAME_VISIBLE_DEVICES=0")
c["root"] = {"path": sys.argv[2], "readonly": True}
json.dump(c, open(p, "w"))
PY
}

@test "shim: bundle on a full disk: config.json intact, no temp file, ENOSPC named, no container" {
  requires runc python3
  small_fs "$SCRATCH/b"
  fault_bundle "$SCRATCH/b"
  fill "$SCRATCH/b"
  local before id; before=$(sha "$SCRATCH/b/config.json"); id=$(unique_id fault)
  on_teardown "runc --root '$RR' delete -f $id >/dev/null 2>&1"
  run --separate-stderr timeout 30 "$SHIM" --root "$RR" create --bundle "$SCRATCH/b" "$id"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ -z "$output" ]
  [[ "$stderr" == *"$SCRATCH/b/config.json"* ]]
  [[ "$stderr" == *"No space left on device"* || "$stderr" == *"ENOSPC"* ]]
  intact "$SCRATCH/b/config.json" "$before"
  ! runc --root "$RR" state "$id" >/dev/null 2>&1
}

@test "shim: read-only bundle folder: config.json intact, no temp file, EROFS named, no container" {
  requires runc python3
  mkdir -p "$SCRATCH/b"
  fault_bundle "$SCRATCH/b"
  read_only "$SCRATCH/b"
  local before id; before=$(sha "$SCRATCH/b/config.json"); id=$(unique_id fault)
  on_teardown "runc --root '$RR' delete -f $id >/dev/null 2>&1"
  run --separate-stderr timeout 30 "$SHIM" --root "$RR" create --bundle "$SCRATCH/b" "$id"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [[ "$stderr" == *"$SCRATCH/b/config.json"* ]]
  [[ "$stderr" == *"Read-only file system"* || "$stderr" == *"EROFS"* ]]
  intact "$SCRATCH/b/config.json" "$before"
  ! runc --root "$RR" state "$id" >/dev/null 2>&1
}

@test "shim: bundle on a failing disk (EIO): config.json intact, no temp file, EIO named, no container" {
  requires runc python3
  failing_disk "$SCRATCH/b" sync
  fault_bundle "$SCRATCH/b"
  break_disk "$SCRATCH/b"
  local before id; before=$(sha "$SCRATCH/b/config.json"); id=$(unique_id fault)
  on_teardown "runc --root '$RR' delete -f $id >/dev/null 2>&1"
  run --separate-stderr timeout 30 "$SHIM" --root "$RR" create --bundle "$SCRATCH/b" "$id"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ -z "$output" ]
  [[ "$stderr" == *"$SCRATCH/b/config.json"* ]]
  [[ "$stderr" == *"Input/output error"* ]]
  intact_after_eio "$SCRATCH/b/config.json" "$before"
  ! runc --root "$RR" state "$id" >/dev/null 2>&1
}

# --- the CDI spec ---

@test "cdi generate --output on a full disk: old spec intact, no temp file, one error line" {
  small_fs "$SCRATCH/cdi"
  printf 'cdiVersion: 0.5.0\nkind: enflame.com/gpu\ndevices: []\n' > "$SCRATCH/cdi/enflame.yaml"
  fill "$SCRATCH/cdi"
  local before; before=$(sha "$SCRATCH/cdi/enflame.yaml")
  run --separate-stderr timeout 30 "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.yaml"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"$SCRATCH/cdi/enflame.yaml"*"No space left on device"* ]]
  intact "$SCRATCH/cdi/enflame.yaml" "$before"
}

@test "cdi generate --output into a read-only folder: old spec intact, one error line" {
  mkdir -p "$SCRATCH/cdi"
  printf 'cdiVersion: 0.5.0\nkind: enflame.com/gpu\ndevices: []\n' > "$SCRATCH/cdi/enflame.yaml"
  read_only "$SCRATCH/cdi"
  local before; before=$(sha "$SCRATCH/cdi/enflame.yaml")
  run --separate-stderr timeout 30 "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.yaml"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"$SCRATCH/cdi/enflame.yaml"*"Read-only file system"* ]]
  intact "$SCRATCH/cdi/enflame.yaml" "$before"
}

@test "cdi generate --output on a failing disk (EIO at fsync): old spec intact, one error line" {
  failing_disk "$SCRATCH/cdi"
  printf 'cdiVersion: 0.5.0\nkind: enflame.com/gpu\ndevices: []\n' > "$SCRATCH/cdi/enflame.yaml"
  break_disk "$SCRATCH/cdi"
  local before; before=$(sha "$SCRATCH/cdi/enflame.yaml")
  run --separate-stderr timeout 30 "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.yaml"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"$SCRATCH/cdi/enflame.yaml"*"Input/output error"* ]]
  intact "$SCRATCH/cdi/enflame.yaml" "$before"
}

# --- a runtime config ---

@test "runtime configure --runtime docker on a full disk: daemon.json intact, one error line" {
  small_fs "$SCRATCH/etc"
  printf '{\n  "log-level": "warn",\n  "runtimes": {}\n}\n' > "$SCRATCH/etc/daemon.json"
  fill "$SCRATCH/etc"
  local before; before=$(sha "$SCRATCH/etc/daemon.json")
  run --separate-stderr timeout 30 "$CTK" runtime configure --runtime docker --config "$SCRATCH/etc/daemon.json"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"$SCRATCH/etc/daemon.json"*"No space left on device"* ]]
  intact "$SCRATCH/etc/daemon.json" "$before"
}

@test "runtime configure --runtime docker in a read-only folder: daemon.json intact, one error line" {
  mkdir -p "$SCRATCH/etc"
  printf '{\n  "log-level": "warn",\n  "runtimes": {}\n}\n' > "$SCRATCH/etc/daemon.json"
  read_only "$SCRATCH/etc"
  local before; before=$(sha "$SCRATCH/etc/daemon.json")
  run --separate-stderr timeout 30 "$CTK" runtime configure --runtime docker --config "$SCRATCH/etc/daemon.json"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"$SCRATCH/etc/daemon.json"*"Read-only file system"* ]]
  intact "$SCRATCH/etc/daemon.json" "$before"
}

@test "runtime configure --runtime docker on a failing disk (EIO at fsync): daemon.json intact" {
  failing_disk "$SCRATCH/etc"
  printf '{\n  "log-level": "warn",\n  "runtimes": {}\n}\n' > "$SCRATCH/etc/daemon.json"
  break_disk "$SCRATCH/etc"
  local before; before=$(sha "$SCRATCH/etc/daemon.json")
  run --separate-stderr timeout 30 "$CTK" runtime configure --runtime docker --config "$SCRATCH/etc/daemon.json"
  echo "$stderr"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"$SCRATCH/etc/daemon.json"*"Input/output error"* ]]
  intact "$SCRATCH/etc/daemon.json" "$before"
  [ ! -e "$SCRATCH/etc/daemon.json.enflame.bak" ]
}

@test "runtime configure --runtime docker with a backup already there: the write itself fails cleanly" {
  # configure keeps the first .enflame.bak it made, so here the failing write is daemon.json's own.
  local fault
  for fault in full ro; do
    mkdir -p "$SCRATCH/$fault"
    [ $fault = full ] && small_fs "$SCRATCH/$fault"
    printf '{\n  "log-level": "warn"\n}\n' > "$SCRATCH/$fault/daemon.json"
    cp "$SCRATCH/$fault/daemon.json" "$SCRATCH/$fault/daemon.json.enflame.bak"
    if [ $fault = full ]; then fill "$SCRATCH/$fault"; else read_only "$SCRATCH/$fault"; fi
    local before; before=$(sha "$SCRATCH/$fault/daemon.json")
    run --separate-stderr timeout 30 "$CTK" runtime configure --runtime docker --config "$SCRATCH/$fault/daemon.json"
    echo "$stderr"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "error: writing '$SCRATCH/$fault/daemon.json': "* ]]
    [[ "$stderr" == *"No space left on device" || "$stderr" == *"Read-only file system" ]]
    intact "$SCRATCH/$fault/daemon.json" "$before"
  done
}

# --- efsmi faults: discovery is bounded and falls back to libefml, or fails clearly ---

# faulty_host NAME FAULTS [efml]: a 2-card host with these faults (and libefml unless "noefml").
faulty_host() {
  sim_example 2 > "$SCRATCH/$1.yaml"
  if [ "${3:-}" = noefml ]; then
    printf 'faults: {%s, efml_absent: true}\n' "$2" >> "$SCRATCH/$1.yaml"
  else
    printf 'faults: {%s}\n' "$2" >> "$SCRATCH/$1.yaml"
  fi
  sim_host "$SCRATCH/$1.yaml" "$SCRATCH/$1" >/dev/null
  printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\nefsmi-timeout-ms = 300\n' \
    "$SCRATCH/$1" "$SCRATCH/$1" > "$SCRATCH/$1.toml"
}

# bounded CMD...: run CMD with the host's config, killed after 10 s (status 124 = not bounded).
bounded() { ENFLAME_CTK_CONFIG="$SCRATCH/$H.toml" run --separate-stderr timeout 10 "$@"; }

@test "efsmi hangs beyond efsmi-timeout-ms: info and cdi generate fall back to libefml, bounded" {
  H=hang; faulty_host $H "efsmi_sleep_ms: 60000"
  bounded "$CTK" info
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "backend: libefml" ]
  [ "${lines[1]}" = "  not used: efsmi-json: efsmi timed out after 300 ms" ]
  bounded "$CTK" cdi generate --no-drs --output "$SCRATCH/spec.yaml"
  [ "$status" -eq 0 ]
  grep -q "name: \"1\"\|name: '1'\|name: 1$" "$SCRATCH/spec.yaml"
}

@test "efsmi hangs and no libefml: info and cdi generate fail with one bounded error line" {
  H=hang2; faulty_host $H "efsmi_sleep_ms: 60000" noefml
  bounded "$CTK" info
  [ "$status" -eq 1 ]
  [[ "$stderr" == "error: no backend found the cards: efsmi-json: efsmi timed out after 300 ms; efsmi-text: efsmi timed out after 300 ms; libefml: "* ]]
  printf 'old\n' > "$SCRATCH/spec.yaml"
  bounded "$CTK" cdi generate --output "$SCRATCH/spec.yaml"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"efsmi timed out after 300 ms"* ]]
  [ "$(cat "$SCRATCH/spec.yaml")" = old ]
}

@test "efsmi floods its output without end: bounded by the output limit, libefml answers" {
  H=flood; faulty_host $H "efsmi_flood: true"
  bounded "$CTK" info
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "backend: libefml" ]
  [ "${lines[1]}" = "  not used: efsmi-json: $SCRATCH/flood/usr/local/efsmi/efsmi-1.4.3.4/efsmi: output larger than 4194304 bytes" ]
  bounded "$CTK" cdi generate --no-drs --output "$SCRATCH/spec.yaml"
  [ "$status" -eq 0 ]
  [ -s "$SCRATCH/spec.yaml" ]
}

@test "efsmi floods and no libefml: one bounded error line, no spec written" {
  H=flood2; faulty_host $H "efsmi_flood: true" noefml
  bounded "$CTK" cdi generate --output "$SCRATCH/spec.yaml"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"output larger than 4194304 bytes"* ]]
  [ ! -e "$SCRATCH/spec.yaml" ]
}

@test "efsmi dies by a signal (SIGSEGV, SIGKILL): the signal is named, libefml answers" {
  local sig name
  for sig in 11 9; do
    H=sig$sig; faulty_host $H "efsmi_signal: $sig"
    name=$([ $sig = 11 ] && echo "Segmentation fault" || echo "Killed")
    bounded "$CTK" info
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "backend: libefml" ]
    [ "${lines[1]}" = "  not used: efsmi-json: efsmi was killed by signal $sig ($name)" ]
    bounded "$CTK" cdi generate --no-drs --output "$SCRATCH/spec-$sig.yaml"
    [ "$status" -eq 0 ]
    [ -s "$SCRATCH/spec-$sig.yaml" ]
  done
}

@test "efsmi dies by a signal and no libefml: one bounded error line naming the signal" {
  H=sig2; faulty_host $H "efsmi_signal: 6" noefml
  bounded "$CTK" info
  [ "$status" -eq 1 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: no backend found the cards: efsmi-json: efsmi was killed by signal 6 (Aborted); "* ]]
}
