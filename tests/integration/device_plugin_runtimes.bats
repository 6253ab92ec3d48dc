#!/usr/bin/env bats
# enflame-device-plugin's Allocate answer given to real runtimes: its envs to our shim with runc,
# its CDI names to podman --device, time-sliced replicas and DRS instances, and a pod's
# containers through containerd 1.7's CRI (cri.bash). Helpers: device_plugin.bash.
# shellcheck disable=SC2153  # KDIR: set by device_plugin_setup

load helpers
load device_plugin
load cri
bats_require_minimum_version 1.5.0   # `run !`

setup() { device_plugin_setup; }
teardown() { teardown_scratch; }

# --- end to end: the Allocate answer given to real runtimes ---

# in_shim ENV: run a busybox bundle with ENV through our shim and runc; $output lists its
# /dev/gcu* nodes, one per line, then TOPS=<value> if TOPS_VISIBLE_DEVICES is set.
in_shim() {
  oci_bundle "$SCRATCH/b" '["sh","-c","for d in /dev/gcu*; do echo ${d#/dev/}; done; case ${TOPS_VISIBLE_DEVICES:-} in ?*) echo TOPS=$TOPS_VISIBLE_DEVICES;; esac"]'
  bundle_edit "$SCRATCH/b" "c['process']['env'].append('$1')"
  local id; id=$(unique_id edp)
  on_teardown "runc --root '$SCRATCH/rr' delete -f $id >/dev/null 2>&1"
  run timeout 60 "$SHIM" --root "$SCRATCH/rr" run --bundle "$SCRATCH/b" "$id"
  echo "$output"
}

# in_podman NAME...: podman run --device NAME... with the spec `cdi generate` writes; $output
# lists the container's /dev/gcu* nodes, then TOPS=<value> as in_shim does. podman 4.3 reads
# specs only from /etc/cdi and /var/run/cdi: it runs in cdi_ns (helpers.bash), where /run is
# $SCRATCH/run, so the host's CDI folders are neither read nor written.
in_podman() {
  local devs=() n
  for n in "$@"; do devs+=(--device "$n"); done
  cdi_ns "$SCRATCH/run"
  "$CTK" cdi generate --output "$SCRATCH/run/cdi/enflame.com-gpu.yaml"
  busybox_rootfs "$SCRATCH/rootfs"
  podman_conf "$SCRATCH/containers.conf"
  local pm=(podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --tmpdir "$SCRATCH/pm/tmp")
  on_teardown "CONTAINERS_CONF='$SCRATCH/containers.conf' ${CDI_NS[*]@Q} ${pm[*]@Q} rm -af -t 0 >/dev/null 2>&1"
  # shellcheck disable=SC2016  # expanded in the container
  CONTAINERS_CONF=$SCRATCH/containers.conf run timeout 120 "${CDI_NS[@]}" "${pm[@]}" run --rm "${devs[@]}" \
    --rootfs "$SCRATCH/rootfs" sh -c 'for d in /dev/gcu*; do echo ${d#/dev/}; done; case ${TOPS_VISIBLE_DEVICES:-} in ?*) echo TOPS=$TOPS_VISIBLE_DEVICES;; esac'
  echo "$output"
}

# Allocate's answer handed by the test to one runtime, with no kubelet: what each runtime makes of
# the plugin's envs and CDI names (the shim of RuntimeClass enflame; podman's CDI). These are not
# end to end: the shipped default (kubelet, containerd, runc, cdi-cri,cdi-annotations, no RuntimeClass)
# runs in e2e.bats ("the shipped example pod"), and kubelet's hand-over of the answer to
# containerd in the containerd 1.7 test below.
@test "Allocate's envvar answer, handed to our shim (RuntimeClass enflame's path) with runc, gives exactly those /dev/gcu nodes" {
  requires runc python3
  registered --device-list-strategy envvar
  run allocate "$U1,$U3"
  [ "$status" -eq 0 ]
  local env; env=$(echo "$output" | jq -r '.envs | to_entries[] | "\(.key)=\(.value)"')
  [ "$env" = "ENFLAME_VISIBLE_DEVICES=$U1,$U3" ]
  in_shim "$env"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu1 gcu3 gcuctl " ]
}

@test "Allocate's cdi-cri names, handed to podman --device, give exactly those cards" {
  requires podman runc
  registered --device-list-strategy cdi-cri
  run allocate "$U0,$U2"
  [ "$status" -eq 0 ]
  local names; names=$(echo "$output" | jq -r '.cdi_devices[].name' | tr '\n' ' ')
  [ "$names" = "enflame.com/gpu=$U0 enflame.com/gpu=$U2 " ]
  in_podman $names
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu0 gcu2 gcuctl " ]
}

@test "Allocate's answer for time-sliced replicas, handed to the shim (envvar) and podman (cdi-cri), gives each card once" {
  requires runc podman python3
  sharing_config "$SCRATCH/p.yaml" 4
  registered --plugin-config "$SCRATCH/p.yaml" --device-list-strategy envvar,cdi-cri
  run allocate "$U2::0,$U2::3,$U3::1"
  [ "$status" -eq 0 ]
  local env names
  env=$(echo "$output" | jq -r '.envs | to_entries[] | "\(.key)=\(.value)"')
  names=$(echo "$output" | jq -r '.cdi_devices[].name' | tr '\n' ' ')
  [ "$env" = "ENFLAME_VISIBLE_DEVICES=$U2,$U3" ]
  in_shim "$env"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu2 gcu3 gcuctl " ]
  in_podman $names
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu2 gcu3 gcuctl " ]
}

# allocation_args IDS: the default Allocate for IDS as kubelet hands it to the runtime: a
# --cdi-device per cdi_devices name, an --env per env and an --annotation per annotation (the
# container's, where kubelet puts them), for in_cri_pod (cri.bash).
allocation_args() {
  local out n kv
  out=$(allocate "$1")
  ALLOC=()
  for n in $(echo "$out" | jq -r '.cdi_devices[].name'); do ALLOC+=(--cdi-device "$n"); done
  for kv in $(echo "$out" | jq -r '.envs | to_entries[] | "\(.key)=\(.value)"'); do ALLOC+=(--env "$kv"); done
  for kv in $(echo "$out" | jq -r '.annotations | to_entries[] | "\(.key)=\(.value)"'); do ALLOC+=(--annotation "$kv"); done
}
# What a pod sees: its /dev/gcu* nodes, any mount point it has twice, its libefml mounts, the env.
POD_PROBE='ls /dev | grep ^gcu; awk "{print \$5}" /proc/self/mountinfo | sort | uniq -d | sed "s/^/twice: /"; echo libefml=$(grep -c libefml /proc/self/mountinfo); echo env=$ENFLAME_VISIBLE_DEVICES'

@test "containerd 1.7 (CRI, enable_cdi): the default Allocate gives a pod exactly its cards with runc, and with the shim (RuntimeClass enflame) nothing twice" {
  requires root
  CDIR=$SCRATCH/cdi
  mkdir -p "$CDIR"
  # the spec as the installer writes it
  "$CTK" cdi generate --format yaml --output "$CDIR/enflame.com-gpu.yaml"
  cri_setup
  registered
  allocation_args "$U1,$U3"
  [ "${#ALLOC[@]}" -eq 8 ]   # two CDI names and two annotations
  # runc, containerd's default runtime: the example pod as shipped
  run in_cri_pod "${ALLOC[@]}" -- /bin/sh -c "$POD_PROBE"
  echo "$output"
  [ "$status" -eq 0 ]
  local want; want=$(echo "$output" | tr '\n' ' ')
  # exactly cards 1 and 3, libefml mounted, and the spec's env (void: the shim and the legacy
  # hook add nothing more)
  [[ $want =~ ^gcu1\ gcu3\ gcuctl\ libefml=[1-9][0-9]*\ env=void\ $ ]]
  # our shim after containerd applied the CDI devices: the same, nothing twice
  run in_cri_pod "${ALLOC[@]}" --runtime-handler enflame -- /bin/sh -c "$POD_PROBE"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "$want" ]
  # the old default (the env alone) gave the example pod under runc no card
  run in_cri_pod --env "ENFLAME_VISIBLE_DEVICES=$U1,$U3" -- /bin/sh -c "$POD_PROBE"
  [ "$(echo "$output" | tr '\n' ' ')" = "libefml=0 env=$U1,$U3 " ]
}

@test "Allocate's answer for a DRS instance, handed to the shim (envvar) and podman (cdi-cri), gives the parent card and TOPS_VISIBLE_DEVICES" {
  requires runc podman python3
  drs_host
  registered --device-list-strategy envvar,cdi-cri
  run "$FK" allocate --socket "$KDIR/enflame-drs-2g.22gb.sock" --ids "$D2"
  [ "$status" -eq 0 ]
  local env names
  env=$(echo "$output" | jq -r '.envs.ENFLAME_VISIBLE_DEVICES')
  names=$(echo "$output" | jq -r '.cdi_devices[].name' | tr '\n' ' ')
  [ "$env" = "$D2" ]
  [ "$names" = "enflame.com/gpu=$D2 " ]
  in_shim "ENFLAME_VISIBLE_DEVICES=$env"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu1 gcuctl TOPS=$D2 " ]
  in_podman $names
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu1 gcuctl TOPS=$D2 " ]
}
