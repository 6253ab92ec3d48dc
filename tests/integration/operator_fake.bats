#!/usr/bin/env bats
# enflame-gpu-operator against k8s/tests/fake_apiserver.py (no Kubernetes binaries): the CRD and
# a GpuResource posted as a user would, then what a user checks: the stack applied with the
# operator's field manager, drift repaired, an idle reconcile that writes nothing, a relist after
# 410, one leader per Lease, and an object of a CRD-served kind turned off once.
# k8s/tests/FAKES.md says what the fake models; tests/integration/operator.bats checks the same
# against real binaries (ENFLAME_KUBE_BIN).

load helpers
load operator_fake
bats_require_minimum_version 1.5.0

setup() { operator_fake_setup; }
teardown() { teardown_scratch; }

# last_reconcile_wrote_nothing: the operator's last reconcile counted no write of its own (a
# delete of what is gone already is one for it, not for the API server).
last_reconcile_wrote_nothing() {
  grep "reconciled GpuResource enflame (active)" "$SCRATCH/op.log" | tail -n 1 | grep -q ": 0 writes,"
}

# an_idle_reconcile: a label on the GpuResource (no spec change) makes the operator reconcile;
# the number of writes after that label (it settled first).
an_idle_reconcile() {
  local n before
  n=$(count "(active): 0 writes" "$SCRATCH/op.log")
  api PATCH /apis/enflame.com/v1/gpuresources/enflame \
    "{\"metadata\":{\"labels\":{\"touched\":\"$RANDOM\"}}}" application/merge-patch+json > /dev/null
  before=$(writes)
  wait_secs 10 more_than "$n" "reconciled GpuResource enflame (active)" "$SCRATCH/op.log"
  sleep 3
  echo $(( $(writes) - before ))
}

@test "reconcile: every object the operator renders for a GpuResource is in the API server, applied by the operator's field manager" {
  CR_EDIT='d["spec"]["draDriver"]["enabled"] = True'
  stack_up
  RENDER_ARGS=()
  mapfile -t paths < <(rendered_paths)
  [ "${#paths[@]}" -ge 5 ]
  printf '%s\n' "${paths[@]}" > "$SCRATCH/paths"
  grep -q "/apps/v1/namespaces/.*/daemonsets/" "$SCRATCH/paths"
  grep -q "/api/v1/namespaces/.*/configmaps/" "$SCRATCH/paths"
  grep -q "/rbac.authorization.k8s.io/v1/clusterrolebindings/" "$SCRATCH/paths"
  grep -q "/resource.k8s.io/v1/deviceclasses/" "$SCRATCH/paths"
  grep -q "/node.k8s.io/v1/runtimeclasses/" "$SCRATCH/paths"
  for p in "${paths[@]}"; do
    run appliers "$p"
    [ "$output" = "$MANAGER" ] || { echo "$p: applied by '$output'"; return 1; }
  done
  # the CR's status went through /status, the finalizer through the object
  run api GET /apis/enflame.com/v1/gpuresources/enflame
  [ "$(jq -r .status.readyResource <<<"$output")" != null ]
  [ "$(jq -r '.metadata.finalizers[0]' <<<"$output")" = enflame.com/gpu-operator ]
}

# config_root NAME KEY: the KEY (driver-root, dev-root) of ConfigMap NAME's config.toml as the
# API server holds it.
config_root() {
  api GET "/api/v1/namespaces/enflame-system/configmaps/$1" |
    jq -r '.data["config.toml"]' | sed -n "s/^$2 = \"\\(.*\\)\"$/\\1/p"
}

@test "hostPaths: a driver root under a folder reaches each daemon as it sees the node: /host<root> where the host is mounted, / for the exporter (through the runtime), both roots as the installer's flags" {
  CR_EDIT='d["spec"]["hostPaths"] = {"driverRoot": "/opt/enflame", "devRoot": "/opt/enflame"}'
  stack_up
  [ "$(config_root enflame-device-plugin driver-root)" = /host/opt/enflame ]
  [ "$(config_root enflame-device-plugin dev-root)" = /host/opt/enflame ]
  [ "$(config_root enflame-feature-discovery driver-root)" = /host/opt/enflame ]
  [ "$(config_root enflame-gcu-exporter driver-root)" = / ]
  [ "$(config_root enflame-gcu-exporter dev-root)" = / ]
  run -0 api GET /apis/apps/v1/namespaces/enflame-system/daemonsets/enflame-toolkit-installer
  jq -e '.spec.template.spec.containers[0].command | index("--driver-root=/opt/enflame")' <<<"$output" > /dev/null
  jq -e '.spec.template.spec.containers[0].command | index("--dev-root=/opt/enflame")' <<<"$output" > /dev/null
}

@test "drift: a DaemonSet deleted and another's image edited through the API server are both restored within seconds" {
  stack_up
  RENDER_ARGS=()
  mapfile -t dss < <(rendered_paths | grep /daemonsets/)
  [ "${#dss[@]}" -ge 2 ]
  gone=${dss[0]} edited=${dss[1]}
  image=$(image_of "$edited")
  api DELETE "$gone" > /dev/null
  run api PATCH "$edited" '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"example.com/drift:1"}]' \
    application/json-patch+json
  [ "$(jq -r '.spec.template.spec.containers[0].image' <<<"$output")" = example.com/drift:1 ]
  wait_secs 5 exists "$gone"
  wait_secs 5 image_is "$edited" "$image"
  grep -q "applied DaemonSet/.* (it had drifted)" "$SCRATCH/op.log"
  [ "$(appliers "$gone")" = "$MANAGER" ]
}

@test "idle: a reconcile with nothing to change writes nothing to the API server" {
  stack_up
  run an_idle_reconcile
  [ "$status" -eq 0 ]
  [ "$output" -eq 0 ]
  last_reconcile_wrote_nothing
}

@test "410: watches answered 410 Expired and cut: the operator lists again and still repairs drift" {
  stack_up
  RENDER_ARGS=()
  echo '{"watch_gone": 20, "drop_watch": 20}' > "$API/control.json"
  wait_secs 20 faults_used
  grep -q "relisting: the watch from resourceVersion [0-9]* answered 410 Gone" "$SCRATCH/op.log"
  wait_secs 10 settled
  ds=$(rendered_paths | grep /daemonsets/ | head -n 1)
  api DELETE "$ds" > /dev/null
  wait_secs 5 exists "$ds"
}

@test "Lease: with --leader-elect one operator holds the Lease and reconciles; killed, the other takes over after the lease duration" {
  lease=/apis/coordination.k8s.io/v1/namespaces/enflame-system/leases/enflame-gpu-operator
  stack_up --leader-elect --namespace enflame-system --identity first
  first=$OP_PID
  # the holder is the identity the first one says it waits as
  [ "$(api GET $lease | jq -r .spec.holderIdentity)" = "$(grep -o 'as first_[0-9a-f]*' "$SCRATCH/op.log" | cut -d' ' -f2)" ]
  "$OP" --manifests "$TOP/deployments" --kubeconfig "$KC" --leader-elect --namespace enflame-system \
    --identity second >"$SCRATCH/second.log" 2>&1 3>&- &
  second=$!
  on_teardown "stop_pid $second"
  wait_secs 5 grep -q "waiting for lease enflame-system/enflame-gpu-operator as second_" "$SCRATCH/second.log"
  # the second one does not reconcile, even when there is drift to repair
  sleep 3
  run ! grep -q "reconciled\|applied" "$SCRATCH/second.log"
  kill -KILL "$first"
  killed=$SECONDS
  wait_secs 40 grep -q "acquired by second_" "$SCRATCH/second.log"
  took=$(( SECONDS - killed ))
  [ "$took" -ge 10 ] || { echo "took over after $took s, before the 15 s lease ran out"; return 1; }
  [[ "$(api GET $lease | jq -r .spec.holderIdentity)" == second_* ]]
  wait_secs 10 grep -q "reconciled GpuResource enflame" "$SCRATCH/second.log"
}

@test "CRD-served kind: a ServiceMonitor turned off in the GpuResource is deleted once, then an idle reconcile writes nothing" {
  start_api
  api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"servicemonitors.monitoring.coreos.com"},"spec":{"group":"monitoring.coreos.com","scope":"Namespaced","names":{"plural":"servicemonitors","singular":"servicemonitor","kind":"ServiceMonitor","listKind":"ServiceMonitorList"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}' > /dev/null
  API_STARTED=1
  CR_EDIT='d["spec"]["exporter"]["serviceMonitor"] = {"enabled": True}'
  stack_up
  RENDER_ARGS=(--prometheus-operator)
  sm=$(rendered_paths | grep /servicemonitors/)
  [ -n "$sm" ]
  exists "$sm"
  [ "$(appliers "$sm")" = "$MANAGER" ]
  # its watch lags (as under load): the reconcile after the delete runs before the DELETED event
  echo '{"watch_delay_ms": {"servicemonitors": 1500}}' > "$API/control.json"
  api PATCH /apis/enflame.com/v1/gpuresources/enflame '{"spec":{"exporter":{"serviceMonitor":{"enabled":false}}}}' \
    application/merge-patch+json > /dev/null
  wait_secs 5 missing "$sm"
  wait_secs 10 settled
  [ "$(count "removed ServiceMonitor/" "$SCRATCH/op.log")" -eq 1 ] || { grep -E "ServiceMonitor|reconciled" "$SCRATCH/op.log"; return 1; }
  run an_idle_reconcile
  [ "$status" -eq 0 ]
  [ "$output" -eq 0 ]
  last_reconcile_wrote_nothing
  [ "$(count "removed ServiceMonitor/" "$SCRATCH/op.log")" -eq 1 ]
}

@test "fake API server: server-side apply keeps each manager's fields, drops what a manager alone no longer applies; 409 without force; /status apart from the object" {
  start_api
  cm=/api/v1/namespaces/ns/configmaps/c
  ssa=application/apply-patch+yaml
  run api PATCH "$cm" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}' $ssa
  [ "$(jq -r .code <<<"$output")" = 400 ]
  api PATCH "$cm?fieldManager=one" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","b":"1"}}' $ssa > /dev/null
  api PATCH "$cm?fieldManager=two" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"b":"1","c":"2"}}' $ssa > /dev/null
  run api PATCH "$cm?fieldManager=two" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"2"}}' $ssa
  [ "$(jq -r .code <<<"$output")" = 409 ]
  [[ "$(jq -r .message <<<"$output")" == *'conflict with "one": .data.a'* ]]
  # one no longer applies a (it alone owned it: gone) nor b (two owns it too: kept)
  run api PATCH "$cm?fieldManager=one&force=true" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"d":"4"}}' $ssa
  [ "$(jq -c .data <<<"$output")" = '{"b":"1","c":"2","d":"4"}' ]
  [ "$(jq -c '[.metadata.managedFields[] | .manager] | sort' <<<"$output")" = '["one","two"]' ]
  rv=$(jq -r .metadata.resourceVersion <<<"$output")
  run api PUT "$cm" '{"metadata":{"name":"c","resourceVersion":"1"},"data":{}}'
  [ "$(jq -r .code <<<"$output")" = 409 ]
  [ "$(api GET "$cm" | jq -r .metadata.resourceVersion)" = "$rv" ]
  # a Deployment's status only through /status, its spec never through /status
  dep=/apis/apps/v1/namespaces/ns/deployments/d
  api POST /apis/apps/v1/namespaces/ns/deployments '{"metadata":{"name":"d"},"spec":{"replicas":1},"status":{"readyReplicas":9}}' > /dev/null
  [ "$(api GET $dep | jq -c '[.status, .metadata.generation]')" = '[null,1]' ]
  api PATCH $dep/status '{"spec":{"replicas":5},"status":{"readyReplicas":1}}' application/merge-patch+json > /dev/null
  api PATCH $dep '{"spec":{"replicas":2},"status":{"readyReplicas":7}}' application/merge-patch+json > /dev/null
  [ "$(api GET $dep | jq -c '[.spec.replicas, .status.readyReplicas, .metadata.generation]')" = '[2,1,2]' ]
}

@test "fake API server: a CRD serves its kind (discovery too); deleted, its objects go with DELETED events; a watch from before the kept events gets 410 Expired" {
  python3 "$FAKE_API" --dir "$API" --event-window 3 >>"$SCRATCH/api.log" 2>&1 3>&- &
  on_teardown "stop_pid $!"
  wait_for test -s "$API/port"
  run api GET /apis/example.com/v1
  [ "$(jq -r .code <<<"$output")" = 404 ]
  api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions '{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true}]}}' > /dev/null
  [ "$(api GET /apis | jq -r '[.groups[].name] | index("example.com") != null')" = true ]
  [ "$(api GET /apis/example.com/v1 | jq -r '.resources[0].name')" = widgets ]
  [ "$(api GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com | jq -r '.status.conditions[] | select(.type == "Established") | .status')" = True ]
  api POST /apis/example.com/v1/namespaces/ns/widgets '{"metadata":{"name":"w"},"spec":{}}' > /dev/null
  from=$(api GET /apis/example.com/v1/widgets | jq -r .metadata.resourceVersion)
  curl -sSN --cacert "$API/ca.crt" -H "Authorization: Bearer test-token" --max-time 5 \
    "https://127.0.0.1:$(cat "$API/port")/apis/example.com/v1/widgets?watch=1&resourceVersion=$from&timeoutSeconds=2" > "$SCRATCH/watch" 3>&- &
  watcher=$!
  on_teardown "stop_pid $watcher"
  sleep 0.5
  api DELETE /apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com > /dev/null
  wait "$watcher"
  [ "$(jq -r '.type + " " + .object.metadata.name' "$SCRATCH/watch")" = "DELETED w" ]
  run api GET /apis/example.com/v1/namespaces/ns/widgets/w
  [ "$(jq -r .code <<<"$output")" = 404 ]
  # three more events: the one after $from is no longer kept
  for n in a b c; do api POST /api/v1/namespaces/ns/configmaps "{\"metadata\":{\"name\":\"$n\"}}" > /dev/null; done
  run api GET "/api/v1/configmaps?watch=1&resourceVersion=$from&timeoutSeconds=1"
  [ "$(jq -r '.type + " " + (.object.code | tostring) + " " + .object.reason' <<<"$output")" = "ERROR 410 Expired" ]
}

@test "drsManager: status.drs counts the nodes' layout states and the component lists each node's layout, following the manager's state label" {
  CR_EDIT='d["spec"]["drsManager"] = {"enabled": True, "defaultLayout": "all-full"}'
  stack_up
  run -0 api GET /apis/apps/v1/namespaces/enflame-system/daemonsets/enflame-drs-manager
  [ "$(jq -r '.spec.template.spec.containers[0].env[] | select(.name == "DEFAULT_LAYOUT") | .value' <<<"$output")" = all-full ]
  api POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"gcu-1","labels":{"enflame.com/drs.config":"all-1g.11gb","enflame.com/drs.config.state":"success"}}}' > /dev/null
  api POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"gcu-2","labels":{"enflame.com/drs.config":"all-full","enflame.com/drs.config.state":"pending"}}}' > /dev/null
  drs_is() { [ "$(api GET /apis/enflame.com/v1/gpuresources/enflame | jq -r .status.drs)" = "$1" ]; }
  wait_secs 10 drs_is "1 pending, 1 success"
  run -0 api GET /apis/enflame.com/v1/gpuresources/enflame
  [ "$(jq -c '.status.components[] | select(.name == "drsManager") | .nodes' <<<"$output")" = '{"gcu-1":"all-1g.11gb: success","gcu-2":"all-full: pending"}' ]
  api PATCH /api/v1/nodes/gcu-2 '{"metadata":{"labels":{"enflame.com/drs.config.state":"success"}}}' application/merge-patch+json > /dev/null
  wait_secs 10 drs_is "2 success"
}
