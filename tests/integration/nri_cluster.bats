#!/usr/bin/env bats
# enflame-nri-plugin on the one-node cluster (tests/cluster/cluster.sh: containerd 1.7 from
# Debian 13, kubelet, runc as the default runtime; one cluster at a time on a machine), as a
# user installs it: `make images`, then `kubectl apply -k deployments/overlays/nri` through
# tests/cluster/overlay.sh (only the simulated host's folder changes). The overlay's installer
# turns NRI on in containerd (ENABLE_NRI) and restarts it because that changed its config; the
# device plugin answers Allocate with ENFLAME_VISIBLE_DEVICES alone, so a pod's cards come from
# the NRI plugin's adjustment and nothing else: no RuntimeClass, no shim on the pod's path. The
# device plugin runs with REQUIRE_NRI: while the NRI plugin is gone it refuses the allocation.
# The tests run in order on one cluster (each builds on the one before).

load helpers
load one_node_cluster
bats_require_minimum_version 1.5.0   # `run !`

NS=enflame-system

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  export NRIC; NRIC=$(cluster_dir nri 3)
  cluster_up "$NRIC" images "$TOP/build/images/enflame-toolkit.oci.tar"
  "$TOP/tests/cluster/cluster.sh" namespace "$NRIC/cluster" "$NS" > /dev/null
  in_ns cat "$CONTAINERD_CONFIG" > "$NRIC/containerd.before"
  cluster_overlay "$NRIC" nri overlays/nri
}

teardown_file() {
  cluster_down "${NRIC:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$NRIC/cluster/env" ] || skip "the cluster is not up"
}

kc() { "$KUBECTL" "$@"; }
in_ns() { nsenter -t "$NS_PID" -m -- "$@"; }

# restarts_of_containerd: how often containerd's supervisor has started it again.
restarts_of_containerd() { grep -c '^supervisor: containerd exited' "$NRIC/cluster/logs/containerd.log" || true; }

# nri_log: the NRI plugin's log (every pod of its DaemonSet, the current container).
nri_log() { kc -n "$NS" logs -l app.kubernetes.io/name=enflame-nri-plugin --tail=-1; }
registrations() { nri_log | grep -c 'registered as 10-enflame-gcu' || true; }
registered_more_than() { [ "$(registrations)" -gt "$1" ]; }

# wait_until SECONDS CMD...: CMD succeeds within SECONDS (polled every 0.5 s).
wait_until() {
  local i n=$(( $1 * 2 )); shift
  for (( i = 0; i < n; i++ )); do "$@" && return 0; sleep 0.5; done
  echo "timed out waiting for: $*" >&2
  return 1
}

# nri_config: "disable disable_connections socket_path" of NRI in containerd's merged config.
nri_config() {
  in_ns containerd --config "$CONTAINERD_CONFIG" config dump | python3 -c 'import sys, tomllib
n = tomllib.loads(sys.stdin.read())["plugins"]["io.containerd.nri.v1.nri"]
print(n["disable"], n["disable_connections"], n["socket_path"])'
}

# no_pods NAME: no pod of the DaemonSet NAME is left.
no_pods() { [ -z "$(kc -n "$NS" get pod -l app.kubernetes.io/name="$1" -o name)" ]; }

# card_pod NAME N: a pod (no RuntimeClass) asking N enflame.com/gcu that lists its cards,
# prints its ENFLAME_VISIBLE_DEVICES and sleeps.
card_pod() {
  # shellcheck disable=SC2016  # the pod's shell expands it
  cluster_pod "$1" 'ls /dev; echo visible=$ENFLAME_VISIBLE_DEVICES; echo listed; sleep 3600' "enflame.com/gcu: $2"
}

listed() { kc logs "$1" | grep -qx listed; }

# cards POD: the gcuN (not gcuctl) in the pod's /dev, one a line.
cards() { kc logs "$1" | grep -E '^gcu[0-9]+$' | sort; }

# card_named ID: gcuN of the simulated card whose uuid ID contains (or whose index ID is).
card_named() {
  python3 - "$NRIC/desc.yaml" "$1" <<'PY'
import sys, yaml
cards = yaml.safe_load(open(sys.argv[1]))["cards"]
print(next("gcu%d" % c["index"] for c in cards
           if sys.argv[2] == str(c["index"]) or str(c["uuid"]) in sys.argv[2]))
PY
}

# allocated POD: the device id kubelet's checkpoint records for POD's enflame.com/gcu.
allocated() {
  local uid; uid=$(kc get pod "$1" -o jsonpath='{.metadata.uid}')
  in_ns cat /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint | python3 -c '
import json, sys
d = json.load(sys.stdin)["Data"]["PodDeviceEntries"]
print(",".join(i for e in d if e["PodUID"] == sys.argv[1] and e["ResourceName"] == "enflame.com/gcu"
               for ids in e["DeviceIDs"].values() for i in ids))' "$uid"
}

# gets_exactly_its_card POD: POD runs with one card node, the one kubelet allocated to it, and
# the NRI plugin's log names the pod; the other cards are absent.
gets_exactly_its_card() {
  card_pod "$1" 1
  wait_phase "$1" Running
  wait_until 30 listed "$1"
  kc logs "$1"
  run cards "$1"
  [ "${#lines[@]}" -eq 1 ]
  # the card kubelet allocated to the pod (its checkpoint) is the one whose node it has
  local id; id=$(allocated "$1")
  [ -n "$id" ]
  [ "${lines[0]}" = "$(card_named "$id")" ]
  # ENFLAME_VISIBLE_DEVICES as the NRI plugin's edits leave it: void, "the cards are in"
  kc logs "$1" | grep -qx visible=void
  kc logs "$1" | grep -qx gcuctl
  nri_log | grep -F "container main (pod default/$1): "
  [ -z "$(kc get pod "$1" -o jsonpath='{.spec.runtimeClassName}')" ]
}

@test "nri cluster: apply -k overlays/nri: the installer turns NRI on (containerd restarted once), the plugin registers, 3 cards allocatable" {
  [ "$(restarts_of_containerd)" = 0 ]
  run ! in_ns test -e /var/run/nri/nri.sock   # containerd 1.7: NRI off until the installer
  run kc apply -k "$NRIC/nri"
  echo "$output"
  [ "$status" -eq 0 ]
  ds_ready
  # the merged config containerd reads: NRI on, on the default socket
  [ "$(nri_config)" = "False False /var/run/nri/nri.sock" ]
  in_ns test -S /var/run/nri/nri.sock
  # restarted once, because its config changed
  [ "$(restarts_of_containerd)" = 1 ]
  kc -n "$NS" logs ds/enflame-toolkit-installer | grep -F "signalled: containerd"
  wait_until 30 registered_more_than 0
  nri_log | grep -F "configured by containerd"
  allocatable_is enflame.com/gcu 3
}

@test "nri cluster: a pod asking enflame.com/gcu: 1 (runc, no RuntimeClass) sees exactly its card through NRI, the others absent" {
  gets_exactly_its_card one
  # a pod asking none: no card, and the plugin adds nothing
  card_pod none 0
  wait_phase none Running
  wait_until 30 listed none
  run cards none
  [ "$output" = "" ]
  run ! grep -qx gcuctl <(kc logs none)
  kc delete pod one none --wait > /dev/null
}

@test "nri cluster: attack matrix, overlays/nri as shipped: with no card request, env all, another vendor's CDI name and CDI annotations on the pod give no card; a pod given one card that sets env all sees exactly it" {
  tenant_pod nri-env-all all ''
  tenant_pod nri-env-vendor nvidia.com/gpu=all ''
  tenant_pod nri-pod-annotation '' '' '' 'cdi.k8s.io/attack: enflame.com/gpu=all'
  tenant_pod nri-one-env-all all 'enflame.com/gcu: 1'
  run -0 no_card_in nri-env-all nri-env-vendor nri-pod-annotation
  echo "$output"
  run -0 one_card_in nri-one-env-all
  echo "$output"
  kc delete pod nri-env-all nri-env-vendor nri-pod-annotation nri-one-env-all --wait > /dev/null
}

@test "nri cluster: containerd restarted mid-way: the same plugin process re-connects and the next pod gets its card" {
  local before restarts
  before=$(registrations)
  restarts=$(kc -n "$NS" get pod -l app.kubernetes.io/name=enflame-nri-plugin -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}')
  "$TOP/tests/cluster/cluster.sh" restart-containerd "$NRIC/cluster"
  wait_until 30 registered_more_than "$before"
  [ "$(kc -n "$NS" get pod -l app.kubernetes.io/name=enflame-nri-plugin -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}')" = "$restarts" ]
  gets_exactly_its_card after-restart
  kc delete pod after-restart --wait > /dev/null
}

# admission_refused POD: kubelet failed POD's admission (phase Failed, UnexpectedAdmissionError)
# with the device plugin's reason, naming the card it was to get; no container of it ever ran.
admission_refused() {
  kc wait --for=jsonpath='{.status.phase}'=Failed "pod/$1" --timeout=60s > /dev/null || {
    kc describe "pod/$1" | tail -n 25
    return 1
  }
  local reason message
  reason=$(kc get pod "$1" -o jsonpath='{.status.reason}')
  message=$(kc get pod "$1" -o jsonpath='{.status.message}')
  echo "$1: $reason: $message"
  [ "$reason" = UnexpectedAdmissionError ]
  [[ "$message" == *"enflame-nri-plugin is not running on this node: cannot inject "* ]]
  # the device it names is one of the node's cards (uuid IDs)
  local id=${message##*cannot inject }; id=${id%%,*}; id=${id%%[!A-Za-z0-9-]*}
  card_named "$id"
  # the runtime never created a container for it (kubelet may still list them, not running)
  [ -z "$(kc get pod "$1" -o jsonpath='{.status.containerStatuses[*].containerID}')" ]
  [ -z "$(kc get pod "$1" -o jsonpath='{.status.containerStatuses[*].state.running}')" ]
}

@test "nri cluster: the plugin gone: a pod asking a card is not admitted (the device plugin names why), one asking none starts; the plugin back: a new card pod gets its card" {
  kc -n "$NS" delete ds enflame-nri-plugin --wait > /dev/null
  wait_until 60 no_pods enflame-nri-plugin
  # containerd 1.7's NRI has no required plugins, so the device plugin (REQUIRE_NRI) refuses
  # the allocation while no NRI plugin holds /var/run/enflame/nri-plugin.lock: kubelet fails
  # the pod's admission instead of starting it without its card
  card_pod orphan 1
  admission_refused orphan
  kc -n "$NS" logs ds/enflame-device-plugin | grep -F "Allocate refused: enflame-nri-plugin is not running on this node"
  card_pod plain 0
  wait_phase plain Running
  # the plugin back (its DaemonSet applied again; nothing else changes, containerd is not restarted)
  local restarts; restarts=$(restarts_of_containerd)
  run kc apply -k "$NRIC/nri"
  [ "$status" -eq 0 ]
  ds_ready
  wait_until 30 registered_more_than 0
  [ "$(restarts_of_containerd)" = "$restarts" ]
  gets_exactly_its_card back
  kc delete pod orphan plain back --wait > /dev/null
}

@test "nri cluster: delete -k: the installer turns NRI off again, containerd's config byte-identical to before" {
  local restarts; restarts=$(restarts_of_containerd)
  run kc delete -k "$NRIC/nri" --ignore-not-found --wait --timeout=120s
  echo "$output"
  [ "$status" -eq 0 ] || {
    echo "at $(date +%T), what is left:"
    kc get pods -A -o wide
    kc get ns "$NS" -o jsonpath='{.status.conditions}'; echo
    return 1
  }
  # the installer's pod gone: its preStop (toolkit uninstall) has run
  wait_until 90 no_pods enflame-toolkit-installer
  in_ns cat "$CONTAINERD_CONFIG" | cmp - "$NRIC/containerd.before"
  run ! in_ns test -e /etc/containerd/conf.d/99-enflame.toml
  # restarted once more (the preStop's uninstall changed its config), and without NRI now
  wait_until 30 bash -c "[ \$(grep -c '^supervisor: containerd exited' $NRIC/cluster/logs/containerd.log) -gt $restarts ]"
  # (containerd without NRI leaves the old socket file in /run/nri: its merged config says it)
  [ "$(nri_config)" = "True False /var/run/nri/nri.sock" ]
}
