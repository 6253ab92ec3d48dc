#!/usr/bin/env bats
# enflame-ctk info against a simulated host: every backend finds the same cards, auto picks
# efsmi-json, faults push it down the chain with a reason, bad hosts give one error line.
# efsmi's --json-format output and the DRS tables' borders are our model (docs/efsmi-model.md), not captured
# from a real driver (the DRS columns are gcushare's): a pass here says we read the modelled format.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  setup_scratch
  requires root
  [ -x "$SIM_HOST" ] || skip_or_fail "no $SIM_HOST (build enflame-sim-host)"
  [ -x "$CTK" ] || skip_or_fail "no $CTK (build enflame-ctk)"
}

teardown() { teardown_scratch; }

# host NAME [description lines appended...]: an N-card example host at $SCRATCH/NAME.
host8() {
  local name=$1; shift
  sim_example 8 --drs --unhealthy 5 > "$SCRATCH/$name.yaml"
  local line
  for line in "$@"; do printf '%s\n' "$line" >> "$SCRATCH/$name.yaml"; done
  sim_host "$SCRATCH/$name.yaml" "$SCRATCH/$name"
}

info() { "$CTK" info --driver-root "$1" --dev-root "$1" "${@:2}"; }

@test "info: every backend agrees on an 8-card host, and auto is efsmi-json (modelled JSON)" {
  host8 h
  local b
  for b in auto efsmi-json efsmi-text libefml; do
    info "$SCRATCH/h" --backend "$b" --format json > "$SCRATCH/$b.json"
  done
  python3 - "$SCRATCH" <<'PY'
import json, sys
d = sys.argv[1]
got = {b: json.load(open(f"{d}/{b}.json")) for b in ["auto", "efsmi-json", "efsmi-text", "libefml"]}
assert got["auto"] == got["efsmi-json"], "auto differs from efsmi-json"
for b, h in got.items():
    assert h["backend"] == (b if b != "auto" else "efsmi-json"), (b, h["backend"])
    assert h["fallbacks"] == [], (b, h["fallbacks"])
    assert len(h["devices"]) == 8, (b, len(h["devices"]))
    assert h["control"]["path"] == "/dev/gcuctl", b
# Every field that two backends both know must be equal; the ones every backend must know are.
must = ["index", "minor", "uuid", "serial", "product", "architecture", "memory_bytes", "pci_bus_id",
        "pci_device_id", "numa_node", "healthy", "driver_version", "node", "drs_instances"]
ref = got["efsmi-json"]
for b in ["efsmi-text", "libefml"]:
    for a, c in zip(ref["devices"], got[b]["devices"]):
        for k in a:
            if a[k] in ("", None) or c[k] in ("", None):
                assert k not in must, (b, a["index"], k, "unknown")
                continue
            assert a[k] == c[k], (b, a["index"], k, a[k], c[k])
    for k in ["driver_version", "control", "drs_profiles"]:
        assert ref[k] == got[b][k], (b, k)
devs = ref["devices"]
assert [x["minor"] for x in devs] == list(range(8))
assert [x["healthy"] for x in devs] == [True] * 5 + [False] + [True] * 2
assert all(x["memory_bytes"] == 42976 << 20 and x["architecture"] == "GCU300" for x in devs)
# 1g.11gb and 2g.22gb: "full" is not a <g>g.<m>gb name, so (as for gcushare) not a profile row
assert sum(len(x["drs_instances"]) for x in devs) == 3 and [p["name"] for p in ref["drs_profiles"]] == ["1g.11gb", "2g.22gb"]
PY
}

@test "info: lists the known libefml calls the host's library lacks, whichever backend answers" {
  host8 h "faults: {efml_missing_symbols: [EfmlGetEvent, EfmlGetDevTempV2]}"
  local lib
  lib=$(echo "$SCRATCH"/h/usr/local/efsmi/efsmi-*/lib/libefml.so.1.0.0)
  [ -f "$lib" ]
  run info "$SCRATCH/h" --format json
  [ "$status" -eq 0 ]
  [ "$(jq -r .backend <<<"$output")" = efsmi-json ]
  [ "$(jq -c .libefml <<<"$output")" = "{\"path\":\"$lib\",\"missing\":[\"EfmlGetDevTempV2\",\"EfmlGetEvent\"]}" ]
  run info "$SCRATCH/h" --backend libefml
  [ "$status" -eq 0 ]
  [[ "$output" == *"libefml: $lib lacks EfmlGetDevTempV2 EfmlGetEvent"* ]]
  host8 full
  run info "$SCRATCH/full" --format json
  [ "$(jq -c .libefml.missing <<<"$output")" = "[]" ]
  run info "$SCRATCH/full"
  [[ "$output" == *"libefml: "*" (every known call)"* ]]
  host8 nolib "faults: {efml_absent: true}"
  run info "$SCRATCH/nolib" --format json
  [ "$status" -eq 0 ]
  [ "$(jq -c 'has("libefml")' <<<"$output")" = false ]
  run info "$SCRATCH/nolib"
  [ "$status" -eq 0 ]
  refute_grep '^libefml'
}

@test "info: text output names the backend (modelled JSON) and each card" {
  host8 h
  run info "$SCRATCH/h"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "backend: efsmi-json" ]
  [[ "$output" == *"8 cards"* ]]
  [[ "$output" == *"GCU 7: S60 (GCU300, scorpio)"* ]]
  [[ "$output" == *"node /dev/gcu5 (238:5, host $SCRATCH/h/dev/gcu5, minor 5)"* ]]
  [[ "$output" == *"health FAILED"* ]]
  [[ "$output" == *"DRS 0: 1g.11gb DRS-"* ]]
}

@test "info: an old driver without --json-format falls back to text and says why" {
  host8 h "faults: {json_unsupported: true, old_keys: true}"
  run info "$SCRATCH/h"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "backend: efsmi-text" ]
  [ "${lines[1]}" = "  not used: efsmi-json: efsmi exited 1 (old driver without --json-format?)" ]
  info "$SCRATCH/h" --format json | python3 -c '
import json, sys
h = json.load(sys.stdin)
assert h["backend"] == "efsmi-text" and len(h["devices"]) == 8
assert all(d["memory_bytes"] == 42976 << 20 for d in h["devices"])'
}

@test "info: a hanging efsmi times out (config efsmi-timeout-ms) and libefml answers" {
  host8 h "faults: {efsmi_sleep_ms: 5000}"
  printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\nefsmi-timeout-ms = 200\n' \
    "$SCRATCH/h" "$SCRATCH/h" > "$SCRATCH/config.toml"
  ENFLAME_CTK_CONFIG="$SCRATCH/config.toml" run "$CTK" info --format json
  [ "$status" -eq 0 ]
  python3 -c '
import json, sys
h = json.loads(sys.argv[1])
assert h["backend"] == "libefml", h["backend"]
assert h["fallbacks"] == ["efsmi-json: efsmi timed out after 200 ms",
                          "efsmi-text: efsmi timed out after 200 ms"], h["fallbacks"]
assert len(h["devices"]) == 8' "$output"
}

@test "info: flags override the config's roots" {
  host8 h
  write_config "$SCRATCH/config.toml" "$SCRATCH/nowhere"
  ENFLAME_CTK_CONFIG="$SCRATCH/config.toml" run "$CTK" info --driver-root "$SCRATCH/h" --dev-root "$SCRATCH/h"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "backend: efsmi-json" ]
}

@test "info: no backend answers: one error line naming all three reasons, nothing on stdout" {
  host8 h "faults: {efsmi_exit_code: 3, efml_absent: true}"
  run --separate-stderr info "$SCRATCH/h"
  [ "$status" -eq 1 ]
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [ "$stderr" = "error: no backend found the cards: efsmi-json: efsmi exited 3 (old driver without --json-format?); efsmi-text: efsmi exited 3; libefml: no libefml.so or libefml.so.1 under driver-root '$SCRATCH/h' (searched /usr/lib, /usr/lib64, /usr/lib/x86_64-linux-gnu, /usr/local/lib, /usr/local/topsrider/lib, /opt/tops/lib)" ]
}

@test "info: a node with the wrong minor is refused by every backend" {
  host8 h
  rm "$SCRATCH/h/dev/gcu3"
  mknod -m 0666 "$SCRATCH/h/dev/gcu3" c 238 9
  run --separate-stderr info "$SCRATCH/h" --backend libefml
  [ "$status" -eq 1 ]
  [ "$stderr" = "error: card 3 (0000:13:00.0): '$SCRATCH/h/dev/gcu3' is 238:9, sysfs says 238:3" ]
  run --separate-stderr info "$SCRATCH/h"
  [ "$status" -eq 1 ]
  [[ "$stderr" == "error: no backend found the cards: efsmi-json: card 3 (0000:13:00.0): '$SCRATCH/h/dev/gcu3' is 238:9, sysfs says 238:3; "* ]]
}

@test "info: node attributes come from the host node (mode, owner, dynamic major)" {
  sim_example 2 > "$SCRATCH/d.yaml"
  sed -i 's/^major: 238$/major: 241/' "$SCRATCH/d.yaml"
  printf 'class_dir: zixiao\n' >> "$SCRATCH/d.yaml"
  sim_host "$SCRATCH/d.yaml" "$SCRATCH/h"
  chmod 0620 "$SCRATCH/h/dev/gcu1"
  chown 7:9 "$SCRATCH/h/dev/gcu1"
  run info "$SCRATCH/h" --backend efsmi-text --format json
  [ "$status" -eq 0 ]
  python3 -c '
import json, sys
n = json.loads(sys.argv[1])["devices"][1]["node"]
assert (n["major"], n["minor"], n["mode"], n["uid"], n["gid"]) == (241, 1, "0620", 7, 9), n
assert n["path"] == "/dev/gcu1" and n["host_path"] == sys.argv[2] + "/dev/gcu1", n' "$output" "$SCRATCH/h"
}

@test "info: a bad --backend is refused" {
  run "$CTK" info --backend nvml
  [ "$status" -ne 0 ]
  [[ "$output" == *"nvml"* ]]
}
