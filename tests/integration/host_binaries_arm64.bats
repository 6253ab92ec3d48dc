#!/usr/bin/env bats
# The arm64 host binaries (docs/host-binaries.md, `make host-binaries ARCH=arm64`: preset
# static-arm64, $ARM64_BUILD_DIR = build/static-arm64) on this x86_64 machine, each run by
# qemu-aarch64-static named on the command line (binfmt_misc need not be registered). As
# host_binaries.bats does for x86_64: the shim, the hook and enflame-ctk go into a root with no
# loader and no shared library (the simulated cards at /sim, this host's runc in /opt/host-runc,
# qemu-aarch64-static in /usr/bin), and run with that root as their mount namespace's root:
# enflame-ctk info and cdi generate, the hook's prestart run by runc, the shim's create on a
# bundle asking for card 1. The root's toolkit folder and config are laid out by hand, with
# the arm64 enflame-ctk's own `config --set`: `toolkit install` runs the enflame-ctk it copies,
# which this x86_64 kernel cannot exec without binfmt_misc. The programs the arm64 binaries
# exec (efsmi's simulator, runc, ldconfig) are this host's and run natively.

load helpers
load host_roots
bats_require_minimum_version 1.5.0

ARM64_BUILD_DIR=${ARM64_BUILD_DIR:-$TOP/build/static-arm64}
QEMU=/usr/bin/qemu-aarch64-static
BINS=(ctk/enflame-ctk runtime-shim/enflame-container-runtime hooks/enflame-container-runtime-hook)

setup_file() {
  # without these, setup's `requires` says what is missing (bats 1.8 cannot skip here)
  [ "$(id -u)" -eq 0 ] && command -v patchelf runc unshare > /dev/null && [ -x "$QEMU" ] || return 0
  local b
  for b in "${BINS[@]}"; do
    if [ ! -x "$ARM64_BUILD_DIR/$b" ]; then
      export FILE_SKIP_REASON="no $ARM64_BUILD_DIR/$b: make host-binaries ARCH=arm64 builds it"
      return 0
    fi
  done
  FILE_DIR=$(mktemp -d /tmp/ectk-hostbin-arm64.XXXXXX)
  export FILE_DIR
  chmod 755 "$FILE_DIR"
  local r=$FILE_DIR/bare
  "$SIM_HOST" example --cards 2 > "$FILE_DIR/desc.yaml"
  bare_root "$r"
  node_parts "$r"
  cp "$QEMU" "$r/usr/bin/"
  # the toolkit as the installer lays it out: the binaries in $TK, its config naming the driver
  mkdir -p "$r$TK" "$r/etc/enflame-container-runtime"
  for b in "${BINS[@]}"; do cp "$ARM64_BUILD_DIR/$b" "$r$TK/"; done
  cp "$TOP/packaging/config.toml" "$r/etc/enflame-container-runtime/config.toml"
  in_root "$r" "$QEMU" "$TK/enflame-ctk" config --set driver-root=/sim --set dev-root=/sim \
    --set accept-envvar-when-unprivileged=true --in-place /etc/enflame-container-runtime/config.toml \
    > "$FILE_DIR/config.out" 2>&1 || echo "config --set failed: $(cat "$FILE_DIR/config.out")" > "$FILE_DIR/layout-failed"
}

teardown_file() { remove_roots; }

setup() {
  requires root runc patchelf unshare qemu-aarch64-static
  [ -z "${FILE_SKIP_REASON:-}" ] || skip_or_fail "$FILE_SKIP_REASON"
  setup_scratch
  [ -d "${FILE_DIR:-}" ] || { echo "setup_file did not lay out the root"; return 1; }
  [ ! -e "$FILE_DIR/layout-failed" ] || { cat "$FILE_DIR/layout-failed"; return 1; }
  R=$FILE_DIR/bare
}

teardown() { teardown_scratch; }

# arm ROOT PROGRAM ARGS...: the toolkit's arm64 PROGRAM run by qemu, in ROOT (in_root).
arm() { local r=$1 p=$2; shift 2; in_root "$r" "$QEMU" "$TK/$p" "$@"; }

@test "arm64: the three are aarch64 static PIEs (no loader, no library), and the root has no shared library" {
  local b f
  for b in "${BINS[@]}"; do
    f=$ARM64_BUILD_DIR/$b
    run -0 file -b "$f"
    [[ $output == *"ARM aarch64"* ]]
    [[ $output == *"static-pie linked"* ]]
    readelf -h "$f" | grep -E '^ +Machine: +AArch64$'
    readelf -h "$f" | grep -E '^ +Type: +DYN '
    [[ $(readelf -l "$f") != *"program interpreter"* ]]
    [[ $(readelf -d "$f") != *"(NEEDED)"* ]]
  done
  [ ! -e "$R/lib64" ]
  run find "$R" -name '*.so*' -not -path "$R/sim/*" -not -path "$R/opt/host-runc/*"
  [ -z "$output" ]
}

@test "arm64 under qemu: libefml and the compute libraries are looked for in /usr/lib/aarch64-linux-gnu, not the x86_64 folder" {
  run arm "$R" enflame-ctk config
  echo "$output"
  [ "$status" -eq 0 ]
  grep -E "^library-search-paths = .*'/usr/lib/aarch64-linux-gnu'" <<<"$output"
  refute_grep -F x86_64-linux-gnu
}

@test "arm64 under qemu: enflame-ctk info finds the cards through the simulated efsmi" {
  run arm "$R" enflame-ctk info
  echo "$output"
  [ "$status" -eq 0 ]
  info_says_two_cards
}

@test "arm64 under qemu: enflame-ctk cdi generate writes a spec with both cards" {
  on_teardown "rm -f '$R/tmp/spec.yaml'"
  run arm "$R" enflame-ctk cdi generate --output /tmp/spec.yaml
  echo "$output"
  [ "$status" -eq 0 ]
  grep -Fx 'kind: enflame.com/gpu' "$R/tmp/spec.yaml"
  grep -Fx -- '- name: "0"' "$R/tmp/spec.yaml"
  grep -Fx -- '- name: "1"' "$R/tmp/spec.yaml"
  grep -F "hostPath: /sim/dev/gcu1" "$R/tmp/spec.yaml"
  # what a CDI reader checks: the spec validates
  run arm "$R" enflame-ctk cdi validate /tmp/spec.yaml
  echo "$output"
  [ "$status" -eq 0 ]
}

# hook_bundle ID ENV...: a bundle in the root whose prestart hook is the arm64 hook, which runc
# execs as qemu's program; its container deleted in teardown.
hook_bundle() {
  local id=$1; shift
  root_bundle "$R" "$id" "$@"
  bundle_edit "$R/bundles/$id" "c['hooks']={'prestart':[{'path':'$QEMU','args':['qemu-aarch64-static','$TK/enflame-container-runtime-hook','prestart']}]}"
  on_teardown "in_root '$R' runc --root $RUNC_STATE delete -f $id > /dev/null 2>&1"
}

# The hook joins the container's mount namespace to make the nodes: setns(CLONE_NEWNS), which
# the kernel refuses to a process with more than one thread, and qemu-user always runs one of
# its own beside the program. So under qemu the hook's prestart is checked up to that join:
# with no card asked it completes and runc creates the container; asked for card 1 it reads
# runc's state, the config and the cards and fails at the join, and at nothing before it.
@test "arm64 under qemu: the hook's prestart, run by runc, completes for a container asking for no card" {
  local id st
  id=$(unique_id hbh64)
  hook_bundle "$id" ENFLAME_VISIBLE_DEVICES=void
  in_root "$R" runc --root "$RUNC_STATE" create --bundle "/bundles/$id" "$id" > "$SCRATCH/create.out" 2>&1 < /dev/null ||
    { cat "$SCRATCH/create.out"; return 1; }
  st=$(in_root "$R" runc --root "$RUNC_STATE" state "$id")
  [[ $(jq -r .status <<<"$st") == created ]]
  [ ! -e "/proc/$(jq -r .pid <<<"$st")/root/dev/gcu1" ]
}

@test "arm64 under qemu: the hook's prestart, run by runc for card 1, reaches the container's mount namespace (qemu-user's limit)" {
  local id
  id=$(unique_id hbh64)
  hook_bundle "$id" ENFLAME_VISIBLE_DEVICES=1
  run in_root "$R" runc --root "$RUNC_STATE" create --bundle "/bundles/$id" "$id" < /dev/null
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"error running hook"*"error: injecting into container $id: entering /proc/"*"/ns/mnt: Invalid argument"* ]]
}

# shim_create ID ENV...: the arm64 shim's create (by qemu) on a new bundle; runc's output in
# $SCRATCH/create.out, its exit status in $shim_rc.
shim_create() {
  local id=$1; shift
  root_bundle "$R" "$id" "$@"
  on_teardown "in_root '$R' runc --root $RUNC_STATE delete -f $id > /dev/null 2>&1"
  shim_rc=0
  arm "$R" enflame-container-runtime --root "$RUNC_STATE" create --bundle "/bundles/$id" "$id" \
    > "$SCRATCH/create.out" 2>&1 < /dev/null || shim_rc=$?
}

@test "arm64 under qemu: the shim's create rewrites config.json with card 1 and execs runc, which creates the container from it" {
  local id cfg
  id=$(unique_id hbs64)
  shim_create "$id" ENFLAME_VISIBLE_DEVICES=1
  cfg=$R/bundles/$id/config.json
  # config.json rewritten: card 1's node (the simulated host's numbers) and not card 0's
  run jq -r '.linux.devices[].path' "$cfg"
  grep -Fx /dev/gcu1 <<<"$output"
  refute_grep -Fx /dev/gcu0
  [ "$(jq -r '.linux.devices[] | select(.path == "/dev/gcu1") | "\(.major):\(.minor)"' "$cfg")" = \
    "$(stat -c '%Hr:%Lr' "$R/sim/dev/gcu1")" ]
  # ... with the ldcache hook: the enflame-ctk beside the shim (its own path, as qemu reports it)
  [ "$(jq -r '.hooks.createContainer[0].path' "$cfg")" = "$TK/enflame-ctk" ]
  [ "$(jq -r '.hooks.createContainer[0].args[1:3] | join(" ")' "$cfg")" = "hook update-ldcache" ]
  # the shim exec'd runc, which ran that hook: an arm64 program this kernel cannot exec itself
  cat "$SCRATCH/create.out"
  [ "$shim_rc" -ne 0 ]
  grep -F "fork/exec $TK/enflame-ctk: exec format error" "$SCRATCH/create.out"
  # without that hook, runc creates the container from the shim's config.json: card 1 inside
  bundle_edit "$R/bundles/$id" "del c['hooks']['createContainer']"
  in_root "$R" runc --root "$RUNC_STATE" delete -f "$id" > /dev/null 2>&1 || true
  in_root "$R" runc --root "$RUNC_STATE" create --bundle "/bundles/$id" "$id" > "$SCRATCH/create.out" 2>&1 < /dev/null ||
    { cat "$SCRATCH/create.out"; return 1; }
  created_with_card "$R" "$id"
}
