#!/usr/bin/env bats
# enflame-epp in a real one-node Kubernetes (tests/cluster/cluster.sh, kube-apiserver with RBAC):
# deployments/inference applied as shipped, in namespace default, with the harness's API route
# only (tests/cluster/overlay.sh's api_route: no kube-proxy on the test node). The API server
# enforces the CRD's CEL rules; the EPP's Deployment, with nothing but the shipped Roles, gets
# ready once the pool has a Ready pod and logs each change of its pods within a second (the
# pods are bound to nodes that do not exist, so no kubelet rewrites the status this test
# writes). epp_pool.bats does the same on the fake API server. One cluster for the file; run
# it under the machine-wide lock:
#   ENFLAME_KUBE_BIN=... BUILD_DIR=$PWD/build/dev bats tests/integration/epp_pool_cluster.bats

load helpers
load one_node_cluster
bats_require_minimum_version 1.5.0

NS=default
POOL=enflame-llm

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  export EC; EC=$(cluster_dir epp 1)
  cluster_up "$EC" images "$TOP/build/images/enflame-toolkit.oci.tar"
  "$TOP/tests/cluster/cluster.sh" namespace "$EC/cluster" enflame-system > /dev/null
  cp -r "$TOP/deployments/inference" "$EC/inference"
  mkdir -p "$EC/epp"
  # shellcheck source=tests/cluster/overlay.sh
  . "$TOP/tests/cluster/overlay.sh"
  {
    printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n'
    printf 'resources: [../inference]\npatches:\n'
    api_route Deployment enflame-epp "$APISERVER_PORT"
  } > "$EC/epp/kustomization.yaml"
  "$KUBECTL" apply -k "$EC/epp" > "$EC/apply.log" 2>&1 || { cat "$EC/apply.log" >&2; return 1; }
  "$KUBECTL" wait --for condition=Established --timeout 30s \
    crd/inferencepools.inference.networking.k8s.io > /dev/null
}

teardown_file() {
  cluster_down "${EC:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$EC/cluster/env" ] || skip "the cluster is not up"
}

kc() { "$KUBECTL" "$@"; }

# pool_with PYTHON: the example pool with PYTHON applied to `p`, as JSON on stdout.
pool_with() {
  python3 -c 'import json, sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
exec(sys.argv[2])
print(json.dumps(p))' "$TOP/deployments/inference/examples/inferencepool.yaml" "$1"
}

# fake_pod NAME IP READY: a pod of the pool bound to node-NAME (no such node: no kubelet runs
# it), then its status written as a kubelet would: podIP, Ready.
fake_pod() {
  kc -n "$NS" apply -f - > /dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app: enflame-llm}}
spec:
  nodeName: node-$1
  containers: [{name: c, image: not-pulled}]
YAML
  pod_ready "$1" "$2" "$3"
}

pod_ready() {
  kc -n "$NS" patch pod "$1" --subresource status --type merge \
    -p "{\"status\":{\"podIP\":\"$2\",\"podIPs\":[{\"ip\":\"$2\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"$3\"}]}}" > /dev/null
}

# logged_within_1s T0 TEXT: the EPP logs TEXT, at most 1000 ms after T0 (date +%s%3N) by its
# own timestamp (UTC, as this host's).
logged_within_1s() {
  local line t ms
  for _ in $(seq 50); do
    line=$(kc -n "$NS" logs deploy/enflame-epp | grep -F -- "$2" | tail -n 1) && [ -n "$line" ] && break
    sleep 0.1
  done
  [ -n "$line" ] || { echo "not logged: $2" >&2; return 1; }
  t=$(date -u -d "${line%% *}" +%s%3N)
  ms=$(( t - $1 ))
  echo "# $ms ms: $2" >&3
  [ "$ms" -le 1000 ]
}

@test "epp cluster: the API server holds pools to the CRD's rules (CEL included)" {
  run kc create --dry-run=server -f - <<<"$(pool_with 'pass')"
  echo "$output"
  [ "$status" -eq 0 ]
  run kc create --dry-run=server -f - <<<"$(pool_with 'p["spec"]["targetPorts"] = [{"number": 8000}, {"number": 8000}]')"
  [ "$status" -ne 0 ]
  [[ $output == *"port numbers must be unique"* ]]
  run kc create --dry-run=server -f - <<<"$(pool_with 'del p["spec"]["endpointPickerRef"]["port"]')"
  [ "$status" -ne 0 ]
  [[ $output == *"port is required when kind is Service"* ]]
  run kc create --dry-run=server -f - <<<"$(pool_with 'p["spec"]["targetPorts"] = [{"number": 8000 + i} for i in range(9)]')"
  [ "$status" -ne 0 ]
  [[ $output == *"Too many"* ]]
}

@test "epp cluster: the shipped Deployment follows the pool's pods within a second with only its Roles, which grant no more" {
  kc create -f - <<<"$(pool_with 'pass')" > /dev/null
  fake_pod a 10.244.7.1 True
  kc -n "$NS" rollout status deploy/enflame-epp --timeout 120s
  kc -n "$NS" logs deploy/enflame-epp | grep -F "InferencePool $NS/$POOL: 1 endpoint: 10.244.7.1:8000"
  local t0
  t0=$(date -u +%s%3N)
  fake_pod b 10.244.7.2 True
  logged_within_1s "$t0" "2 endpoints: 10.244.7.1:8000 ($NS/a, no gcu exporter), 10.244.7.2:8000"
  t0=$(date -u +%s%3N)
  pod_ready a 10.244.7.1 False
  logged_within_1s "$t0" "InferencePool $NS/$POOL: 1 endpoint: 10.244.7.2:8000"
  t0=$(date -u +%s%3N)
  kc -n "$NS" delete pod b --wait=false > /dev/null
  logged_within_1s "$t0" "InferencePool $NS/$POOL: 0 endpoints"
  run kc -n "$NS" logs deploy/enflame-epp
  [[ $output != *orbidden* ]]
  # what its account may do, as the API server's authorizer says
  local sa=system:serviceaccount:$NS:enflame-epp
  [ "$(kc auth can-i --as "$sa" -n "$NS" watch inferencepools.inference.networking.k8s.io)" = yes ]
  [ "$(kc auth can-i --as "$sa" -n enflame-system list pods)" = yes ]
  run kc auth can-i --as "$sa" -n "$NS" get pods
  [ "$output" = no ]
  run kc auth can-i --as "$sa" -n kube-system list pods
  [ "$output" = no ]
  run kc auth can-i --as "$sa" -n "$NS" patch inferencepools.inference.networking.k8s.io
  [ "$output" = no ]
  run kc auth can-i --as "$sa" -n "$NS" list secrets
  [ "$output" = no ]
  kc delete -n "$NS" inferencepool "$POOL" > /dev/null
  kc delete -n "$NS" pod a --wait=false > /dev/null
}
