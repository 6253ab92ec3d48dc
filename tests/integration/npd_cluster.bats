#!/usr/bin/env bats
# Node Problem Detector with deployments/npd on the one-node cluster (tests/cluster/cluster.sh;
# one cluster at a time on a machine): `make images` for our image
# (the init container that copies `enflame-ctk health` in), a stand-in for upstream's NPD image
# under its shipped name holding the real NPD v0.8.20 binary (on busybox, so the plugin can
# count on nothing from the image), `kubectl apply -k` through tests/cluster/overlay-npd.sh
# (the simulated host's folder, a 5 s interval, the harness's route to the API server). A card
# turned unhealthy: the Node gets GCUUnhealthy True and a Warning event, and both clear.

load helpers
load one_node_cluster
load npd
bats_require_minimum_version 1.5.0

NS=enflame-system
INTERVAL=5

setup_file() {
  kube_bin_named || return 0
  npd_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  local npd; npd=$(npd_binary) || skip_or_fail "no Node Problem Detector: $npd"
  export NPDC; NPDC=$(mktemp -d /tmp/ectk-npd.XXXXXX)
  chmod 755 "$NPDC"
  "$SIM_HOST" example --cards 4 > "$NPDC/desc.yaml"
  "$SIM_HOST" build --desc "$NPDC/desc.yaml" --root "$NPDC/host" > /dev/null
  full_links "$NPDC/host" 4
  # upstream's image name, from the one place the manifests pin it
  local image; image=$(grep -oE 'registry\.k8s\.io/node-problem-detector/node-problem-detector:[^ ]+' \
    "$TOP/deployments/npd/daemonset.yaml")
  python3 "$TOP/tests/cluster/oci_image.py" "$NPDC/npd.oci.tar" --name "$image" \
    --file "$npd:/node-problem-detector" --entrypoint '["/node-problem-detector"]' --cmd '[]'
  cluster_up "$NPDC" images "$TOP/build/images/enflame-toolkit.oci.tar" "$NPDC/npd.oci.tar"
  "$TOP/tests/cluster/cluster.sh" namespace "$NPDC/cluster" "$NS" > /dev/null
  "$KUBECTL" label node "$NODE_NAME" enflame.com/gpu.present=true --overwrite > /dev/null
  "$TOP/tests/cluster/overlay-npd.sh" "$NPDC/npd" "$TOP/deployments/npd" "$NPDC/host" "$APISERVER_PORT" "$INTERVAL"
}

teardown_file() {
  cluster_down "${NPDC:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$NPDC/cluster/env" ] || skip "the cluster is not up"
  SIMDIR=$(echo "$NPDC"/host/usr/local/efsmi/efsmi-*)
}

kc() { "$KUBECTL" "$@"; }

# condition TYPE: "Status Reason Message" of the Node's condition TYPE ("" when it has none).
condition() {
  kc get node "$NODE_NAME" -o jsonpath="{range .status.conditions[?(@.type==\"$1\")]}{.status} {.reason} {.message}{end}"
}

# condition_is TYPE STATUS SECONDS: waits until the Node's condition TYPE has STATUS.
condition_is() {
  local i
  for (( i = 0; i < $3 * 2; i++ )); do
    [[ $(condition "$1") == "$2 "* ]] && { echo "$1: $(condition "$1") after ~$((i / 2)) s"; return 0; }
    sleep 0.5
  done
  echo "$1 is '$(condition "$1")', not $2, after $3 s"
  kc -n "$NS" logs ds/enflame-npd --tail=5 || true
  return 1
}

# event REASON: the message of the newest event with REASON on the Node from the GCU monitor.
event() {
  kc get events -A --field-selector "involvedObject.kind=Node,involvedObject.name=$NODE_NAME,reason=$1" \
    -o jsonpath='{range .items[?(@.source.component=="enflame-gcu-monitor")]}{.type} {.message}{"\n"}{end}' | tail -n 1
}

@test "npd cluster: the shipped DaemonSet runs (init container copies the plugin), the Node gets every GCU condition False" {
  kc apply -k "$NPDC/npd" > /dev/null
  kc -n "$NS" rollout status ds/enflame-npd --timeout=180s || {
    kc -n "$NS" describe pods | tail -n 30
    return 1
  }
  local t
  for t in GCUDriverProblem GCUMissing GCUUnhealthy GCUEccErrors GCUOverTemperature GCUPCIeLinkDegraded GCUCDISpecStale; do
    condition_is "$t" False 60
  done
  [ "$(condition GCUUnhealthy)" = "False GCUsHealthy libefml reports every GCU healthy" ]
  # the NPD image is the stand-in under upstream's shipped name: nothing of ours in it
  [ "$(kc -n "$NS" get ds enflame-npd -o jsonpath='{.spec.template.spec.containers[0].image}')" = \
    "$(grep -oE 'registry\.k8s\.io/node-problem-detector/node-problem-detector:[^ ]+' "$TOP/deployments/npd/daemonset.yaml")" ]
  curl -sf "http://127.0.0.1:20257/metrics" | grep -F 'problem_gauge{reason="GCUIsUnhealthy",type="GCUUnhealthy"} 0'
}

@test "npd cluster: a card turned unhealthy sets GCUUnhealthy True with a Warning event; both clear when it recovers" {
  echo 3 > "$SIMDIR/enflame-sim-unhealthy"
  condition_is GCUUnhealthy True $((INTERVAL + 10))
  [ "$(condition GCUUnhealthy)" = "True GCUIsUnhealthy GCU 3 is unhealthy (libefml)" ]
  wait_for sh -c "[ -n \"\$(\"$KUBECTL\" get events -A --field-selector involvedObject.name=$NODE_NAME,reason=GCUIsUnhealthy -o name)\" ]"
  [[ $(event GCUIsUnhealthy) == "Warning Node condition GCUUnhealthy is now: True, reason: GCUIsUnhealthy"* ]]
  curl -sf "http://127.0.0.1:20257/metrics" | grep -F 'problem_gauge{reason="GCUIsUnhealthy",type="GCUUnhealthy"} 1'
  rm "$SIMDIR/enflame-sim-unhealthy"
  condition_is GCUUnhealthy False $((INTERVAL + 10))
  wait_for sh -c "[ -n \"\$(\"$KUBECTL\" get events -A --field-selector involvedObject.name=$NODE_NAME,reason=GCUsHealthy -o name)\" ]"
  [[ $(event GCUsHealthy) == "Normal Node condition GCUUnhealthy is now: False, reason: GCUsHealthy"* ]]
}

@test "npd cluster: kubectl delete -k removes NPD; the conditions it set stay as they were (NPD never deletes them)" {
  kc delete -k "$NPDC/npd" --wait=true > /dev/null
  wait_for sh -c "[ -z \"\$(\"$KUBECTL\" -n $NS get pods -l app.kubernetes.io/name=enflame-npd -o name)\" ]"
  [[ $(condition GCUUnhealthy) == "False "* ]]
}
