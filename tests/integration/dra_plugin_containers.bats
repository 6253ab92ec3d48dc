#!/usr/bin/env bats
# enflame-dra-plugin's per-claim CDI specs applied by real runtimes: podman (whole cards, DRS
# instances and placements, the update-ldcache hook through CTK_PATH) and containerd 1.7 through
# the CRI as kubelet starts a pod's container (cri.bash), the plugin in a pod included.
# Helpers: dra_plugin.bash.

load helpers
load dra_plugin
load cri
bats_require_minimum_version 1.5.0   # `run !`

setup() { dra_plugin_setup; }
teardown() { teardown_scratch; }

# --- podman applies the per-claim spec ---

# pm_setup: podman with private storage and a busybox image, in the private mount namespace
# where $SCRATCH/ns is /run (so it reads exactly the specs in $CDIR).
pm_setup() {
  requires podman unshare
  [ -x /bin/busybox ] || skip_or_fail "needs /bin/busybox"
  busybox_rootfs "$SCRATCH/rootfs"
  tar -C "$SCRATCH/rootfs" -cf "$SCRATCH/rootfs.tar" .
  podman_conf "$SCRATCH/containers.conf"
  export CONTAINERS_CONF=$SCRATCH/containers.conf
  cdi_ns "$SCRATCH/ns"
  PM=("${CDI_NS[@]}" podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --tmpdir "$SCRATCH/pm/tmp" --storage-driver vfs)
  on_teardown '"${PM[@]}" rm -af -t 0 >/dev/null 2>&1'
  "${PM[@]}" import -q "$SCRATCH/rootfs.tar" localhost/dra-bb >/dev/null
}

# in_claim CDI_ID CMD: run CMD in a container that got the CDI device.
in_claim() { "${PM[@]}" run --rm --device "$1" localhost/dra-bb sh -c "$2"; }

DEVLIST='for d in /dev/gcu*; do [ -c "$d" ] && echo "${d#/dev/} $(stat -c %t:%T "$d")"; done'

# prepare_gcu2: claim ns/c1 (uid-1) for card 2, prepared; its CDI device ID in $CLAIM_ID.
prepare_gcu2() {
  put_claim ns c1 uid-1 gcu-2
  run prepare v1 ns/c1/uid-1
  CLAIM_ID=$(jq -r '.claims["uid-1"].devices[0].cdi_device_ids[0]' <<<"$output")
  [ "$CLAIM_ID" = k8s.gcu.enflame.com/claim=uid-1-gcu-2 ]
}
# CARD2_PROBE, and has_card2_only on its output ($output, $status): card 2's node and gcuctl and
# no other card, ENFLAME_VISIBLE_DEVICES=void, libefml mounted.
CARD2_PROBE='for d in /dev/gcu*; do [ -c "$d" ] && echo "${d#/dev/} $(stat -c %t:%T "$d")"; done; env; ls /usr/lib/libefml.so.1'
has_card2_only() {
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep '^gcu' <<<"$output" | sort | tr '\n' ' ')" = "gcu2 ee:2 gcuctl ee:ff " ]
  [[ "$output" == *"ENFLAME_VISIBLE_DEVICES=void"* ]]
  [[ "$output" == *"/usr/lib/libefml.so.1"* ]]
}

@test "podman: the claim's CDI device gives the container exactly the prepared card, gcuctl, libefml and the env" {
  requires root
  up 3
  pm_setup
  prepare_gcu2
  run in_claim "$CLAIM_ID" "$CARD2_PROBE"
  has_card2_only
}

# The runtime libraries moved to /opt/tops/lib, outside ld.so's default folders (Enflame's
# TopsRider installs there): only the update-ldcache hook makes them findable by name.
@test "CTK_PATH as the shipped DaemonSet sets it: the claim's spec runs enflame-ctk's update-ldcache hook, and the container's ld.so.cache indexes /opt/tops/lib" {
  requires root
  # the shipped DaemonSet passes where the installer puts enflame-ctk
  run python3 -c 'import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]
print({e["name"]: e.get("value") for e in c["env"]}.get("CTK_PATH"))' "$TOP/deployments/dra/daemonset.yaml"
  [ "$status" -eq 0 ]
  [ "$output" = /usr/local/enflame/toolkit/enflame-ctk ]
  sim_example 3 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  mkdir -p "$SCRATCH/host/opt/tops/lib"
  mv "$SCRATCH"/host/usr/lib/libtopsrt.so* "$SCRATCH/host/opt/tops/lib/"
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  start_api
  # this host has no installer: the same variable, naming the build's enflame-ctk
  CTK_PATH=$CTK start_plugin
  pm_setup
  prepare_gcu2
  run python3 -c 'import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
for h in (s.get("containerEdits") or {}).get("hooks") or []: print(h["hookName"], h["path"], " ".join(h["args"]))' "$(spec_of uid-1)"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == "createContainer $CTK enflame-ctk hook update-ldcache "*"--folder /opt/tops/lib"* ]]
  on_teardown '"${PM[@]}" rm -f ldc >/dev/null 2>&1'
  run "${PM[@]}" run --name ldc --device "$CLAIM_ID" localhost/dra-bb sh -c 'ls /opt/tops/lib; cat /etc/ld.so.conf.d/*'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *libtopsrt.so.2.1.0* ]]
  "${PM[@]}" cp ldc:/etc/ld.so.cache "$SCRATCH/ld.so.cache"
  run /sbin/ldconfig -p -C "$SCRATCH/ld.so.cache"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *" => /opt/tops/lib/"* ]]
}

@test "podman: a DRS instance claim gives the parent card and TOPS_VISIBLE_DEVICES=DRS-<uuid>" {
  requires root
  up 2 --drs
  pm_setup
  put_claim ns d1 uid-d gcu-0-drs-1
  run prepare v1 ns/d1/uid-d
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-d"].error == ""' <<<"$output"
  run in_claim k8s.gcu.enflame.com/claim=uid-d-gcu-0-drs-1 "$DEVLIST; echo TOPS=\$TOPS_VISIBLE_DEVICES"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep '^gcu' <<<"$output" | sort | tr '\n' ' ')" = "gcu0 ee:0 gcuctl ee:ff " ]
  [[ "$output" == *"TOPS=DRS-4c1e9a52-0000-4000-8000-000000000001"* ]]
  # an instance that does not exist is an error in the claim's answer
  put_claim ns d2 uid-e gcu-1-drs-3
  run prepare v1 ns/d2/uid-e
  [ "$(jq -r '.claims["uid-e"].error' <<<"$output")" = "claim 'ns/d2': device 'gcu-1-drs-3': card 1 has no DRS instance 3" ]
}

@test "podman: a DRS placement claim gives the parent card only and TOPS_VISIBLE_DEVICES of the instance the prepare made" {
  requires root
  drs_up
  pm_setup
  put_claim ns p1 uid-p gcu-0-1g-11gb-3
  run prepare v1 ns/p1/uid-p
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-p"].error == ""' <<<"$output"
  run in_claim k8s.gcu.enflame.com/claim=uid-p-gcu-0-1g-11gb-3 "$DEVLIST; echo TOPS=\$TOPS_VISIBLE_DEVICES"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep '^gcu' <<<"$output" | sort | tr '\n' ' ')" = "gcu0 ee:0 gcuctl ee:ff " ]
  [[ "$output" == *"TOPS=DRS-4c1e9a52-0000-4000-9000-000000000001"* ]]
}

# --- containerd 1.7 through the CRI, as kubelet starts a pod's container ---

@test "containerd 1.7 (CRI, enable_cdi): a pod's container given the claim's CDI device as kubelet passes it gets exactly the prepared card, gcuctl, libefml and the env" {
  requires root
  up 3
  cri_setup
  prepare_gcu2
  run in_cri_pod --cdi-device "$CLAIM_ID" -- /bin/sh -c "$CARD2_PROBE"
  has_card2_only
  # the same pod without the claim's device: no card (what it got came from the spec)
  run in_cri_pod -- /bin/sh -c "$DEVLIST; echo end"
  [ "$status" -eq 0 ]
  [ "$output" = end ]
  # after unprepare the spec is gone: containerd refuses the device by name
  unprepare v1 ns/c1/uid-1 >/dev/null
  run in_cri_pod --cdi-device "$CLAIM_ID" -- /bin/true
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"error: CreateContainer: "*"unresolvable CDI devices k8s.gcu.enflame.com/claim=uid-1-gcu-2"* ]]
}

# As the shipped DaemonSet runs it: the plugin in its own mount namespace, where the host's root
# (here the simulated host, $SCRATCH/host) is mounted at a folder of its own ($SCRATCH/pod/host,
# the pod's /host) that is an empty folder to everyone else. driver-root and dev-root are that
# mount, host-driver-root and host-dev-root the same root as the host sees it (the ConfigMap's
# "/host" and "/"). containerd reads the per-claim spec on the host.
@test "a plugin in a pod (driver-root is its mount of the host's root): the claim's spec names host paths, and containerd gives the card" {
  requires root unshare
  sim_example 3 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"   # for cri.bash's shim runtime only
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  local pod=$SCRATCH/pod/host
  mkdir -p "$pod"
  cat > "$SCRATCH/pod.toml" <<TOML
[enflame-container-cli]
driver-root = "$pod"
dev-root = "$pod"
host-driver-root = "$SCRATCH/host"
host-dev-root = "$SCRATCH/host"
TOML
  start_api
  # shellcheck disable=SC2016  # expands in the namespace's shell
  setsid unshare --mount --propagation private /bin/sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
    pod "$SCRATCH/host" "$pod" "$DRA" --config "$SCRATCH/pod.toml" --node-name node1 --kubeconfig "$KC" \
    --plugins-registry "$REG" --plugins-dir "$PLUG" --cdi-root "$CDIR" >>"$SCRATCH/dra.log" 2>&1 3>&- &
  DPID=$!
  on_teardown "stop_pid $DPID"
  wait_for test -S "$REG/gcu.enflame.com-reg.sock"
  [ -z "$(ls -A "$pod")" ]   # outside the plugin's namespace its mount point is empty
  prepare_gcu2
  local spec; spec=$(spec_of uid-1)
  local paths; paths=$(python3 -c '
import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
for e in [s.get("containerEdits") or {}] + [d.get("containerEdits") or {} for d in s["devices"]]:
    for n in e.get("deviceNodes") or []: print(n.get("hostPath") or n["path"])
    for m in e.get("mounts") or []: print(m["hostPath"])
    for h in e.get("hooks") or []: print(h["path"])' "$spec")
  echo "$paths"
  [ "$(grep -c . <<<"$paths")" -ge 4 ]   # gcu2, gcuctl, efsmi, libefml at least
  local p
  for p in $paths; do
    [[ $p == "$SCRATCH/host/"* ]]
    [ -e "$p" ]
  done
  cri_setup
  run in_cri_pod --cdi-device "$CLAIM_ID" -- /bin/sh -c "$CARD2_PROBE"
  has_card2_only
}
