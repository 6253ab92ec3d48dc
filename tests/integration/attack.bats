#!/usr/bin/env bats
# The attack matrix (docs/security.md): what a tenant who controls a container's image, env and
# annotations tries, against each path that gives cards on a node, with the real runtimes. No
# row may end with a card (or another vendor's device) the container was not given.

load helpers
load cri
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

# installer_config: the toolkit config as `enflame-ctk toolkit install` writes it on a node
# (accept-envvar-when-unprivileged = false), in $SCRATCH/config.toml.
installer_config() {
  printf 'accept-envvar-when-unprivileged = false\n' >> "$SCRATCH/config.toml"
}

# containerd_node: containerd 1.7 with CDI on and the spec the installer writes in $SCRATCH/cdi
# (beside another vendor's), the shim as RuntimeClass enflame, the installer's config; images
# localhost/dra-bb (busybox) and localhost/attack-env (the same, with ENV
# ENFLAME_VISIBLE_DEVICES=all in its config).
containerd_node() {
  installer_config
  CDIR=$SCRATCH/cdi
  "$CTK" cdi generate --format yaml --output "$CDIR/enflame.com-gpu.yaml"
  cri_setup
  cri_image_with_env localhost/attack-env:latest ENFLAME_VISIBLE_DEVICES=all
}

# pod_cards ARGS...: the /dev/gcu* nodes a pod's container sees (one line, sorted), started
# through containerd's CRI as kubelet starts it with ARGS (fake-cri's flags); in $output.
pod_cards() {
  run in_cri_pod "$@" -- /bin/sh -c 'ls /dev | grep ^gcu | tr "\n" " "; echo'
  echo "$*: $output"
}

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

@test "shim, the installer's config: an unprivileged container's env (all, a list) gives no card; CAP_SYS_ADMIN (the exporter's one capability) gives every card" {
  installer_config
  local v
  for v in all 0,1 GCU-2; do
    rm -rf "$SCRATCH/b"
    probe_bundle "$SCRATCH/b" "$PROBE" "ENFLAME_VISIBLE_DEVICES=$v"
    shim_run "$SCRATCH/b"
    [ "$status" -eq 0 ]
    refute_grep -E '^gcu[0-9]'
  done
  # what the runtime counts as privileged: CAP_SYS_ADMIN in the bounding set
  rm -rf "$SCRATCH/b"
  probe_bundle "$SCRATCH/b" "$PROBE" ENFLAME_VISIBLE_DEVICES=all
  bundle_edit "$SCRATCH/b" "c['process']['capabilities']['bounding'].append('CAP_SYS_ADMIN')"
  shim_run "$SCRATCH/b"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep -cE '^gcu[0-9]$' <<<"$output")" -eq 4 ]
}

@test "shim, the installer's config: the device plugin's annotation for card 1 gives exactly card 1, whatever the env asks" {
  installer_config
  local v
  for v in all 0,2,3 "" void; do
    rm -rf "$SCRATCH/b"
    probe_bundle "$SCRATCH/b" "$PROBE" "ENFLAME_VISIBLE_DEVICES=$v"
    bundle_edit "$SCRATCH/b" "c.setdefault('annotations', {})['cdi.k8s.io/enflame-device-plugin_x'] = 'enflame.com/gpu=1'"
    shim_run "$SCRATCH/b"
    echo "$v: $output"
    [ "$status" -eq 0 ]
    [ "$(grep -E '^gcu[0-9]$' <<<"$output" | tr '\n' ' ')" = "gcu1 " ]
  done
}

@test "containerd 1.7 (CDI on), plain runc and RuntimeClass enflame: env all from the pod spec or the image, CDI annotations on the pod, another vendor's name: no card" {
  requires root podman
  containerd_node
  local h
  for h in runc enflame; do
    pod_cards --runtime-handler "$h" --env ENFLAME_VISIBLE_DEVICES=all
    [ "$status" -eq 0 ]
    [ "$output" = "" ]
    CRI_IMAGE=localhost/attack-env:latest pod_cards --runtime-handler "$h"
    [ "$status" -eq 0 ]
    [ "$output" = "" ]
    # the pod's own annotations are the sandbox's: never the container's, which kubelet fills
    pod_cards --runtime-handler "$h" --pod-annotation cdi.k8s.io/mine=enflame.com/gpu=all
    [ "$status" -eq 0 ]
    [ "$output" = "" ]
  done
  # another vendor's name in the env: nothing of that vendor's either (the env is not read)
  run in_cri_pod --runtime-handler enflame --env ENFLAME_VISIBLE_DEVICES=othervendor.com/gpu=all \
    -- /bin/sh -c 'ls /dev | grep ^gcu; cat /other.txt 2>/dev/null; true'
  echo "$output"
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}

@test "containerd 1.7 (CDI on): a pod given card 1 by the device plugin (CDI name and annotation) that sets env all sees exactly card 1, with runc and with RuntimeClass enflame" {
  requires root podman
  containerd_node
  local h
  for h in runc enflame; do
    pod_cards --runtime-handler "$h" --cdi-device enflame.com/gpu=1 \
      --annotation cdi.k8s.io/enflame-device-plugin_x=enflame.com/gpu=1 --env ENFLAME_VISIBLE_DEVICES=all
    [ "$status" -eq 0 ]
    [ "$output" = "gcu1 gcuctl " ]
    CRI_IMAGE=localhost/attack-env:latest pod_cards --runtime-handler "$h" \
      --annotation cdi.k8s.io/enflame-device-plugin_x=enflame.com/gpu=1
    [ "$status" -eq 0 ]
    [ "$output" = "gcu1 gcuctl " ]
  done
}
