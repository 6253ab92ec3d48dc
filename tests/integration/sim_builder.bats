#!/usr/bin/env bats
# The simulated host's builder (enflame-sim-host, sim/): device nodes, sysfs, links, the normalised
# description, rebuilding a root, bad descriptions, the example generator, the simulators in a
# container and copied away, and never replacing a folder it did not build.
# Helpers: sim.bash.

load helpers
load sim
bats_require_minimum_version 1.5.0   # run --separate-stderr

setup() { sim_suite_setup; }
teardown() { teardown_scratch; }

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
