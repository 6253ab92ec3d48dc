#!/usr/bin/env bats
# The simulated Enflame host (sim/): the host builder, the efsmi simulator and the libefml
# simulator, checked against the fixtures and the descriptions, fault switch by fault switch.
# Needs root (mknod). Run: BUILD_DIR=$PWD/build/<name> bats tests/integration/sim.bats

load helpers
bats_require_minimum_version 1.5.0   # run --separate-stderr

VER=1.4.3.4

setup() {
  setup_scratch
  requires root python3 jq
  FIX=$TOP/tests/fixtures/efsmi
  EXAMPLES=$TOP/sim/examples
}

teardown() { teardown_scratch; }

# efsmi / libefml of a built root (their real paths: usr/bin/efsmi is an absolute symlink).
efsmi_in() { "$1/usr/local/efsmi/efsmi-${VER}/efsmi" "${@:2}"; }
efml_in() { echo "$1/usr/local/efsmi/efsmi-${VER}/lib/libefml.so.1.0.0"; }

# desc NAME: writes stdin to $SCRATCH/NAME.yaml and prints the path.
desc() { cat > "$SCRATCH/$1.yaml"; echo "$SCRATCH/$1.yaml"; }

# build_with_faults FAULTS: a 2-card host with the given flow mapping under faults, at $SCRATCH/root.
build_with_faults() {
  local d
  d=$(desc faults <<EOF
cards: [{uuid: TR6Y46010302}, {uuid: TR1V57100501, healthy: false}]
faults: {$1}
EOF
)
  sim_host "$d" "$SCRATCH/root"
}

# efml PY: runs python3 with L = the libefml of $SCRATCH/root loaded through ctypes.
efml() {
  python3 - "$(efml_in "$SCRATCH/root")" <<EOF
import ctypes, sys
from ctypes import Structure, sizeof, byref, c_char, c_int, c_uint32, c_uint64, c_int32, c_bool, create_string_buffer
L = ctypes.CDLL(sys.argv[1])
buf = create_string_buffer(128)
$1
EOF
}

@test "efsmi -q reproduces the 2-card fixture byte for byte" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  efsmi_in "$SCRATCH/root" -q > "$SCRATCH/out.txt"
  cmp "$SCRATCH/out.txt" "$FIX/efsmi-q-s60-2dev.txt"
  efsmi_in "$SCRATCH/root" --query | cmp - "$FIX/efsmi-q-s60-2dev.txt"
}

@test "efsmi -q reproduces the 1-card fixture from defaults (SN, bus, memory)" {
  d=$(desc one <<'EOF'
cards:
  - uuid: TR6Y46010302
    bus_id: "0000:17:00.0"
EOF
)
  sim_host "$d" "$SCRATCH/root"
  efsmi_in "$SCRATCH/root" -q | cmp - "$FIX/efsmi-q-s60-1dev.txt"
}

@test "a JSON description builds the same host as its YAML twin" {
  python3 -c 'import json,sys,yaml' 2>/dev/null || skip_or_fail "needs python3-yaml"
  python3 -c 'import json,sys,yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2],"w"))' \
    "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/s60.json"
  sim_host "$SCRATCH/s60.json" "$SCRATCH/root"
  efsmi_in "$SCRATCH/root" -q | cmp - "$FIX/efsmi-q-s60-2dev.txt"
}

@test "efsmi -q --json-format (modelled) is valid JSON with the text format's sections and keys" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  efsmi_in "$SCRATCH/root" -q --json-format > "$SCRATCH/q.json"
  run jq -r '.devices | length' "$SCRATCH/q.json"
  [ "$output" = 2 ]
  run jq -c '.devices[1] | [.id, .["Driver Info"].Ver, .["Device Info"]["Dev Name"],
      .["Device Info"]["Dev UUID"], .["Device Info"]["Dev SN"], .["Device Info"].Health,
      .["PCIe Info"]["Vendor ID"], .["PCIe Info"]["Device ID"], .["PCIe Info"].Domain,
      .["PCIe Info"].Bus, .["PCIe Info"].Dev, .["PCIe Info"].Func,
      .["Device Mem Info"]["Total Size"], .["Device Mem Info"]["Used Size"]]' "$SCRATCH/q.json"
  [ "$output" = '[1,"1.4.3.4","S60","TR1V57100501","A0A1650510677","True","1e36","c035","0000","b1","00",0,"42976 MiB","2048 MiB"]' ]
  # the flags in either order
  efsmi_in "$SCRATCH/root" --json-format -q | cmp - "$SCRATCH/q.json"
}

@test "efsmi --drs --list-profile / --list-instance print gcushare's columns, per card with -i" {
  sim_example 3 --drs > "$SCRATCH/drs.yaml"
  sim_host "$SCRATCH/drs.yaml" "$SCRATCH/root"
  run efsmi_in "$SCRATCH/root" --drs --list-profile
  [ "$status" -eq 0 ]
  # rows: card-index profile-name profile-id instance-count memory sip (our borders, gcushare's order)
  [ "${lines[5]}" = "| 0   | 1g.11gb | 0          | 4         | 10744MiB | 6   |" ]
  [ "${lines[6]}" = "| 0   | 2g.22gb | 1          | 2         | 21488MiB | 12  |" ]
  [ "$(grep -c '^| 2 ' <<< "$output")" -eq 3 ]
  run efsmi_in "$SCRATCH/root" -i 1 --drs --list-profile
  [ "$status" -eq 0 ]
  [ "$(grep -c '^| [02] ' <<< "$output")" -eq 0 ]
  [ "$(grep -c '^| 1 ' <<< "$output")" -eq 3 ]
  # the older layout: card-index profile-name instance-id uuid
  run efsmi_in "$SCRATCH/root" --drs --list-instance
  [ "$status" -eq 0 ]
  [ "$(grep '^| [0-9]' <<< "$output" | tr -s ' ')" = "| 0 | 1g.11gb | 0 | 4c1e9a52-0000-4000-8000-000000000000 |
| 0 | 1g.11gb | 1 | 4c1e9a52-0000-4000-8000-000000000001 |
| 1 | 2g.22gb | 0 | 4c1e9a52-0000-4000-8000-000000000002 |" ]
  run efsmi_in "$SCRATCH/root" --drs -i 2 --list-instance
  [ "$status" -eq 0 ]
  [[ "$output" == *"| No DRS instance found"* ]]
  run efsmi_in "$SCRATCH/root" -i 3 --drs --list-instance
  [ "$status" -eq 1 ]
  [ "$output" = "Error: invalid card index 3" ]
}

@test "drs_instance_layout: placement prints card-index profile-name profile-id instance-id placement" {
  sim_example 2 --drs > "$SCRATCH/drs.yaml"
  printf 'faults: {drs_instance_layout: placement}\n' >> "$SCRATCH/drs.yaml"
  sim_host "$SCRATCH/drs.yaml" "$SCRATCH/root"
  run efsmi_in "$SCRATCH/root" --drs --list-instance
  [ "$status" -eq 0 ]
  [ "$(grep '^| [0-9]' <<< "$output" | tr -s ' ')" = "| 0 | 1g.11gb | 0 | 0 | 0:1 |
| 0 | 1g.11gb | 0 | 1 | 1:1 |
| 1 | 2g.22gb | 1 | 0 | 0:2 |" ]
  refute_grep 4c1e9a52 <<< "$output"
  sed -i 's/drs_instance_layout: placement/drs_instance_layout: columns/' "$SCRATCH/drs.yaml"
  run sim_host "$SCRATCH/drs.yaml" "$SCRATCH/root2"
  [ "$status" -eq 1 ]
  [[ "$output" == *"faults.drs_instance_layout: unknown layout 'columns' (want uuid or placement)"* ]]
  [ ! -e "$SCRATCH/root2/usr" ]
}

@test "efsmi --drs --create-instance / --destroy-instance / on|off keep state in the host; errors exit 1" {
  sim_example 2 --drs > "$SCRATCH/drs.yaml"
  sim_host "$SCRATCH/drs.yaml" "$SCRATCH/root"
  local state=$SCRATCH/root/usr/local/efsmi/efsmi-$VER/enflame-sim-drs.json
  run efsmi_in "$SCRATCH/root" -i 1 --drs --create-instance 1
  [ "$status" -eq 0 ]
  [ "$output" = "Created DRS instance 1 (2g.22gb) on GCU 1" ]
  [ -f "$state" ]
  # a later run sees it (a new UUID)
  run efsmi_in "$SCRATCH/root" -i 1 --drs --list-instance
  [ "$(grep -c '^| 1 .* 2g.22gb .* 1 .* 4c1e9a52-0001-4000-9000-000000000001 |' <<< "$output")" -eq 1 ]
  # errors: one line on stderr, exit 1, state untouched
  cp "$state" "$SCRATCH/state.before"
  for bad in "-i 1 --drs --create-instance 1|Error: too many instances: GCU 1 has 2 of 2 '2g.22gb' instances" \
             "-i 1 --drs --create-instance 0|Error: too many instances: 1 free slice(s) needed on GCU 1" \
             "-i 0 --drs --create-instance 9|Error: unknown DRS profile id '9' on GCU 0" \
             "-i 0 --drs --destroy-instance 7|Error: no DRS instance '7' on GCU 0" \
             "-i 0 --drs off|Error: GCU 0 has DRS instances: destroy them first" \
             "--drs --create-instance 0|Error: --create-instance and --destroy-instance need -i <card>" \
             "-i 5 --drs --destroy-instance 0|Error: invalid card index 5"; do
    # shellcheck disable=SC2086
    run --separate-stderr efsmi_in "$SCRATCH/root" ${bad%%|*}
    [ "$status" -eq 1 ]
    [ "$stderr" = "${bad#*|}" ]
    [ -z "$output" ]
    cmp "$state" "$SCRATCH/state.before"
  done
  # destroy both of card 0, switch it off: nothing can be created until it is on again
  efsmi_in "$SCRATCH/root" -i 0 --drs --destroy-instance 0
  efsmi_in "$SCRATCH/root" -i 0 --drs --destroy-instance 1
  run efsmi_in "$SCRATCH/root" -i 0 --drs off
  [ "$output" = "DRS is off on GCU 0" ]
  run --separate-stderr efsmi_in "$SCRATCH/root" -i 0 --drs --create-instance 0
  [ "$status" -eq 1 ]
  [ "$stderr" = "Error: DRS is off on GCU 0 (efsmi -i 0 --drs on)" ]
  efsmi_in "$SCRATCH/root" -i 0 --drs on
  run efsmi_in "$SCRATCH/root" -i 0 --drs --create-instance 0
  [ "$output" = "Created DRS instance 0 (1g.11gb) on GCU 0" ]
  # a rebuild starts again from the description
  sim_host "$SCRATCH/drs.yaml" "$SCRATCH/root"
  [ ! -e "$state" ]
  run efsmi_in "$SCRATCH/root" -i 1 --drs --list-instance
  [ "$(grep -c '^| 1 ' <<< "$output")" -eq 1 ]
}

@test "efsmi --drs: concurrent creates lose no instance (the state is changed under a lock)" {
  d=$(desc big <<'EOF'
cards: [{}]
drs:
  profiles: [{name: 1g.6gb, max_instances: 16, memory_mib: 6000}]
EOF
)
  sim_host "$d" "$SCRATCH/root"
  local pids=() i
  for i in $(seq 16); do
    efsmi_in "$SCRATCH/root" -i 0 --drs --create-instance 0 > "$SCRATCH/c$i.out" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
  run efsmi_in "$SCRATCH/root" -i 0 --drs --list-instance
  [ "$(grep -c '^| 0 .* 1g.6gb ' <<< "$output")" -eq 16 ]
  [ "$(cat "$SCRATCH"/c*.out | sort -u | wc -l)" -eq 16 ]
}

@test "--drs --list-profile: a card whose product has no profile says DRS not supported" {
  d=$(desc mixed <<'EOF'
cards: [{product: S60}, {product: T10}]
drs:
  profiles: [{name: 1g.11gb, max_instances: 4, memory_mib: 10744, product: S60}]
EOF
)
  sim_host "$d" "$SCRATCH/root"
  run efsmi_in "$SCRATCH/root" --drs --list-profile
  [ "$(grep '^| [0-9]' <<< "$output" | tr -s ' ')" = "| 0 | 1g.11gb | 0 | 4 | 10744MiB | 6 |" ]
  run efsmi_in "$SCRATCH/root" -i 1 --drs --list-profile
  [ "$status" -eq 0 ]
  [[ "$output" == *"| GCU 1: DRS not supported"* ]]
  run --separate-stderr efsmi_in "$SCRATCH/root" -i 1 --drs on
  [ "$status" -eq 1 ]
  [ "$stderr" = "Error: GCU 1 does not support DRS" ]
}

@test "efsmi prints its usage and exits 1 on -h and on unknown flags" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  for args in "-h" "--help" "--bogus" "-q --bogus" "" "--drs" "-L" "-i 0 -q" "-i x --drs --list-profile" \
              "--drs --list-profile --list-profile" "-i 0 --drs --create-instance"; do
    # shellcheck disable=SC2086
    run efsmi_in "$SCRATCH/root" $args
    [ "$status" -eq 1 ]
    [ "${lines[0]}" = "Usage: efsmi [options]" ]
  done
}

@test "device nodes are character devices with the described major:minor, mode 0666" {
  d=$(desc nodes <<'EOF'
major: 240
control: {major: 241, minor: 7}
cards: [{minor: 3}, {minor: 9}]
EOF
)
  sim_host "$d" "$SCRATCH/root"
  [ "$(stat -c '%F %t %T %a' "$SCRATCH/root/dev/gcu3")" = "character special file f0 3 666" ]
  [ "$(stat -c '%F %t %T %a' "$SCRATCH/root/dev/gcu9")" = "character special file f0 9 666" ]
  [ "$(stat -c '%F %t %T %a' "$SCRATCH/root/dev/gcuctl")" = "character special file f1 7 666" ]
  [ "$(ls "$SCRATCH/root/dev")" = "gcu3
gcu9
gcuctl" ]
}

@test "sysfs: dev, numa_node, module version, and a zixiao class folder" {
  d=$(desc sysfs <<'EOF'
driver_version: "2.0.1"
class_dir: zixiao
cards: [{bus_id: "0000:3B:00.0", minor: 5, numa_node: 1}]
EOF
)
  sim_host "$d" "$SCRATCH/root"
  local dev=$SCRATCH/root/sys/bus/pci/devices/0000:3b:00.0
  [ "$(cat "$dev/zixiao/gcu5/dev")" = "238:5" ]
  [ "$(cat "$dev/numa_node")" = 1 ]
  [ "$(cat "$dev/vendor")" = 0x1e36 ]
  [ "$(cat "$dev/device")" = 0xc035 ]
  [ "$(cat "$SCRATCH/root/sys/module/enflame/version")" = 2.0.1 ]
  [ -x "$SCRATCH/root/usr/local/efsmi/efsmi-2.0.1/efsmi" ]
}

@test "symlinks: usr/bin/efsmi, libefml.so.1, libefml.so absolute; runtime library chains" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  local r=$SCRATCH/root
  [ "$(readlink "$r/usr/bin/efsmi")" = "/usr/local/efsmi/efsmi-$VER/efsmi" ]
  [ "$(readlink "$r/usr/lib/libefml.so.1")" = "/usr/local/efsmi/efsmi-$VER/lib/libefml.so.1.0.0" ]
  [ "$(readlink "$r/usr/lib/libefml.so")" = "/usr/local/efsmi/efsmi-$VER/lib/libefml.so.1.0.0" ]
  [ "$(readlink "$r/usr/lib/libtopsrt.so")" = libtopsrt.so.2 ]
  [ "$(readlink "$r/usr/lib/libtopsrt.so.2")" = libtopsrt.so.2.1.0 ]
  [ "$(readlink "$r/usr/lib/libeccl.so")" = libeccl.so.1 ]
  [ "$(readlink "$r/usr/lib/libeccl.so.1")" = libeccl.so.1.0.0 ]
  [ "$(head -c 4 "$r/usr/lib/libtopsrt.so.2.1.0" | od -An -c | tr -d ' ')" = '177ELF' ]
  [ -f "$r/usr/lib/libtopsrt.so.2.1.0" ]
  [ ! -L "$r/usr/lib/libtopsrt.so.2.1.0" ]
  # resolved inside the root, the chains end at real files
  [ -f "$r$(readlink "$r/usr/bin/efsmi")" ]
  [ -f "$r$(readlink "$r/usr/lib/libefml.so")" ]
}

@test "enflame-sim.json is the normalised description, every default filled in" {
  d=$(desc norm <<'EOF'
cards: [{product: T10}]
EOF
)
  sim_host "$d" "$SCRATCH/root"
  local j=$SCRATCH/root/usr/local/efsmi/efsmi-$VER/enflame-sim.json
  run jq -c '[.driver_version, .major, .control, .class_dir, .cards[0]]' "$j"
  [ "$output" = '["1.4.3.4",238,{"major":238,"minor":255},"enflame",{"index":0,"minor":0,"product":"T10","uuid":"TR6Y46010000","serial":"A0A1650510676","bus_id":"0000:10:00.0","device_id":"c011","memory_mib":16384,"used_mib":0,"numa_node":0,"healthy":true}]' ]
}

@test "rebuilding a root replaces its content and leaves no staging folder" {
  sim_example 4 > "$SCRATCH/four.yaml"
  sim_host "$SCRATCH/four.yaml" "$SCRATCH/root"
  [ -c "$SCRATCH/root/dev/gcu3" ]
  touch "$SCRATCH/root/stale"
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  [ ! -e "$SCRATCH/root/dev/gcu3" ]
  [ ! -e "$SCRATCH/root/stale" ]
  [ ! -e "$SCRATCH/root/usr/lib/libefrt.so" ]
  efsmi_in "$SCRATCH/root" -q | cmp - "$FIX/efsmi-q-s60-2dev.txt"
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  [ "$(ls -A "$SCRATCH")" = "four.yaml
root" ]
}

@test "fault efsmi_exit_code: every call prints nothing and exits with the code" {
  build_with_faults "efsmi_exit_code: 3"
  for args in "-q" "-q --json-format" "--drs --list-instance" "--drs --list-profile" "-i 0 --drs on" "-h"; do
    # shellcheck disable=SC2086
    run efsmi_in "$SCRATCH/root" $args
    [ "$status" -eq 3 ]
    [ -z "$output" ]
  done
}

@test "fault efsmi_sleep_ms: efsmi answers after the delay" {
  build_with_faults "efsmi_sleep_ms: 400"
  local t0 t1
  t0=$(date +%s%N)
  run efsmi_in "$SCRATCH/root" -i 1 --drs --list-instance
  t1=$(date +%s%N)
  [ "$status" -eq 0 ]
  [[ "$output" == *"| No DRS instance found"* ]]
  [ $(( (t1 - t0) / 1000000 )) -ge 400 ]
}

@test "fault json_unsupported: --json-format prints usage and exits 1, -q still works" {
  build_with_faults "json_unsupported: true"
  run efsmi_in "$SCRATCH/root" -q --json-format
  [ "$status" -eq 1 ]
  [ "${lines[0]}" = "Usage: efsmi [options]" ]
  run efsmi_in "$SCRATCH/root" -q
  [ "$status" -eq 0 ]
  [ "${lines[4]}" = "DEV ID 0" ]
}

@test "fault efsmi_output garbage: exit 0, neither the text layout nor JSON" {
  build_with_faults "efsmi_output: garbage"
  run efsmi_in "$SCRATCH/root" -q
  [ "$status" -eq 0 ]
  [ -n "$output" ]
  [[ ! "$output" =~ (^|$'\n')"DEV ID "[0-9] ]]
  [[ "$output" != *"Dev UUID"* ]]
  run bash -c "'$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi' -q --json-format | jq . >/dev/null"
  [ "$status" -ne 0 ]
  # the DRS tables are not affected
  run efsmi_in "$SCRATCH/root" --drs --list-instance
  [ "$status" -eq 0 ]
  [[ "$output" == *"| No DRS instance found"* ]]
}

@test "fault efsmi_output truncated: output stops half way, mid-line" {
  build_with_faults "efsmi_output: truncated"
  efsmi_in "$SCRATCH/root" -q > "$SCRATCH/t.txt"
  [ -s "$SCRATCH/t.txt" ]
  [ "$(tail -c 1 "$SCRATCH/t.txt" | od -An -c | tr -d ' ')" != '\n' ]
  [[ "$(cat "$SCRATCH/t.txt")" != *"DEV ID 1"* ]]
  head -c "$(stat -c %s "$SCRATCH/t.txt")" "$SCRATCH/t.txt" | grep -q '^DEV ID 0$'
  run bash -c "'$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi' -q --json-format | jq . >/dev/null"
  [ "$status" -ne 0 ]
}

@test "fault old_keys: Mem Size / Mem Usage in text and JSON" {
  build_with_faults "old_keys: true"
  run efsmi_in "$SCRATCH/root" -q
  [ "${lines[35]}" = "        Mem Size                : 42976 MiB" ]
  [ "${lines[37]}" = "        Mem Usage               : 0 MiB" ]
  [[ "$output" != *"Total Size"* ]]
  [[ "$output" != *"Used Size"* ]]
  run bash -c "'$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi' -q --json-format | jq -c '.devices[0][\"Device Mem Info\"]'"
  [ "$output" = '{"Mem Size":"42976 MiB","Reserved Size":"1129 MiB","Mem Usage":"0 MiB","Free Size":"41847 MiB"}' ]
}

@test "healthy: false shows in efsmi text, JSON and libefml" {
  build_with_faults ""
  run efsmi_in "$SCRATCH/root" -q
  [ "$(grep -c 'Health                  : True' <<<"$output")" -eq 1 ]
  [ "$(sed -n 68p <<<"$output")" = "        Health                  : False" ]
  run bash -c "'$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi' -q --json-format | jq -c '[.devices[].\"Device Info\".Health]'"
  [ "$output" = '["True","False"]' ]
  run efml '
assert L.EfmlInit(False) == 0
h = c_bool(True)
assert L.EfmlGetDevIsHealth(0, byref(h)) == 0 and h.value is True
assert L.EfmlGetDevIsHealth(1, byref(h)) == 0 and h.value is False
print("ok")'
  [ "$output" = ok ]
}

@test "faults efsmi_absent and efml_absent leave those files out" {
  build_with_faults "efsmi_absent: true"
  [ ! -e "$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi" ]
  [ ! -L "$SCRATCH/root/usr/bin/efsmi" ]
  [ -f "$(efml_in "$SCRATCH/root")" ]
  [ -L "$SCRATCH/root/usr/lib/libefml.so.1" ]
  build_with_faults "efml_absent: true"
  [ -x "$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi" ]
  [ ! -e "$(efml_in "$SCRATCH/root")" ]
  [ ! -L "$SCRATCH/root/usr/lib/libefml.so.1" ]
  [ ! -L "$SCRATCH/root/usr/lib/libefml.so" ]
}

@test "libefml answers exactly what the description says" {
  d=$(desc efml <<'EOF'
driver_version: "1.5.0.7"
cards:
  - {uuid: GCU-U53000080105, minor: 6, bus_id: "0000:9a:00.0", numa_node: 1, product: T10, memory_mib: 16000}
  - {uuid: TR6Y46010302, minor: 2, bus_id: "0000:17:00.0", numa_node: 0}
EOF
)
  sim_host "$d" "$SCRATCH/root"
  VER=1.5.0.7
  run efml '
n = c_uint32(99)
assert L.EfmlGetDevCount(byref(n)) == 3            # not initialised
assert L.EfmlInit(False) == 0
assert L.EfmlGetDevCount(byref(n)) == 0 and n.value == 2
assert L.EfmlGetDriverVer(buf) == 0 and buf.value == b"1.5.0.7"
class DeviceInfo(Structure):
    _fields_ = [("name", c_char * 128)] + [(f, c_uint32) for f in
                ("vendor_id", "device_id", "domain_id", "bus_id", "dev_id", "func_id", "logic_id")]
class DevMemInfo(Structure):
    _fields_ = [("mem_total_size", c_uint64), ("mem_used", c_uint32)]
assert sizeof(DeviceInfo) == 156 and sizeof(DevMemInfo) == 16
rows = []
for i in range(2):
    di, mi, nn, h = DeviceInfo(), DevMemInfo(), c_int32(), c_bool()
    assert L.EfmlGetDevName(i, buf) == 0; name = buf.value.decode()
    assert L.EfmlGetDevUuid(i, buf) == 0; uuid = buf.value.decode()
    assert L.EfmlGetDevInfo(i, byref(di)) == 0
    bus = f"{di.domain_id:04x}:{di.bus_id:02x}:{di.dev_id:02x}.{di.func_id:x}"
    assert L.EfmlGetDevMem(i, byref(mi)) == 0
    assert L.EfmlGetNumaNode(i, byref(nn)) == 0
    assert L.EfmlGetDevIsHealth(i, byref(h)) == 0
    rows.append(f"{name} {uuid} {bus} {di.vendor_id:x}:{di.device_id:x} {mi.mem_total_size} {mi.mem_used} {nn.value} {h.value}")
print("\n".join(rows))
assert L.EfmlGetDevName(2, buf) == 2                # index out of range
assert L.EfmlGetDevInfo(0, None) == 2               # null out-pointer
L.EfmlShutdown()
assert L.EfmlGetDevName(0, buf) == 3                # not initialised
print("ok")'
  [ "$status" -eq 0 ]
  [ "$output" = "T10 GCU-U53000080105 0000:9a:00.0 1e36:c011 16000 0 1 True
S60 TR6Y46010302 0000:17:00.0 1e36:c035 42976 0 0 True
ok" ]
}

@test "telemetry, events and driver gone/back: libefml and efsmi follow while running" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  "$SIM_HOST" telemetry --root "$SCRATCH/root" --card 1 temperature=77 power=150.5 usage=12.5 \
    memory_used_mib=4096 ecc_double_bit=3 pcie_link_width=16
  run bash -c "'$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi' -q --json-format | jq -c '.devices[1] | [.\"Temperature Info\".\"GCU Temp\", .\"Power Info\".\"Cur Power\", .\"Device Usage Info\".\"GCU Usage\", .\"Device Mem Info\".\"Used Size\", .\"RMA Info\".\"Total DBE\", .\"PCIe Info\".\"Cur Link Width\"]'"
  [ "$output" = '["77 ℃","150.5 W","12.5 %","4096 MiB",3,"X16"]' ]
  run "$SIM_HOST" telemetry --root "$SCRATCH/root" --card 0 temperature=hot
  [ "$status" -eq 1 ]
  [ "$output" = "error: 'temperature=hot': bad value 'hot' for temperature" ]
  "$SIM_HOST" driver --root "$SCRATCH/root" gone
  run efsmi_in "$SCRATCH/root" -q
  [ "$status" -ne 0 ]
  [ "$output" = "efsmi: error: the Enflame driver is not loaded" ]
  run efml 'print(L.EfmlInit(False))'
  [ "$output" = 6 ]
  "$SIM_HOST" driver --root "$SCRATCH/root" back
  run efsmi_in "$SCRATCH/root" -q
  [ "$status" -eq 0 ]
  export SIM_HOST SCRATCH
  run efml '
class Event(Structure):
    _fields_ = [("event_id", c_uint32), ("event_type", c_int), ("event_msg", c_char * 128)]
import subprocess, os
assert L.EfmlInit(False) == 0
ev = Event()
assert L.EfmlGetEvent(20, byref(ev)) != 0           # nothing new: timeout
subprocess.run([os.environ["SIM_HOST"], "event", "--root", os.environ["SCRATCH"] + "/root",
                "--card", "1", "--type", "eid", "--message", "EID 42"], check=True)
assert L.EfmlGetEvent(1000, byref(ev)) == 0
print(ev.event_id, ev.event_type, ev.event_msg.decode())'
  [ "$output" = "1 20 EID 42" ]
}

@test "unplug: a card taken out while running is gone from efsmi, libefml, /dev and sysfs" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  "$SIM_HOST" unplug --root "$SCRATCH/root" --card 1
  run bash -c "'$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi' -q --json-format | jq '.devices | length'"
  [ "$status" -eq 0 ]
  [ "$output" = 1 ]
  run efml 'n = c_uint32(); print(L.EfmlInit(False), L.EfmlGetDevCount(byref(n)), n.value)'
  [ "$output" = "0 0 1" ]
  [ -c "$SCRATCH/root/dev/gcu0" ]
  [ ! -e "$SCRATCH/root/dev/gcu1" ]
  [ "$(ls "$SCRATCH/root/sys/bus/pci/devices" | wc -l)" -eq 1 ]
  run "$SIM_HOST" unplug --root "$SCRATCH/root" --card 1
  [ "$status" -eq 1 ]
  [ "$output" = "error: --card 1: the host has 1 cards" ]
}

@test "libefml exports only the libefml ABI (efml.h names)" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  run bash -c "nm -D --defined-only '$(efml_in "$SCRATCH/root")' | awk '{print \$3}' | LC_ALL=C sort | tr '\n' ' '"
  [ "$output" = "EfmlGetDevClk EfmlGetDevCount EfmlGetDevDtuUsage EfmlGetDevEccStatus EfmlGetDevInfo EfmlGetDevIsHealth EfmlGetDevMem EfmlGetDevName EfmlGetDevPwr EfmlGetDevSn EfmlGetDevTemp EfmlGetDevTempV2 EfmlGetDevUuid EfmlGetDriverVer EfmlGetEvent EfmlGetNumaNode EfmlGetPcieLinkInfo EfmlGetProcessInfo EfmlInit EfmlShutdown efmlDeviceGetCount_v2 efmlDeviceGetHandleByIndex_v2 efmlDeviceGetMemoryInfo efmlDeviceGetName efmlDeviceGetPowerUsage efmlInit " ]
}

@test "fault efml_missing_symbols: dlsym fails for those, the others still work" {
  build_with_faults "efml_missing_symbols: [EfmlGetDevUuid, EfmlGetNumaNode]"
  run efml '
for s in ("EfmlGetDevUuid", "EfmlGetNumaNode"):
    assert not hasattr(L, s), s
assert L.EfmlInit(False) == 0
n = c_uint32()
assert L.EfmlGetDevCount(byref(n)) == 0 and n.value == 2
assert L.EfmlGetDevName(1, buf) == 0 and buf.value == b"S60"
assert L.EfmlGetDevSn(1, buf) == 0 and buf.value != b""
print("ok")'
  [ "$output" = ok ]
  # also through dlopen/dlsym of the soname symlink resolved inside the root
  [ -z "$(nm -D --defined-only "$(efml_in "$SCRATCH/root")" | grep -w 'EfmlGetDevUuid\|EfmlGetNumaNode')" ]
}

@test "fault efml_init_fails: EfmlInit returns 1 and nothing else answers" {
  build_with_faults "efml_init_fails: true"
  run efml '
n = c_uint32()
print(L.EfmlInit(False), L.EfmlGetDevCount(byref(n)))'
  [ "$output" = "1 3" ]
}

@test "bad descriptions: one line naming the file, key and problem; exit 1; nothing written" {
  local cases=(
    'cards: [{minor: 0}, {minor: 0}]|line 1: cards[1].minor: duplicate minor 0 (also cards[0])'
    'cards: [{uuid: A1}, {uuid: A1}]|line 1: cards[1].uuid: duplicate uuid '"'A1'"' (also cards[0])'
    'cards: [{bus_id: "0000:17:00.0"}, {bus_id: "0000:17:00.0"}]|line 1: cards[1].bus_id: duplicate bus id '"'0000:17:00.0'"' (also cards[0])'
    'cards: [{bus_id: "17:00.0"}]|line 1: cards[0].bus_id: bad bus id '"'17:00.0'"" (want domain:bus:device.function like '0000:17:00.0')"
    'cards: [{product: X99}]|line 1: cards[0].product: unknown product '"'X99'"' (want S60, T10, I20, T20 or T21)'
    'cards: [{minr: 1}]|line 1: cards[0]: unknown key '"'minr'"
    'cards: [{minor: abc}]|line 1: cards[0].minor: want an integer in 0..1048575, got '"'abc'"
    'cards: [{index: 0}, {index: 2}]|line 1: cards[1].index: index 2 out of range (2 cards: want 0..1)'
    'cards: [{index: 1}, {index: 1}]|line 1: cards[1].index: duplicate index 1 (also cards[0])'
    'cards: [{minor: 255}]|line 1: cards[0].minor: minor 255 is the control node'"'"'s (control.minor)'
    'cards: [{used_mib: 50000}]|line 1: cards[0].used_mib: 50000 MiB used of 42976 MiB'
    'cards: [{healthy: maybe}]|line 1: cards[0].healthy: want true or false, got '"'maybe'"
    'cards: []|line 1: cards: want at least one card'
    'major: 238|line 1: description: missing key '"'cards'"
    'kards: []|line 1: description: unknown key '"'kards'"
    'cards: [{}]\ndriver_version: "../x"|line 2: driver_version: bad driver version '"'../x'"
    'cards: [ {a: 1|line 2, column 1: end of map flow not found'
    'cards: [{}]\nfaults: {efsmi_output: weird}|line 2: faults.efsmi_output: unknown output '"'weird'"' (want normal, garbage or truncated)'
    'cards: [{}]\nfaults: {efml_missing_symbols: [EfmlFoo]}|line 2: faults.efml_missing_symbols[0]: unknown libefml symbol '"'EfmlFoo'"
    'cards: [{}]\nfaults: {efsmi_exit_code: 300}|line 2: faults.efsmi_exit_code: want an integer in 0..255, got '"'300'"
    'cards: [{}]\ndrs: {instances: [{card: 0, instance_id: 0, profile: 1g.11gb, uuid: x}]}|line 2: drs.instances[0].profile: card 0 (S60) offers no profile '"'1g.11gb'"
    'cards: [{}]\ndrs: {profiles: [{name: a, memory_mib: 1, max_instances: 1}], instances: [{card: 0, instance_id: 0, profile: a, uuid: x}, {card: 0, instance_id: 1, profile: a, uuid: y}]}|line 2: drs.instances[1]: card 0 has more than 1 instances of '"'a'"
    'cards: [{}]\ndrs: {profiles: [{name: a, memory_mib: 1}], instances: [{card: 3, instance_id: 0, profile: a, uuid: x}]}|line 2: drs.instances[0].card: no card with index 3'
    'cards: [{}]\nruntime_libraries: [libfoo.so.1.0, libfoo.so.1.2]|line 2: runtime_libraries[1]: '"'libfoo.so.1'"' would be made twice (also runtime_libraries[0])'
    'cards: [{}]\nruntime_libraries: [libefml.so.1]|line 2: runtime_libraries[0]: '"'libefml.so.1'"' clashes with the libefml simulator'
  )
  local c text want i=0
  for c in "${cases[@]}"; do
    text=${c%%|*}
    want=${c#*|}
    i=$((i + 1))
    printf '%b\n' "$text" > "$SCRATCH/bad$i.yaml"
    run "$SIM_HOST" build --desc "$SCRATCH/bad$i.yaml" --root "$SCRATCH/root$i"
    echo "case $i: $output" >&2
    [ "$status" -eq 1 ]
    [ "$output" = "error: description '$SCRATCH/bad$i.yaml': $want" ]
    [ ! -e "$SCRATCH/root$i" ]
  done
  # an existing root is left as it was
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  run "$SIM_HOST" build --desc "$SCRATCH/bad1.yaml" --root "$SCRATCH/root"
  [ "$status" -eq 1 ]
  efsmi_in "$SCRATCH/root" -q | cmp - "$FIX/efsmi-q-s60-2dev.txt"
  run "$SIM_HOST" build --desc "$SCRATCH/nope.yaml" --root "$SCRATCH/rootx"
  [ "$status" -eq 1 ]
  [[ "$output" == "error: description '$SCRATCH/nope.yaml': "* ]]
  [ ! -e "$SCRATCH/rootx" ]
}

@test "building without root: a clear error, nothing left behind" {
  requires setpriv
  mkdir "$SCRATCH/nobody"
  chown 65534 "$SCRATCH/nobody"
  run setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$SIM_HOST" build --desc "$EXAMPLES/s60-2dev.yaml" --root "$SCRATCH/nobody/root"
  [ "$status" -eq 1 ]
  [ "$output" = "error: building a simulated host in '$SCRATCH/nobody/root': creating device node 'dev/gcu0': operation not permitted (needs root)" ]
  [ -z "$(ls -A "$SCRATCH/nobody")" ]
}

@test "example: deterministic, valid, numa halves, DRS and unhealthy options" {
  run sim_example 5 --unhealthy 4
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" > "$SCRATCH/ex.yaml"
  [ "$(sim_example 5 --unhealthy 4)" = "$output" ]
  sim_host "$SCRATCH/ex.yaml" "$SCRATCH/root"
  local j=$SCRATCH/root/usr/local/efsmi/efsmi-$VER/enflame-sim.json
  [ "$(jq -c '[.cards[].numa_node]' "$j")" = '[0,0,0,1,1]' ]
  [ "$(jq -c '[.cards[].healthy]' "$j")" = '[true,true,true,true,false]' ]
  [ "$(jq -r '.cards[4].uuid + " " + .cards[4].bus_id' "$j")" = "TR6Y46010004 0000:14:00.0" ]
  [ "$(jq -r '.runtime_libraries | join(",")' "$j")" = "libtopsrt.so.2.1.0,libefrt.so.1.0.0,libeccl.so.1.0.0" ]
  sim_example 2 --product T10 > "$SCRATCH/t10.yaml"
  sim_host "$SCRATCH/t10.yaml" "$SCRATCH/root"
  [ "$(efsmi_in "$SCRATCH/root" -q | grep -c 'Dev Name .*: T10')" -eq 2 ]
  run efsmi_in "$SCRATCH/root" --drs --list-profile
  [ "$(grep -c 'DRS not supported' <<< "$output")" -eq 2 ]
}

@test "example: 128 cards build; bad options are one-line errors" {
  sim_example 128 --drs > "$SCRATCH/big.yaml"
  sim_host "$SCRATCH/big.yaml" "$SCRATCH/root"
  [ "$(ls "$SCRATCH/root/dev" | wc -l)" -eq 129 ]
  [ "$(efsmi_in "$SCRATCH/root" -q --json-format | jq '.devices | length')" -eq 128 ]
  [ "$(efsmi_in "$SCRATCH/root" -q --json-format | jq -r '[.devices[]."PCIe Info".Bus] | unique | length')" -eq 128 ]
  run sim_example 129
  [ "$status" -eq 1 ]
  [ "$output" = "error: --cards: want 1..128, got 129" ]
  run sim_example 0
  [ "$status" -eq 1 ]
  [ "$output" = "error: --cards: want 1..128, got 0" ]
  run sim_example 2 --product T10 --drs
  [ "$status" -eq 1 ]
  [ "$output" = "error: --drs: only the S60 has DRS profiles" ]
  run sim_example 2 --product X1
  [ "$status" -eq 1 ]
  [ "$output" = "error: --product: want S60 or T10, got 'X1'" ]
  run sim_example 2 --unhealthy 2
  [ "$status" -eq 1 ]
  [ "$output" = "error: --unhealthy: no card 2 among 2" ]
}

@test "runc: the efsmi simulator bind-mounted alone into a busybox container knows its host" {
  requires runc busybox
  sim_example 2 --drs > "$SCRATCH/drs.yaml"
  sim_host "$SCRATCH/drs.yaml" "$SCRATCH/root"
  local b=$SCRATCH/bundle id=ectk-sim-$$-$BATS_TEST_NUMBER
  mkdir -p "$b/rootfs"/{bin,proc,sys,dev,etc,tmp,usr/bin}
  cp "$(command -v busybox)" "$b/rootfs/bin/"
  ln -s busybox "$b/rootfs/bin/sh"
  ln -s busybox "$b/rootfs/bin/ls"
  (cd "$b" && runc spec)
  jq --arg efsmi "$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi" '
    .process.terminal = false | .root.readonly = false
    | .process.args = ["/bin/sh", "-c", "/usr/bin/efsmi -i 1 --drs --list-instance && ls -l /dev/gcu1"]
    | .mounts += [{destination: "/usr/bin/efsmi", type: "bind", source: $efsmi,
                   options: ["rbind", "ro", "nosuid", "nodev"]}]
    | .linux.devices = [{path: "/dev/gcu1", type: "c", major: 238, minor: 1, fileMode: 438, uid: 0, gid: 0}]
    | .linux.resources.devices += [{allow: true, type: "c", major: 238, minor: 1, access: "rwm"}]
  ' "$b/config.json" > "$b/config.json.new"
  mv "$b/config.json.new" "$b/config.json"
  on_teardown "runc delete -f $id >/dev/null 2>&1"
  run runc run --bundle "$b" "$id"
  [ "$status" -eq 0 ]
  [ "$(grep '^| [0-9]' <<< "$output" | tr -s ' ')" = "| 1 | 2g.22gb | 0 | 4c1e9a52-0000-4000-8000-000000000002 |" ]
  [[ "${lines[-1]}" == "crw-rw-rw-"*"238,"*"1 "*"/dev/gcu1" ]]
}

@test "simulators copied away from enflame-sim.json use the description embedded in them" {
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/root"
  mkdir -p "$SCRATCH/alone/lib"
  cp "$SCRATCH/root/usr/local/efsmi/efsmi-$VER/efsmi" "$SCRATCH/alone/"
  cp "$(efml_in "$SCRATCH/root")" "$SCRATCH/alone/lib/"
  "$SCRATCH/alone/efsmi" -q | cmp - "$FIX/efsmi-q-s60-2dev.txt"
  run python3 -c '
import ctypes, sys
L = ctypes.CDLL(sys.argv[1]); n = ctypes.c_uint32(); b = ctypes.create_string_buffer(128)
assert L.EfmlInit(False) == 0 and L.EfmlGetDevCount(ctypes.byref(n)) == 0
assert L.EfmlGetDevUuid(1, b) == 0
print(n.value, b.value.decode())' "$SCRATCH/alone/lib/libefml.so.1.0.0"
  [ "$output" = "2 TR1V57100501" ]
  # the bare build output has neither: a clear error, exit 2
  cp "$BUILD_DIR/sim/enflame-sim-efsmi" "$SCRATCH/alone/bare"
  run "$SCRATCH/alone/bare" -L
  [ "$status" -eq 2 ]
  [ "$output" = "efsmi: error: cannot open simulated host description '$SCRATCH/alone/enflame-sim.json' and none is embedded in '/proc/self/exe'" ]
}

@test "the builder never replaces a non-empty folder it did not build" {
  mkdir -p "$SCRATCH/precious"
  echo keep > "$SCRATCH/precious/file"
  run "$SIM_HOST" build --desc "$EXAMPLES/s60-2dev.yaml" --root "$SCRATCH/precious"
  [ "$status" -eq 1 ]
  [ "$output" = "error: building a simulated host in '$SCRATCH/precious': root '$SCRATCH/precious' is not empty and was not built by enflame-sim-host: refusing to replace it" ]
  [ "$(cat "$SCRATCH/precious/file")" = keep ]
  [ "$(ls -A "$SCRATCH")" = precious ]
  # an empty folder is fine, and so is a trailing slash
  mkdir "$SCRATCH/empty"
  sim_host "$EXAMPLES/s60-2dev.yaml" "$SCRATCH/empty/"
  [ -c "$SCRATCH/empty/dev/gcu1" ]
}
