#!/usr/bin/env bats
# The operator's least privilege, on k8s/tests/fake_apiserver.py's RBAC authorizer (fake_rbac.py:
# rules, bindings, escalation prevention, as kube-apiserver): what `kubectl create -k
# deployments/operator` makes is all the operator has, and with it the operator brings up and
# takes down the whole stack without one 403, while its account cannot write a role, bind one it
# was not given, reach a namespace outside the stack's, or read a Secret. operator.bats checks
# the same on real binaries (ENFLAME_KUBE_BIN).

load helpers
load operator_fake
bats_require_minimum_version 1.5.0

OP_USER=system:serviceaccount:enflame-operator:enflame-gpu-operator

setup() {
  operator_fake_setup
  trixie_kubectl
  API_ARGS=(--rbac-user "op-token=$OP_USER")
  start_api
  fake_api_kubeconfig op-token "$SCRATCH/op.kubeconfig"
  OP_KC=$KC
  fake_api_kubeconfig
  # deployments/operator as an administrator creates it; its Deployment aside (the operator
  # runs here, with the Deployment's account's token)
  "$KUBECTL" kustomize "$TOP/deployments/operator" |
    python3 -c 'import sys, yaml; yaml.safe_dump_all([d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] != "Deployment"], sys.stdout)' \
    > "$SCRATCH/operator.yaml"
  "$KUBECTL" --kubeconfig "$KC" create --validate=false -f "$SCRATCH/operator.yaml" > "$SCRATCH/create.log"
  for kind in ServiceMonitor PodMonitor PrometheusRule; do
    api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$(monitoring_crd "$kind")" > /dev/null
  done
  API_STARTED=1
}

teardown() { teardown_scratch; }

# monitoring_crd KIND: prometheus-operator's CRD of KIND, its schema open.
monitoring_crd() {
  local plural
  plural=$(tr '[:upper:]' '[:lower:]' <<<"$1")s
  printf '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"%s.monitoring.coreos.com"},"spec":{"group":"monitoring.coreos.com","scope":"Namespaced","names":{"plural":"%s","kind":"%s"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}' \
    "$plural" "$plural" "$1"
}

# as_operator VERB PATH [BODY [CONTENT-TYPE]]: the HTTP status of one call with the operator's token.
as_operator() {
  curl -sS -o "$SCRATCH/answer.json" -w '%{http_code}' --cacert "$API/ca.crt" \
    -H "Authorization: Bearer op-token" -X "$1" -H "Content-Type: ${4:-application/json}" \
    ${3:+--data-binary "$3"} "https://127.0.0.1:$(cat "$API/port")$2"
}

nothing_forbidden() {
  [ ! -s "$API/forbidden.log" ] || { cat "$API/forbidden.log"; return 1; }
}

cr_gone() { missing /apis/enflame.com/v1/gpuresources/enflame; }

@test "least privilege: with only what deployments/operator grants it, the operator applies every component and monitoring object (the DRS manager with its evict policy's binding), turns them off and removes the stack, without one 403" {
  CR_EDIT='
for c in ("toolkit", "featureDiscovery", "nfd", "devicePlugin", "draDriver", "exporter", "npd", "nodeExporter", "drsManager"):
    d["spec"].setdefault(c, {})["enabled"] = True
d["spec"]["exporter"]["serviceMonitor"] = {"enabled": True}
d["spec"]["exporter"]["prometheusRule"] = {"enabled": True}
d["spec"]["nodeExporter"]["serviceMonitor"] = {"enabled": True}
d["spec"]["npd"]["podMonitor"] = {"enabled": True}
d["spec"]["drsManager"]["evictionPolicy"] = "Evict"'
  stack_up
  nothing_forbidden
  RENDER_ARGS=(--prometheus-operator)
  mapfile -t paths < <(rendered_paths)
  printf '%s\n' "${paths[@]}" > "$SCRATCH/paths"
  # the stack's namespace, kube-system and cluster-scoped kinds, each applied by the operator
  grep -q "/namespaces/enflame-system/daemonsets/enflame-nfd-worker" "$SCRATCH/paths"
  grep -q "/namespaces/kube-system/prometheusrules/" "$SCRATCH/paths"
  grep -q "/namespaces/enflame-system/rolebindings/enflame-nfd-worker" "$SCRATCH/paths"
  grep -q "/clusterrolebindings/enflame-npd" "$SCRATCH/paths"
  grep -q "/namespaces/enflame-system/rolebindings/enflame-drs-manager" "$SCRATCH/paths"
  grep -q "/clusterrolebindings/enflame-drs-manager" "$SCRATCH/paths"
  grep -q "/clusterrolebindings/enflame-drs-manager-eviction" "$SCRATCH/paths"
  grep -q "/validatingadmissionpolicies/" "$SCRATCH/paths"
  run ! grep -E "/(clusterroles|roles|namespaces)/[^/]*$" "$SCRATCH/paths"
  for p in "${paths[@]}"; do
    run appliers "$p"
    [ "$output" = "$MANAGER" ] || { echo "$p: applied by '$output'"; return 1; }
  done
  # monitoring off, then the GpuResource deleted: its deletes are allowed as well
  api PATCH /apis/enflame.com/v1/gpuresources/enflame \
    '{"spec":{"npd":{"podMonitor":{"enabled":false}},"exporter":{"prometheusRule":{"enabled":false}}}}' \
    application/merge-patch+json > /dev/null
  wait_secs 10 grep -q "removed PodMonitor/kube-system/enflame-npd" "$SCRATCH/op.log"
  api DELETE /apis/enflame.com/v1/gpuresources/enflame > /dev/null
  wait_secs 30 cr_gone
  grep -q "removing DaemonSet/enflame-system/enflame-device-plugin" "$SCRATCH/op.log"
  grep -q "removing DaemonSet/enflame-system/enflame-toolkit-installer" "$SCRATCH/op.log"
  nothing_forbidden
}

@test "least privilege: the operator's account cannot write a role, bind cluster-admin, write outside the stack's namespaces, list them all, delete a namespace or read a Secret" {
  # each refused with the API server's 403 and its reason
  run -0 as_operator POST /apis/rbac.authorization.k8s.io/v1/clusterroles \
    '{"metadata":{"name":"mine"},"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}'
  [ "$output" = 403 ]
  run -0 as_operator PATCH /apis/rbac.authorization.k8s.io/v1/clusterroles/enflame-dra-plugin \
    '{"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}' application/merge-patch+json
  [ "$output" = 403 ]
  run -0 as_operator POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
    "{\"metadata\":{\"name\":\"mine\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"cluster-admin\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"enflame-gpu-operator\",\"namespace\":\"enflame-operator\"}]}"
  [ "$output" = 403 ]
  grep -q "attempting to grant RBAC permissions not currently held" "$SCRATCH/answer.json"
  run -0 as_operator POST /apis/apps/v1/namespaces/default/daemonsets \
    '{"metadata":{"name":"mine"},"spec":{}}'
  [ "$output" = 403 ]
  run -0 as_operator POST /apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings \
    '{"metadata":{"name":"mine"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"enflame-nfd-worker"},"subjects":[{"kind":"User","name":"me"}]}'
  [ "$output" = 403 ]
  run -0 as_operator GET /apis/apps/v1/daemonsets
  [ "$output" = 403 ]
  run -0 as_operator DELETE /api/v1/namespaces/enflame-system
  [ "$output" = 403 ]
  run -0 as_operator GET /api/v1/namespaces/enflame-system/secrets
  [ "$output" = 403 ]
  grep -c . "$API/forbidden.log" > "$SCRATCH/refused"
  [ "$(cat "$SCRATCH/refused")" -eq 8 ]
  # what it is given: binding a role the stack uses, by name
  run -0 as_operator POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
    '{"metadata":{"name":"enflame-dra-plugin"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"enflame-dra-plugin"},"subjects":[{"kind":"ServiceAccount","name":"enflame-dra-plugin","namespace":"enflame-system"}]}'
  [ "$output" = 201 ]
}
