#!/usr/bin/env bats
# enflame-drs-manager (docs/drs-manager.md) on a real one-node Kubernetes
# (tests/cluster/cluster.sh), deployed by the operator: `kubectl apply -k deployments/operator`
# as shipped and one GpuResource with spec.drsManager.enabled, its hostPaths at a simulated host
# of four S60 cards with DRS and no instance (cluster_dir ... drs). What drs_manager.bats runs
# on the fake API server, here with the real API server (RBAC, the admission policy the operator
# applies), the real kubelet (the device plugin's resources in the node's allocatable, its
# pod-resources API naming the pod that holds a slice) and the operator's status. The simulated
# efsmi keeps its instances in a file beside its binary: that folder is made writable under the
# pods' read-only /host (node_writable). These S60s cap 2g.22gb at one instance, so the shipped
# all-2g.22gb is a layout they cannot hold: the operator puts back any edit of its layouts
# ConfigMap, so a test cannot add one there. The tests run in order on one cluster:
#   ENFLAME_KUBE_BIN=... BUILD_DIR=$PWD/build/dev bats tests/integration/drs_manager_cluster.bats

load helpers
load one_node_cluster
load operator_cluster
bats_require_minimum_version 1.5.0

NS=enflame-system
ONS=enflame-operator
SA=system:serviceaccount:enflame-system:enflame-drs-manager
LAYOUT=enflame.com/drs.config
STATE=enflame.com/drs.config.state

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  [ -x "$SIM_HOST" ] || skip_or_fail "enflame-sim-host not built in $BUILD_DIR"
  # OP: the folder operator_cluster.bash's sample_cr points the CR's hostPaths into
  export OP; OP=$(cluster_dir drsc 4 drs)
  sim_rebuild "$OP/desc.yaml" "$OP/host" \
    'next(p for p in d["drs"]["profiles"] if p["name"] == "2g.22gb")["max_instances"] = 1'
  cluster_up "$OP" images "$TOP/build/images/enflame-toolkit.oci.tar"
  node_writable "$OP/host/usr/local/efsmi"
  operator_node
}

teardown_file() {
  cluster_down "${OP:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$OP/cluster/env" ] || skip "the cluster is not up"
  EFSMI=$(echo "$OP"/host/usr/local/efsmi/efsmi-*/efsmi)
}

# cluster_diag: shown when wait_phase fails, and by the tests' own waits
cluster_diag() {
  kc -n "$NS" logs ds/enflame-drs-manager --tail=20 || true
  kc -n "$NS" logs ds/enflame-device-plugin --tail=10 || true
}

# drs_cr: the sample CR (hostPaths at the simulated host) with the DRS manager on; the device
# plugin keeps its default, DRS on.
drs_cr() {
  sample_cr | python3 -c 'import sys, yaml
d = yaml.safe_load(sys.stdin)
d["spec"]["drsManager"] = {"enabled": True}
print(yaml.safe_dump(d))'
}

relabel() { kc label node "$NODE_NAME" "$LAYOUT=$1" --overwrite > /dev/null; }
drs_state() { kc get node "$NODE_NAME" -o json | jq -r --arg k "$STATE" '.metadata.labels[$k] // ""'; }
drs_state_is() { [ "$(drs_state)" = "$1" ]; }

# instances: the simulated host's DRS instances as its efsmi lists them (ids, profiles, places)
instances() { "$EFSMI" --drs --list-instance; }
instance_count() { instances | grep -c '[0-9]g\.[0-9]*gb' || true; }

# layout_done N: state success with N instances on the host (the state alone may still be the
# last layout's)
layout_done() { drs_state_is success && [ "$(instance_count)" -eq "$1" ]; }

allocatable() { kc get node "$NODE_NAME" -o json | jq -r --arg r "$1" '.status.allocatable[$r] // ""'; }
allocatable_now() { [ "$(allocatable "$1")" = "$2" ]; }
# no_allocatable RESOURCE: none offered (kubelet keeps a stopped plugin's resource at 0 a while)
no_allocatable() { local n; n=$(allocatable "$1"); [ -z "$n" ] || [ "$n" = 0 ]; }

# cr_drs: the CR's status.drs and this node's entry in its drsManager component, "DRS | entry"
cr_drs() {
  kc get gr enflame -o json | jq -r --arg n "$NODE_NAME" \
    '"\(.status.drs // "") | \(.status.components[]? | select(.name == "drsManager") | .nodes[$n] // "")"'
}
cr_drs_is() { [ "$(cr_drs)" = "$1" ]; }

# events REASON: "Type: message" of each Event with REASON on this node in the manager's namespace
events() {
  kc -n "$NS" get events --field-selector "involvedObject.kind=Node,involvedObject.name=$NODE_NAME,reason=$1" \
    -o jsonpath='{range .items[*]}{.type}: {.message}{"\n"}{end}'
}
events_are() { [ "$(events "$1")" = "$2" ]; }
waits_for_pod() { [[ $(events DrsLayoutWaiting) == *"(held by pod default/$1)"* ]]; }

manager_logged() { kc -n "$NS" logs ds/enflame-drs-manager | grep -qF -- "$1"; }

# as_manager_on_node PATCH: a merge patch of this Node as the manager's account with this node in
# its credentials, as its pod-bound token has them (the admin impersonating); the server's answer
as_manager_on_node() {
  local token
  token=$(kc config view --raw -o jsonpath='{.users[0].user.token}')
  curl -sS --cacert "$CLUSTER_DIR/pki/ca.crt" -H "Authorization: Bearer $token" \
    -H "Impersonate-User: $SA" -H "Impersonate-Extra-authentication.kubernetes.io%2fnode-name: $NODE_NAME" \
    -H "Content-Type: application/merge-patch+json" -X PATCH --data "$1" \
    "https://127.0.0.1:$APISERVER_PORT/api/v1/nodes/$NODE_NAME"
}

@test "install: kubectl apply -k deployments/operator + a GpuResource with drsManager.enabled -> the DRS manager's pod Ready, state ready 5/5, the device plugin with DRS on offers the 4 whole cards" {
  run -0 kc apply -k "$TOP/deployments/operator"
  run kc -n "$ONS" rollout status deploy/enflame-gpu-operator --timeout=120s
  [ "$status" -eq 0 ] || {
    kc -n "$ONS" get pods -o wide
    kc -n "$ONS" logs -l app.kubernetes.io/name=enflame-gpu-operator --tail=20 --prefix; false
  }
  drs_cr | kc apply -f - > /dev/null
  run kc wait gr/enflame --for=jsonpath='{.status.state}'=ready --timeout=180s
  [ "$status" -eq 0 ] || {
    kc get gr enflame -o yaml; kc -n "$NS" get pods -o wide
    kc -n "$ONS" logs -l app.kubernetes.io/name=enflame-gpu-operator --tail=30 --prefix; false
  }
  run -0 kc get gr enflame -o json
  jq -e '.status.readyResource == "5/5"' <<<"$output" > /dev/null
  jq -e 'any(.status.components[]; .name == "drsManager")' <<<"$output" > /dev/null
  run -0 kc -n "$NS" get ds enflame-drs-manager -o json
  jq -e '.status.numberReady == 1' <<<"$output" > /dev/null
  jq -e '.metadata.ownerReferences[0].kind == "GpuResource"' <<<"$output" > /dev/null
  run wait_for 30 manager_logged "watching node $NODE_NAME"
  [ "$status" -eq 0 ] || { cluster_diag; false; }
  # DRS on: no --no-drs, and the manager's state file to follow
  run -0 kc -n "$NS" get ds enflame-device-plugin -o json
  jq -e '.spec.template.spec.containers[0].command | index("--no-drs") | not' <<<"$output" > /dev/null
  jq -e 'any(.spec.template.spec.containers[0].env[]; .name == "DRS_STATE_FILE")' <<<"$output" > /dev/null
  allocatable_is enflame.com/gcu 4
  [ "$(instance_count)" -eq 0 ]
  [ -z "$(drs_state)" ]
}

@test "label all-1g.11gb -> state success, 16 instances on the host, allocatable enflame.com/drs-1g.11gb 16 and no whole card (the real kubelet); kubectl get gr shows the node's layout state" {
  local t0 to_success to_allocatable
  t0=$(date +%s%N)
  relabel all-1g.11gb
  run wait_for 60 layout_done 16
  [ "$status" -eq 0 ] || { echo "state '$(drs_state)', $(instance_count) instances"; cluster_diag; false; }
  to_success=$(( ($(date +%s%N) - t0) / 1000000 ))
  run wait_for 90 allocatable_now enflame.com/drs-1g.11gb 16
  [ "$status" -eq 0 ] || { echo "allocatable: '$(allocatable enflame.com/drs-1g.11gb)'"; cluster_diag; false; }
  to_allocatable=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "# label all-1g.11gb -> state success $to_success ms, -> allocatable drs-1g.11gb 16 $to_allocatable ms (kubelet posts node status every 10 s)" >&3
  run -0 wait_for 30 no_allocatable enflame.com/gcu
  run wait_for 30 cr_drs_is "1 success | all-1g.11gb: success"
  [ "$status" -eq 0 ] || { cr_drs; false; }
  run -0 kc get gr enflame
  [[ ${lines[0]} =~ ^NAME\ +READY\ +STATE\ +DRS\ +AGE$ ]]
  [[ ${lines[1]} =~ ^enflame\ +5/5\ +ready\ +1\ success\  ]]
  [ -z "$(events DrsLayoutFailed)$(events DrsLayoutWaiting)" ]
}

@test "a pod holding one slice (enflame.com/drs-1g.11gb: 1) runs; relabel all-full -> state pending, a Warning Event naming the pod, nothing destroyed; the pod deleted -> success, no instance, allocatable enflame.com/gcu 4 and no drs-1g.11gb" {
  cluster_pod drs-user 'ls -l /dev/gcu*; env; sleep 3600' 'enflame.com/drs-1g.11gb: 1'
  wait_phase drs-user Running
  run -0 wait_for 10 logs_name_a_card drs-user
  run -0 kc logs drs-user
  [[ $output == *TOPS_VISIBLE_DEVICES=DRS-* ]]
  local before; before=$(instances)
  relabel all-full
  run wait_for 30 drs_state_is pending
  [ "$status" -eq 0 ] || { echo "state '$(drs_state)'"; cluster_diag; false; }
  run wait_for 30 waits_for_pod drs-user
  [ "$status" -eq 0 ] || { events DrsLayoutWaiting; cluster_diag; false; }
  run -0 events DrsLayoutWaiting
  echo "$output"
  [[ $output == "Warning: layout 'all-full': waiting for "?":1g.11gb:"?" (held by pod default/drs-user)" ]]
  run -0 wait_for 30 cr_drs_is "1 pending | all-full: pending"
  sleep 3
  [ "$(instances)" = "$before" ]
  drs_state_is pending
  kc delete pod drs-user --wait > /dev/null
  run wait_for 60 layout_done 0
  [ "$status" -eq 0 ] || { echo "state '$(drs_state)', $(instance_count) instances"; cluster_diag; false; }
  allocatable_is enflame.com/gcu 4
  run -0 wait_for 60 no_allocatable enflame.com/drs-1g.11gb
  run -0 wait_for 30 cr_drs_is "1 success | all-full: success"
}

@test "a layout these cards cannot hold (all-2g.22gb: two asked, the profile allows one) -> state failed, one line naming the card and the profile (Event and log), the 16 instances untouched" {
  relabel all-1g.11gb
  run wait_for 60 layout_done 16
  [ "$status" -eq 0 ] || { echo "state '$(drs_state)', $(instance_count) instances"; cluster_diag; false; }
  local before; before=$(instances)
  relabel all-2g.22gb
  run wait_for 30 drs_state_is failed
  [ "$status" -eq 0 ] || { echo "state '$(drs_state)'"; cluster_diag; false; }
  local line="layout 'all-2g.22gb': card 0: 2 instances of '2g.22gb' asked, the profile allows 1"
  run wait_for 10 events_are DrsLayoutFailed "Warning: $line"
  [ "$status" -eq 0 ] || { events DrsLayoutFailed; false; }
  run -0 kc -n "$NS" logs ds/enflame-drs-manager
  [ "$(grep -c -- "error: $line\$" <<<"$output")" -eq 1 ]
  run -0 wait_for 30 cr_drs_is "1 failed | all-2g.22gb: failed"
  sleep 2
  [ "$(instances)" = "$before" ]
  drs_state_is failed
}

@test "least privilege on the cluster: the manager's account watches and patches Nodes, reads its layouts and posts Events in enflame-system, nothing more; the admission policy holds its Node writes to its own node's state label" {
  local as=--as=$SA
  run -0 kc auth can-i "$as" patch nodes
  run -0 kc auth can-i "$as" watch nodes
  run -0 kc auth can-i "$as" -n "$NS" watch configmaps
  run -0 kc auth can-i "$as" -n "$NS" create events
  run -1 kc auth can-i "$as" -n "$NS" list secrets
  run -1 kc auth can-i "$as" get secrets --all-namespaces
  run -1 kc auth can-i "$as" -n "$NS" patch configmaps
  run -1 kc auth can-i "$as" -n default create events
  run -1 kc auth can-i "$as" create nodes
  run -1 kc auth can-i "$as" delete nodes
  run -1 kc auth can-i "$as" patch nodes --subresource=status
  run -1 kc auth can-i "$as" -n "$NS" patch daemonsets
  run -1 kc auth can-i "$as" -n "$NS" delete pods
  # RBAC lets it patch any Node: the policy refuses a write whose credentials name no node ...
  run -1 kc "$as" label node "$NODE_NAME" example.com/drs-test=1
  echo "$output"
  [[ $output == *"enflame-drs-manager: no node in the request's credentials"* ]]
  # ... and, from its own node, a label other than its state
  run -0 as_manager_on_node '{"metadata":{"labels":{"example.com/drs-test":"1"}}}'
  echo "$output"
  [[ $output == *"enflame-drs-manager may change only the label enflame.com/drs.config.state"* ]]
  [ -z "$(kc get node "$NODE_NAME" -o jsonpath='{.metadata.labels.example\.com/drs-test}')" ]
}
