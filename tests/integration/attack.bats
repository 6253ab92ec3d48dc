#!/usr/bin/env bats
# The attack matrix (docs/security.md): what a tenant who controls a container's image, env and
# annotations tries, against each path that gives cards on a node, with the real runtimes. No
# row may end with a card (or another vendor's device) the container was not given.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

setup() {
  requires root runc python3
  setup_scratch
  sim_setup 4
  RR=$SCRATCH/runc-root
  # another vendor's CDI spec in the spec dirs the shim reads: a mount that marks the container
  other_vendor_spec "$SCRATCH/cdi"
  printf '[enflame-container-runtime]\nspec-dirs = ["%s"]\n' "$SCRATCH/cdi" >> "$SCRATCH/config.toml"
}

teardown() { teardown_scratch; }

PROBE='["sh","-c","ls /dev; cat /other.txt 2>/dev/null; true"]'

# shim_run DIR: the bundle through the shim and runc; output in $output.
shim_run() {
  local id
  id=$(unique_id attack)
  on_teardown "runc --root '$RR' delete -f $id >/dev/null 2>&1"
  run timeout 60 "$SHIM" --root "$RR" run --bundle "$1" "$id"
}

@test "shim, env naming another vendor's CDI device: refused with one line, that vendor's device never injected" {
  local v
  for v in othervendor.com/gpu=all 0,othervendor.com/gpu=all; do
    rm -rf "$SCRATCH/b"
    probe_bundle "$SCRATCH/b" "$PROBE" "ENFLAME_VISIBLE_DEVICES=$v"
    shim_run "$SCRATCH/b"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ $output == *"ENFLAME_VISIBLE_DEVICES: CDI device 'othervendor.com/gpu=all' is not of kind enflame.com/gpu: other kinds are not injected"* ]]
    refute_grep -Fx other-vendor
    refute_grep -E '^gcu[0-9]'
  done
  # a device plugin's CDI annotation (kubelet sets it, a pod cannot) is the CDI protocol: honoured
  rm -rf "$SCRATCH/b"
  probe_bundle "$SCRATCH/b" "$PROBE"
  bundle_edit "$SCRATCH/b" "c.setdefault('annotations', {})['cdi.k8s.io/other'] = 'othervendor.com/gpu=all'"
  shim_run "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *other-vendor* ]]
}
