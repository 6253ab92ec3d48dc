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
  setup_scratch
  requires root
  [ -x "$CTK" ] || skip_or_fail "no $CTK (build enflame-ctk)"
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
  [ -e /dev/loop-control ] || skip_or_fail "no loop devices here (/dev/loop-control is missing)"
  local img; img=$(disk_image "$1")
  truncate -s 16M "$img"
  mkfs.ext4 -q -F -O ^has_journal -e continue "$img"
  chattr -i "$img" 2>/dev/null || skip_or_fail "chattr is not supported on the filesystem of $SCRATCH"
  mkdir -p "$1"
  on_teardown "chattr -i '$img'"
  mount -o "loop${2:+,$2}" "$img" "$1" || skip_or_fail "loop-mounting a file is not allowed here"
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

# --- config.json through the shim, the CDI spec, a runtime config ---

# Three ways a folder fails writes. prepare_fault KIND DIR makes DIR, break_fault KIND DIR then
# makes it fail; reason_of KIND is the strerror text the error line must carry.
#   full     a 64 KiB tmpfs, filled to the last block (ENOSPC)
#   ro       a read-only bind mount of the folder on itself (EROFS)
#   eio      a failing disk: EIO at fsync (the shim does not fsync config.json, see
#            docs/deviations.md, so its case uses eio-sync)
#   eio-sync a failing disk mounted `sync`: EIO at the first write, the create included
prepare_fault() {
  case $1 in
    full) small_fs "$2" ;;
    ro) mkdir -p "$2" ;;
    eio) failing_disk "$2" ;;
    eio-sync) failing_disk "$2" sync ;;
  esac
}
break_fault() {
  case $1 in
    full) fill "$2" ;;
    ro) read_only "$2" ;;
    eio*) break_disk "$2" ;;
  esac
}
reason_of() {
  case $1 in
    full) echo "No space left on device" ;;
    ro) echo "Read-only file system" ;;
    eio*) echo "Input/output error" ;;
  esac
}

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

# shim_write_fault KIND: the shim's create of a bundle whose folder fails writes by KIND fails
# with one line naming config.json and the reason; config.json is intact, no container exists.
shim_write_fault() {
  requires runc python3
  local kind=$1 before id
  prepare_fault "$kind" "$SCRATCH/b"
  fault_bundle "$SCRATCH/b"
  break_fault "$kind" "$SCRATCH/b"
  before=$(sha "$SCRATCH/b/config.json"); id=$(unique_id fault)
  on_teardown "runc --root '$RR' delete -f $id >/dev/null 2>&1"
  run --separate-stderr timeout 30 "$SHIM" --root "$RR" create --bundle "$SCRATCH/b" "$id"
  echo "$stderr"
  [ "$status" -ne 0 ]
  [ "$status" -ne 124 ]
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == *"$SCRATCH/b/config.json"*"$(reason_of "$kind")"* ]]
  if [ "$kind" = eio-sync ]; then intact_after_eio "$SCRATCH/b/config.json" "$before"
  else intact "$SCRATCH/b/config.json" "$before"; fi
  # no container: runc's own answer, whatever time its log line carries
  run runc --root "$RR" state "$id"
  [ "$status" -eq 1 ]
  [[ "$output" == *'level=error msg="container does not exist"' ]]
}

# ctk_write_fault KIND FILE CONTENT CMD...: FILE holding CONTENT (printf %b; with WITH_BACKUP
# set, a copy as FILE.enflame.bak too) in a folder that then fails writes by KIND; CMD fails within 30 s with nothing on stdout and one line
# "error: ...FILE...reason" on stderr, and FILE is intact with no temp file beside it.
ctk_write_fault() {
  local kind=$1 file=$2 content=$3 before; shift 3
  prepare_fault "$kind" "$(dirname "$file")"
  printf '%b' "$content" > "$file"
  [ -z "${WITH_BACKUP:-}" ] || cp "$file" "$file.enflame.bak"   # a backup from an earlier run
  break_fault "$kind" "$(dirname "$file")"
  before=$(sha "$file")
  run --separate-stderr timeout 30 "$@"
  echo "$stderr"
  [ "$status" -ne 0 ]
  [ "$status" -ne 124 ]
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"$file"*"$(reason_of "$kind")"* ]]
  intact "$file" "$before"
}

SPEC='cdiVersion: 0.5.0\nkind: enflame.com/gpu\ndevices: []\n'
DAEMON='{\n  "log-level": "warn",\n  "runtimes": {}\n}\n'

@test "shim: bundle on a full disk: config.json intact, no temp file, ENOSPC named, no container" {
  shim_write_fault full
}

@test "shim: read-only bundle folder: config.json intact, no temp file, EROFS named, no container" {
  shim_write_fault ro
}

@test "shim: bundle on a failing disk (EIO): config.json intact, no temp file, EIO named, no container" {
  shim_write_fault eio-sync
}

@test "cdi generate --output on a full disk: old spec intact, no temp file, one error line" {
  ctk_write_fault full "$SCRATCH/cdi/enflame.yaml" "$SPEC" "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.yaml"
}

@test "cdi generate --output into a read-only folder: old spec intact, one error line" {
  ctk_write_fault ro "$SCRATCH/cdi/enflame.yaml" "$SPEC" "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.yaml"
}

@test "cdi generate --output on a failing disk (EIO at fsync): old spec intact, one error line" {
  ctk_write_fault eio "$SCRATCH/cdi/enflame.yaml" "$SPEC" "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.yaml"
}

@test "runtime configure --runtime docker on a full disk: daemon.json intact, one error line" {
  ctk_write_fault full "$SCRATCH/etc/daemon.json" "$DAEMON" \
    "$CTK" runtime configure --runtime docker --config "$SCRATCH/etc/daemon.json"
}

@test "runtime configure --runtime docker in a read-only folder: daemon.json intact, one error line" {
  ctk_write_fault ro "$SCRATCH/etc/daemon.json" "$DAEMON" \
    "$CTK" runtime configure --runtime docker --config "$SCRATCH/etc/daemon.json"
}

@test "runtime configure --runtime docker on a failing disk (EIO at fsync): daemon.json intact" {
  ctk_write_fault eio "$SCRATCH/etc/daemon.json" "$DAEMON" \
    "$CTK" runtime configure --runtime docker --config "$SCRATCH/etc/daemon.json"
  [ ! -e "$SCRATCH/etc/daemon.json.enflame.bak" ]
}

@test "runtime configure --runtime docker with a backup already there: the write itself fails cleanly" {
  # configure keeps the first .enflame.bak it made, so here the failing write is daemon.json's own.
  local kind
  for kind in full ro eio; do
    WITH_BACKUP=1 ctk_write_fault "$kind" "$SCRATCH/$kind/daemon.json" '{\n  "log-level": "warn"\n}\n' \
      "$CTK" runtime configure --runtime docker --config "$SCRATCH/$kind/daemon.json"
    [[ "$stderr" == "error: writing '$SCRATCH/$kind/daemon.json': "* ]]
  done
}

# --- efsmi faults: discovery is bounded and falls back to libefml, or fails clearly ---

# faulty_host NAME FAULTS [efml]: a 2-card host with these faults (and libefml unless "noefml"),
# and NAME.toml, a config for it with efsmi-timeout-ms = $TIMEOUT_MS: 3 s by default, which a
# flooding or dying efsmi on a loaded 2-core machine (or under ASan) never reaches, so these
# tests see the fault they made; the tests of the timeout itself set a short one, as their efsmi
# sleeps for a minute and can never answer within it.
TIMEOUT_MS=3000
faulty_host() {
  sim_example 2 > "$SCRATCH/$1.yaml"
  if [ "${3:-}" = noefml ]; then
    printf 'faults: {%s, efml_absent: true}\n' "$2" >> "$SCRATCH/$1.yaml"
  else
    printf 'faults: {%s}\n' "$2" >> "$SCRATCH/$1.yaml"
  fi
  sim_host "$SCRATCH/$1.yaml" "$SCRATCH/$1" >/dev/null
  printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\nefsmi-timeout-ms = %s\n' \
    "$SCRATCH/$1" "$SCRATCH/$1" "$TIMEOUT_MS" > "$SCRATCH/$1.toml"
}

# bounded CMD...: run CMD with the host's config, killed after 30 s (status 124 = not bounded:
# a hanging efsmi sleeps 60 s, a flooding one never stops).
bounded() { ENFLAME_CTK_CONFIG="$SCRATCH/$H.toml" run --separate-stderr timeout 30 "$@"; }

# libefml_answers NAME FAULTS REASON: on a host NAME whose efsmi has FAULTS, `info` falls back to
# libefml and says why efsmi-json was not used (REASON), and `cdi generate` writes a spec that
# lists card 1, all within the bound.
libefml_answers() {
  H=$1; faulty_host "$H" "$2"
  bounded "$CTK" info
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "backend: libefml" ]
  [ "${lines[1]}" = "  not used: efsmi-json: $3" ]
  bounded "$CTK" cdi generate --no-drs --output "$SCRATCH/spec-$H.yaml"
  [ "$status" -eq 0 ]
  grep -q "name: \"1\"\|name: '1'\|name: 1$" "$SCRATCH/spec-$H.yaml"
}

@test "efsmi hangs beyond efsmi-timeout-ms: info and cdi generate fall back to libefml, bounded" {
  local TIMEOUT_MS=300
  libefml_answers hang "efsmi_sleep_ms: 60000" "efsmi timed out after 300 ms"
}

@test "efsmi hangs and no libefml: info and cdi generate fail with one bounded error line" {
  local TIMEOUT_MS=300
  H=hang2; faulty_host $H "efsmi_sleep_ms: 60000" noefml
  bounded "$CTK" info
  [ "$status" -eq 1 ]
  [[ "$stderr" == "error: no backend found the cards: efsmi-json: efsmi timed out after 300 ms; efsmi-text: efsmi timed out after 300 ms; libefml: "* ]]
  printf 'old\n' > "$SCRATCH/spec.yaml"
  bounded "$CTK" cdi generate --output "$SCRATCH/spec.yaml"
  [ "$status" -ne 0 ]
  [ "$status" -ne 124 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"efsmi timed out after 300 ms"* ]]
  [ "$(cat "$SCRATCH/spec.yaml")" = old ]
}

@test "efsmi floods its output without end: bounded by the output limit, libefml answers" {
  libefml_answers flood "efsmi_flood: true" \
    "$SCRATCH/flood/usr/local/efsmi/efsmi-1.4.3.4/efsmi: output larger than 4194304 bytes"
}

@test "efsmi floods and no libefml: one bounded error line, no spec written" {
  H=flood2; faulty_host $H "efsmi_flood: true" noefml
  bounded "$CTK" cdi generate --output "$SCRATCH/spec.yaml"
  [ "$status" -ne 0 ]
  [ "$status" -ne 124 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: "*"output larger than 4194304 bytes"* ]]
  [ ! -e "$SCRATCH/spec.yaml" ]
}

@test "efsmi dies by a signal (SIGSEGV, SIGKILL): the signal is named, libefml answers" {
  libefml_answers sig11 "efsmi_signal: 11" "efsmi was killed by signal 11 (Segmentation fault)"
  libefml_answers sig9 "efsmi_signal: 9" "efsmi was killed by signal 9 (Killed)"
}

@test "efsmi dies by a signal and no libefml: one bounded error line naming the signal" {
  H=sig2; faulty_host $H "efsmi_signal: 6" noefml
  bounded "$CTK" info
  [ "$status" -eq 1 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ "$stderr" == "error: no backend found the cards: efsmi-json: efsmi was killed by signal 6 (Aborted); "* ]]
}
