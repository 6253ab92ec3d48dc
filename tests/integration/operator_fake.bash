# Helpers of the suites that run enflame-gpu-operator against k8s/tests/fake_apiserver.py
# (operator_fake.bats, operator_rbac_fake.bats): the API server, a user's calls, the operator,
# the stack brought up and the paths of what the operator renders.

OP=$BUILD_DIR/k8s/operator/enflame-gpu-operator
FAKE_API=$TOP/k8s/tests/fake_apiserver.py
MANAGER=enflame-gpu-operator

# operator_fake_setup: each test's setup (a scratch folder, $API for the fake's state, $CR).
operator_fake_setup() {
  setup_scratch
  requires python3 openssl curl jq
  [ -x "$OP" ] || skip_or_fail "no $OP: build the enflame-gpu-operator target"
  API=$SCRATCH/api
  mkdir -p "$API"
  CR=$TOP/deployments/operator/examples/gpuresource.yaml
}

# start_api: the fake API server (with $API_ARGS) and a kubeconfig for it ($KC).
start_api() {
  python3 "$FAKE_API" --dir "$API" "${API_ARGS[@]}" >>"$SCRATCH/api.log" 2>&1 3>&- &
  on_teardown "stop_pid $!"
  wait_for test -s "$API/port"
  fake_api_kubeconfig
}

# api VERB PATH [BODY [CONTENT-TYPE]]: one call as a user's client makes it.
api() {
  curl -sS --cacert "$API/ca.crt" -H "Authorization: Bearer test-token" -X "$1" \
    -H "Content-Type: ${4:-application/json}" ${3:+--data-binary "$3"} \
    "https://127.0.0.1:$(cat "$API/port")$2"
}

# as_json FILE: the first YAML document of FILE as JSON.
as_json() { python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$1"; }

# start_operator NAME [ARGS]: an operator logging to $SCRATCH/NAME.log, its PID in $OP_PID; it
# signs in with $OP_KC if set, else as the admin ($KC).
start_operator() {
  local name=$1
  shift
  "$OP" --manifests "$TOP/deployments" --kubeconfig "${OP_KC:-$KC}" "$@" >"$SCRATCH/$name.log" 2>&1 3>&- &
  OP_PID=$!
  on_teardown "stop_pid $OP_PID"
}

# wait_secs N CMD...: poll CMD every 0.2 s until it succeeds; fail after N seconds.
wait_secs() {
  local n=$(( $1 * 5 ))
  shift
  for (( ; n > 0; n-- )); do
    if "$@"; then return 0; fi
    sleep 0.2
  done
  echo "timed out waiting for: $*" >&2
  return 1
}

# writes: how many writes reached the API server, but a Lease's renewals.
writes() { grep -vc '/leases/' "$API/writes.jsonl" || true; }

# settled: the write log did not grow for 2 s.
settled() {
  local before
  before=$(writes)
  sleep 2
  [ "$(writes)" -eq "$before" ]
}

# stack_up [OPERATOR ARGS]: the API server, the CRD, the operator, the example GpuResource
# (its spec edited by $CR_EDIT, python on `d`), everything applied and quiet. The API server
# is started unless $API_STARTED says it is.
stack_up() {
  [ -n "${API_STARTED:-}" ] || start_api
  api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions \
    "$(as_json "$TOP/deployments/operator/crd.yaml")" > /dev/null
  start_operator op "$@"
  python3 -c 'import json, sys, yaml; d = yaml.safe_load(open(sys.argv[1])); exec(sys.argv[2]); print(json.dumps(d))' \
    "$CR" "${CR_EDIT:-pass}" > "$SCRATCH/cr.json"
  api POST /apis/enflame.com/v1/gpuresources "$(cat "$SCRATCH/cr.json")" > /dev/null
  wait_secs 20 grep -q "reconciled GpuResource enflame (active): [1-9]" "$SCRATCH/op.log"
  wait_secs 20 settled
}

# rendered_paths: the API path of each object the operator renders for the posted CR, the
# plural and scope from the server's discovery.
rendered_paths() {
  python3 -c 'import json, sys; print(json.dumps({"spec": json.load(open(sys.argv[1]))["spec"]}))' \
    "$SCRATCH/cr.json" > "$SCRATCH/cr-spec.json"
  "$OP" --manifests "$TOP/deployments" --render "$SCRATCH/cr-spec.json" "${RENDER_ARGS[@]}" |
    python3 -c '
import json, ssl, sys, urllib.request
api = sys.argv[1]
port = open(api + "/port").read().strip()
ctx = ssl.create_default_context(cafile=api + "/ca.crt")
def get(path):
    req = urllib.request.Request("https://127.0.0.1:%s%s" % (port, path),
                                 headers={"Authorization": "Bearer test-token"})
    return json.load(urllib.request.urlopen(req, context=ctx))
for line in sys.stdin:
    o = json.loads(line)
    base = ("/apis/" if "/" in o["apiVersion"] else "/api/") + o["apiVersion"]
    r = next(r for r in get(base)["resources"] if r["kind"] == o["kind"] and "/" not in r["name"])
    ns = "/namespaces/" + o["metadata"]["namespace"] if r["namespaced"] else ""
    print(base + ns + "/" + r["name"] + "/" + o["metadata"]["name"])
' "$API"
}

# appliers PATH: the managers that applied the object at PATH, comma-separated.
appliers() {
  api GET "$1" | jq -r '[.metadata.managedFields[]? | select(.operation == "Apply") | .manager] | join(",")'
}

image_of() { api GET "$1" | jq -r '.spec.template.spec.containers[0].image'; }
image_is() { [ "$(image_of "$1")" = "$2" ]; }
exists() { [ "$(api GET "$1" | jq -r .kind)" != Status ]; }
missing() { [ "$(api GET "$1" | jq -r .code)" = 404 ]; }
count() { grep -c -- "$1" "$2" || true; }
# more_than N PATTERN FILE: more than N lines of FILE match PATTERN.
more_than() { [ "$(count "$2" "$3")" -gt "$1" ]; }
faults_used() { [ "$(jq '.watch_gone + .drop_watch' "$API/control.json")" -eq 0 ]; }
