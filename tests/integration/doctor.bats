#!/usr/bin/env bats
# enflame-ctk doctor on a simulated host (spec dirs, config and engine files all under
# $SCRATCH; the host's /etc/cdi is never read or written), each check broken in turn; and the
# shim in auto mode with a spec gone stale, through runc, still giving the right card.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

setup() {
  requires root python3
  setup_scratch
  [ -x "$SIM_HOST" ] || skip_or_fail "no $SIM_HOST (build enflame-sim-host)"
  sim_example 4 > "$SCRATCH/desc.yaml"
  printf 'faults: {}\n' >> "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  mkdir -p "$SCRATCH/cdi"
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  printf '[enflame-container-runtime]\nspec-dirs = ["%s"]\n' "$SCRATCH/cdi" >> "$SCRATCH/config.toml"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  printf '[engine]\ncgroup_manager = "cgroupfs"\n' > "$SCRATCH/containers.conf"
  MAJOR=$(stat -c '%t' "$SCRATCH/host/dev/gcu0"); MAJOR=$((16#$MAJOR))
}

teardown() { teardown_scratch; }

# doctor [flags]: the doctor on the simulated host, podman as the only engine (its config in
# $SCRATCH); status and lines in $status / $output.
doctor() {
  run "$CTK" doctor --runtime podman --runtime-config "podman=$SCRATCH/containers.conf" "$@"
  echo "$output"
}

# rebuild PYTHON: edit the host description (parsed as `d`) and lay the host out again.
rebuild() { sim_rebuild "$SCRATCH/desc.yaml" "$SCRATCH/host" "$1"; }

# line STATUS NAME PATTERN: $output has the check NAME with STATUS and what it saw matching PATTERN.
line() { grep -E "^$1 +$2 +.*$3" <<<"$output"; }

@test "doctor: a healthy simulated host is all ok, exit 0" {
  doctor
  [ "$status" -eq 0 ]
  refute_grep -E '^(warn|fail) '
  line ok driver.module "enflame 1\.4\.3\.4 loaded"
  line ok driver.backend "efsmi-json answered: 4 cards"
  line ok driver.libefml "has every known call"
  line ok device.gcu3 "/dev/gcu3' $MAJOR:3 mode 0666"
  line ok device.gcuctl "/dev/gcuctl' $MAJOR:255"
  line ok cdi.current "$SCRATCH/cdi/enflame.com-gpu.yaml: matches the host$"
  line ok config.spec-dirs "\['$SCRATCH/cdi'\] \(set in $SCRATCH/config.toml\)"
  line ok config.mode "'auto' \(default\)"
  line ok runtime.podman ""
  [[ $output == *"0 warnings, 0 failures" ]]
  # the spec records what it was generated from, and stays 0.5.0 (podman 4.3.1)
  head -1 "$SCRATCH/cdi/enflame.com-gpu.yaml" | grep -Fx "# enflame.com/generated-from: driver=1.4.3.4 card=0/TR6Y46010000/0000:10:00.0/$MAJOR:0 card=1/TR6Y46010001/0000:11:00.0/$MAJOR:1 card=2/TR6Y46010002/0000:12:00.0/$MAJOR:2 card=3/TR6Y46010003/0000:13:00.0/$MAJOR:3"
  grep -Fx 'cdiVersion: "0.5.0"' "$SCRATCH/cdi/enflame.com-gpu.yaml"
}

@test "doctor: --format json has every check as name/status/seen/fix and the exit code" {
  doctor --format json --driver-root "$SCRATCH/host"
  [ "$status" -eq 0 ]
  python3 - "$output" "$SCRATCH" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert list(j) == ["checks", "exit_code"], list(j)
assert j["exit_code"] == 0
names = [c["name"] for c in j["checks"]]
for c in j["checks"]:
    assert list(c) == ["name", "status", "seen", "fix"], c
    assert c["status"] == "ok", c
for n in ["config.file", "config.driver-root", "driver.module", "driver.efsmi", "driver.backend",
          "driver.libefml", "device.gcu0", "device.gcuctl", "cdi.current", "runtime.podman"]:
    assert n in names, n
dr = [c for c in j["checks"] if c["name"] == "config.driver-root"][0]
assert dr["seen"] == f"'{sys.argv[2]}/host' (flag --driver-root)", dr
PY
}

@test "doctor: a missing node fails its line (and discovery), exit 2" {
  rm "$SCRATCH/host/dev/gcu1"
  doctor
  [ "$status" -eq 2 ]
  line fail device.gcu1 "0000:11:00.0: '$SCRATCH/host/dev/gcu1' is missing \(sysfs says $MAJOR:1\)"
  grep -F "fix: reload the enflame driver" <<<"$output"
  line ok device.gcu0 ""
  line fail driver.backend "dev/gcu1' is missing"
}

@test "doctor: a node with the wrong major:minor fails, and so does the spec naming it" {
  rm "$SCRATCH/host/dev/gcu1"
  mknod -m 666 "$SCRATCH/host/dev/gcu1" c "$MAJOR" 7
  doctor
  [ "$status" -eq 2 ]
  line fail device.gcu1 "is $MAJOR:7, sysfs says $MAJOR:1"
  line fail cdi.current "device node '$SCRATCH/host/dev/gcu1' is $MAJOR:7, the spec says $MAJOR:1"
}

@test "doctor: a node only root can open warns" {
  chmod 600 "$SCRATCH/host/dev/gcu2"
  doctor
  [ "$status" -eq 1 ]
  line warn device.gcu2 "mode 0600: a container user other than root cannot open it"
}

@test "doctor: an invalid spec and a name claimed twice fail" {
  printf 'cdiVersion: "0.5.0"\nkind: enflame.com/gpu\ndevcies: []\n' > "$SCRATCH/cdi/broken.yaml"
  doctor
  [ "$status" -eq 2 ]
  line fail cdi.spec "$SCRATCH/cdi/broken.yaml: .*devcies"
  refute_grep -E '^fail +cdi.names'
  rm "$SCRATCH/cdi/broken.yaml"
  cp "$SCRATCH/cdi/enflame.com-gpu.yaml" "$SCRATCH/cdi/other.yaml"
  doctor
  [ "$status" -eq 2 ]
  line fail cdi.names "device 'enflame.com/gpu=0' is defined in '$SCRATCH/cdi/enflame.com-gpu.yaml' and '$SCRATCH/cdi/other.yaml'"
}

@test "doctor: no spec of our kind warns with the command that writes one" {
  rm "$SCRATCH/cdi/enflame.com-gpu.yaml"
  doctor
  [ "$status" -eq 1 ]
  line warn cdi.current "no spec of kind 'enflame.com/gpu' in $SCRATCH/cdi"
  grep -F "fix: enflame-ctk cdi generate --output $SCRATCH/cdi/enflame.com-gpu.yaml" <<<"$output"
}

@test "doctor: the spec is stale after a driver upgrade" {
  rebuild 'd["driver_version"] = "1.5.0.1"'
  doctor
  [ "$status" -eq 2 ]
  line ok driver.module "enflame 1\.5\.0\.1 loaded"
  line fail cdi.current "stale: .*generated for driver 1\.4\.3\.4, the driver is 1\.5\.0\.1"
  line fail cdi.current "mounted file '$SCRATCH/host/usr/local/efsmi/efsmi-1\.4\.3\.4/.*' is missing"
  grep -F "fix: enflame-ctk cdi generate --output $SCRATCH/cdi/enflame.com-gpu.yaml" <<<"$output"
  # regenerating fixes it
  "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  doctor
  [ "$status" -eq 0 ]
}

@test "doctor: the spec is stale after a card is removed, or a card added" {
  rebuild 'd["cards"] = d["cards"][:3]'
  doctor
  [ "$status" -eq 2 ]
  line fail cdi.current "device '3' names a card the host does not have"
  line fail cdi.current "card 3 \(TR6Y46010003\) is gone"
  refute_grep -E '^fail +device\.'
  # a spec for 2 cards on the 3-card host: only a warning (nothing it names is wrong)
  rebuild 'd["cards"] = d["cards"][:2]'
  "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  rebuild 'd["cards"].append(dict(d["cards"][1], index=2, minor=2, uuid="TR6Y46010002", bus_id="0000:12:00.0"))'
  doctor
  [ "$status" -eq 1 ]
  line warn cdi.current "card 2 \(TR6Y46010002\) is not in the spec"
}

@test "doctor: the spec is stale after a library is removed" {
  rebuild 'd["runtime_libraries"].remove("libeccl.so.1.0.0")'
  doctor
  [ "$status" -eq 2 ]
  line fail cdi.current "mounted file '$SCRATCH/host/usr/lib/libeccl.so.1.0.0' is missing"
}

@test "doctor: efsmi missing warns, libefml answers instead" {
  rebuild 'd["faults"] = {"efsmi_absent": True}'
  "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  doctor
  [ "$status" -eq 1 ]
  line warn driver.efsmi "no efsmi under driver-root '$SCRATCH/host'"
  line ok driver.backend "libefml answered: 4 cards; not used: efsmi-json: no efsmi"
}

@test "doctor: libefml missing calls warns and names them" {
  rebuild 'd["faults"] = {"efml_missing_symbols": ["EfmlGetDevIsHealth", "EfmlGetEvent"]}'
  "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  doctor
  [ "$status" -eq 1 ]
  line warn driver.libefml "lacks EfmlGetDevIsHealth EfmlGetEvent \(their values stay unknown\)"
}

@test "doctor: the driver unloaded fails the module line" {
  rm "$SCRATCH/host/sys/module/enflame/version"
  doctor
  [ "$status" -eq 2 ]
  line fail driver.module "the enflame module is not loaded: '$SCRATCH/host/sys/module/enflame/version' is missing"
}

@test "doctor: an engine config that does not parse fails; a config.toml that does not parse too" {
  printf '{\n  "runtimes": {,\n}\n' > "$SCRATCH/daemon.json"
  run "$CTK" doctor --runtime docker --runtime-config "docker=$SCRATCH/daemon.json" --runtime-socket "docker=$SCRATCH/no.sock"
  echo "$output"
  [ "$status" -eq 2 ]
  line fail runtime.docker "$SCRATCH/daemon.json: does not parse: "
  printf '[enflame-container-runtime]\nmdoe = "auto"\n' > "$SCRATCH/bad.toml"
  run "$CTK" --config "$SCRATCH/bad.toml" doctor --runtime podman --driver-root "$SCRATCH/host" --dev-root "$SCRATCH/host" --spec-dir "$SCRATCH/cdi"
  echo "$output"
  [ "$status" -eq 2 ]
  line fail config.file "$SCRATCH/bad.toml: line 2: unknown key 'mdoe'"
  line ok driver.backend "efsmi-json answered: 4 cards"
  run "$CTK" doctor --runtime-config "nerdctl=/x"
  [ "$status" -ne 0 ]
  [[ $output == *"--runtime-config 'nerdctl=/x': want ENGINE=PATH with ENGINE docker, containerd, crio or podman"* ]]
}

# --- the shim in auto mode with a stale spec, through runc ---

PROBE='["sh","-c","ls -l /dev/; echo ==; cat /proc/self/mountinfo; echo ==; env; true"]'

# stale_run ENV: a busybox bundle with ENV run through the shim (auto mode, the spec dir above);
# what the container printed in $output, the shim's runc log in $SCRATCH/log.json.
stale_run() {
  requires runc
  rm -rf "$SCRATCH/b"
  oci_bundle "$SCRATCH/b" "$PROBE"
  bundle_edit "$SCRATCH/b" "c['process']['env'].append('$1')"
  local id
  id=$(unique_id doctor)
  on_teardown "runc --root '$SCRATCH/rr' delete -f $id >/dev/null 2>&1"
  run timeout 60 "$SHIM" --root "$SCRATCH/rr" --log "$SCRATCH/log.json" --log-format json run --bundle "$SCRATCH/b" "$id"
  echo "$output"
}

@test "shim: after a driver upgrade the stale spec is not used; the container gets card 2 and the new libefml" {
  rebuild 'd["driver_version"] = "1.5.0.1"'
  stale_run ENFLAME_VISIBLE_DEVICES=2
  [ "$status" -eq 0 ]
  grep -E "^c.* $MAJOR, +2 .* gcu2$" <<<"$output"
  refute_grep -E " gcu[013]$"
  echo "$output" | grep -E "efsmi-1\.5\.0\.1/lib/libefml\.so\.1\.0\.0 /usr/lib/libefml\.so\.1 ro,"
  refute_grep -F "efsmi-1.4.3.4"
  [ "$(grep -c 'the CDI spec on disk is stale' "$SCRATCH/log.json")" -eq 1 ]
  grep -F "generated for 1.4.3.4" "$SCRATCH/log.json" || grep -F "efsmi-1.4.3.4" "$SCRATCH/log.json"
}

@test "shim: a card moved to another minor (card swap) is found by discovery, not the spec's node" {
  rebuild 'd["cards"][2]["minor"] = 6'
  stale_run ENFLAME_VISIBLE_DEVICES=2
  [ "$status" -eq 0 ]
  grep -E "^c.* $MAJOR, +6 .* gcu6$" <<<"$output"
  refute_grep -E " gcu2$"
  grep -F "the CDI spec on disk is stale" "$SCRATCH/log.json"
}

@test "shim: a library removed under the spec: the container still starts with its card" {
  rebuild 'd["runtime_libraries"].remove("libeccl.so.1.0.0")'
  stale_run ENFLAME_VISIBLE_DEVICES=1
  [ "$status" -eq 0 ]
  grep -E "^c.* $MAJOR, +1 .* gcu1$" <<<"$output"
  refute_grep -F "libeccl"
  grep -F "libeccl.so.1.0.0' is missing" "$SCRATCH/log.json"
}

@test "shim: a fresh spec is used as it is, with nothing logged about staleness" {
  sed -i 's/^\( *\)- ENFLAME_VISIBLE_DEVICES=void$/&\n\1- FROM_SPEC_ON_DISK=1/' "$SCRATCH/cdi/enflame.com-gpu.yaml"
  stale_run ENFLAME_VISIBLE_DEVICES=3
  [ "$status" -eq 0 ]
  grep -E "^c.* $MAJOR, +3 .* gcu3$" <<<"$output"
  grep -Fx "FROM_SPEC_ON_DISK=1" <<<"$output"
  run grep -c stale "$SCRATCH/log.json"
  [ "$output" = 0 ]
}
