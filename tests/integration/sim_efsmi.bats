#!/usr/bin/env bats
# The efsmi simulator (sim/) against the fixtures and the descriptions: efsmi -q byte for byte,
# its JSON format, the DRS profiles and instances it lists, makes and destroys, its usage.
# Helpers: sim.bash.

load helpers
load sim
bats_require_minimum_version 1.5.0   # run --separate-stderr

setup() { sim_suite_setup; }
teardown() { teardown_scratch; }

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
