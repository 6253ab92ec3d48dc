#!/usr/bin/env bats
# enflame-container-runtime-hook (legacy prestart/createRuntime) and `enflame-ctk hook ...`
# (createContainer) against real runc and crun (crun-hybrid wrapper), with a simulated host.
# Checks are what a user sees inside the container: nodes, mountinfo, the ldcache.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

setup() {
  requires root runc python3
  setup_scratch
  sim_example 3 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  # the spec dirs are the test's own: the hook prefers a fresh spec there (none by default)
  mkdir -p "$SCRATCH/cdi"
  printf '[enflame-container-runtime]\nlog-file = "%s"\nlog-level = "debug"\nspec-dirs = ["%s"]\n' \
    "$SCRATCH/hook.log" "$SCRATCH/cdi" >> "$SCRATCH/config.toml"
  crun_hybrid "$SCRATCH/crun-hybrid"
  MAJOR=$(stat -c '%t' "$SCRATCH/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
}

teardown() { teardown_scratch; }

# The probe every container runs: what a user would look at.
PROBE='["sh","-c","ls -l /dev/; echo ==; cat /proc/self/mountinfo; echo ==; '"$DEVICE_OPEN"'; echo ==; cat /etc/ld.so.conf.d/00-enflame.conf; true"]'

# hook_bundle DIR ENV...: a bundle whose process env has ENV... and the prestart hook.
hook_bundle() {
  local dir=$1; shift
  probe_bundle "$dir" "$PROBE" "$@"
  bundle_edit "$dir" "c['hooks']={'prestart':[{'path':'$HOOK','args':['enflame-container-runtime-hook','prestart'],'env':['ENFLAME_CTK_CONFIG=$SCRATCH/config.toml']}]}"
}

# run_in RUNTIME DIR: run the bundle with a fresh id; output in $output.
run_in() {
  local rt=$1 dir=$2 id
  id=$(unique_id hk)
  on_teardown "$rt delete -f $id >/dev/null 2>&1"
  run bash -c "cd '$dir' && timeout 60 '$rt' run '$id' 2>&1"
}

# devices_and_libs_ok: the checks of the main test (cards 0 and 1 of 3) on $output.
devices_and_libs_ok() {
  echo "$output" | grep -E "^c.* $MAJOR, +0 .* gcu0$"
  echo "$output" | grep -E "^c.* $MAJOR, +1 .* gcu1$"
  echo "$output" | grep -E "^c.* $MAJOR, +255 .* gcuctl$"
  # card 2 is not there: no node, no device-cgroup rule
  no_card "$SCRATCH/desc.yaml" 2
  # libefml.so.1 is a read-only, nosuid, nodev bind mount
  echo "$output" | grep -E " /usr/lib/libefml.so.1 ro,nosuid,nodev"
  # the device cgroup lets exactly the injected nodes open; card 2, made with mknod where the
  # bundle has CAP_MKNOD (hook_bundle), is denied
  if [ -z "${1:-}" ]; then device_access "0 1" denied; else device_access "0 1"; fi
  echo "$output" | grep -Fx "/usr/lib"
  if [ -z "${1:-}" ]; then
    # busybox has no ldconfig: read the rootfs cache with the host's
    /sbin/ldconfig -C "$SCRATCH/b/rootfs/etc/ld.so.cache" -p | grep -E "=> /usr/lib/libefml"
  else
    echo "$output" | grep -E "=> /usr/lib/libefml"  # the probe ran the host's ldconfig -p inside
  fi
}

@test "runc: prestart hook injects gcu0, gcu1, gcuctl and libefml read-only; ldcache updated" {
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0,1
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  devices_and_libs_ok
}

@test "crun: prestart hook injects the same (crun says \"created\" and a relative root)" {
  requires crun unshare
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0,1
  run_in "$SCRATCH/crun-hybrid" "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  devices_and_libs_ok
}

@test "runc: createRuntime stage works too, and running the hook twice changes nothing" {
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=1
  bundle_edit "$SCRATCH/b" "h=c['hooks']['prestart'][0]; c['hooks']['createRuntime']=[dict(h, args=['enflame-container-runtime-hook','createRuntime'])]"
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | grep -c ' /usr/lib/libefml.so.1 ')" -eq 1 ]
  [ "$(echo "$output" | grep -cE 'gcu1$')" -eq 1 ]
  device_access "1" denied
  no_card "$SCRATCH/desc.yaml" 0 2
}

# starts_with_nothing DIR: runc runs the bundle, and the container has no card node, no card's
# device-cgroup rule and no library of ours.
starts_with_nothing() {
  run_in runc "$1"
  echo "$output"
  [ "$status" -eq 0 ]
  refute_grep -E "gcu"
  refute_grep -E "libefml"
  no_card "$SCRATCH/desc.yaml" 0 1 2
}

@test "runc: no request (unset, empty, void) injects nothing" {
  for v in "" "ENFLAME_VISIBLE_DEVICES=" "ENFLAME_VISIBLE_DEVICES=void"; do
    rm -rf "$SCRATCH/b"
    if [ -n "$v" ]; then hook_bundle "$SCRATCH/b" "$v"; else hook_bundle "$SCRATCH/b"; fi
    starts_with_nothing "$SCRATCH/b"
  done
}

@test "runc: ENFLAME_VISIBLE_DEVICES=none gives the control node and utilities, no card" {
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=none
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "gcuctl$"
  refute_grep -E "gcu[0-9]$"
  no_card "$SCRATCH/desc.yaml" 0 1 2
  echo "$output" | grep -E " /usr/bin/efsmi ro,nosuid,nodev"
}

@test "runc: a card that does not exist refuses the container with one clear line" {
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=7
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "ENFLAME_VISIBLE_DEVICES: unknown device '7'"
  [ ! -e "$SCRATCH/b/rootfs/etc/ld.so.conf.d" ]
  [ ! -e "$SCRATCH/b/rootfs/usr/lib" ]
}

@test "enflame-ctk hook update-ldcache, create-symlinks, chmod as createContainer hooks (runc and crun)" {
  requires crun unshare
  for rt in runc "$SCRATCH/crun-hybrid"; do
    rm -rf "$SCRATCH/b"
    oci_bundle "$SCRATCH/b" '["sh","-c","ls -l /usr/lib/enflame/ /opt/tool; readlink /usr/lib/enflame/libz.so"]'
    mkdir -p "$SCRATCH/b/rootfs/usr/lib/enflame" "$SCRATCH/b/rootfs/opt"
    cp "$(readlink -f /usr/lib/x86_64-linux-gnu/libz.so.1)" "$SCRATCH/b/rootfs/usr/lib/enflame/libz.so.1.2.13"
    echo tool > "$SCRATCH/b/rootfs/opt/tool"; chmod 600 "$SCRATCH/b/rootfs/opt/tool"
    local env="'env':['PATH=/usr/sbin:/usr/bin:/sbin:/bin','ENFLAME_CTK_CONFIG=$SCRATCH/config.toml']"
    bundle_edit "$SCRATCH/b" "c['hooks']={'createContainer':[
      {'path':'$CTK','args':['enflame-ctk','hook','update-ldcache','--folder','/usr/lib/enflame'],$env},
      {'path':'$CTK','args':['enflame-ctk','hook','create-symlinks','--link','libz.so.1::/usr/lib/enflame/libz.so'],$env},
      {'path':'$CTK','args':['enflame-ctk','hook','chmod','--mode','755','--path','/opt/tool'],$env}]}"
    run_in "$rt" "$SCRATCH/b"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E "^-rwxr-xr-x .* /opt/tool$"
    echo "$output" | grep -Fx "libz.so.1"
    grep -Fx /usr/lib/enflame "$SCRATCH/b/rootfs/etc/ld.so.conf.d/00-enflame.conf"
    /sbin/ldconfig -C "$SCRATCH/b/rootfs/etc/ld.so.cache" -p | grep -F "libz.so.1 (libc6,x86-64) => /usr/lib/enflame/libz.so.1"
  done
}

# --- bad input: one line, non-zero exit, nothing mounted or created ---

# hook_direct STATE_JSON: run the hook by hand with STATE_JSON on stdin; stderr only in $output.
hook_direct() {
  run bash -c "printf '%s' '$1' | ENFLAME_CTK_CONFIG='$SCRATCH/config.toml' '$HOOK' prestart 2>&1 >/dev/null"
}

bad_input_ok() {  # $1 = expected line
  echo "output: $output"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [ "$output" = "$1" ]
  [ "$(grep -c "$SCRATCH" /proc/self/mountinfo)" -eq 0 ]
  [ ! -e "$SCRATCH/b/rootfs/dev/gcu0" ]
  [ ! -e "$SCRATCH/b/rootfs/etc/ld.so.conf.d" ]
}

@test "bad input: non-JSON and truncated state" {
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  hook_direct 'not json'
  bad_input_ok "error: container state on stdin: not valid JSON at byte 2: syntax error while parsing value - invalid literal; last read: 'no'"
  hook_direct "{\"pid\": 1, \"bundle\": \"$SCRATCH/b\""
  echo "$output" | grep -E "^error: container state on stdin: not valid JSON at byte [0-9]+: "
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  hook_direct ''
  bad_input_ok "error: container state on stdin: empty"
}

@test "bad input: a pid that is gone" {
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  sh -c 'exit 0' & local gone=$!; wait $gone
  hook_direct "{\"ociVersion\":\"1.0.2\",\"id\":\"x\",\"status\":\"creating\",\"pid\":$gone,\"bundle\":\"$SCRATCH/b\"}"
  bad_input_ok "error: container process $gone is gone"
}

@test "bad input: a bundle without config.json, and a rootfs that is a file" {
  mkdir -p "$SCRATCH/empty"
  hook_direct "{\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$SCRATCH/empty\"}"
  bad_input_ok "error: opening $SCRATCH/empty/config.json: No such file or directory"
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  rm -rf "$SCRATCH/b/rootfs"; echo file > "$SCRATCH/b/rootfs"
  hook_direct "{\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$SCRATCH/b\"}"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$output" = "error: rootfs $SCRATCH/b/rootfs is not a folder" ]
}

@test "bad input: a card that does not exist, by hand" {
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0,9
  hook_direct "{\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$SCRATCH/b\"}"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  echo "$output" | grep -F "error: ENFLAME_VISIBLE_DEVICES: unknown device '9': no card with index 9"
  [ ! -e "$SCRATCH/b/rootfs/dev/gcu0" ]
}

@test "bad input: another vendor's CDI name is refused, its devices in the spec dirs not injected" {
  other_vendor_spec "$SCRATCH/cdi"
  for v in othervendor.com/gpu=all 0,othervendor.com/gpu=all; do
    rm -rf "$SCRATCH/b"
    hook_bundle "$SCRATCH/b" "ENFLAME_VISIBLE_DEVICES=$v"
    bundle_edit "$SCRATCH/b" "c['process']['args']=['cat','/other.txt']"
    run_in runc "$SCRATCH/b"
    echo "$output"
    [ "$status" -ne 0 ]
    echo "$output" | grep -F "ENFLAME_VISIBLE_DEVICES: CDI device 'othervendor.com/gpu=all' is not of kind enflame.com/gpu: other kinds are not injected"
    refute_grep -Fx other-vendor
    [ ! -e "$SCRATCH/b/rootfs/other.txt" ]
    hook_direct "{\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$SCRATCH/b\"}"
    bad_input_ok "error: ENFLAME_VISIBLE_DEVICES: CDI device 'othervendor.com/gpu=all' is not of kind enflame.com/gpu: other kinds are not injected"
  done
}

@test "accept-envvar-when-unprivileged = false: the env of an unprivileged container asks for nothing" {
  printf 'accept-envvar-when-unprivileged = false\n' >> "$SCRATCH/config.toml"
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  starts_with_nothing "$SCRATCH/b"
  grep -F "no request: nothing to do" "$SCRATCH/hook.log"
  # CAP_SYS_ADMIN in the bounding set (--privileged): the env counts
  bundle_edit "$SCRATCH/b" "c['process']['capabilities']['bounding'].append('CAP_SYS_ADMIN')"
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  one_card_ok 0 crw-rw-rw-
}

# drs_host: the simulated host becomes 2 cards with the example's DRS instances in efsmi's
# placement layout (two 1g.11gb on card 0, one 2g.22gb on card 1); the config already points at it.
drs_host() {
  sim_example 2 --drs > "$SCRATCH/desc.yaml"
  printf 'faults: {drs_instance_layout: placement}\n' >> "$SCRATCH/desc.yaml"
  rm -rf "$SCRATCH/host"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  MAJOR=$(stat -c '%t' "$SCRATCH/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
}

@test "DRS: a bare hook fails closed without TOPS_VISIBLE_DEVICES (it cannot set env), works with it" {
  drs_host
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0:1g.11gb:1
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "the request needs TOPS_VISIBLE_DEVICES=0:1g.11gb:1 in the container's env, which a hook cannot set"
  hook_direct "{\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$SCRATCH/b\"}"
  bad_input_ok "error: the request needs TOPS_VISIBLE_DEVICES=0:1g.11gb:1 in the container's env, which a hook cannot set: run the container with enflame-container-runtime, or set it in the container's env"
  # another instance's address in the env is not enough
  bundle_edit "$SCRATCH/b" "c['process']['env'].append('TOPS_VISIBLE_DEVICES=0:1g.11gb:0')"
  hook_direct "{\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$SCRATCH/b\"}"
  bad_input_ok "error: the request needs TOPS_VISIBLE_DEVICES=0:1g.11gb:1 in the container's env, which a hook cannot set: run the container with enflame-container-runtime, or set it in the container's env"
  # the env already set (as the shim's legacy mode writes it): the parent card is given
  rm -rf "$SCRATCH/b"
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0:1g.11gb:1 TOPS_VISIBLE_DEVICES=0:1g.11gb:1
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "^c.* $MAJOR, +0 .* gcu0$"
  no_card "$SCRATCH/desc.yaml" 1
}

@test "usage errors and --version" {
  run "$HOOK"
  [ "$status" -eq 2 ]
  [ "$output" = "error: usage: enflame-container-runtime-hook prestart|createRuntime (OCI state on stdin)" ]
  run "$HOOK" poststop </dev/null
  [ "$status" -eq 0 ]
  run "$HOOK" --version
  [ "$status" -eq 0 ]
  [[ "$output" == "enflame-container-runtime-hook "* ]]
}

# --- where the edits come from (issue 15 part 3): spec on disk, libefml, efsmi, nothing ---

# rebuild_host PYTHON: the simulated host laid out afresh from its description edited by PYTHON
# (nothing of the old layout kept: a fault that removes a file must find it gone).
rebuild_host() {
  rm -rf "$SCRATCH/host"
  sim_rebuild "$SCRATCH/desc.yaml" "$SCRATCH/host" "$1"
}

# efsmi_recorder: the simulated efsmi becomes a wrapper that appends a line to
# $SCRATCH/efsmi.runs on every run, then runs the real one (a compiled wrapper: efsmi is run
# through a close-on-exec fd, which a #! script cannot be).
efsmi_recorder() {
  requires cc
  local real
  real=$(readlink -f "$SCRATCH/host/usr/local/efsmi/efsmi-"*/efsmi)
  mv "$real" "$real.real"
  printf '%s\n' '#include <fcntl.h>' '#include <unistd.h>' \
    'int main(int c, char** v) { int fd = open(LOG, O_WRONLY | O_APPEND | O_CREAT, 0644);' \
    '  (void)c; if (fd >= 0) { (void)!write(fd, "run\n", 4); close(fd); } execv(REAL, v); return 127; }' \
    > "$SCRATCH/efsmi-rec.c"
  cc -O1 -o "$real" -DLOG="\"$SCRATCH/efsmi.runs\"" -DREAL="\"$real.real\"" "$SCRATCH/efsmi-rec.c"
  : > "$SCRATCH/efsmi.runs"
}

# efsmi_runs: how many times efsmi ran since efsmi_recorder.
efsmi_runs() { wc -l < "$SCRATCH/efsmi.runs"; }

# one_card_ok N MODE: $output shows exactly card N of the 3 (and gcuctl), its node with MODE
# (ls -l's first field), and only that card opens.
one_card_ok() {
  echo "$output" | grep -E "^$2 .* $MAJOR, +$1 .* gcu$1$"
  echo "$output" | grep -E "^c.* $MAJOR, +255 .* gcuctl$"
  local m
  for m in 0 1 2; do [ "$m" = "$1" ] || no_card "$SCRATCH/desc.yaml" "$m"; done
  device_access "$1" denied
}

# start_with_card N: a bundle asking for card N through the hook, run by runc; it must start.
start_with_card() {
  hook_bundle "$SCRATCH/b" "ENFLAME_VISIBLE_DEVICES=$1"
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "source: a fresh spec on disk is used (its node mode shows), no efsmi run" {
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  # a mark only the spec carries: discovery makes the nodes 0666
  sed -i 's/fileMode: 438/fileMode: 384/' "$SCRATCH/cdi/enflame.com-gpu.yaml"
  efsmi_recorder
  start_with_card 1
  one_card_ok 1 crw-------
  grep -F "edits from the CDI spec on disk after" "$SCRATCH/hook.log"
  [ "$(efsmi_runs)" -eq 0 ]
}

@test "source: a stale spec (driver upgraded) is not used: discovery with libefml gives the card" {
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  sed -i 's/fileMode: 438/fileMode: 384/' "$SCRATCH/cdi/enflame.com-gpu.yaml"
  rebuild_host 'd["driver_version"] = "1.5.0.1"'
  efsmi_recorder
  start_with_card 2
  one_card_ok 2 crw-rw-rw-
  echo "$output" | grep -E "efsmi-1\.5\.0\.1/lib/libefml\.so\.1\.0\.0 /usr/lib/libefml\.so\.1 ro,"
  grep -F "the CDI spec on disk is stale" "$SCRATCH/hook.log"
  grep -F "edits from discovery (libefml) after" "$SCRATCH/hook.log"
  [ "$(efsmi_runs)" -eq 0 ]
}

@test "source: no spec, libefml answers in process: efsmi is never run" {
  efsmi_recorder
  start_with_card 0
  one_card_ok 0 crw-rw-rw-
  grep -F "edits from discovery (libefml) after" "$SCRATCH/hook.log"
  [ "$(efsmi_runs)" -eq 0 ]
}

@test "source: no spec and no libefml: efsmi answers (the recorder sees it run)" {
  rebuild_host 'd["faults"] = {"efml_absent": True}'
  efsmi_recorder
  start_with_card 1
  one_card_ok 1 crw-rw-rw-
  grep -F "edits from discovery (efsmi-json) after" "$SCRATCH/hook.log"
  [ "$(efsmi_runs)" -ge 1 ]
}

@test "source: neither libefml nor efsmi: the container is refused with one line, nothing injected" {
  rebuild_host 'd["faults"] = {"efml_absent": True, "efsmi_absent": True}'
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  hook_direct "{\"status\":\"creating\",\"pid\":$$,\"bundle\":\"$SCRATCH/b\"}"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ $output == "error: discovering the cards: no backend found the cards: efsmi-json: no efsmi under driver-root"* ]]
  [[ $output == *"; libefml: "* ]]
  [ ! -e "$SCRATCH/b/rootfs/dev/gcu0" ]
  [ ! -e "$SCRATCH/b/rootfs/etc/ld.so.conf.d" ]
  # and through runc: the start fails with that line
  run_in runc "$SCRATCH/b"
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "no backend found the cards"
}

# --- ldconfig only when the container's cache does not already resolve the libraries ---

@test "ldcache: ldconfig runs when the cache lacks the libraries and is skipped when it has them" {
  # one library file (libefml): no compute libraries
  rebuild_host 'd["runtime_libraries"] = []'
  hook_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  # the host's static ldconfig inside, to show what the container's ld.so sees
  bundle_edit "$SCRATCH/b" "c['mounts'].append({'destination':'/sbin/ldconfig','type':'bind','source':'/sbin/ldconfig','options':['rbind','ro']}); c['process']['args']=['sh','-c','ls -l /dev/; /sbin/ldconfig -p']"
  # 1. no cache in the image: ldconfig runs
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "=> /usr/lib/libefml"
  grep -F "needs an update: " "$SCRATCH/hook.log"
  [ "$(grep -c 'ldconfig not run' "$SCRATCH/hook.log")" -eq 0 ]
  # 2. the rootfs now has the cache (as an image built with the libraries would): skipped, but
  # the conf.d file is still written (an ldconfig run later inside keeps our folder)
  : > "$SCRATCH/hook.log"
  rm "$SCRATCH/b/rootfs/etc/ld.so.conf.d/00-enflame.conf"
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "=> /usr/lib/libefml"
  echo "$output" | grep -E "^c.* $MAJOR, +0 .* gcu0$"
  grep -F "already resolves every mounted library (3 mounts): ldconfig not run" "$SCRATCH/hook.log"
  grep -Fx /usr/lib "$SCRATCH/b/rootfs/etc/ld.so.conf.d/00-enflame.conf"
  # 3. a cache of other folders only (the image's own): ldconfig runs again
  mkdir -p "$SCRATCH/empty-lib"
  /sbin/ldconfig -X -C "$SCRATCH/b/rootfs/etc/ld.so.cache" -f /dev/null "$SCRATCH/empty-lib"
  run ! grep -F "=> /usr/lib/libefml" <(/sbin/ldconfig -C "$SCRATCH/b/rootfs/etc/ld.so.cache" -p)
  : > "$SCRATCH/hook.log"
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "=> /usr/lib/libefml"
  grep -F "needs an update: the cache resolves no soname in /usr/lib to" "$SCRATCH/hook.log"
  # 4. a hostile cache (cut short) is not trusted: ldconfig runs and rewrites it
  head -c 100 "$SCRATCH/b/rootfs/etc/ld.so.cache" > "$SCRATCH/cut"
  cp "$SCRATCH/cut" "$SCRATCH/b/rootfs/etc/ld.so.cache"
  : > "$SCRATCH/hook.log"
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "=> /usr/lib/libefml"
  grep -F "needs an update: ld.so.cache: byte" "$SCRATCH/hook.log"
  # 5. a FIFO in its place (a plain open would block the hook): not read, ldconfig runs
  rm "$SCRATCH/b/rootfs/etc/ld.so.cache"
  mkfifo "$SCRATCH/b/rootfs/etc/ld.so.cache"
  : > "$SCRATCH/hook.log"
  run_in runc "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -E "=> /usr/lib/libefml"
  grep -F "needs an update: /etc/ld.so.cache is not a regular file" "$SCRATCH/hook.log"
}

@test "podman --hooks-dir: the prestart hook from hooks.d (annotation-triggered), runc" {
  requires podman
  local pm=$SCRATCH/pm img=localhost/ectk-hooks-$$:bb
  mkdir -p "$pm/hooks.d"
  podman_conf "$pm/containers.conf"
  python3 - "$pm/hooks.d/enflame.json" "$HOOK" "$SCRATCH/config.toml" <<'PY'
import json, sys
json.dump({"version": "1.0.0",
           "hook": {"path": sys.argv[2], "args": ["enflame-container-runtime-hook", "prestart"],
                    "env": ["ENFLAME_CTK_CONFIG=" + sys.argv[3]]},
           "when": {"annotations": {r"^com\.enflame\.inject$": "^yes$"}},
           "stages": ["prestart"]}, open(sys.argv[1], "w"))
PY
  busybox_rootfs "$pm/rootfs"
  tar -C "$pm/rootfs" -cf "$pm/bb.tar" .
  PM=(env CONTAINERS_CONF="$pm/containers.conf" podman --root "$pm/root" --runroot "$pm/run" --tmpdir "$pm/tmp" --hooks-dir "$pm/hooks.d")
  on_teardown "grep -F ' $pm/' /proc/self/mountinfo | awk '{print \$5}' | sort -r | xargs -r -n1 umount -l"
  on_teardown "${PM[*]} rm -af >/dev/null 2>&1"
  "${PM[@]}" import "$pm/bb.tar" "$img" >/dev/null
  # the host's static ldconfig, bind-mounted, answers `ldconfig -p` inside
  run "${PM[@]}" run --rm --annotation com.enflame.inject=yes -e ENFLAME_VISIBLE_DEVICES=0,1 \
    -v /sbin/ldconfig:/sbin/ldconfig:ro "$img" \
    sh -c 'ls -l /dev/; cat /proc/self/mountinfo; '"$DEVICE_OPEN"'; cat /etc/ld.so.conf.d/00-enflame.conf; /sbin/ldconfig -p'
  echo "$output"
  [ "$status" -eq 0 ]
  devices_and_libs_ok inside
  # without the annotation the hook does not run
  run "${PM[@]}" run --rm -e ENFLAME_VISIBLE_DEVICES=0,1 "$img" ls /dev
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx null
  refute_grep -E "gcu"
}

@test "docker: the shim in legacy mode adds the prestart hook (containerd shim bundle, relative root)" {
  requires dockerd /usr/bin/docker unshare
  local dk=$SCRATCH/dk img=localhost/ectk-hooks-$$:bb cgp=ectk-hooks-$$
  mkdir -p "$dk"
  # the shim in legacy mode with our hook (config.toml ends in its table); the hook reads the
  # same file, which the shim names in the hook's env
  printf 'mode = "legacy"\nhook-path = "%s"\n' "$HOOK" >> "$SCRATCH/config.toml"
  cat > "$dk/daemon.json" <<JSON
{"data-root": "$dk/root", "exec-root": "$dk/exec", "pidfile": "$dk/dockerd.pid",
 "hosts": ["unix://$dk/docker.sock"], "storage-driver": "overlay2",
 "iptables": false, "ip6tables": false, "ip-forward": false, "ip-masq": false, "bridge": "none",
 "cgroup-parent": "$cgp", "runtimes": {"enflame": {"path": "$SHIM"}}}
JSON
  # dockerd's /run and /etc/docker are private (PRIVATE_RUN); the runtime inherits its env
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml setsid "${PRIVATE_RUN[@]}" dockerd --config-file "$dk/daemon.json" \
    > "$dk/dockerd.log" 2>&1 < /dev/null &
  local pid=$!
  on_teardown "for h in /sys/fs/cgroup/*/$cgp; do [ -d \$h ] && find \$h -depth -type d -exec rmdir {} \\; 2>/dev/null; done"
  on_teardown "stop_pid $pid"
  D=(/usr/bin/docker -H "unix://$dk/docker.sock")
  for _ in $(seq 120); do   # until dockerd answers, or is gone
    "${D[@]}" version >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  "${D[@]}" version >/dev/null || { log_errors "$dk/dockerd.log"; return 1; }
  [ "$(cat "$dk/dockerd.pid")" = "$pid" ]   # the pid teardown stops is the daemon's
  busybox_rootfs "$dk/rootfs"
  tar -C "$dk/rootfs" -cf "$dk/bb.tar" .
  "${D[@]}" import "$dk/bb.tar" "$img" >/dev/null
  on_teardown "${D[*]} rm -f \$(${D[*]} ps -aq) >/dev/null 2>&1"
  run "${D[@]}" run --rm --network none --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=0,1 \
    -v /sbin/ldconfig:/sbin/ldconfig:ro "$img" \
    sh -c 'ls -l /dev/; cat /proc/self/mountinfo; '"$DEVICE_OPEN"'; cat /etc/ld.so.conf.d/00-enflame.conf; /sbin/ldconfig -p; env'
  echo "$output"
  [ "$status" -eq 0 ]
  devices_and_libs_ok inside
  # legacy mode: the hook did the work, the shim left the env as it was (cdi mode makes it void)
  echo "$output" | grep -Fx "ENFLAME_VISIBLE_DEVICES=0,1"
  cat "$SCRATCH/hook.log"
  grep -E "container '[0-9a-f]{64}': mode legacy: .* 1 hooks" "$SCRATCH/hook.log"   # the shim's line
  grep -E "prestart hook: container [0-9a-f]{64} " "$SCRATCH/hook.log"
  grep -E "container [0-9a-f]{64}: 3 device nodes" "$SCRATCH/hook.log"   # gcu0, gcu1, gcuctl
  # the shim put the cards' rules in config.json: runc programmed the device cgroup, not the hook
  grep -E "container '[0-9a-f]{64}': mode legacy: .* 3 device-cgroup rules" "$SCRATCH/hook.log"
  grep -F "config.json already allows every node" "$SCRATCH/hook.log"
  # a request for a missing card refuses the container, and docker shows our line
  run "${D[@]}" run --rm --network none --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=5 "$img" true
  echo "$output"
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "ENFLAME_VISIBLE_DEVICES: unknown device '5'"
}
