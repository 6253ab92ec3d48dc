#!/usr/bin/env bats
# enflame-epp's side of the Endpoint Picker protocol, seen from the gateway: the real EPP, given
# fake model servers (k8s/tests/fake_model_server.py) with --endpoints, asked by epp-gateway,
# which plays Envoy's ext_proc filter and ORIGINAL_DST cluster (k8s/tests/FAKES.md) and refuses
# with a 502 any answer Envoy would not route by (the destination header and its envoy.lb
# metadata must be equal). Each behaviour runs in both body modes: FULL_DUPLEX_STREAMED (the
# reference gateway's) and BUFFERED. tests/README.md says what the stand-in cannot show.

load helpers
load epp
bats_require_minimum_version 1.5.0

setup() {
  requires jq curl
  epp_binaries
  setup_scratch
}
teardown() { teardown_scratch; }

# post [CURL ARGS...] BODY: POST BODY (JSON text, or @file) to the gateway's /v1/completions;
# prints the status. The answer is in $SCRATCH/resp.body, its headers in $SCRATCH/resp.headers.
post() {
  local body=${*: -1} code
  code=$(curl -sS --max-time 30 -o "$SCRATCH/resp.body" -D "$SCRATCH/resp.headers" \
    -w '%{http_code}' -H 'content-type: application/json' "${@:1:$#-1}" --data-binary "$body" \
    "http://127.0.0.1:$GATEWAY_PORT/v1/completions")
  # what a failing test shows
  [[ $code == 2* ]] || echo "gateway answered $code: $(head -c 300 "$SCRATCH/resp.body")" >&2
  echo "$code"
}

# resp_header NAME: a header of the last answer.
resp_header() {
  awk -v n="$1" 'BEGIN { IGNORECASE = 1 } { sub(/\r$/, "") }
    index(tolower($0), tolower(n) ":") == 1 { sub(/^[^:]*: */, ""); print }' "$SCRATCH/resp.headers"
}

# three_servers: fake model servers a, b and c (A, B, C: their addresses) and an EPP routing to
# them, with ARGS for the EPP.
# shellcheck disable=SC2120 # most tests give none
three_servers() {
  model_start a
  A=$MODEL_ADDR
  model_start b
  B=$MODEL_ADDR
  model_start c
  C=$MODEL_ADDR
  epp_start "$A,$B,$C" "$@"
}

# name_of ADDR: which of a, b, c listens on ADDR.
name_of() {
  case $1 in
    "$A") echo a ;;
    "$B") echo b ;;
    "$C") echo c ;;
    *) echo "none of a, b, c: '$1'" ;;
  esac
}

# last_request NAME: the last request the fake model server NAME logged (JSON).
last_request() { tail -n 1 "$SCRATCH/model-$1/requests.jsonl"; }

# saturation_is V: the EPP's pool saturation (the mean over endpoints of their queue over 5,
# a stale endpoint counting 1) is V to 0.01: it has scraped what a test just set.
saturation_is() {
  awk -v v="$(epp_metric enflame_epp_pool_saturation)" -v w="$1" \
    'BEGIN { exit !(v - w < 0.01 && w - v < 0.01) }'
}

routed() {
  three_servers
  gateway_start --mode "$1"
  [ "$(post '{"model": "m", "prompt": "hello", "max_tokens": 3}')" = 200 ]
  jq -e '.choices[0].text == "t0 t1 t2"' "$SCRATCH/resp.body"
  local served dest name
  served=$(resp_header x-epp-served)
  dest=$(resp_header x-epp-destination)
  name=$(name_of "$served")
  [[ $dest == "$served"* ]]
  [ "$(resp_header x-served-by)" = "$name" ]
  # That server, and no other, saw it, with the EPP's destination header on it.
  [ "$(model_requests a)$(model_requests b)$(model_requests c)" = "$(
    for n in a b c; do if [ "$n" = "$name" ]; then printf 1; else printf 0; fi; done)" ]
  last_request "$name" | jq -e --arg d "$dest" \
    '.path == "/v1/completions" and .model == "m" and .headers["x-gateway-destination-endpoint"] == $d'
}
@test "full-duplex: a request is routed to one model server, which alone sees it" { routed full-duplex; }
@test "buffered: a request is routed to one model server, which alone sees it" { routed buffered; }

agreed() {
  three_servers
  gateway_start --mode "$1"
  local i
  for i in $(seq 20); do
    [ "$(post "{\"model\": \"m\", \"prompt\": \"question $i\"}")" = 200 ]
  done
  # The stand-in answers 502 when the header and the envoy.lb metadata differ or one is missing.
  gateway_stats > "$SCRATCH/stats.json"
  jq -e '.status == {"200": 20} and .decision_ms.count == 20' "$SCRATCH/stats.json"
  [ "$(( $(model_requests a) + $(model_requests b) + $(model_requests c) ))" -eq 20 ]
}
@test "full-duplex: 20 requests, each with the destination header equal to its envoy.lb metadata" { agreed full-duplex; }
@test "buffered: 20 requests, each with the destination header equal to its envoy.lb metadata" { agreed buffered; }

# epp-gateway --drive (bench/epp.sh's load): streams straight to the EPP, the upstream played by
# the driver itself, so no model server sees them.
drive() {
  three_servers
  printf '%s' '{"model": "m", "prompt": "driven"}' > "$SCRATCH/body.json"
  timeout 60 "$EPP_GATEWAY" --drive 200 --rate 100 --mode "$1" --body "$SCRATCH/body.json" \
    --epp "$EPP_GRPC" > "$SCRATCH/drive.json"
  jq -e '.requests == 200' "$SCRATCH/drive.json"
  jq -e '.status == {"200": 200}' "$SCRATCH/drive.json"
  jq -e '.decision_ms.count == 200' "$SCRATCH/drive.json"
  jq -e '.decision_ms.p50 > 0' "$SCRATCH/drive.json"
  jq -e '.rate == 100 and .achieved_rate > 50 and .seconds > 0 and .late_ms_max >= 0' "$SCRATCH/drive.json"
  [ "$(model_requests a)$(model_requests b)$(model_requests c)" = 000 ]
}
@test "full-duplex: --drive 200 streams at 100/s: all 200, each with a decision latency" { drive full-duplex; }
@test "buffered: --drive 200 streams at 100/s: all 200, each with a decision latency" { drive buffered; }

no_model() {
  three_servers
  gateway_start --mode "$1"
  [ "$(post '{"prompt": "hello"}')" = 400 ]
  grep -q 'model' "$SCRATCH/resp.body"
  [ "$(post 'not json at all')" = 400 ]
  [ "$(model_requests a)$(model_requests b)$(model_requests c)" = 000 ]
}
@test "full-duplex: 400 for a body without \"model\" or not JSON, and no model server sees it" { no_model full-duplex; }
@test "buffered: 400 for a body without \"model\" or not JSON, and no model server sees it" { no_model buffered; }

subset_honoured() {
  three_servers
  gateway_start --mode "$1"
  local i
  for i in $(seq 20); do
    [ "$(post -H "x-test-subset: $B" "{\"model\": \"m\", \"prompt\": \"q$i\"}")" = 200 ]
    [ "$(resp_header x-epp-served)" = "$B" ]
  done
  [ "$(model_requests a) $(model_requests b) $(model_requests c)" = "0 20 0" ]
  # Two of three: never the third.
  for i in $(seq 20); do
    [ "$(post -H "x-test-subset: $A, $C" "{\"model\": \"m\", \"prompt\": \"r$i\"}")" = 200 ]
  done
  [ "$(model_requests b)" -eq 20 ]
  [ "$(( $(model_requests a) + $(model_requests c) ))" -eq 20 ]
}
@test "full-duplex: the subset hint is honoured: 20 requests hinted at one server all go there" { subset_honoured full-duplex; }
@test "buffered: the subset hint is honoured: 20 requests hinted at one server all go there" { subset_honoured buffered; }

subset_none() {
  three_servers
  gateway_start --mode "$1"
  [ "$(post -H 'x-test-subset: 127.0.0.1:1' '{"model": "m", "prompt": "q"}')" = 503 ]
  [ "$(post -H 'x-test-subset;' '{"model": "m", "prompt": "q"}')" = 503 ]
  [ "$(model_requests a)$(model_requests b)$(model_requests c)" = 000 ]
  # The gateway's own --subset, for requests without the header.
  gateway_start --mode "$1" --subset 127.0.0.2:80
  [ "$(post '{"model": "m", "prompt": "q"}')" = 503 ]
  gateway_start --mode "$1" --subset "$C"
  [ "$(post '{"model": "m", "prompt": "q"}')" = 200 ]
  [ "$(model_requests a)$(model_requests b)$(model_requests c)" = 001 ]
}
@test "full-duplex: 503 for a subset hint naming no endpoint of the pool, or none at all" { subset_none full-duplex; }
@test "buffered: 503 for a subset hint naming no endpoint of the pool, or none at all" { subset_none buffered; }

none_ready() {
  model_start a
  model_metrics a '{"status": 500}'
  A=$MODEL_ADDR
  model_start b
  model_metrics b '{"status": 500}'
  # A request waits in the EPP's queue for a ready endpoint for at most its TTL.
  printf '%s\n' 'apiVersion: inference.networking.x-k8s.io/v1alpha1' \
    'kind: EndpointPickerConfig' 'flowControl:' '  defaultRequestTTL: 2s' > "$SCRATCH/ttl.yaml"
  epp_start "$A,$MODEL_ADDR" --config-file "$SCRATCH/ttl.yaml"
  gateway_start --mode "$1"
  [ "$(post '{"model": "m", "prompt": "q"}')" = 503 ]
  [ "$(model_requests a)$(model_requests b)" = 00 ]
  # b's metrics answer again: it takes the next request.
  model_metrics b '{}'
  wait_for saturation_is 0.5
  [ "$(post '{"model": "m", "prompt": "q"}')" = 200 ]
  [ "$(model_requests a)$(model_requests b)" = 01 ]
}
@test "full-duplex: 503 while no endpoint is ready (every model server's /metrics fails), 200 once one is" { none_ready full-duplex; }
@test "buffered: 503 while no endpoint is ready (every model server's /metrics fails), 200 once one is" { none_ready buffered; }

big_body() {
  three_servers
  gateway_start --mode "$1"
  /usr/bin/python3 -c 'import json, random
r = random.Random(7)
print(json.dumps({"model": "m", "max_tokens": 1,
                  "prompt": "".join(r.choice("abcdefghij ") for _ in range(150000))}), end="")' \
    > "$SCRATCH/big.json"
  [ "$(stat -c %s "$SCRATCH/big.json")" -gt 150000 ]
  [ "$(post @"$SCRATCH/big.json")" = 200 ]
  local name
  name=$(resp_header x-served-by)
  last_request "$name" | jq -e --arg sum "$(sha256sum < "$SCRATCH/big.json" | cut -d' ' -f1)" \
    --argjson len "$(stat -c %s "$SCRATCH/big.json")" \
    '.body_len == $len and .body_sha256 == $sum and .headers["content-length"] == ($len | tostring)'
}
@test "full-duplex: a 150 kB body arrives byte-equal at the model server" { big_body full-duplex; }
@test "buffered: a 150 kB body arrives byte-equal at the model server" { big_body buffered; }

sse() {
  three_servers
  gateway_start --mode "$1"
  local body='{"model": "m", "prompt": "tell", "max_tokens": 40, "stream": true, "stream_options": {"include_usage": true}}'
  [ "$(post -N "$body")" = 200 ]
  grep -qi '^content-type: text/event-stream' "$SCRATCH/resp.headers"
  # Byte for byte what the server sends when asked directly.
  curl -sS -N -H 'content-type: application/json' --data-binary "$body" \
    "http://$(resp_header x-epp-served)/v1/completions" > "$SCRATCH/direct.body"
  cmp "$SCRATCH/direct.body" "$SCRATCH/resp.body"
  [ "$(grep -c '^data: ' "$SCRATCH/resp.body")" -eq 42 ]
  [ "$(tail -n 2 "$SCRATCH/resp.body" | head -n 1)" = "data: [DONE]" ]
}
@test "full-duplex: a streamed (SSE) response arrives whole" { sse full-duplex; }
@test "buffered: a streamed (SSE) response arrives whole" { sse buffered; }

canary() {
  printf '%s\n' 'kind: EndpointPickerConfig' 'modelRewrites:' '  - name: canary' '    rules:' \
    '      - matches: [{model: {type: Exact, value: m}}]' \
    '        targets: [{modelRewrite: m-stable, weight: 50}, {modelRewrite: m-canary, weight: 50}]' \
    > "$SCRATCH/canary.yaml"
  three_servers --config-file "$SCRATCH/canary.yaml"
  gateway_start --mode "$1"
  local i
  for i in $(seq 200); do
    [ "$(post "{\"model\": \"m\", \"prompt\": \"question $i\", \"max_tokens\": 1}")" = 200 ]
    # the client is told the model it asked for
    [ "$(jq -r .model "$SCRATCH/resp.body")" = m ]
  done
  # the model servers were asked for the targets, each body's length as its content-length
  cat "$SCRATCH"/model-?/requests.jsonl > "$SCRATCH/asked.jsonl"
  jq -e -s 'all(.headers["content-length"] == (.body_len | tostring))' "$SCRATCH/asked.jsonl"
  local stable canary
  stable=$(jq -s 'map(select(.model == "m-stable")) | length' "$SCRATCH/asked.jsonl")
  canary=$(jq -s 'map(select(.model == "m-canary")) | length' "$SCRATCH/asked.jsonl")
  echo "# $1: 200 requests for m went as m-stable $stable, m-canary $canary" >&3
  [ "$((stable + canary))" -eq 200 ]
  # 50/50: a binomial's standard deviation over 200 is 7; 40 either way
  [ "$stable" -ge 60 ]
  [ "$stable" -le 140 ]
  [ "$(epp_metric 'enflame_epp_model_rewrite_decisions_total{model_name="m",model_rewrite_name="canary",target_model="m-canary"}')" = "$canary" ]
  # a model no rule matches reaches its server byte for byte
  local other='{"model": "other",   "prompt": "as  typed", "max_tokens": 1}'
  [ "$(post "$other")" = 200 ]
  last_request "$(resp_header x-served-by)" | jq -e --arg sum "$(printf '%s' "$other" | sha256sum | cut -d' ' -f1)" \
    '.model == "other" and .body_sha256 == $sum'
  jq -e '.model == "other"' "$SCRATCH/resp.body"
}
@test "full-duplex: a 50/50 canary of the config file's modelRewrites sends about half the requests as each target model; the client sees its own" { canary full-duplex; }
@test "buffered: a 50/50 canary of the config file's modelRewrites sends about half the requests as each target model; the client sees its own" { canary buffered; }

@test "gRPC health: SERVING for '', liveness, readiness and the ext_proc service" {
  three_servers
  local s
  for s in '' liveness readiness envoy.service.ext_proc.v3.ExternalProcessor; do
    run epp_health "$s"
    [ "$status" -eq 0 ]
    [ "$output" = SERVING ]
  done
}

@test "TLS by default: the gateway gets routed answers over TLS, and a plaintext gateway none" {
  EPP_TLS=1 three_servers
  EPP_TLS=1 gateway_start --mode full-duplex
  [ "$(post '{"model": "m", "prompt": "q"}')" = 200 ]
  EPP_TLS=1 gateway_start --mode buffered
  [ "$(post '{"model": "m", "prompt": "q"}')" = 200 ]
  gateway_start
  [ "$(post '{"model": "m", "prompt": "q"}')" = 500 ]
  [ "$(( $(model_requests a) + $(model_requests b) + $(model_requests c) ))" -eq 2 ]
}

@test "--secure-serving=false: plaintext, and a TLS gateway gets no answer" {
  three_servers
  gateway_start
  [ "$(post '{"model": "m", "prompt": "q"}')" = 200 ]
  EPP_TLS=1 gateway_start
  [ "$(post '{"model": "m", "prompt": "q"}')" = 500 ]
  [ "$(( $(model_requests a) + $(model_requests b) + $(model_requests c) ))" -eq 1 ]
}

# prompt_body SEED: a completion request whose prompt (640 characters: ten of the EPP's prefix
# blocks) no other seed shares.
prompt_body() {
  /usr/bin/python3 -c 'import json, random, sys
r = random.Random(sys.argv[1])
print(json.dumps({"model": "m", "max_tokens": 1,
                  "prompt": "".join(r.choice("abcdefghij ") for _ in range(640))}))' "$1"
}

served() {
  three_servers
  gateway_start --mode "$1"
  local body first
  body=$(prompt_body "$1")
  # c a little busier, so it is not picked first; the gateway is made to use it all the same,
  # as one that retried down the list would, and reports it served.
  model_metrics c '{"waiting": 2}'
  wait_for saturation_is 0.133
  [ "$(post -H "x-test-endpoint: $C" "$body")" = 200 ]
  [ "$(resp_header x-served-by)" = c ]
  first=$(resp_header x-epp-destination | cut -d, -f1)
  [ "$first" != "$C" ]
  # Now the first pick is the busier one. It holds the prompt's blocks (the EPP noted them when
  # it picked it); c holds them only if the EPP took in what the gateway reported served.
  model_metrics c '{}'
  model_metrics "$(name_of "$first")" '{"waiting": 3}'
  wait_for saturation_is 0.2
  [ "$(post "$body")" = 200 ]
  [ "$(resp_header x-served-by)" = c ]
}
@test "full-duplex: the endpoint the gateway reports served gets the prompt's next request" { served full-duplex; }
@test "buffered: the endpoint the gateway reports served gets the prompt's next request" { served buffered; }

@test "no protocol_config (Envoy before 1.35): the EPP's --body-mode says the mode" {
  three_servers --body-mode buffered
  gateway_start --mode buffered --no-protocol-config --timeout 5000
  [ "$(post '{"model": "m", "prompt": "q"}')" = 200 ]
  gateway_start --mode full-duplex
  [ "$(post '{"model": "m", "prompt": "q"}')" = 200 ]
  [ "$(( $(model_requests a) + $(model_requests b) + $(model_requests c) ))" -eq 2 ]
}
