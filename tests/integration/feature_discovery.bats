#!/usr/bin/env bats
# enflame-feature-discovery against the simulated host (docs/kubelet-wire.md, node labels):
# the labels file NFD's local source reads, compared with golden files (tests/fixtures/labels/),
# its expiry line, atomic replacement through a dot-file, refresh while the simulated host changes,
# the last good labels kept when discovery fails, removal on SIGTERM, and one-line errors. Every
# file goes to $SCRATCH (--output), never to the host's /etc/kubernetes.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

FD=$BUILD_DIR/k8s/feature-discovery/enflame-feature-discovery
GOLDEN=$TOP/tests/fixtures/labels

setup() {
  requires root
  [ -x "$FD" ] || skip_or_fail "no $FD (build enflame-feature-discovery)"
  [ -x "$SIM_HOST" ] || skip_or_fail "no $SIM_HOST (build enflame-sim-host)"
  setup_scratch
  OUT=$SCRATCH/features.d/enflame
  mkdir "$SCRATCH/features.d"
  LOG=$SCRATCH/fd.log
}

teardown() { teardown_scratch; }

# start_fd ARGS...: the daemon in the background writing $OUT, log in $LOG, stopped in teardown.
start_fd() {
  "$FD" --output "$OUT" "$@" >>"$LOG" 2>&1 3>&- &
  FPID=$!
  on_teardown "stop_pid $FPID"
}

# label NAME: the value of enflame.com/gpu.NAME in $OUT (empty if absent).
label() { sed -n "s|^enflame.com/gpu.$1=||p" "$OUT" 2>/dev/null; }
label_is() { [ "$(label "$1")" = "$2" ]; }
# failures_at_least N: the daemon logged at least N failed passes.
failures_at_least() { [ "$(grep -c 'labels not updated' "$LOG")" -ge "$1" ]; }
# expiry: the epoch seconds of $OUT's expiry line.
expiry() { date -d "$(sed -n '1s/^# +expiry-time=//p' "$OUT")" +%s; }

# golden NAME: --oneshot --no-timestamp --output - on the host ENFLAME_CTK_CONFIG names equals
# tests/fixtures/labels/NAME.txt byte for byte.
golden() {
  "$FD" --oneshot --no-timestamp --output - > "$SCRATCH/labels.txt" 2> "$LOG"
  diff -u "$GOLDEN/$1.txt" "$SCRATCH/labels.txt"
}

@test "golden: simulated S60 hosts with 1, 4 and 8 cards" {
  local n
  for n in 1 4 8; do
    sim_setup "$n"
    golden "s60-$n-cards"
    grep -q "14 labels written to stdout ($n cards, backend efsmi-json)" "$LOG"
  done
}

@test "golden: 4 cards with DRS profiles" {
  sim_example 4 --drs > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  golden s60-4-cards-drs
}

@test "golden: an old driver with only efsmi text (no --json-format, no libefml, old keys)" {
  { sim_example 2 | sed 's/^driver_version: .*/driver_version: "1.2.1"/'
    printf 'faults:\n  json_unsupported: true\n  efml_absent: true\n  old_keys: true\n'; } > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  golden s60-2-cards-old-driver
  grep -q "(2 cards, backend efsmi-text)" "$LOG"
}

@test "--config wins over ENFLAME_CTK_CONFIG; --plugin-config time-slicing gives the sharing labels" {
  sim_setup 4
  sim_example 2 > "$SCRATCH/desc2.yaml"
  sim_host "$SCRATCH/desc2.yaml" "$SCRATCH/host2" >/dev/null
  write_config "$SCRATCH/config2.toml" "$SCRATCH/host2"
  printf 'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: enflame.com/gcu\n      replicas: 4\n' > "$SCRATCH/plugin.yaml"
  "$FD" --oneshot --no-timestamp --output "$OUT" --config "$SCRATCH/config2.toml" --plugin-config "$SCRATCH/plugin.yaml"
  [ "$(label count)" = 2 ]
  [ "$(label sharing-strategy)" = time-slicing ]
  [ "$(label replicas)" = 4 ]
  # The device plugin's resource name has to match, as in the plugin itself.
  run "$FD" --oneshot --output "$OUT" --plugin-config "$SCRATCH/plugin.yaml" --resource-name example.com/x
  [ "$status" -eq 1 ]
  [ "$output" = "error: $SCRATCH/plugin.yaml: line 5: sharing.timeSlicing.resources[0].name: 'enflame.com/gcu' is not the resource this plugin serves (example.com/x)" ]
}

@test "cards of two models: the first card's model, every card counted, a warning names both" {
  cat > "$SCRATCH/desc.yaml" <<'YAML'
cards:
  - {index: 0, product: T10, uuid: T10A0000001, bus_id: "0000:10:00.0", numa_node: 0}
  - {index: 1, product: S60, uuid: TR6Y46019999, bus_id: "0000:11:00.0", numa_node: 0}
YAML
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$FD" --oneshot --output "$OUT" 2> "$LOG"
  [ "$(label count)" = 2 ]
  [ "$(label model)" = T10 ]
  [ "$(label memory)" = 16384 ]
  [ "$(label family)" = LEO ]
  grep -q "warning: cards of several models on this node (T10, S60): model, memory, family and arch label the first card (T10)" "$LOG"
}

@test "expiry: first line, now + 2 x --sleep-interval (RFC 3339, UTC); none with --no-timestamp" {
  sim_setup 1
  local t0 t1 e
  t0=$(date +%s)
  "$FD" --oneshot --output "$OUT" --sleep-interval 1m30s
  t1=$(date +%s)
  head -1 "$OUT" | grep -Eq '^# \+expiry-time=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
  e=$(expiry)
  [ "$e" -ge $(( t0 + 180 )) ]
  [ "$e" -le $(( t1 + 180 )) ]
  [ "$(sed 1d "$OUT")" = "$(cat "$GOLDEN/s60-1-cards.txt")" ]
  # the default interval is 60 s
  t0=$(date +%s)
  "$FD" --oneshot --output "$OUT"
  e=$(expiry)
  [ "$e" -ge $(( t0 + 120 )) ]
  [ "$e" -le $(( $(date +%s) + 120 )) ]
  "$FD" --oneshot --output "$OUT" --no-timestamp
  run grep -c '^#' "$OUT"
  [ "$output" = 0 ]
}

@test "SIGTERM removes the labels file; exit 0" {
  sim_setup 2
  start_fd --sleep-interval 1s
  wait_for test -s "$OUT"
  [ "$(label count)" = 2 ]
  kill -TERM "$FPID"
  local rc=0
  wait "$FPID" || rc=$?
  [ "$rc" -eq 0 ]
  [ ! -e "$OUT" ]
  grep -q "removed $OUT" "$LOG"
  [ -z "$(ls -A "$SCRATCH/features.d")" ]
}

@test "refresh: a card removed from the simulated host leaves the count label within one interval" {
  sim_setup 4
  start_fd --sleep-interval 1s
  wait_for label_is count 4
  local e0
  e0=$(expiry)
  sim_example 3 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  wait_for label_is count 3
  [ "$(expiry)" -ge "$e0" ]
  grep -q "14 labels written to $OUT (3 cards, backend efsmi-json)" "$LOG"
}

@test "discovery failure keeps the last good labels (their expiry too) and logs why; recovery rewrites them" {
  sim_setup 2
  start_fd --sleep-interval 1s
  wait_for label_is count 2
  # Every backend fails: efsmi exits 3, libefml's EfmlInit fails.
  { sim_example 2; printf 'faults:\n  efsmi_exit_code: 3\n  efml_init_fails: true\n'; } > "$SCRATCH/broken.yaml"
  sim_host "$SCRATCH/broken.yaml" "$SCRATCH/host" >/dev/null
  wait_for grep -q "error: labels not updated: discovering Enflame cards" "$LOG"
  cp "$OUT" "$SCRATCH/kept"
  local line
  line=$(grep "labels not updated" "$LOG" | head -1)
  [[ "$line" == *"; keeping the labels of "*" until they expire at $(sed -n '1s/^# +expiry-time=//p' "$OUT")" ]]
  [[ "$line" == *"efsmi"* ]]
  # two more failed passes: the file is untouched
  wait_for failures_at_least 3
  cmp "$OUT" "$SCRATCH/kept"
  [ "$(label count)" = 2 ]
  # the driver is back: fresh labels, a later expiry
  sim_example 1 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  wait_for label_is count 1
}

@test "no good pass yet: no labels file (a stale one is removed); --oneshot fails with one line" {
  { sim_example 2; printf 'faults:\n  efsmi_exit_code: 3\n  efml_init_fails: true\n'; } > "$SCRATCH/broken.yaml"
  sim_host "$SCRATCH/broken.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  run "$FD" --oneshot --output "$OUT"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "${lines[0]}" == "error: discovering Enflame cards: "* ]]
  [ ! -e "$OUT" ]
  echo "enflame.com/gpu.count=8" > "$OUT"   # left by an earlier run
  start_fd --sleep-interval 1s
  wait_for grep -q "no good pass yet, so no labels file" "$LOG"
  [ ! -e "$OUT" ]
  grep -q "removed $OUT" "$LOG"
}

@test "SIGHUP re-reads the device plugin's config and labels at once; a broken one is refused, the old one kept" {
  sim_setup 2
  echo 'version: v1' > "$SCRATCH/plugin.yaml"
  start_fd --sleep-interval 1h --plugin-config "$SCRATCH/plugin.yaml"
  wait_for label_is sharing-strategy none
  printf 'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: enflame.com/gcu\n      replicas: 2\n' > "$SCRATCH/plugin.yaml"
  kill -HUP "$FPID"
  wait_for label_is sharing-strategy time-slicing
  [ "$(label replicas)" = 2 ]
  echo 'version: v2' > "$SCRATCH/plugin.yaml"
  kill -HUP "$FPID"
  wait_for grep -q "error: SIGHUP: keeping the running configuration: $SCRATCH/plugin.yaml: line 1: version: want v1, got 'v2'" "$LOG"
  [ "$(label replicas)" = 2 ]
  kill -0 "$FPID"
}

@test "atomic replace: a reader never sees a partial file or a temp file NFD would read" {
  requires python3
  sim_setup 8
  start_fd --sleep-interval 1h
  wait_for label_is count 8
  # A reader lists the folder and reads the file as fast as it can while SIGHUP makes the
  # daemon rewrite it 200 times. NFD reads every name that does not start with a dot.
  python3 - "$SCRATCH/features.d" "$FPID" "$GOLDEN/s60-8-cards.txt" > "$SCRATCH/reader.out" <<'PY'
import os, signal, sys, time
d, pid, golden = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read()
names, partial, reads, sent = set(), 0, 0, 0
next_hup = 0.0
while sent < 200 or time.monotonic() < next_hup + 0.5:
    if sent < 200 and time.monotonic() >= next_hup:
        os.kill(pid, signal.SIGHUP)
        sent += 1
        next_hup = time.monotonic() + 0.02
    for n in os.listdir(d):
        if not n.startswith("."):
            names.add(n)
    try:
        text = open(os.path.join(d, "enflame")).read()
    except FileNotFoundError:
        partial += 1
        continue
    reads += 1
    first, _, body = text.partition("\n")
    if not first.startswith("# +expiry-time=") or body != golden:
        partial += 1
print(f"names={sorted(names)} partial={partial} reads={reads} hups={sent}")
PY
  cat "$SCRATCH/reader.out"
  grep -q "^names=\['enflame'\] partial=0 " "$SCRATCH/reader.out"
  [ "$(grep -c 'SIGHUP: configuration re-read' "$LOG")" -ge 50 ]
  [ "$(ls -A "$SCRATCH/features.d")" = enflame ]
}

@test "bad flags and inputs: one line naming the input, exit non-zero, nothing written" {
  sim_setup 1
  local args expect
  while IFS='|' read -r args expect; do
    # shellcheck disable=SC2086  # args is a word list
    run "$FD" --oneshot $args
    [ "$status" -ne 0 ] || { echo "$args: exit 0"; false; }
    [ "${#lines[@]}" -eq 1 ] || { echo "$args: ${#lines[@]} lines: $output"; false; }
    # shellcheck disable=SC2053  # $expect is a pattern
    [[ "$output" == $expect ]] || { echo "$args: got: $output"; false; }
  done <<EOF
--output $OUT --sleep-interval 5x|error: --sleep-interval '5x': want a duration from 1s to 24h, such as 90s or 1m30s
--output $OUT --sleep-interval 500ms|error: --sleep-interval '500ms': want a duration from 1s to 24h, such as 90s or 1m30s
--output $OUT --log-level loud|error: --log-level 'loud': want debug, info, warn or error
--output $OUT --bogus|error: The following argument was not expected: --bogus (see --help)
--output $OUT --config $SCRATCH/none.toml|error: *$SCRATCH/none.toml*
--output $OUT --plugin-config $SCRATCH|error: --plugin-config: *$SCRATCH*
--output $SCRATCH/nope/enflame|error: --output '$SCRATCH/nope/enflame': folder '$SCRATCH/nope': No such file or directory
--output $SCRATCH/features.d/|error: --output '$SCRATCH/features.d/': want a file name or -
EOF
  [ ! -e "$OUT" ]
  printf 'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: enflame.com/gcu\n      replicas: 0\n' > "$SCRATCH/bad.yaml"
  run "$FD" --oneshot --output "$OUT" --plugin-config "$SCRATCH/bad.yaml"
  [ "$status" -eq 1 ]
  [ "$output" = "error: $SCRATCH/bad.yaml: line 6: sharing.timeSlicing.resources[0].replicas: want a whole number from 1 to 64, got '0'" ]
  [ -z "$(ls -A "$SCRATCH/features.d")" ]
}

@test "no device plugin config (the DRA overlay): every label but the sharing ones, one log line, keeps labelling; a malformed one is one line" {
  sim_setup 4
  start_fd --no-timestamp --sleep-interval 1s --plugin-config "$SCRATCH/none.yaml"
  wait_for test -s "$OUT"
  diff -u <(grep -v -e sharing-strategy= -e replicas= "$GOLDEN/s60-4-cards.txt") "$OUT"
  [ "$(grep -c "no device plugin config" "$LOG")" -eq 1 ]
  grep -F "$SCRATCH/none.yaml" "$LOG"
  # still running: a second pass sees a card go
  sim_example 3 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  wait_for label_is count 3
  kill -0 "$FPID"
  "$FD" --oneshot --no-timestamp --output - --plugin-config "$SCRATCH/none.yaml" > "$SCRATCH/once.txt" 2>/dev/null
  grep -q "^enflame.com/gpu.count=3$" "$SCRATCH/once.txt"
  run ! grep -q sharing-strategy "$SCRATCH/once.txt"
  # a file that is there and wrong is still an error
  printf 'version: v2\n' > "$SCRATCH/bad.yaml"
  run -1 "$FD" --oneshot --output "$OUT.2" --plugin-config "$SCRATCH/bad.yaml"
  [ "$output" = "error: $SCRATCH/bad.yaml: line 1: version: want v1, got 'v2'" ]
}

@test "man page: renders without warnings and names every flag of --help" {
  requires man
  man_covers_flags "$TOP/man/enflame-feature-discovery.8" "$FD"
}

@test "deployments: the DaemonSet mounts NFD's features.d, /dev and the host read-only; its config is accepted" {
  requires python3
  manifests_json "$TOP/deployments/feature-discovery" > "$SCRATCH/m.json"
  python3 - "$SCRATCH/m.json" > "$SCRATCH/cm.toml" <<'PY'
import json, sys
docs = json.load(open(sys.argv[1]))
pod = docs["DaemonSet"]["spec"]["template"]["spec"]
c = pod["containers"][0]
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
fd = "/etc/kubernetes/node-feature-discovery/features.d"
assert vols[mounts[fd]["name"]]["hostPath"]["path"] == fd, mounts[fd]
assert not mounts[fd].get("readOnly"), "features.d must be writable"
assert mounts["/dev"].get("readOnly") and mounts["/host"].get("readOnly"), mounts
env = {e["name"]: e["value"] for e in c["env"]}
assert env["EFD_OUTPUT_FILE"] == fd + "/enflame", env
assert vols[mounts[env["ENFLAME_CTK_CONFIG"].rsplit("/", 1)[0]]["name"]]["configMap"]["name"] == docs["ConfigMap"]["metadata"]["name"]
print(docs["ConfigMap"]["data"]["config.toml"], end="")
PY
  run "$CTK" --config "$SCRATCH/cm.toml" config
  [ "$status" -eq 0 ]
  [[ "$output" == *"driver-root = '/host'"* ]]
  # the DaemonSet's environment drives the daemon (its paths swapped for scratch ones); first
  # proof that EFD_OUTPUT_FILE is read, so no later run can fall back to the host's features.d
  sim_setup 4
  EFD_OUTPUT_FILE=$SCRATCH/nope/enflame EFD_ONESHOT=true run "$FD"
  [ "$status" -eq 1 ]
  [ "$output" = "error: --output '$SCRATCH/nope/enflame': folder '$SCRATCH/nope': No such file or directory" ]
  # the device plugin's ConfigMap absent (the DRA overlay; the volume is optional): labels all
  # the same but the sharing ones
  EFD_OUTPUT_FILE=$OUT EFD_SLEEP_INTERVAL=1m EFD_ONESHOT=true EFD_NO_TIMESTAMP=true \
    PLUGIN_CONFIG=$SCRATCH/none.yaml "$FD" 2>/dev/null
  diff -u <(grep -v -e sharing-strategy= -e replicas= "$GOLDEN/s60-4-cards.txt") "$OUT"
  python3 - "$SCRATCH/m.json" <<'PY'
import json, sys
docs = json.load(open(sys.argv[1]))
pod = docs["DaemonSet"]["spec"]["template"]["spec"]
env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
folder = env["PLUGIN_CONFIG"].rsplit("/", 1)[0]
mount = [m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"] == folder][0]
vol = [v for v in pod["volumes"] if v["name"] == mount["name"]][0]
assert vol["configMap"]["name"] == "enflame-device-plugin" and vol["configMap"].get("optional") is True, vol
PY
  echo 'version: v1' > "$SCRATCH/plugin.yaml"
  EFD_OUTPUT_FILE=$OUT EFD_SLEEP_INTERVAL=1m EFD_ONESHOT=true EFD_NO_TIMESTAMP=true \
    PLUGIN_CONFIG=$SCRATCH/plugin.yaml "$FD" 2>/dev/null
  diff -u "$GOLDEN/s60-4-cards.txt" "$OUT"
}

@test "cmake --install carries the daemon, its man page and its manifests" {
  installs_daemon enflame-feature-discovery man8/enflame-feature-discovery.8 feature-discovery
}
