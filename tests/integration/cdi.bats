#!/usr/bin/env bats
# enflame-ctk cdi generate|list|validate, and the generated spec applied by the real podman.
# podman runs as root with private storage (--root/--runroot/--tmpdir in a per-file dir),
# runc, cgroupfs and default_ulimits (on this cgroup v1 hybrid host crun and the default nofile fail
# here). podman 4.3.1 reads specs only from /etc/cdi and /var/run/cdi, so every podman command
# runs in a private mount namespace (cdi_ns) where this file's own folder $PMDIR/ns is /run:
# specs go to $PMDIR/ns/cdi/<unique>.yaml, podman sees /var/run/cdi/<unique>.yaml, and the
# host's CDI folders are never touched. Each test's specs are removed in its teardown.

load helpers

setup_file() {
  export CDI_VENDOR="test-$$-${RANDOM}.enflame.com"
  export PMDIR
  PMDIR=$(mktemp -d /tmp/ectk-cdi-pm.XXXXXX)
  chmod 755 "$PMDIR"
  export CONTAINERS_CONF=$PMDIR/containers.conf
  podman_conf "$CONTAINERS_CONF"
  export IMAGE=localhost/ectk-cdi-bb:$$
  if [ "$(id -u)" -eq 0 ] && command -v podman >/dev/null && [ -x /bin/busybox ]; then
    local r=$PMDIR/rootfs
    mkdir -p "$r"/{bin,proc,sys,dev,etc,tmp,root,run,usr/lib}
    cp /bin/busybox "$r"/bin/
    (cd "$r"/bin && for a in $(./busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$a"; done)
    echo 'root:x:0:0:root:/root:/bin/sh' > "$r"/etc/passwd
    echo 'root:x:0:' > "$r"/etc/group
    tar -C "$r" -cf "$PMDIR"/rootfs.tar .
    pm import -q "$PMDIR"/rootfs.tar "$IMAGE" >/dev/null
  fi
}

teardown_file() {
  if [[ -n "${PMDIR:-}" && -d "$PMDIR" ]]; then
    pm rm -af >/dev/null 2>&1 || true
    pm rmi -af >/dev/null 2>&1 || true
    # vfs storage leaves no mounts; the runroot may still hold a tmpfs-less state dir
    rm -rf "$PMDIR"
  fi
}

# pm ARGS: podman with this file's private storage, in the private namespace where
# $PMDIR/ns/cdi is the only CDI spec folder.
pm() {
  cdi_ns "$PMDIR/ns"
  "${CDI_NS[@]}" podman --root "$PMDIR/root" --runroot "$PMDIR/run" --tmpdir "$PMDIR/tmp" --storage-driver vfs "$@"
}

requires_podman() {
  requires root podman unshare
  pm image exists "$IMAGE" || skip_or_fail "the busybox image could not be imported"
}

setup() {
  setup_scratch
  [ -x "$SIM_HOST" ] || skip_or_fail "needs the simulated host builder ($SIM_HOST)"
  CDI_DIR=$PMDIR/ns/cdi
  SPEC=$CDI_DIR/ectk-cdi-$$-$BATS_TEST_NUMBER.yaml
  on_teardown remove_test_containers
}

teardown() { teardown_scratch; }

# make_host N [--drs]: a simulated host in $SCRATCH/host and a config pointing at it.
make_host() {
  sim_example "$@" > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host"
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
}

# install_spec [generate flags]: generate into the spec folder podman sees (removed in teardown).
install_spec() {
  mkdir -p "$CDI_DIR"
  on_teardown "rm -f '$SPEC'"
  "$CTK" cdi generate --vendor "$CDI_VENDOR" --output "$SPEC" "$@"
}

# in_container DEVICE... -- CMD: run CMD in a container that got the CDI devices.
in_container() {
  local args=()
  while [ "$1" != "--" ]; do
    case $1 in */*) args+=(--device "$1") ;; *) args+=(--device "$CDI_VENDOR/gpu=$1") ;; esac
    shift
  done
  shift
  pm run --rm --name "ectk-cdi-$$-$BATS_TEST_NUMBER-$RANDOM" "${args[@]}" "$IMAGE" sh -c "$*"
}

# podman_refuses DEVICE: succeeds when podman does not start a container that got DEVICE.
podman_refuses() { ! in_container "$1" -- 'echo ran'; }

# Containers of this test (unique name prefix, private store), removed pass or fail.
remove_test_containers() {
  [ -d "${PMDIR:-}/root" ] || return 0
  local n
  for n in $(pm ps -a --format '{{.Names}}' 2>/dev/null | grep "^ectk-cdi-$$-$BATS_TEST_NUMBER-"); do
    pm rm -f "$n" >/dev/null 2>&1
  done
}

# The card list a container sees: "gcu0 238:0" lines, sorted, plus gcuctl.
DEVLIST='for d in /dev/gcu*; do [ -c "$d" ] && echo "${d#/dev/} $(stat -c %t:%T "$d")"; done'

@test "generate: valid, deterministic, same as the top-level alias, 8 cards give 17 names" {
  make_host 8
  run "$CTK" cdi generate --output "$SCRATCH/specs/a.yaml"
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  [ "$(stat -c %a "$SCRATCH/specs/a.yaml")" = 644 ]
  "$CTK" generate > "$SCRATCH/b.yaml"
  cmp "$SCRATCH/specs/a.yaml" "$SCRATCH/b.yaml"
  run "$CTK" cdi validate "$SCRATCH/specs/a.yaml"
  [ "$status" -eq 0 ]
  run "$CTK" cdi list --spec-dir "$SCRATCH/specs"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 17 ]
  [ "${lines[0]}" = "enflame.com/gpu=0" ]
  [ "${lines[16]}" = "enflame.com/gpu=all" ]
  grep -q '^cdiVersion: "0.5.0"$' "$SCRATCH/specs/a.yaml"
  grep -q 'ENFLAME_VISIBLE_DEVICES=void' "$SCRATCH/specs/a.yaml"
}

@test "generate: json by extension or flag, each backend (modelled JSON, text, libefml) gives the same spec" {
  make_host 4 --drs
  "$CTK" cdi generate --output "$SCRATCH/s.json"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kind"]=="enflame.com/gpu"' "$SCRATCH/s.json"
  "$CTK" cdi generate --format json > "$SCRATCH/stdout.json"
  cmp "$SCRATCH/s.json" "$SCRATCH/stdout.json"
  for b in efsmi-json efsmi-text libefml; do
    "$CTK" cdi generate --backend "$b" > "$SCRATCH/$b.yaml"
  done
  cmp "$SCRATCH/efsmi-json.yaml" "$SCRATCH/efsmi-text.yaml"
  cmp "$SCRATCH/efsmi-json.yaml" "$SCRATCH/libefml.yaml"
  # and the spec they agree on is the whole host: 4 cards, their DRS instances, all
  grep -q -- '- name: "0:1g.11gb:0"' "$SCRATCH/efsmi-json.yaml"
  grep -q -- '- name: DRS-4c1e9a52-0000-4000-8000-000000000000' "$SCRATCH/efsmi-json.yaml"
  for n in '"0"' '"3"' TR6Y46010003 all; do grep -q -- "- name: $n\$" "$SCRATCH/efsmi-json.yaml"; done
}

@test "generate --no-drs: the cards without the DRS instances" {
  make_host 4 --drs
  "$CTK" cdi generate --backend libefml --no-drs > "$SCRATCH/nodrs.yaml"
  "$CTK" cdi generate --backend libefml > "$SCRATCH/drs.yaml"
  grep -q -- '- name: DRS-4c1e9a52-0000-4000-8000-000000000000' "$SCRATCH/drs.yaml"
  run grep -c -- 'DRS-' "$SCRATCH/nodrs.yaml"
  [ "$output" = 0 ]
  for n in '"0"' '"3"' all; do grep -q -- "- name: $n\$" "$SCRATCH/nodrs.yaml"; done
}

# drs_names FAULTS [generate flags]: the CDI names `cdi generate` gives the DRS instances of
# the 4-card example host with FAULTS (a flow mapping's content, e.g. the efsmi layout);
# one "name TOPS_VISIBLE_DEVICES" a line. The host is built once per $SCRATCH/host.
drs_names() {
  local faults=$1; shift
  sim_example 4 --drs > "$SCRATCH/desc.yaml"
  printf 'faults: {%s}\n' "$faults" >> "$SCRATCH/desc.yaml"
  [ -d "$SCRATCH/host" ] || sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$CTK" cdi generate --format json "$@" |
    jq -r '.devices[] | select(.containerEdits.env) | .name + " " + (.containerEdits.env | join(","))'
}

@test "generate: DRS instances from efsmi --drs --list-instance in each layout, and card by card" {
  run drs_names "drs_instance_layout: uuid"
  [ "$status" -eq 0 ]
  [ "$output" = "0:1g.11gb:0 TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000000
DRS-4c1e9a52-0000-4000-8000-000000000000 TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000000
0:1g.11gb:1 TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000001
DRS-4c1e9a52-0000-4000-8000-000000000001 TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000001
1:2g.22gb:0 TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000002
DRS-4c1e9a52-0000-4000-8000-000000000002 TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0000-4000-8000-000000000002" ]
  rm -rf "$SCRATCH/host"
  run drs_names "drs_instance_layout: placement"
  [ "$status" -eq 0 ]
  [ "$output" = "0:1g.11gb:0 TOPS_VISIBLE_DEVICES=0:1g.11gb:0
0:1g.11gb:1 TOPS_VISIBLE_DEVICES=0:1g.11gb:1
1:2g.22gb:0 TOPS_VISIBLE_DEVICES=1:2g.22gb:0" ]
  local placement=$output
  # named by UUID, an instance without one keeps its <card>:<profile>:<id> name
  run drs_names "drs_instance_layout: placement" --device-name-strategy uuid
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | cut -d' ' -f1 | tr '\n' ' ')" = "0:1g.11gb:0 0:1g.11gb:1 1:2g.22gb:0 " ]
  # an efsmi that answers only with -i <card>: asked card by card, the same instances
  rm -rf "$SCRATCH/host"
  run drs_names "drs_instance_layout: placement, drs_needs_card: true"
  [ "$status" -eq 0 ]
  [ "$output" = "$placement" ]
  run "$SCRATCH/host/usr/local/efsmi/efsmi-1.4.3.4/efsmi" --drs --list-instance
  [ "$status" -eq 1 ]
}

@test "generate and info follow instances created and destroyed through efsmi" {
  drs_names "drs_instance_layout: placement" > /dev/null
  local efsmi=$SCRATCH/host/usr/local/efsmi/efsmi-1.4.3.4/efsmi
  "$efsmi" -i 3 --drs --create-instance 1
  "$efsmi" -i 0 --drs --destroy-instance 0
  run drs_names "drs_instance_layout: placement"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | cut -d' ' -f1 | tr '\n' ' ')" = "0:1g.11gb:1 1:2g.22gb:0 3:2g.22gb:0 " ]
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$CTK" info --format json > "$SCRATCH/info.json"
  [ "$(jq -c '.devices[3].drs_instances' "$SCRATCH/info.json")" = '[{"instance_id":0,"profile":"2g.22gb","profile_id":1,"uuid":"","placement":"0:2","name":"3:2g.22gb:0"}]' ]
  [ "$(jq -c '[.drs_profiles[].name]' "$SCRATCH/info.json")" = '["1g.11gb","2g.22gb"]' ]
}

@test "generate: naming strategies and --no-all-device" {
  make_host 2
  run "$CTK" cdi generate --device-name-strategy index --no-all-device --output "$SCRATCH/specs/i.yaml"
  [ "$status" -eq 0 ]
  run "$CTK" cdi list --spec-dir "$SCRATCH/specs"
  [ "$output" = "$(printf 'enflame.com/gpu=0\nenflame.com/gpu=1')" ]
  rm "$SCRATCH/specs/i.yaml"
  "$CTK" cdi generate --device-name-strategy uuid --vendor x.example.com --class gcu --output "$SCRATCH/specs/u.yaml"
  run "$CTK" cdi list --spec-dir "$SCRATCH/specs"
  [ "$output" = "$(printf 'x.example.com/gcu=TR6Y46010000\nx.example.com/gcu=TR6Y46010001\nx.example.com/gcu=all')" ]
  run "$CTK" cdi generate --device-name-strategy minor
  [ "$status" -ne 0 ]
  [ "$output" = "error: unknown device name strategy 'minor': want index, uuid or both" ]
}

@test "schema: generated specs (YAML and JSON, with and without DRS) match schemas/cdi-spec.schema.json" {
  /usr/bin/python3 -c 'import jsonschema, yaml' 2>/dev/null || skip_or_fail "needs python3-jsonschema and python3-yaml"
  make_host 8 --drs
  mkdir -p "$SCRATCH/specs"
  "$CTK" cdi generate --output "$SCRATCH/specs/drs.yaml"
  "$CTK" cdi generate --output "$SCRATCH/specs/drs.json"
  "$CTK" cdi generate --device-name-strategy uuid --no-all-device --output "$SCRATCH/specs/uuid.yaml"
  "$CTK" cdi generate --disable-hook all --backend libefml --output "$SCRATCH/specs/nohook.json"
  make_host 3
  "$CTK" cdi generate --output "$SCRATCH/specs/plain.yaml"
  cat > "$SCRATCH/check.py" <<'PY'
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
bad = 0
for f in sys.argv[2:]:
    doc = json.load(open(f)) if f.endswith(".json") else yaml.safe_load(open(f))
    for e in v.iter_errors(doc):
        print(f"{f}: {list(e.absolute_path)}: {e.message}")
        bad += 1
# and the schema is not vacuous: a few things we never emit must fail
doc = yaml.safe_load(open(sys.argv[2]))
for mutate in (lambda d: d.update(cdiVersion="0.6.0"), lambda d: d.update(annotations={"a": "b"}),
               lambda d: d["devices"][0].update(name=0), lambda d: d["containerEdits"]["hooks"][0].pop("env"),
               lambda d: d["devices"][0]["containerEdits"]["deviceNodes"][0].update(path="dev/gcu0")):
    d = json.loads(json.dumps(doc)); mutate(d)
    if v.is_valid(d):
        print("schema accepted a mutated spec"); bad += 1
sys.exit(1 if bad else 0)
PY
  run /usr/bin/python3 "$SCRATCH/check.py" "$TOP/schemas/cdi-spec.schema.json" "$SCRATCH"/specs/drs.yaml "$SCRATCH"/specs/*
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "generate: a host without cards writes nothing and says why" {
  make_host 1
  rm -rf "$SCRATCH/empty"; mkdir -p "$SCRATCH/empty"
  echo old > "$SCRATCH/keep.yaml"
  run "$CTK" cdi generate --driver-root "$SCRATCH/empty" --dev-root "$SCRATCH/empty" --output "$SCRATCH/keep.yaml"
  [ "$status" -eq 1 ]
  [[ "$output" == "error: discovering Enflame cards: "* ]]
  [ "$(cat "$SCRATCH/keep.yaml")" = old ]
}

@test "generate: an output that is a symlink or a directory is refused, the old file kept" {
  make_host 1
  echo old > "$SCRATCH/target.yaml"
  ln -s "$SCRATCH/target.yaml" "$SCRATCH/link.yaml"
  run "$CTK" cdi generate --output "$SCRATCH/link.yaml"
  [ "$status" -eq 1 ]
  [[ "$output" == "error: writing CDI spec '$SCRATCH/link.yaml': "* ]]
  [ "$(cat "$SCRATCH/target.yaml")" = old ]
  mkdir "$SCRATCH/dir.yaml"
  run "$CTK" cdi generate --output "$SCRATCH/dir.yaml"
  [ "$status" -eq 1 ]
  [[ "$output" == "error: writing CDI spec '$SCRATCH/dir.yaml': "* ]]
  [ -z "$(ls "$SCRATCH" | grep -v -e target.yaml -e link.yaml -e dir.yaml -e host -e desc.yaml -e config.toml)" ]
}

@test "validate: every problem listed, exit 1; list skips broken files and reports conflicts" {
  mkdir -p "$SCRATCH/d"
  cat > "$SCRATCH/d/bad.yaml" <<'Y'
cdiVersion: "0.5.0"
kind: enflame.com
devices:
- name: "0"
  containerEdits:
    env: [NOEQ]
- name: "0"
  containerEdits: {}
Y
  printf 'cdiVersion: 0.5.0\nkind: a.com/b\ndevcies: []\n' > "$SCRATCH/d/typo.yaml"
  run "$CTK" cdi validate "$SCRATCH/d/bad.yaml" "$SCRATCH/d/typo.yaml"
  [ "$status" -eq 1 ]
  [ "${lines[0]}" = "$SCRATCH/d/bad.yaml: kind 'enflame.com' is not vendor/class" ]
  [ "${lines[1]}" = "$SCRATCH/d/bad.yaml: device '0': env entry 'NOEQ' is not KEY=VALUE" ]
  [ "${lines[2]}" = "$SCRATCH/d/bad.yaml: device '0': duplicate device name" ]
  [ "${lines[3]}" = "$SCRATCH/d/bad.yaml: device '0': no container edits" ]
  [ "${lines[4]}" = "$SCRATCH/d/typo.yaml: line 3: unknown field 'devcies'" ]
  [ "${lines[5]}" = "error: 5 problems found" ]
  make_host 1
  "$CTK" cdi generate --output "$SCRATCH/d/one.yaml"
  "$CTK" cdi generate --device-name-strategy index --output "$SCRATCH/d/two.yaml"
  run "$CTK" cdi list --spec-dir "$SCRATCH/d"
  [ "$status" -eq 0 ]
  [[ "$output" == *"warning: conflict: device 'enflame.com/gpu=0' is defined in '$SCRATCH/d/one.yaml' and '$SCRATCH/d/two.yaml'"* ]]
  [[ "$output" == *"warning: skipped: $SCRATCH/d/typo.yaml: line 3: unknown field 'devcies'"* ]]
  run "$CTK" cdi validate --spec-dir "$SCRATCH/d"
  [ "$status" -eq 1 ]
  printf 'cdiVersion: "0.6.0"\nkind: a.com/b\nannotations: {x: z}\ndevices:\n- name: d\n  containerEdits: {env: [A=1]}\n' > "$SCRATCH/new.yaml"
  run "$CTK" cdi validate "$SCRATCH/new.yaml"
  [ "$status" -eq 0 ]
  [ "$output" = "warning: $SCRATCH/new.yaml: cdiVersion '0.6.0' is newer than podman 4.3.1 accepts (up to 0.5.0)" ]
  run "$CTK" cdi list --spec-dir "$SCRATCH/none"
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}

@test "podman: --device gpu=0 gets gcu0 and gcuctl with the host numbers, libefml, env" {
  requires_podman
  make_host 2
  install_spec
  run in_container 0 -- "$DEVLIST; ls /dev; env; ls -l /usr/lib/libefml.so /usr/lib/libefml.so.1; cat /usr/lib/libefml.so.1 | wc -c; readlink -f /usr/bin/efsmi"
  echo "$output"
  [ "$status" -eq 0 ]
  # stat %t:%T is hex: 238 = ee, 255 = ff
  [[ "$output" == *"gcu0 ee:0"* ]]
  [[ "$output" == *"gcuctl ee:ff"* ]]
  [[ "$output" != *"gcu1 "* ]]
  [[ "$output" == *"ENFLAME_VISIBLE_DEVICES=void"* ]]
  [[ "$output" == *"/usr/lib/libefml.so.1"* ]]
  [ "$(echo "$output" | grep -c '^-r.*libefml.so')" -eq 2 ]
  host_size=$(stat -c %s "$SCRATCH/host/usr/local/efsmi/efsmi-1.4.3.4/lib/libefml.so.1.0.0")
  echo "$output" | grep -qx " *$host_size"
}

@test "podman: gpu=1 and gpu=<uuid> give exactly that card" {
  requires_podman
  make_host 3
  install_spec
  run in_container 1 -- "$DEVLIST"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | sort | tr '\n' ' ')" = "gcu1 ee:1 gcuctl ee:ff " ]
  run in_container TR6Y46010002 -- "$DEVLIST"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | sort | tr '\n' ' ')" = "gcu2 ee:2 gcuctl ee:ff " ]
}

@test "podman: gpu=all gives every card; two names merge" {
  requires_podman
  make_host 4
  install_spec
  run in_container all -- "$DEVLIST"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | sort | tr '\n' ' ')" = "gcu0 ee:0 gcu1 ee:1 gcu2 ee:2 gcu3 ee:3 gcuctl ee:ff " ]
  run in_container 0 3 -- "$DEVLIST"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | sort | tr '\n' ' ')" = "gcu0 ee:0 gcu3 ee:3 gcuctl ee:ff " ]
}

@test "podman: a DRS instance gets its parent card and TOPS_VISIBLE_DEVICES" {
  requires_podman
  make_host 2 --drs
  install_spec
  run in_container 1:2g.22gb:0 -- "$DEVLIST; echo TOPS=\$TOPS_VISIBLE_DEVICES"
  [ "$status" -eq 0 ]
  [[ "$output" == *"gcu1 ee:1"* ]]
  [[ "$output" != *"gcu0 "* ]]
  [[ "$output" == *"TOPS=DRS-4c1e9a52-0000-4000-8000-000000000002"* ]]
  run in_container DRS-4c1e9a52-0000-4000-8000-000000000000 -- "$DEVLIST; echo TOPS=\$TOPS_VISIBLE_DEVICES"
  [ "$status" -eq 0 ]
  [[ "$output" == *"gcu0 ee:0"* ]]
  [[ "$output" == *"TOPS=DRS-4c1e9a52-0000-4000-8000-000000000000"* ]]
}

@test "podman: an unknown device name fails the container" {
  requires_podman
  make_host 1
  install_spec
  run in_container 7 -- true
  [ "$status" -ne 0 ]
  [[ "$output" == *"$CDI_VENDOR/gpu=7"* ]]
}

# bad_spec_case NAME EXPECTED-VALIDATOR-LINE-SUFFIX: the spec on stdin must be rejected by
# `cdi validate` (with that text) and by podman.
bad_spec_case() {
  local name=$1 want=$2 f=$CDI_DIR/ectk-cdi-$$-$BATS_TEST_NUMBER-$1.yaml
  mkdir -p "$CDI_DIR"
  on_teardown "rm -f '$f'"
  sed "s/@KIND@/$CDI_VENDOR\/gpu/" > "$f"
  run "$CTK" cdi validate "$f"
  echo "[$name] validate: $output"
  [ "$status" -eq 1 ]
  [ "${lines[0]}" = "$f: $want" ]
  run podman_refuses dev
  echo "[$name] podman: $output"
  [ "$status" -eq 0 ]
  [[ "$output" != *ran* ]]
  # the broken spec does not stop podman from using another, valid one
  run in_container "$CDI_VENDOR/good=dev" -- 'echo X=$X'
  [ "$output" = "X=good" ]
  rm -f "$f"
}

@test "podman agrees with our validator on bad specs" {
  requires_podman
  # a good one first, so a failure below is the spec's fault
  local ok=$CDI_DIR/ectk-cdi-$$-$BATS_TEST_NUMBER-ok.yaml
  mkdir -p "$CDI_DIR"; on_teardown "rm -f '$ok'"
  printf 'cdiVersion: "0.5.0"\nkind: %s/gpu\ndevices:\n- name: dev\n  containerEdits:\n    env: [X=1]\n' "$CDI_VENDOR" > "$ok"
  run "$CTK" cdi validate "$ok"
  [ "$status" -eq 0 ]
  run in_container dev -- 'echo X=$X'
  [ "$output" = "X=1" ]
  printf 'cdiVersion: "0.5.0"\nkind: %s/good\ndevices:\n- name: dev\n  containerEdits:\n    env: [X=good]\n' "$CDI_VENDOR" > "$ok"

  bad_spec_case unknown-field "line 3: unknown field 'devcies'" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devcies: []
devices:
- name: dev
  containerEdits: {env: [X=1]}
Y
  bad_spec_case env-no-equals "device 'dev': env entry 'NOEQ' is not KEY=VALUE" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices:
- name: dev
  containerEdits: {env: [NOEQ]}
Y
  bad_spec_case hook-name "device 'dev': hooks[0]: invalid hook name 'preStart': want prestart, createRuntime, createContainer, startContainer, poststart or poststop" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices:
- name: dev
  containerEdits:
    hooks: [{hookName: preStart, path: /bin/true}]
Y
  bad_spec_case duplicate "device 'dev': duplicate device name" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices:
- name: dev
  containerEdits: {env: [X=1]}
- name: dev
  containerEdits: {env: [X=2]}
Y
  bad_spec_case empty-edits "device 'dev': no container edits" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices:
- name: dev
  containerEdits: {}
Y
  bad_spec_case permissions "device 'dev': deviceNodes[0]: invalid permissions 'rwx': want a subset of rwm" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices:
- name: dev
  containerEdits:
    deviceNodes: [{path: /dev/null, permissions: rwx}]
Y
  bad_spec_case node-type "device 'dev': deviceNodes[0]: invalid type 'z': want b, c, u or p" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices:
- name: dev
  containerEdits:
    deviceNodes: [{path: /dev/null, type: z}]
Y
  bad_spec_case relative-node "device 'dev': deviceNodes[0]: path 'dev/null' is not absolute" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices:
- name: dev
  containerEdits:
    deviceNodes: [{path: dev/null}]
Y
  bad_spec_case relative-mount "device 'dev': mounts[0]: containerPath 'etc/x' is not absolute" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices:
- name: dev
  containerEdits:
    mounts: [{hostPath: /etc/hostname, containerPath: etc/x}]
Y
  bad_spec_case annotations-too-old "cdiVersion '0.5.0' is too old for this spec: it needs 0.6.0" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
annotations: {a: b}
devices:
- name: dev
  containerEdits: {env: [X=1]}
Y
  bad_spec_case no-devices "no devices" <<'Y'
cdiVersion: "0.5.0"
kind: @KIND@
devices: []
Y
  bad_spec_case version "unknown cdiVersion '1.0.0': want one of 0.1.0 to 0.8.0" <<'Y'
cdiVersion: "1.0.0"
kind: @KIND@
devices:
- name: dev
  containerEdits: {env: [X=1]}
Y
}
