#!/usr/bin/env bats
# End to end on a real one-node Kubernetes (tests/cluster/cluster.sh: etcd, kube-apiserver with
# Node,RBAC, scheduler, controller-manager, kubelet on containerd 1.7 under a supervisor), each
# step a user's: `make images`, the archive imported into the node's containerd, then
# `kubectl apply -k deployments/` as shipped, the shipped examples, faults, and
# `kubectl delete -k`. The only changes to what deployments/ ships are the harness's own, all
# in tests/cluster/overlay.sh (the simulated host's folder, the DRA plugin's route to the API
# server); the node label NFD would set is set here with kubectl.
# The tests of this file run in order on one cluster (each step builds on the one before, as a
# user's would); `make e2e` runs this file alone.

load helpers
load one_node_cluster
bats_require_minimum_version 1.5.0

NS=enflame-system

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  export E2E; E2E=$(mktemp -d /tmp/ectk-e2e.XXXXXX)
  chmod 755 "$E2E"
  # the simulated host: four S60 cards, card 0 split into two DRS instances of 1g.11gb (the
  # device plugin serves them as enflame.com/drs-1g.11gb, the DRA plugin as devices of their
  # own), cards 1-3 whole
  sim_desc > "$E2E/desc.yaml"
  "$SIM_HOST" build --desc "$E2E/desc.yaml" --root "$E2E/host" > /dev/null
  cluster_up "$E2E" images "$TOP/build/images/enflame-toolkit.oci.tar"
  # what containerd's config was before we installed anything
  in_ns cat "$CONTAINERD_CONFIG" > "$E2E/containerd.before"
  cluster_overlay "$E2E" dp .
  cluster_overlay "$E2E" dra overlays/dra-v1beta1
}

teardown_file() {
  cluster_down "${E2E:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$E2E/cluster/env" ] || skip "the cluster is not up"
}

kc() { "$KUBECTL" "$@"; }
# sim_desc: the simulated host's description (enflame-sim-host example, DRS instances on card 0 only).
sim_desc() {
  "$SIM_HOST" example --cards 4 --drs | python3 -c 'import sys, yaml
d = yaml.safe_load(sys.stdin)
d["drs"]["instances"] = [i for i in d["drs"]["instances"] if i["card"] == 0]
yaml.safe_dump(d, sys.stdout, sort_keys=False)'
}
# in_ns CMD...: CMD inside the harness's mount namespace (where containerd and kubelet see the
# node's /etc/containerd, /run/cdi, /usr/local/enflame ...).
in_ns() { nsenter -t "$NS_PID" -m -- "$@"; }

# cards POD [CONTAINER]: the /dev/gcuN (not gcuctl) the pod's container listed, one a line.
cards() {
  kc logs "$1" ${2:+-c "$2"} | grep -oE '/dev/gcu[0-9]+$' | sort
}

# one_card_pod NAME: a pod asking one enflame.com/gcu that lists its cards and sleeps.
one_card_pod() { cluster_pod "$1" 'ls -l /dev/gcu*; sleep 3600' 'enflame.com/gcu: 1'; }

# gets_one_card NAME: a new pod asking one card runs and lists exactly one; then it is deleted.
gets_one_card() {
  one_card_pod "$1"
  wait_phase "$1" Running
  run cards "$1"
  echo "$output"
  [ "${#lines[@]}" -eq 1 ]
  kc delete pod "$1" --wait > /dev/null
}

# untouched POD ID: POD still runs the container ID, never restarted.
untouched() {
  [ "$(kc get pod "$1" -o jsonpath='{.status.phase}')" = Running ]
  [ "$(container_id "$1")" = "$2" ]
  [ "$(restarts "$1")" = 0 ]
}

restarts() { kc get pod "$1" -o jsonpath='{.status.containerStatuses[0].restartCount}'; }
container_id() { kc get pod "$1" -o jsonpath='{.status.containerStatuses[0].containerID}'; }

# apply_all OVERLAY: kubectl apply -k, in a namespace made first by the harness (this fork's
# ServiceAccount admission needs a ConfigMap in every namespace with pods).
apply_all() {
  "$TOP/tests/cluster/cluster.sh" namespace "$E2E/cluster" "$NS" > /dev/null
  run kc apply -k "$1"
}

@test "e2e: kubectl apply -k deployments/ as shipped: every DaemonSet Ready, the installer wires containerd, 3 whole cards allocatable" {
  apply_all "$E2E/dp"
  echo "$output"
  [ "$status" -eq 0 ]
  ds_ready
  # the installer: runtime enflame and CDI in containerd's config, the spec on the node
  run in_ns cat "$CONTAINERD_CONFIG"
  [[ $output == *enflame* ]]
  run in_ns ls /usr/local/enflame/toolkit
  [[ $output == *enflame-container-runtime* ]]
  run in_ns grep -c "name: \"\?[0-9]" /run/cdi/enflame.com-gpu.yaml
  [ "$status" -eq 0 ]
  # the device plugin registered every healthy card with kubelet
  allocatable_is enflame.com/gcu 3
  # the split card's two instances as a resource of their own
  [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.allocatable.enflame\.com/drs-1g\.11gb}')" = 2 ]
  # the labeler's labels for NFD, and the exporter's scrape on its pod address (as Prometheus)
  run in_ns cat /etc/kubernetes/node-feature-discovery/features.d/enflame
  echo "$output"
  [[ $output == *"enflame.com/gpu.count=4"* ]]
  local ip; ip=$(kc -n "$NS" get pod -l app.kubernetes.io/name=enflame-gcu-exporter -o jsonpath='{.items[0].status.podIP}')
  run curl -sf --max-time 5 "http://$ip:9400/metrics"
  grep -E '^enflame_gcu_count(\{.*\})? 4$' <<<"$output"
}

@test "e2e: the shipped example pod (no RuntimeClass, plain runc) gets exactly its two cards" {
  run kc apply -f "$E2E/deployments/device-plugin/example-pod.yaml"
  [ "$status" -eq 0 ]
  wait_phase gcu-example Succeeded
  run cards gcu-example
  echo "$output"
  [ "${#lines[@]}" -eq 2 ]
  [ "${lines[0]}" != "${lines[1]}" ]
  run kc logs gcu-example
  [[ $output == *"ENFLAME_VISIBLE_DEVICES="?* ]]
  kc delete pod gcu-example --wait > /dev/null
}

@test "e2e: a pod asking more cards than the node has stays Pending with the scheduler's message" {
  kc apply -f - > /dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: too-many}
spec:
  containers:
  - name: main
    image: busybox:1.36
    command: ["true"]
    resources: {limits: {enflame.com/gcu: 4}}
YAML
  local msg=
  for _ in $(seq 30); do
    msg=$(kc get pod too-many -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')
    [ -n "$msg" ] && break
    sleep 1
  done
  echo "$msg"
  [[ $msg == *"Insufficient enflame.com/gcu"* ]]
  run kc get pod too-many -o jsonpath='{.status.phase}'
  [ "$output" = Pending ]
  kc delete pod too-many --wait > /dev/null
}

@test "e2e: attack matrix, deployments/ as shipped: with no card request, env all (with and without RuntimeClass enflame), another vendor's CDI name and CDI annotations on the pod give no card; a pod given one card that sets env all sees exactly it" {
  local rtc='runtimeClassName: enflame'
  tenant_pod env-all all ''
  tenant_pod env-all-rtc all '' "$rtc"
  tenant_pod env-vendor nvidia.com/gpu=all '' "$rtc"
  tenant_pod pod-annotation '' '' "$rtc" 'cdi.k8s.io/attack: enflame.com/gpu=all'
  tenant_pod one-card-env-all all 'enflame.com/gcu: 1' "$rtc"
  run -0 no_card_in env-all env-all-rtc env-vendor pod-annotation
  echo "$output"
  run -0 one_card_in one-card-env-all
  echo "$output"
  kc delete pod env-all env-all-rtc env-vendor pod-annotation one-card-env-all --wait > /dev/null
}

@test "e2e: the device plugin's pod deleted: a running pod keeps running, a new pod gets a card once it is back" {
  one_card_pod keeper
  wait_phase keeper Running
  local id; id=$(container_id keeper)
  kc -n "$NS" delete pod -l app.kubernetes.io/name=enflame-device-plugin --wait > /dev/null
  ds_ready
  gets_one_card after-dp
  untouched keeper "$id"
}

@test "e2e: kubelet restarted: the node comes back Ready, the running pod is untouched, new pods get cards" {
  local id; id=$(container_id keeper)
  "$TOP/tests/cluster/cluster.sh" restart-kubelet "$E2E/cluster"
  kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=60s > /dev/null
  ds_ready
  gets_one_card after-kubelet
  untouched keeper "$id"
}

@test "e2e: the installer's pod replaced: it restarts containerd (uninstall, install) while pods run; they keep running" {
  local id pid0 pid1
  id=$(container_id keeper)
  pid0=$(cat "$CONTAINERD_PID_FILE")
  kc -n "$NS" delete pod -l app.kubernetes.io/name=enflame-toolkit-installer --wait > /dev/null
  ds_ready
  pid1=$(cat "$CONTAINERD_PID_FILE")
  [ "$pid0" != "$pid1" ]
  run in_ns cat "$CONTAINERD_CONFIG"
  [[ $output == *enflame* ]]
  gets_one_card after-installer
  untouched keeper "$id"
  kc delete pod keeper --wait > /dev/null
}

# uninstall_all OVERLAY: kubectl delete -k, then nothing of ours on the node.
uninstall_all() {
  run kc delete -k "$1" --wait --timeout=180s
  echo "$output"
  [ "$status" -eq 0 ]
  run kc get pods -A --no-headers
  echo "$output"
  refute_terminating
  run in_ns cat "$CONTAINERD_CONFIG"
  [ "$output" = "$(cat "$E2E/containerd.before")" ]
  # the toolkit folder and the CDI spec gone (/usr/local/enflame is the harness's mount point)
  run in_ns find /usr/local/enflame /run/cdi
  echo "$output"
  [[ $output != */toolkit* ]]
  [[ $output != *enflame.com-gpu.yaml* ]]
}

refute_terminating() {
  run kc get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}'
  echo "$output"
  [[ $output != *" 2"* ]]
}

@test "e2e: kubectl delete -k deployments/: containerd's config byte-identical, toolkit and CDI spec gone, nothing Terminating" {
  uninstall_all "$E2E/dp"
  # containerd was given its old config back and answers
  kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=60s > /dev/null
}

@test "e2e: overlays/dra-v1beta1 as shipped: DaemonSets Ready, the node's cards published as ResourceSlices" {
  apply_all "$E2E/dra"
  echo "$output"
  [ "$status" -eq 0 ]
  ds_ready
  local n=0
  for _ in $(seq 30); do
    n=$(kc get resourceslices -o json | python3 -c 'import json,sys
print(sum(len(s["spec"].get("devices", [])) for s in json.load(sys.stdin)["items"]))')
    [ "$n" = 5 ] && break
    sleep 1
  done
  # three whole cards and the two DRS instances of card 0
  [ "$n" = 5 ]
}

# example_runs FILE: apply a shipped DRA example; every container of every pod in it sees
# exactly one card, a DRS claim's also TOPS_VISIBLE_DEVICES=DRS-...; every per-claim spec runs
# the installer's enflame-ctk as its update-ldcache hook (the DaemonSet's CTK_PATH), which
# containerd ran for the pod to start; then delete it.
example_runs() {
  local f=$E2E/deployments/dra/examples/v1beta1/$1 pod c
  run kc apply -f "$f"
  [ "$status" -eq 0 ]
  for pod in $(kc get pods -o jsonpath='{.items[*].metadata.name}'); do
    wait_phase "$pod" Running
    for c in $(kc get pod "$pod" -o jsonpath='{.spec.containers[*].name}'); do
      for _ in $(seq 10); do kc logs "$pod" -c "$c" | grep -q gcu && break; sleep 0.5; done
      run cards "$pod" "$c"
      echo "$pod/$c: $output"
      [ "${#lines[@]}" -eq 1 ]
      if [[ $1 == drs-* ]]; then
        run kc logs "$pod" -c "$c"
        [[ $output == *TOPS_VISIBLE_DEVICES=DRS-* ]]
      fi
    done
  done
  run in_ns sh -c 'grep -H -c /usr/local/enflame/toolkit/enflame-ctk /run/cdi/k8s.gcu.enflame.com-claim_*.yaml'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output != *:0* ]]
  kc delete -f "$f" --grace-period=1 --wait > /dev/null
}

@test "e2e: DRA: the CEL-selected S60 claim's pod gets exactly one card" {
  example_runs s60-32gi.yaml
}

@test "e2e: DRA: a pod from the claim template gets exactly one card" {
  example_runs claim-template.yaml
}

@test "e2e: DRA: the DRS 1g.11gb claim's pod gets the parent card and TOPS_VISIBLE_DEVICES" {
  example_runs drs-1g-11gb.yaml
}

@test "e2e: DRA: any-gcu and the shared claim (two containers, one card)" {
  example_runs any-gcu.yaml
  example_runs shared-claim.yaml
}

@test "e2e: attack matrix, overlays/dra-v1beta1 as shipped: with no claim, env all (with and without RuntimeClass enflame), another vendor's CDI name and CDI annotations on the pod give no card" {
  local rtc='runtimeClassName: enflame'
  tenant_pod dra-env-all all ''
  tenant_pod dra-env-all-rtc all '' "$rtc"
  tenant_pod dra-env-vendor nvidia.com/gpu=all '' "$rtc"
  tenant_pod dra-pod-annotation '' '' "$rtc" 'cdi.k8s.io/attack: enflame.com/gpu=all'
  run -0 no_card_in dra-env-all dra-env-all-rtc dra-env-vendor dra-pod-annotation
  echo "$output"
  kc delete pod dra-env-all dra-env-all-rtc dra-env-vendor dra-pod-annotation --wait > /dev/null
}

@test "e2e: kubectl delete -k overlays/dra-v1beta1: containerd's config byte-identical, nothing left" {
  uninstall_all "$E2E/dra"
  # no per-claim spec left either
  run in_ns find /run/cdi -type f
  [ -z "$output" ]
}
