#!/usr/bin/env bats
# Least privilege on a real one-node Kubernetes (tests/cluster/cluster.sh: kube-apiserver with
# Node,RBAC, ServiceAccount admission and ValidatingAdmissionPolicy, v1.32): overlays/dra-v1beta1
# applied as shipped (the harness's changes only, tests/cluster/overlay.sh). The DRA plugin
# publishes with nothing but the shipped RBAC; a token bound to its pod (so the API server knows
# its node) may not write another node's ResourceSlices (the shipped admission policy's message)
# nor list ResourceClaims; the daemons that never call the API get no token.
# One cluster for the file; run it under the machine-wide lock:
#   BUILD_DIR=$PWD/build/dev bats tests/integration/cluster_rbac.bats

load helpers
load one_node_cluster
bats_require_minimum_version 1.5.0

NS=enflame-system
OTHER=node-not-ours

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  export RB; RB=$(cluster_dir rbac 2)
  cluster_up "$RB" images "$TOP/build/images/enflame-toolkit.oci.tar"
  cluster_overlay "$RB" dra overlays/dra-v1beta1
  cluster_apply "$RB" dra
  ds_ready >&2
}

teardown_file() {
  cluster_down "${RB:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$RB/cluster/env" ] || skip "the cluster is not up"
}

kc() { "$KUBECTL" "$@"; }

# as_plugin [--unbound] ARGS...: kubectl as the DRA plugin's service account, with a token
# bound to the plugin's running pod (what kubelet projects into it), or bound to nothing.
as_plugin() {
  local bind=(--bound-object-kind Pod --bound-object-name "$(plugin_pod)")
  if [ "$1" = --unbound ]; then bind=(); shift; fi
  local token
  token=$(kc -n "$NS" create token enflame-dra-plugin "${bind[@]}" --duration 10m)
  "$KUBECTL" --kubeconfig /dev/null --server "https://127.0.0.1:$APISERVER_PORT" \
    --certificate-authority "$CLUSTER_DIR/pki/ca.crt" --token "$token" "$@"
}

plugin_pod() {
  kc -n "$NS" get pod -l app.kubernetes.io/name=enflame-dra-plugin -o jsonpath='{.items[0].metadata.name}'
}

# slice NODE: a ResourceSlice of our driver for NODE (one device), as YAML.
slice() {
  cat <<YAML
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: rbac-test-$1}
spec:
  driver: gcu.enflame.com
  nodeName: $1
  pool: {name: $1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gcu-9, basic: {}}]
YAML
}

# our_devices: devices in the ResourceSlices of our driver on this node.
our_devices() {
  kc get resourceslices -o json | jq -e --arg n "$NODE_NAME" \
    '[.items[] | select(.spec.nodeName == $n and .spec.driver == "gcu.enflame.com") | .spec.devices | length] | add // 0'
}

@test "cluster rbac: the DRA plugin publishes its node's cards with only the shipped RBAC; it holds a token, the labeler and exporter none" {
  local n=0
  for _ in $(seq 60); do
    n=$(our_devices) && [ "$n" = 2 ] && break
    sleep 1
  done
  echo "devices published: $n"
  [ "$n" = 2 ]
  run kc -n "$NS" logs "$(plugin_pod)"
  echo "$output"
  [[ $output != *orbidden* ]]
  # the shipped role, not one this test widened
  run kc get clusterrole enflame-dra-plugin -o json
  [ "$status" -eq 0 ]
  jq -e '[.rules[] | select(.resources == ["resourceclaims"]) | .verbs] == [["get"]]' <<<"$output"
  # a token where the API is called, none where it is not
  local name vols
  for name in enflame-dra-plugin enflame-feature-discovery enflame-gcu-exporter enflame-toolkit-installer; do
    vols=$(kc -n "$NS" get pod -l "app.kubernetes.io/name=$name" -o jsonpath='{.items[0].spec.volumes[*].name}')
    echo "$name: $vols"
    [ -n "$vols" ]
    if [ "$name" = enflame-dra-plugin ]; then
      [[ " $vols" == *" kube-api-access-"* ]]
    else
      [[ " $vols" != *" kube-api-access-"* ]]
    fi
  done
}

@test "cluster rbac: a token bound to the plugin's pod carries its node; another node's ResourceSlice is refused with the policy's message, its own node's is admitted" {
  run as_plugin auth whoami -o json
  echo "$output"
  [ "$status" -eq 0 ]
  jq -e --arg n "$NODE_NAME" '.status.userInfo.extra["authentication.kubernetes.io/node-name"] == [$n]' <<<"$output"
  # create: another node's refused, by the policy and naming both nodes
  slice "$OTHER" > "$RB/other.yaml"
  run as_plugin create -f "$RB/other.yaml"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"ValidatingAdmissionPolicy 'enflame-dra-plugin-own-node-slices'"* ]]
  [[ $output == *"enflame-dra-plugin on node '$NODE_NAME' may not write ResourceSlices of node '$OTHER'"* ]]
  run kc get resourceslice "rbac-test-$OTHER"
  [ "$status" -ne 0 ]
  # its own node's: admitted (server-side dry run: through authorization and admission, not stored)
  slice "$NODE_NAME" > "$RB/own.yaml"
  run as_plugin create --dry-run=server -f "$RB/own.yaml"
  echo "$output"
  [ "$status" -eq 0 ]
  # delete and update of another node's slice (made by the admin): refused the same way
  kc create -f "$RB/other.yaml" > /dev/null
  run as_plugin delete resourceslice "rbac-test-$OTHER"
  echo "$output"
  kc delete resourceslice "rbac-test-$OTHER" --ignore-not-found > /dev/null
  [ "$status" -ne 0 ]
  [[ $output == *"may not write ResourceSlices of node '$OTHER'"* ]]
  # a token without a pod behind it (no node): refused, saying so
  run as_plugin --unbound create --dry-run=server -f "$RB/own.yaml"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"enflame-dra-plugin: no node in the request's credentials"* ]]
}

@test "cluster rbac: the plugin's account may get a ResourceClaim but not list them, and may not patch ResourceSlices" {
  run as_plugin get resourceclaims -A
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *'cannot list resource "resourceclaims"'* ]]
  # get is allowed: an absent claim is NotFound, not Forbidden
  run as_plugin -n default get resourceclaim no-such-claim
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *'"no-such-claim" not found'* ]]
  local own
  own=$(kc get resourceslices -o json | jq -er --arg n "$NODE_NAME" '[.items[] | select(.spec.nodeName == $n)][0].metadata.name')
  run as_plugin patch resourceslice "$own" --type merge -p '{"metadata":{"labels":{"x":"y"}}}'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *'cannot patch resource "resourceslices"'* ]]
}
