#!/usr/bin/env bats
# enflame-epp in Kubernetes mode (--pool-name) against k8s/tests/fake_apiserver.py, signed in
# with a token that holds only what deployments/inference grants its account (the fake's RBAC
# authorizer, as kube-apiserver's). The pool's pods are real model servers: Debian sid's
# llama-server (llama.bash) on loopback addresses of their own (127.0.0.2, 127.0.0.3) and the
# pool's one target port, so the pods' IPs are where the gateway's requests land. Pods come,
# turn Ready or not and go; the EPP logs its endpoint set within a second and the requests
# epp-gateway sends through it reach only Ready pods. Each rule of the EPP's RBAC is seen
# needed.

load helpers
load epp
load llama
load operator_fake
bats_require_minimum_version 1.5.0

NS=serving
POOL=enflame-llm
EPP_USER=system:serviceaccount:$NS:enflame-epp

setup() {
  requires python3 openssl curl jq
  setup_scratch
  epp_binaries
  trixie_kubectl
  API=$SCRATCH/api
  mkdir -p "$API"
  # shellcheck disable=SC2034  # start_api's
  API_ARGS=(--rbac-user "epp-token=$EPP_USER")
  start_api
  fake_api_kubeconfig epp-token "$SCRATCH/epp.kubeconfig"
  EPP_KC=$KC
  fake_api_kubeconfig
  # deployments/inference for namespace $NS, as a user renders it (one kustomization line)
  cp -r "$TOP/deployments/inference" "$SCRATCH/inference"
  sed -i "s/^      namespace: default$/      namespace: $NS/" "$SCRATCH/inference/kustomization.yaml"
  "$KUBECTL" kustomize "$SCRATCH/inference" > "$SCRATCH/inference.yaml"
  # the scheduler's config as the Deployment mounts it
  python3 -c 'import sys, yaml
cm = next(o for o in yaml.safe_load_all(open(sys.argv[1])) if o and o["kind"] == "ConfigMap")
sys.stdout.write(cm["data"]["epp-config.yaml"])' "$SCRATCH/inference.yaml" > "$SCRATCH/epp-config.yaml"
  TARGET_PORT=$(free_port)
}

teardown() { teardown_scratch; }

# install [PYTHON]: namespaces $NS and enflame-system, then deployments/inference (its
# Deployment aside: the EPP runs here) as an administrator creates it, with PYTHON applied to
# `rbac`, the list of its Roles' rules (name -> rules) first.
install() {
  local ns
  for ns in "$NS" enflame-system; do
    api POST /api/v1/namespaces "{\"metadata\":{\"name\":\"$ns\"}}" > /dev/null
  done
  python3 - "$SCRATCH/inference.yaml" "$SCRATCH/install.yaml" "${1:-pass}" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o and o["kind"] != "Deployment"]
rbac = {o["metadata"]["name"]: o["rules"] for o in objs if o["kind"] == "Role"}
exec(sys.argv[3])
yaml.safe_dump_all(objs, open(sys.argv[2], "w"))
PY
  "$KUBECTL" --kubeconfig "$KC" create --validate=false -f "$SCRATCH/install.yaml" > "$SCRATCH/create.log"
}

# pool: the example InferencePool, its model servers on $TARGET_PORT.
pool() {
  python3 -c 'import json, sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
p["spec"]["targetPorts"] = [{"number": int(sys.argv[2])}]
print(json.dumps(p))' "$TOP/deployments/inference/examples/inferencepool.yaml" "$TARGET_PORT" |
    api POST "/apis/inference.networking.k8s.io/v1/namespaces/$NS/inferencepools" "$(cat)" > /dev/null
}

# pod NAME IP NODE READY [NS [LABELS]]: a pod as the scheduler and kubelet leave it: created on
# NODE (labelled as the pool selects, unless LABELS), then its status written: podIP, Ready.
pod() {
  local ns=${5:-$NS} labels=${6:-'{"app":"enflame-llm"}'}
  api POST "/api/v1/namespaces/$ns/pods" \
    "{\"metadata\":{\"name\":\"$1\",\"labels\":$labels},\"spec\":{\"nodeName\":\"$3\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}" > /dev/null
  ready "$1" "$2" "$4" "$ns"
}

# ready NAME IP True|False [NS]: kubelet's status write of pod NAME.
ready() {
  api PATCH "/api/v1/namespaces/${4:-$NS}/pods/$1/status" \
    "{\"status\":{\"podIP\":\"$2\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"$3\"}]}}" \
    application/merge-patch+json > /dev/null
}

# pod_server NAME IP: a llama-server answering as model NAME on IP:$TARGET_PORT (a pod's
# address), as llama.bash's llama_start runs one; up once /health answers.
pod_server() {
  "$TOP/scripts/llama-server.sh" -m "$TINY_GGUF" --alias "$1" --host "$2" --port "$TARGET_PORT" \
    -np 2 -c 4096 -t 1 --metrics --slots --no-webui > "$SCRATCH/llama-$1.log" 2>&1 3>&- &
  on_teardown "stop_pid $!"
  wait_for curl -sf -o /dev/null "http://$2:$TARGET_PORT/health"
}

# epp_in_pool [ARGS...]: enflame-epp following $NS/$POOL with the EPP account's token and the
# shipped config, plaintext on free loopback ports (epp_start's variables); up once it has said
# which pods it watches (or that it cannot list the pool).
epp_in_pool() {
  local grpc health metrics
  grpc=$(free_port)
  health=$(free_port)
  metrics=$(free_port)
  EPP_LOG=$SCRATCH/epp.log
  "$EPP" --pool-name "$POOL" --pool-namespace "$NS" --kubeconfig "$EPP_KC" \
    --config-file "$SCRATCH/epp-config.yaml" --secure-serving=false --grpc-port "$grpc" \
    --grpc-health-port "$health" --metrics-port "$metrics" "$@" > "$EPP_LOG" 2>&1 3>&- &
  EPP_PID=$!
  on_teardown "stop_pid $EPP_PID"
  # shellcheck disable=SC2034  # gateway_start's and epp_health's
  EPP_GRPC=127.0.0.1:$grpc EPP_HEALTH=127.0.0.1:$health EPP_METRICS=127.0.0.1:$metrics
  wait_for epp_health liveness > /dev/null
}

# mark: what the EPP has logged so far, and now; `followed` looks only after it.
mark() {
  MARK_LINES=$(wc -l < "$EPP_LOG")
  MARK_NS=$(date +%s%N)
}

# followed SET: the EPP logs its endpoints as SET (": N endpoints: ...", " not found: ...") within
# a second of the last mark; the time it took goes to $SCRATCH/follow-ms.
followed() {
  local want="InferencePool $NS/$POOL$1" ms
  while :; do
    ms=$(( ($(date +%s%N) - MARK_NS) / 1000000 ))
    if tail -n "+$((MARK_LINES + 1))" "$EPP_LOG" | grep -qF -- "$want"; then break; fi
    if [ "$ms" -gt 3000 ]; then
      echo "not logged in 3 s: $want" >&2
      tail -n 5 "$EPP_LOG" >&2
      return 1
    fi
    sleep 0.02
  done
  echo "$ms" >> "$SCRATCH/follow-ms"
  [ "$ms" -le 1000 ] || { echo "$want: after $ms ms" >&2; return 1; }
}

# served_by N: which model server answered each of N completions sent through the gateway, one
# name a line, sorted and counted (`uniq -c`).
served_by() {
  local i
  for (( i = 0; i < $1; i++ )); do
    curl -sSf --max-time 30 -H 'Content-Type: application/json' \
      --data-binary "{\"model\":\"tiny\",\"prompt\":\"question $i of $RANDOM\",\"max_tokens\":2}" \
      "http://127.0.0.1:$GATEWAY_PORT/v1/completions" | jq -r .model
  done | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' '
}

nothing_forbidden() {
  [ ! -s "$API/forbidden.log" ] || { cat "$API/forbidden.log"; return 1; }
}

@test "pods of the pool come, turn Ready or not and go: the EPP's endpoints follow within a second, requests reach only Ready pods, on the shipped RBAC alone" {
  llama_setup
  install
  pod_server a 127.0.0.2
  pod_server b 127.0.0.3
  # the GCU exporter of node-a, found by its label in enflame-system
  pod exporter-a 127.0.0.9 node-a True enflame-system '{"app.kubernetes.io/name":"enflame-gcu-exporter"}'
  epp_in_pool
  gateway_start
  # no pool yet: not ready, no endpoint
  wait_for grep -qF "InferencePool $NS/$POOL not found: 0 endpoints" "$EPP_LOG"
  run ! epp_health readiness
  pool
  pod a 127.0.0.2 node-a False
  mark
  ready a 127.0.0.2 True
  followed ": 1 endpoint: 127.0.0.2:$TARGET_PORT ($NS/a, gcu http://127.0.0.9:9400/metrics)"
  wait_for epp_health readiness
  [ "$(served_by 4)" = "a=4 " ]
  mark
  pod b 127.0.0.3 node-b True
  followed ": 2 endpoints: 127.0.0.2:$TARGET_PORT ($NS/a, gcu http://127.0.0.9:9400/metrics), 127.0.0.3:$TARGET_PORT ($NS/b, no gcu exporter)"
  # a pod the pool does not select is no endpoint
  pod other 127.0.0.4 node-a True "$NS" '{"app":"mistral"}'
  mark
  ready a 127.0.0.2 False
  followed ": 1 endpoint: 127.0.0.3:$TARGET_PORT ($NS/b, no gcu exporter)"
  [ "$(served_by 4)" = "b=4 " ]
  mark
  ready a 127.0.0.2 True
  followed ": 2 endpoints: 127.0.0.2:$TARGET_PORT"
  mark
  api DELETE "/api/v1/namespaces/$NS/pods/b" > /dev/null
  followed ": 1 endpoint: 127.0.0.2:$TARGET_PORT ($NS/a"
  [ "$(served_by 4)" = "a=4 " ]
  # the pool deleted: no endpoint, not ready
  mark
  api DELETE "/apis/inference.networking.k8s.io/v1/namespaces/$NS/inferencepools/$POOL" > /dev/null
  followed " not found: 0 endpoints"
  wait_for bash -c "! '$EPP_GATEWAY' --health-check --epp '$EPP_HEALTH' --service readiness --timeout 1000 > /dev/null 2>&1"
  nothing_forbidden
  echo "# endpoint set followed in $(sort -n "$SCRATCH/follow-ms" | tr '\n' ' ')ms" >&3
}

# objective_asked: the answer's HTTP code to a completion of objective batch through the
# gateway, or 000 when none came within a second (the request waits in the EPP's queue).
objective_asked() {
  curl -s --max-time 1 -o /dev/null -w '%{http_code}' -H 'x-gateway-inference-objective: batch' \
    -H 'Content-Type: application/json' --data-binary '{"model":"m","prompt":"q","max_tokens":1}' \
    "http://127.0.0.1:$GATEWAY_PORT/v1/completions" || true
}

# objectives_followed TEXT: the EPP logs the pool's objectives as TEXT, then objective batch is
# asked once; the code it got (objective_asked), and the time from the mark to it, are printed.
objectives_followed() {
  wait_for bash -c "tail -n +$((MARK_LINES + 1)) '$EPP_LOG' | grep -qF 'InferenceObjectives of InferencePool $NS/$POOL: $1'"
  local code
  code=$(objective_asked)
  echo "$code $(( ($(date +%s%N) - MARK_NS) / 1000000 ))"
}

saturated() {
  awk -v v="$(epp_metric enflame_epp_pool_saturation)" 'BEGIN { exit !(v >= 1) }'
}

@test "InferenceObjectives: the saturated pool refuses a sheddable objective (429) within a second of its object's creation, queues it at priority 5 or with the object gone; on the shipped RBAC alone" {
  install
  # the config file's own batch objective left out: its priority here is the cluster's alone
  python3 -c 'import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
c["objectives"] = [o for o in c["objectives"] if o["name"] != "batch"]
yaml.safe_dump(c, open(sys.argv[1], "w"))' "$SCRATCH/epp-config.yaml"
  # one pod, its model server far past the queue threshold
  model_start m --port "$TARGET_PORT"
  model_metrics m '{"waiting": 100}'
  pool
  pod m 127.0.0.1 node-a True
  epp_in_pool --drain-timeout 0s
  gateway_start
  wait_for grep -qF "InferenceObjectives of InferencePool $NS/$POOL: none" "$EPP_LOG"
  wait_for epp_health readiness
  wait_for saturated
  [ "$(objective_asked)" = 000 ]
  local objectives=/apis/inference.networking.x-k8s.io/v1alpha2/namespaces/$NS/inferenceobjectives
  mark
  api POST "$objectives" "{\"metadata\":{\"name\":\"batch\"},\"spec\":{\"priority\":-1,\"poolRef\":{\"name\":\"$POOL\"}}}" > /dev/null
  read -r code ms < <(objectives_followed "batch=-1")
  echo "# 429 after ${ms} ms" >&3
  [ "$code" = 429 ]
  [ "$ms" -le 1000 ]
  mark
  api PATCH "$objectives/batch" '{"spec":{"priority":5}}' application/merge-patch+json > /dev/null
  read -r code ms < <(objectives_followed "batch=5")
  [ "$code" = 000 ]
  mark
  api PATCH "$objectives/batch" '{"spec":{"priority":-1}}' application/merge-patch+json > /dev/null
  read -r code ms < <(objectives_followed "batch=-1")
  [ "$code" = 429 ]
  mark
  api DELETE "$objectives/batch" > /dev/null
  read -r code ms < <(objectives_followed "none")
  [ "$code" = 000 ]
  # an objective of another pool is not this pool's
  mark
  api POST "$objectives" '{"metadata":{"name":"batch"},"spec":{"priority":-1,"poolRef":{"name":"other"}}}' > /dev/null
  sleep 1
  [ "$(objective_asked)" = 000 ]
  nothing_forbidden
}

# without_crd KIND PLURAL: deployments/inference installed without the CRD of KIND (PLURAL its
# resource), a pool and a Ready pod; the EPP is ready all the same and says once, after about
# 5 s, that KIND's objects are not listed.
without_crd() {
  install "objs[:] = [o for o in objs if o['metadata']['name'] != '$2.inference.networking.x-k8s.io']"
  pool
  pod a 127.0.0.2 node-a True
  epp_in_pool
  wait_for epp_health readiness
  wait_secs 8 grep -qF "${1}s in $NS: not listed (no $2.inference.networking.x-k8s.io CRD" "$EPP_LOG"
  sleep 2
  [ "$(grep -c "$1" "$EPP_LOG")" -eq 1 ]
  epp_health readiness
  nothing_forbidden
}

@test "InferenceObjectives: without their CRD the EPP is ready all the same and says once that priorities come from the config file only" {
  without_crd InferenceObjective inferenceobjectives
  grep -qF "objective priorities come from the config file only" "$EPP_LOG"
}

# rewrite_asked [STREAM]: a completion of model a through the gateway (streamed: any STREAM);
# prints the model the model server was asked for and the one the client got back (each
# event's, streamed), e.g. "b a".
rewrite_asked() {
  local stream=false got
  [ -z "${1:-}" ] || stream=true
  got=$(curl -sSf --max-time 5 -H 'Content-Type: application/json' \
    --data-binary "{\"model\":\"a\",\"prompt\":\"q\",\"max_tokens\":3,\"stream\":$stream}" \
    "http://127.0.0.1:$GATEWAY_PORT/v1/completions" |
    if $stream; then sed -n 's/^data: {/{/p' | jq -r .model | sort -u | tr '\n' ' '; else jq -r .model; fi)
  echo "$(tail -n 1 "$SCRATCH/model-m/requests.jsonl" | jq -r .model) ${got% }"
}

# rewrites_followed TEXT: the EPP logs the pool's model rewrites as TEXT, then model a is asked
# for once; what rewrite_asked printed and the time from the mark to it are printed.
rewrites_followed() {
  wait_for bash -c "tail -n +$((MARK_LINES + 1)) '$EPP_LOG' | grep -qF 'InferenceModelRewrites of InferencePool $NS/$POOL: $1'"
  local got
  got=$(rewrite_asked)
  echo "$got $(( ($(date +%s%N) - MARK_NS) / 1000000 ))"
}

@test "InferenceModelRewrites: one sending model a to b makes requests reach the model server as b within a second of its creation while the client sees a; deleted, a again; another pool's is ignored; on the shipped RBAC alone" {
  install
  model_start m --port "$TARGET_PORT"
  pool
  pod m 127.0.0.1 node-a True
  epp_in_pool
  gateway_start
  wait_for grep -qF "InferenceModelRewrites of InferencePool $NS/$POOL: none" "$EPP_LOG"
  wait_for epp_health readiness
  [ "$(rewrite_asked)" = "a a" ]
  local rewrites=/apis/inference.networking.x-k8s.io/v1alpha2/namespaces/$NS/inferencemodelrewrites
  local to_b='"rules":[{"matches":[{"model":{"type":"Exact","value":"a"}}],"targets":[{"modelRewrite":"b","weight":100}]}]'
  mark
  api POST "$rewrites" "{\"metadata\":{\"name\":\"to-b\"},\"spec\":{\"poolRef\":{\"name\":\"$POOL\"},$to_b}}" > /dev/null
  read -r server client ms < <(rewrites_followed "to-b (a -> b 100)")
  echo "# rewrite followed ${ms} ms after the object's creation (server got $server, client saw $client)" >&3
  [ "$server" = b ]
  [ "$client" = a ]
  [ "$ms" -le 1000 ]
  # streamed: every event names a
  [ "$(rewrite_asked stream)" = "b a" ]
  [ "$(epp_metric 'enflame_epp_model_rewrite_decisions_total{model_name="a",model_rewrite_name="to-b",target_model="b"}')" = 2 ]
  mark
  api DELETE "$rewrites/to-b" > /dev/null
  read -r server client ms < <(rewrites_followed "none")
  [ "$server $client" = "a a" ]
  # a rewrite of another pool is not this pool's
  api POST "$rewrites" "{\"metadata\":{\"name\":\"other\"},\"spec\":{\"poolRef\":{\"name\":\"other\"},$to_b}}" > /dev/null
  sleep 1
  [ "$(rewrite_asked)" = "a a" ]
  nothing_forbidden
}

@test "InferenceModelRewrites: without their CRD the EPP is ready all the same and says once that model rewrites come from the config file only" {
  without_crd InferenceModelRewrite inferencemodelrewrites
  grep -qF "model rewrites come from the config file only" "$EPP_LOG"
}

# without_rule ROLE RESOURCE [ARGS...]: deployments/inference installed with ROLE's rule on
# RESOURCE removed, the pool and a Ready pod a on node-a with its exporter, and the EPP started
# with ARGS; the fake API server's 403s are in $API/forbidden.log.
without_rule() {
  install "rbac['$1'][:] = [r for r in rbac['$1'] if r['resources'] != ['$2']]"
  pool
  pod a 127.0.0.2 node-a True
  pod exporter-a 127.0.0.9 node-a True enflame-system '{"app.kubernetes.io/name":"enflame-gcu-exporter"}'
  epp_in_pool "${@:3}"
}

@test "least RBAC: without its pods rule in the pool's namespace the EPP is refused them and never ready" {
  without_rule enflame-epp pods
  wait_for grep -qF "GET /api/v1/namespaces/$NS/pods" "$API/forbidden.log"
  sleep 1.5
  run ! epp_health readiness
  run ! grep -F "InferencePool $NS/$POOL: 1 endpoint" "$EPP_LOG"
}

@test "least RBAC: without its inferencepools rule the EPP is refused the pool, never ready, and warns what it lacks" {
  without_rule enflame-epp inferencepools
  wait_for grep -qF "GET /apis/inference.networking.k8s.io/v1/namespaces/$NS/inferencepools" "$API/forbidden.log"
  wait_secs 8 grep -qF "InferencePool $NS/$POOL: not listed yet" "$EPP_LOG"
  run ! epp_health readiness
}

@test "least RBAC: without the exporters' Role the EPP is refused their pods and serves the pod without its node's GCU exporter" {
  without_rule enflame-epp-gcu-exporters pods
  wait_for grep -qF "GET /api/v1/namespaces/enflame-system/pods" "$API/forbidden.log"
  wait_for grep -qF "InferencePool $NS/$POOL: 1 endpoint: 127.0.0.2:$TARGET_PORT ($NS/a, no gcu exporter)" "$EPP_LOG"
  wait_for epp_health readiness
}

@test "least RBAC: with an empty exporter selector the EPP needs no right in enflame-system" {
  without_rule enflame-epp-gcu-exporters pods --gcu-exporter-selector ""
  wait_for grep -qF "InferencePool $NS/$POOL: 1 endpoint: 127.0.0.2:$TARGET_PORT ($NS/a, no gcu exporter)" "$EPP_LOG"
  wait_for epp_health readiness
  nothing_forbidden
}
