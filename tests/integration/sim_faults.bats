#!/usr/bin/env bats
# The simulated host's fault switches, one by one, as efsmi shows them (exit codes, delays,
# garbage and truncated output, old keys, unhealthy cards, the tools left out).
# Helpers: sim.bash.

load helpers
load sim
bats_require_minimum_version 1.5.0   # run --separate-stderr

setup() { sim_suite_setup; }
teardown() { teardown_scratch; }

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
