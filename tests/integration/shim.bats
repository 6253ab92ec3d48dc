#!/usr/bin/env bats
# enflame-container-runtime (the runc shim) driven directly with runc's command line, over a
# busybox bundle, with runc and crun (crun-hybrid) as the low-level runtime and a simulated
# host of 4 cards. Checks are what a user sees inside the container.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

setup() {
  requires root runc python3
  setup_scratch
  sim_setup 4
  MAJOR=$(stat -c '%t' "$SCRATCH/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
  RR=$SCRATCH/runc-root   # a private runc state root: nothing shared with other sessions
  UUID2=$(python3 -c "import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))['cards'][2]['uuid'])" "$SCRATCH/desc.yaml" 2>/dev/null ||
          awk '/uuid:/{n++; if(n==3){gsub(/"/,"",$2); print $2}}' "$SCRATCH/desc.yaml")
}

teardown() { teardown_scratch; }

PROBE='["sh","-c","ls -l /dev/; echo ==; cat /proc/self/mountinfo; echo ==; '"$DEVICE_OPEN"'; echo ==; env; true"]'

# shim_bundle DIR ENV...: a bundle whose process env has ENV....
shim_bundle() { local dir=$1; shift; probe_bundle "$dir" "$PROBE" "$@"; }

# shim_run DIR [global flags...]: `shim [flags] run --bundle DIR ID`; output in $output.
shim_run() {
  local dir=$1 id; shift
  id=$(unique_id shim)
  on_teardown "runc --root '$RR' delete -f $id >/dev/null 2>&1"
  run timeout 60 "$SHIM" --root "$RR" "$@" run --bundle "$dir" "$id"
}

# cards_are "0 2": exactly these /dev/gcuN (with the host's major:minor), gcuctl, libefml
# read-only, and a device cgroup that lets exactly these cards open and denies the others
# (device_access); no node or UUID of the other cards of the host described in $DESC (default
# $SCRATCH/desc.yaml).
cards_are() {
  local want=" $1 " m others=()
  echo "$output" | grep -E "^c.* $MAJOR, +255 .* gcuctl$"
  echo "$output" | grep -E " /usr/lib/libefml.so(.1)? ro,nosuid,nodev"
  device_access "$1" denied
  for m in 0 1 2 3; do
    if [[ $want == *" $m "* ]]; then
      echo "$output" | grep -E "^c.* $MAJOR, +$m .* gcu$m$"
    else
      others+=("$m")
    fi
  done
  no_card "${DESC:-$SCRATCH/desc.yaml}" "${others[@]}"
}

@test "runc: ENFLAME_VISIBLE_DEVICES=0 gives gcu0 and gcuctl, libefml read-only, cgroup allows card 0" {
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "0"
  echo "$output" | grep -Fx "ENFLAME_VISIBLE_DEVICES=void"
}

@test "runc: ENFLAME_VISIBLE_DEVICES=0,2" {
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0,2
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "0 2"
}

@test "runc: ENFLAME_VISIBLE_DEVICES=all" {
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=all
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "0 1 2 3"
}

@test "runc: ENFLAME_VISIBLE_DEVICES=none gives gcuctl and utilities but no card" {
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=none
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are ""
}

@test "runc: a range 1-3 and GCU-n" {
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=1-2,GCU-3
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "1 2 3"
}

@test "runc: a UUID selects its card" {
  [ -n "$UUID2" ]
  shim_bundle "$SCRATCH/b" "ENFLAME_VISIBLE_DEVICES=$UUID2"
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "2"
}

# drs_host LAYOUT: a 2-card host with the example's DRS instances (two 1g.11gb on card 0, one
# 2g.22gb on card 1), efsmi listing them in LAYOUT (uuid | placement); the config points at it.
drs_host() {
  sim_example 2 --drs > "$SCRATCH/drs.yaml"
  printf 'faults: {drs_instance_layout: %s}\n' "$1" >> "$SCRATCH/drs.yaml"
  sim_host "$SCRATCH/drs.yaml" "$SCRATCH/drs" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/drs"
  DESC=$SCRATCH/drs.yaml
  MAJOR=$(stat -c '%t' "$SCRATCH/drs/dev/gcu0"); MAJOR=$((16#$MAJOR))
  EFSMI=$SCRATCH/drs/usr/local/efsmi/efsmi-1.4.3.4/efsmi
}

# drs_gives REQUEST CARD TOPS: a container asking for REQUEST gets card CARD only and
# TOPS_VISIBLE_DEVICES=TOPS.
drs_gives() {
  rm -rf "$SCRATCH/b"
  shim_bundle "$SCRATCH/b" "ENFLAME_VISIBLE_DEVICES=$1"
  shim_run "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  cards_are "$2"
  echo "$output" | grep -Fx "TOPS_VISIBLE_DEVICES=$3"
  [ "$(grep -c '^TOPS_VISIBLE_DEVICES=' <<<"$output")" -eq 1 ]
}

@test "runc, efsmi's older DRS layout (uuid): DRS-<uuid> and <card>:<profile>:<id> get the parent card" {
  drs_host uuid
  drs_gives DRS-4c1e9a52-0000-4000-8000-000000000000 0 DRS-4c1e9a52-0000-4000-8000-000000000000
  drs_gives 1:2g.22gb:0 1 DRS-4c1e9a52-0000-4000-8000-000000000002
  # An instance the host does not have: refused, config.json untouched, no container.
  rm -rf "$SCRATCH/b"
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-0000000000ff
  shim_fails "$SCRATCH/b" "unknown device 'DRS-4c1e9a52-0000-4000-8000-0000000000ff': no such DRS instance"
}

@test "runc, efsmi's placement layout: <card>:<profile>:<id> works, DRS-<uuid> cannot; created and destroyed instances followed" {
  drs_host placement
  drs_gives 0:1g.11gb:1 0 0:1g.11gb:1
  rm -rf "$SCRATCH/b"
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000000
  shim_fails "$SCRATCH/b" "unknown device 'DRS-4c1e9a52-0000-4000-8000-000000000000': no such DRS instance"
  # a partition made through efsmi, as gcushare makes one, is there for the next container
  "$EFSMI" -i 1 --drs --create-instance 0
  drs_gives 1:1g.11gb:1 1 1:1g.11gb:1
  "$EFSMI" -i 1 --drs --destroy-instance 1
  rm -rf "$SCRATCH/b"
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=1:1g.11gb:1
  shim_fails "$SCRATCH/b" "unknown device '1:1g.11gb:1': no such DRS instance"
}

@test "runc: void and unset leave config.json byte-identical (not even rewritten)" {
  for v in void "" unset; do
    rm -rf "$SCRATCH/b"
    if [ "$v" = unset ]; then shim_bundle "$SCRATCH/b"; else shim_bundle "$SCRATCH/b" "ENFLAME_VISIBLE_DEVICES=$v"; fi
    local before ino
    before=$(sha256sum < "$SCRATCH/b/config.json"); ino=$(stat -c %i "$SCRATCH/b/config.json")
    shim_run "$SCRATCH/b"
    [ "$status" -eq 0 ]
    [ "$(sha256sum < "$SCRATCH/b/config.json")" = "$before" ]
    [ "$(stat -c %i "$SCRATCH/b/config.json")" = "$ino" ]
    refute_grep -E "gcu"
    no_card "$SCRATCH/desc.yaml" 0 1 2 3
  done
}

@test "crun (crun-hybrid) as the low-level runtime" {
  requires crun unshare
  crun_hybrid "$SCRATCH/crun-hybrid"
  printf '[enflame-container-runtime]\nruntimes = ["%s"]\n' "$SCRATCH/crun-hybrid" >> "$SCRATCH/config.toml"
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=1,3
  local id; id=$(unique_id shimc)
  on_teardown "'$SCRATCH/crun-hybrid' --root '$RR' delete -f $id >/dev/null 2>&1"
  run timeout 60 "$SHIM" --root "$RR" run --bundle "$SCRATCH/b" "$id"
  [ "$status" -eq 0 ]
  cards_are "1 3"
  # crun's own state, not runc's: the container went through crun
  run ! runc --root "$RR" state "$id"
}

@test "passthrough: create/state/start/exec/kill/delete behave as runc's" {
  oci_bundle "$SCRATCH/b" '["sleep","300"]'
  bundle_edit "$SCRATCH/b" "c['process']['env'].append('ENFLAME_VISIBLE_DEVICES=1')"
  local id; id=$(unique_id shimp)
  on_teardown "runc --root '$RR' delete -f $id >/dev/null 2>&1"
  cd "$SCRATCH/b"   # no --bundle: the bundle is the working directory
  # the container's stdio must not be bats' pipes (a detached container keeps them open)
  "$SHIM" --root "$RR" create "$id" > "$SCRATCH/create.out" 2>&1 < /dev/null
  [ ! -s "$SCRATCH/create.out" ]
  local a b
  a=$("$SHIM" --root "$RR" state "$id"); b=$(runc --root "$RR" state "$id")
  [ "$a" = "$b" ]
  echo "$a" | grep -F '"status": "created"'
  "$SHIM" --root "$RR" start "$id" > /dev/null 2>&1 < /dev/null
  run "$SHIM" --root "$RR" exec "$id" sh -c 'ls /dev/gcu1 && echo exec-ok'
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "exec-ok"
  run "$SHIM" --root "$RR" exec "$id" ls /dev/gcu0
  [ "$status" -ne 0 ]
  a=$("$SHIM" --root "$RR" list -q); echo "$a" | grep -Fx "$id"
  "$SHIM" --root "$RR" kill "$id" KILL
  for _ in $(seq 50); do runc --root "$RR" state "$id" | grep -q '"stopped"' && break; sleep 0.1; done
  "$SHIM" --root "$RR" state "$id" | grep -F '"status": "stopped"'
  "$SHIM" --root "$RR" delete "$id"
  run runc --root "$RR" state "$id"
  [ "$status" -ne 0 ]
  # the same error for a container that does not exist: the same status and line, but for
  # the time= field runc stamps it with (two calls may fall in different seconds)
  run "$SHIM" --root "$RR" state "no-such-$id"; a="$status:$(without_time <<<"$output")"
  run runc --root "$RR" state "no-such-$id"; b="$status:$(without_time <<<"$output")"
  [ "$b" = '1:level=error msg="container does not exist"' ]
  [ "$a" = "$b" ]
}

@test "cdi mode: resolves through the spec dirs (env CDI name, index and annotation)" {
  mkdir -p "$SCRATCH/cdi"
  "$CTK" --config "$SCRATCH/config.toml" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml" ||
    ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  printf '[enflame-container-runtime]\nmode = "cdi"\nspec-dirs = ["%s"]\n' "$SCRATCH/cdi" >> "$SCRATCH/config.toml"
  shim_bundle "$SCRATCH/b" "ENFLAME_VISIBLE_DEVICES=enflame.com/gpu=1,3"
  bundle_edit "$SCRATCH/b" "c['annotations']={'cdi.k8s.io/test':'enflame.com/gpu=0'}"
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "0 1 3"
  # an index the spec does not name fails the create
  rm -rf "$SCRATCH/c"; shim_bundle "$SCRATCH/c" ENFLAME_VISIBLE_DEVICES=7
  cp "$SCRATCH/c/config.json" "$SCRATCH/c.before"
  shim_run "$SCRATCH/c"
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "unknown CDI device 'enflame.com/gpu=7'"
  cmp "$SCRATCH/c/config.json" "$SCRATCH/c.before"
}

# A pod with RuntimeClass enflame on containerd with CDI on: containerd has applied the cards'
# CDI edits to config.json (nodes, cgroup rules, mounts, the ldcache hook) before our shim runs.
# The spec's ENFLAME_VISIBLE_DEVICES=void normally stops the shim there; if the env still names
# the cards (an engine that applied the devices but kept the env), the shim's edit must leave
# each node, rule, mount and hook once.
@test "a config.json that already has the cards' edits: the shim adds nothing twice" {
  mkdir -p "$SCRATCH/cdi"
  "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  printf '[enflame-container-runtime]\nspec-dirs = ["%s"]\n' "$SCRATCH/cdi" >> "$SCRATCH/config.toml"
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=1,3
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "1 3"
  cp "$SCRATCH/b/config.json" "$SCRATCH/once.json"
  [ "$(jq '[.hooks.createContainer[]?] | length' "$SCRATCH/once.json")" -ge 1 ]   # the spec's hook is in
  # the edits are in; the env names the cards again, as it would had the engine kept it
  bundle_edit "$SCRATCH/b" "c['process']['env']=[e for e in c['process']['env'] if not e.startswith('ENFLAME_VISIBLE_DEVICES=')]+['ENFLAME_VISIBLE_DEVICES=1,3']"
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "1 3"
  # the same devices, rules, mounts and hooks as after one edit, each once
  local q='{d: .linux.devices, r: .linux.resources.devices, m: .mounts, h: .hooks}'
  [ "$(jq -S "$q" "$SCRATCH/b/config.json")" = "$(jq -S "$q" "$SCRATCH/once.json")" ]
  [ -z "$(jq -r '.linux.devices[].path' "$SCRATCH/b/config.json" | sort | uniq -d)" ]
  [ -z "$(jq -r '.mounts[].destination' "$SCRATCH/b/config.json" | sort | uniq -d)" ]
  [ -z "$(jq -c '.linux.resources.devices[]' "$SCRATCH/b/config.json" | sort | uniq -d)" ]
  [ -z "$(jq -c '.hooks[][]' "$SCRATCH/b/config.json" | sort | uniq -d)" ]
}

@test "auto mode prefers a spec on disk that names the device" {
  mkdir -p "$SCRATCH/cdi"
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  # mark the spec so we can tell it was used
  sed -i 's/^\( *\)- ENFLAME_VISIBLE_DEVICES=void$/&\n\1- FROM_SPEC_ON_DISK=1/' "$SCRATCH/cdi/enflame.com-gpu.yaml"
  grep -F FROM_SPEC_ON_DISK "$SCRATCH/cdi/enflame.com-gpu.yaml"   # the sed found the env to mark
  printf '[enflame-container-runtime]\nspec-dirs = ["%s"]\n' "$SCRATCH/cdi" >> "$SCRATCH/config.toml"
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=2
  shim_run "$SCRATCH/b"
  [ "$status" -eq 0 ]
  cards_are "2"
  echo "$output" | grep -Fx "FROM_SPEC_ON_DISK=1"
}

@test "legacy mode adds the prestart hook and the cards' cgroup rules; the hook gives the card, which opens" {
  printf '[enflame-container-runtime]\nmode = "legacy"\nhook-path = "%s"\n' "$HOOK" >> "$SCRATCH/config.toml"
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  cp "$SCRATCH/b/config.json" "$SCRATCH/before.json"
  shim_run "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  # the container got card 0 from the hook; runc let it (and gcuctl) open from the rules the
  # shim put in config.json; another card made with mknod is denied
  echo "$output" | grep -E "^c.* $MAJOR, +0 .* gcu0$"
  device_access "0" denied
  no_card "$SCRATCH/desc.yaml" 1 2 3
  python3 - "$SCRATCH/before.json" "$SCRATCH/b/config.json" "$HOOK" "$SCRATCH/config.toml" "$MAJOR" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
major = int(sys.argv[5])
rules = b["linux"]["resources"]["devices"]
old = a["linux"]["resources"]["devices"]
assert rules[:len(old)] == old, rules
assert sorted((r["allow"], r["type"], r["major"], r["minor"]) for r in rules[len(old):]) == \
    [(True, "c", major, 0), (True, "c", major, 255)], rules
b["linux"]["resources"]["devices"] = old
assert "devices" not in b["linux"] or b["linux"]["devices"] == a["linux"].get("devices"), "legacy mode added nodes"
hooks = b.pop("hooks")
assert list(hooks) == ["prestart"], hooks
(h,) = hooks["prestart"]
assert h["path"] == sys.argv[3] and h["args"] == [sys.argv[3], "prestart"], h
assert h["env"][0].startswith("PATH=") and h["env"][1] == "ENFLAME_CTK_CONFIG=" + sys.argv[4], h
assert len(h["env"]) == 2, h
a.pop("hooks", None)
assert a == b, "legacy mode changed more than the hooks and the device rules"
PY
}

@test "legacy mode, DRS: the shim writes TOPS_VISIBLE_DEVICES into config.json, the hook gives the parent card" {
  drs_host placement
  printf '[enflame-container-runtime]\nmode = "legacy"\nhook-path = "%s"\n' "$HOOK" >> "$SCRATCH/config.toml"
  drs_gives 0:1g.11gb:1 0 0:1g.11gb:1
  grep -F '"TOPS_VISIBLE_DEVICES=0:1g.11gb:1"' "$SCRATCH/b/config.json"
  # the hook made the node, not the runtime: config.json has no linux.devices entry for it
  run ! grep -F '"path":"/dev/gcu0"' "$SCRATCH/b/config.json"
}

# --- bad input: one clear error, non-zero, config.json untouched, no container ---

# shim_fails DIR PATTERN: create fails with PATTERN on stderr and in runc's JSON log, the
# bundle's config.json is unchanged and no container exists.
shim_fails() {
  local dir=$1 pattern=$2 id before=""
  id=$(unique_id shimf)
  on_teardown "runc --root '$RR' delete -f $id >/dev/null 2>&1"
  [ -f "$dir/config.json" ] && before=$(sha256sum < "$dir/config.json")
  run "$SHIM" --root "$RR" --log "$SCRATCH/log.json" --log-format json create --bundle "$dir" "$id"
  echo "$output"
  [ "$status" -ne 0 ]
  [ "$(echo "$output" | wc -l)" -eq 1 ]
  echo "$output" | grep -F -- "$pattern"
  tail -n 1 "$SCRATCH/log.json" | python3 -c 'import json,sys; l=json.load(sys.stdin); assert l["level"]=="error", l; print(l["msg"])' | grep -F -- "$pattern"
  [ -z "$before" ] || [ "$(sha256sum < "$dir/config.json")" = "$before" ]
  run ! runc --root "$RR" state "$id"
}

@test "bad input: unknown device, index out of range, duplicates, malformed entries" {
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=4
  shim_fails "$SCRATCH/b" "ENFLAME_VISIBLE_DEVICES: unknown device '4': no card with index 4 (the host has cards 0,1,2,3)"
  rm -rf "$SCRATCH/b"; shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=TRNOSUCHCARD
  shim_fails "$SCRATCH/b" "unknown device 'TRNOSUCHCARD': no card with this uuid"
  rm -rf "$SCRATCH/b"; shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0,1,0
  shim_fails "$SCRATCH/b" "ENFLAME_VISIBLE_DEVICES: duplicate entry '0'"
  rm -rf "$SCRATCH/b"; shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=gpu0
  shim_fails "$SCRATCH/b" "bad entry 'gpu0': not an index, range, GCU-n, UUID, DRS-uuid or card:profile:id"
  rm -rf "$SCRATCH/b"; shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0 ENFLAME_DRIVER_CAPABILITIES=graphics
  shim_fails "$SCRATCH/b" "unknown capability 'graphics'"
}

@test "bad input: malformed and huge config.json, missing bundle" {
  mkdir -p "$SCRATCH/m"
  printf '{"process": {"env": ["ENFLAME_VISIBLE_DEVICES=0"' > "$SCRATCH/m/config.json"
  shim_fails "$SCRATCH/m" "$SCRATCH/m/config.json: invalid JSON at line 1, column"
  printf '{"process": {"env": "ENFLAME_VISIBLE_DEVICES=0"}}' > "$SCRATCH/m/config.json"
  shim_fails "$SCRATCH/m" "'process.env' is not an array"
  mkdir -p "$SCRATCH/h"
  python3 -c "import json; print(json.dumps({'process': {'env': ['ENFLAME_VISIBLE_DEVICES=0']}, 'pad': 'x' * (9 << 20)}))" > "$SCRATCH/h/config.json"
  shim_fails "$SCRATCH/h" "file is larger than 8388608 bytes"
  shim_fails "$SCRATCH/nonexistent" "opening $SCRATCH/nonexistent/config.json: No such file or directory"
}

@test "bad input: config.toml typo and no runtime" {
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=0
  printf '[enflame-container-runtime]\nmdoe = "cdi"\n' >> "$SCRATCH/config.toml"
  shim_fails "$SCRATCH/b" "unknown key 'mdoe'"
  # the typo also stops passthrough commands: one clear error, not a silent fallback
  run "$SHIM" --root "$RR" list
  [ "$status" -ne 0 ]
  echo "$output" | grep -F "unknown key 'mdoe'"
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  printf '[enflame-container-runtime]\nruntimes = ["no-such-runtime", "/nonexistent/runc"]\n' >> "$SCRATCH/config.toml"
  shim_fails "$SCRATCH/b" "no low-level runtime found: tried 'no-such-runtime', '/nonexistent/runc'"
}

@test "containerd's argv form: --log json gets runc-style lines; text format too" {
  shim_bundle "$SCRATCH/b" ENFLAME_VISIBLE_DEVICES=9
  local id; id=$(unique_id shimt)
  run "$SHIM" --root "$RR" --log "$SCRATCH/log.txt" create --bundle "$SCRATCH/b" "$id"
  [ "$status" -ne 0 ]
  grep -E '^time="[0-9T:.-]+Z" level=error msg="container .*unknown device '"'"'9'"'"'' "$SCRATCH/log.txt"
  # nothing on stdout, ever
  run bash -c "'$SHIM' --root '$RR' create --bundle '$SCRATCH/b' '$id' 2>/dev/null"
  [ -z "$output" ]
}
