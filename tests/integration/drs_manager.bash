# Helpers of the enflame-drs-manager suites (drs_manager.bats, drs_manager_cdi.bats): the fake
# API server (k8s/tests/fake_apiserver.py in $API) with node1 and the shipped layouts, node1's
# labels and the manager's Events on it.

FAKE_API=$TOP/k8s/tests/fake_apiserver.py
STATE=enflame.com/drs.config.state

# api VERB PATH [CONTENT_TYPE BODY]: a call as the administrator.
api() {
  curl -sS --cacert "$API/ca.crt" -H "Authorization: Bearer test-token" -X "$1" \
    -H "Content-Type: ${3:-application/json}" ${4:+--data-binary "$4"} \
    "https://127.0.0.1:$(cat "$API/port")$2"
}
patch_node() { api PATCH /api/v1/nodes/node1 application/merge-patch+json "$1" >/dev/null; }
label() { patch_node "{\"metadata\":{\"labels\":{\"enflame.com/drs.config\":\"$1\"}}}"; }
state() { api GET /api/v1/nodes/node1 | jq -r --arg k "$STATE" '.metadata.labels[$k] // ""'; }
state_is() { [ "$(state)" = "$1" ]; }
# events: the messages of the manager's Events on node1, one a line.
events() {
  api GET /api/v1/namespaces/enflame-system/events |
    jq -r '.items[] | select(.involvedObject.kind == "Node" and .involvedObject.name == "node1") | "\(.type) \(.reason): \(.message)"'
}

# api_up: the fake API server (with $API_ARGS) in $API, $KC its admin kubeconfig, node1 and the
# shipped layouts ConfigMap in it.
api_up() {
  python3 "$FAKE_API" --dir "$API" "${API_ARGS[@]}" >>"$SCRATCH/api.log" 2>&1 3>&- &
  on_teardown "stop_pid $!"
  wait_for test -s "$API/port"
  fake_api_kubeconfig
  api POST /api/v1/nodes application/json '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node1"}}' >/dev/null
  api POST /api/v1/namespaces/enflame-system/configmaps application/json \
    "$(python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$TOP/deployments/drs-manager/layouts.yaml")" >/dev/null
}
