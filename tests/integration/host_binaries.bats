#!/usr/bin/env bats
# The host binaries (docs/host-binaries.md) on hosts that are not Debian 12: a Debian 11 root
# (bullseye, glibc 2.31, mmdebstrap --variant=minbase; the tarball cached in the static build
# folder) and a root with no shared library at all. The shim, the hook and enflame-ctk of
# $STATIC_BUILD_DIR (build/static) go into each root as the installer DaemonSet puts them
# (`enflame-ctk toolkit install --host-root`, which also generates the CDI spec by running the
# copied enflame-ctk chrooted there), then run with the root as their mount namespace's root:
# enflame-ctk info and cdi generate, the hook's prestart and the shim's create, both with this
# host's runc. That runc is a copy in /opt/host-runc with its own libraries beside it (its
# loader and rpath patched to that folder), so the roots' library folders stay as they were.
# The simulated host is laid out in each root at /sim. Mounts are made only in a private
# mount namespace per command (node_ns, in_root) and go with it.

load helpers
load host_roots
bats_require_minimum_version 1.5.0   # `run !`

STATIC_BUILD_DIR=${STATIC_BUILD_DIR:-$TOP/build/static}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

setup_file() {
  # without these, setup's `requires` says what is missing (bats 1.8 cannot skip here)
  [ "$(id -u)" -eq 0 ] && command -v mmdebstrap patchelf runc unshare > /dev/null || return 0
  FILE_DIR=$(mktemp -d /tmp/ectk-hostbin.XXXXXX)
  export FILE_DIR
  chmod 755 "$FILE_DIR"
  mkdir "$FILE_DIR/src"
  # what the image holds: the three binaries side by side
  local b
  for b in ctk/enflame-ctk runtime-shim/enflame-container-runtime hooks/enflame-container-runtime-hook; do
    [ -x "$STATIC_BUILD_DIR/$b" ] || { echo "no $STATIC_BUILD_DIR/$b: make host-binaries builds it" >&2; return 1; }
    cp "$STATIC_BUILD_DIR/$b" "$FILE_DIR/src/"
  done
  local rc=0 r
  bullseye_tarball "$STATIC_BUILD_DIR/bullseye-minbase.tar" || rc=$?
  [ "$rc" -ne 2 ] || return 0   # the mirror cannot be reached: FILE_SKIP_REASON says so
  [ "$rc" -eq 0 ] || return 1
  mkdir "$FILE_DIR/bullseye"
  tar -C "$FILE_DIR/bullseye" -xf "$STATIC_BUILD_DIR/bullseye-minbase.tar"
  bare_root "$FILE_DIR/bare"
  "$SIM_HOST" example --cards 2 > "$FILE_DIR/desc.yaml"
  for r in bullseye bare; do
    node_parts "$FILE_DIR/$r"
    # a failed install is each test's failure (setup), with the installer's own words
    node_ns "$FILE_DIR/$r" "$FILE_DIR/src/enflame-ctk" toolkit install --host-root "$FILE_DIR/$r" --runtime docker \
      --restart-mode none --driver-root /sim --dev-root /sim --accept-envvar-when-unprivileged true \
      --source-dir "$FILE_DIR/src" > "$FILE_DIR/$r.install" 2>&1 || echo "$r" >> "$FILE_DIR/install-failed"
  done
}

teardown_file() { remove_roots; }

setup() {
  requires root runc patchelf mmdebstrap unshare
  [ -z "${FILE_SKIP_REASON:-}" ] || skip_or_fail "$FILE_SKIP_REASON"
  setup_scratch
  [ -d "${FILE_DIR:-}" ] || { echo "setup_file did not lay out the roots"; return 1; }
}

teardown() { teardown_scratch; }

# bullseye_tarball TAR: TAR made with mmdebstrap unless it is there already. 2 when Debian's
# mirror cannot be reached, and FILE_SKIP_REASON says so (every test then skips, or fails
# under CI); 1 with mmdebstrap's error on any other failure.
bullseye_tarball() {
  [ -s "$1" ] && return 0
  local log=$FILE_DIR/mmdebstrap.log why
  mkdir -p "$(dirname "$1")"
  if mmdebstrap --variant=minbase bullseye "$1.part.tar" "$MIRROR" > "$log" 2>&1; then
    mv "$1.part.tar" "$1"
    return 0
  fi
  rm -f "$1.part.tar"
  if why=$(grep -m1 -E "Could not resolve|Could not connect|Unable to connect|unreachable|Connection failed|timed out" "$log"); then
    FILE_SKIP_REASON="Debian's mirror $MIRROR cannot be reached (mmdebstrap: $(sed 's/^ *//' <<<"$why"))"
    export FILE_SKIP_REASON
    return 2
  fi
  echo "mmdebstrap bullseye failed: $(grep '^E:' "$log" | head -n 3)" >&2
  return 1
}

# --- the checks, each run in both roots ---

# installed ROOT: the installer succeeded there, or why not.
installed() {
  local r
  r=$(basename "$1")
  if grep -qFx "$r" "$FILE_DIR/install-failed" 2>/dev/null; then
    echo "install into the $r root failed: $(tail -n 1 "$FILE_DIR/$r.install")"
    return 1
  fi
}

check_info() {
  installed "$1"
  run in_root "$1" "$TK/enflame-ctk" info
  echo "$output"
  [ "$status" -eq 0 ]
  info_says_two_cards
}

check_cdi_generate() {
  installed "$1"
  # the installer's spec, made by the copied enflame-ctk chrooted into the root
  run root_cat "$1" /var/run/cdi/enflame.com-gpu.yaml
  grep -Fx 'kind: enflame.com/gpu' <<<"$output"
  run in_root "$1" "$TK/enflame-ctk" cdi generate --output /tmp/spec.yaml
  echo "$output"
  [ "$status" -eq 0 ]
  grep -Fx -- '- name: "1"' "$1/tmp/spec.yaml"
  grep -F "hostPath: /sim/dev/gcu1" "$1/tmp/spec.yaml"
  rm -f "$1/tmp/spec.yaml"
}

check_hook() {
  installed "$1"
  local id
  id=$(unique_id hbh)
  root_bundle "$1" "$id" ENFLAME_VISIBLE_DEVICES=1
  bundle_edit "$1/bundles/$id" "c['hooks']={'prestart':[{'path':'$TK/enflame-container-runtime-hook','args':['enflame-container-runtime-hook','prestart']}]}"
  on_teardown "in_root '$1' runc --root $RUNC_STATE delete -f $id > /dev/null 2>&1"
  # create's output to a file: the created container keeps runc's stdio open
  in_root "$1" runc --root "$RUNC_STATE" create --bundle "/bundles/$id" "$id" > "$SCRATCH/create.out" 2>&1 < /dev/null ||
    { cat "$SCRATCH/create.out"; return 1; }
  created_with_card "$1" "$id"
  # the hook made the node, not runc: config.json names no device
  [[ $(jq '.linux.devices // [] | length' "$1/bundles/$id/config.json") == 0 ]]
}

check_shim_create() {
  installed "$1"
  local id
  id=$(unique_id hbs)
  root_bundle "$1" "$id" ENFLAME_VISIBLE_DEVICES=1
  on_teardown "in_root '$1' runc --root $RUNC_STATE delete -f $id > /dev/null 2>&1"
  in_root "$1" "$TK/enflame-container-runtime" --root "$RUNC_STATE" create --bundle "/bundles/$id" "$id" \
    > "$SCRATCH/create.out" 2>&1 < /dev/null || { cat "$SCRATCH/create.out"; return 1; }
  # config.json rewritten: card 1's node (the simulated host's) and not card 0's
  run jq -r '.linux.devices[].path' "$1/bundles/$id/config.json"
  grep -Fx /dev/gcu1 <<<"$output"
  refute_grep -Fx /dev/gcu0
  created_with_card "$1" "$id"
}

# check_status ROOT WHY: `toolkit status` (the installer's readiness probe) is Ready; with
# BUILD_DIR's dynamic hook in the toolkit folder it is not, and names the hook and WHY (a
# pattern); Ready again with the static hook back.
check_status() {
  installed "$1"
  local hook=$1$TK/enflame-container-runtime-hook
  run node_ns "$1" "$FILE_DIR/src/enflame-ctk" toolkit status --host-root "$1"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $(readelf -l "$HOOK") == *"program interpreter"* ]] ||
    skip_or_fail "$HOOK is static: this needs a dynamic one (BUILD_DIR of the dev preset)"
  on_teardown "cp '$FILE_DIR/src/enflame-container-runtime-hook' '$hook'"
  cp "$HOOK" "$hook"
  run node_ns "$1" "$FILE_DIR/src/enflame-ctk" toolkit status --host-root "$1"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  # shellcheck disable=SC2053  # $2 is a pattern
  [[ $output == "error: enflame-container-runtime-hook cannot run on this host: "$2 ]]
  cp "$FILE_DIR/src/enflame-container-runtime-hook" "$hook"
  run node_ns "$1" "$FILE_DIR/src/enflame-ctk" toolkit status --host-root "$1"
  [ "$status" -eq 0 ]
}

@test "the roots: bullseye has glibc 2.31, the bare root no loader and no shared library" {
  run in_root "$FILE_DIR/bullseye" getconf GNU_LIBC_VERSION
  [ "$output" = "glibc 2.31" ]
  [ ! -e "$FILE_DIR/bare/lib64" ]
  run find "$FILE_DIR/bare" -name '*.so*' -not -path "$FILE_DIR/bare/sim/*" -not -path "$FILE_DIR/bare/opt/host-runc/*"
  [ -z "$output" ]
}

@test "bullseye: enflame-ctk info finds the cards through the simulated efsmi" { check_info "$FILE_DIR/bullseye"; }
@test "no libraries: enflame-ctk info finds the cards through the simulated efsmi" { check_info "$FILE_DIR/bare"; }
@test "bullseye: the installer's CDI spec, and enflame-ctk cdi generate" { check_cdi_generate "$FILE_DIR/bullseye"; }
@test "no libraries: the installer's CDI spec, and enflame-ctk cdi generate" { check_cdi_generate "$FILE_DIR/bare"; }
@test "bullseye: the hook's prestart, run by runc, puts card 1 in the container" { check_hook "$FILE_DIR/bullseye"; }
@test "no libraries: the hook's prestart, run by runc, puts card 1 in the container" { check_hook "$FILE_DIR/bare"; }
@test "bullseye: the shim's create rewrites config.json with card 1 and runc creates the container" { check_shim_create "$FILE_DIR/bullseye"; }
@test "no libraries: the shim's create rewrites config.json with card 1 and runc creates the container" { check_shim_create "$FILE_DIR/bare"; }
@test "bullseye: toolkit status is Ready, and names a binary that cannot run here with the loader's reason" {
  check_status "$FILE_DIR/bullseye" "*: error while loading shared libraries: lib*.so*: cannot open shared object file: No such file or directory"
}
@test "no libraries: toolkit status is Ready, and names a binary that cannot run here with the loader's reason" {
  check_status "$FILE_DIR/bare" "cannot run '$TK/enflame-container-runtime-hook': the interpreter it names (its dynamic loader) is not on this host"
}
