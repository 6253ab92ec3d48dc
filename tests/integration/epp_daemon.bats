#!/usr/bin/env bats
# enflame-epp as a daemon, apart from what it routes (epp_protocol.bats): its command line and
# man page, bad input, TLS with its own or a given certificate, /metrics, and SIGTERM with a
# request in flight. Real processes on loopback: the EPP, fake model servers
# (k8s/tests/fake_model_server.py) and the gateway stand-in epp-gateway (k8s/tests/FAKES.md).

load helpers
load epp
bats_require_minimum_version 1.5.0

setup() {
  requires curl openssl
  epp_binaries
  setup_scratch
}
teardown() { teardown_scratch; }

# post BODY: POST BODY to the gateway's /v1/completions; prints the HTTP status, the answer is
# in $SCRATCH/resp.body.
post() {
  curl -sS --max-time 30 -o "$SCRATCH/resp.body" -w '%{http_code}' \
    -H 'content-type: application/json' --data-binary "$1" \
    "http://127.0.0.1:$GATEWAY_PORT/v1/completions"
}

# served_cert_sha256: the SHA-256 fingerprint of the certificate the EPP's ext_proc port shows.
served_cert_sha256() {
  openssl s_client -connect "$EPP_GRPC" -alpn h2 < /dev/null 2> /dev/null |
    openssl x509 -noout -fingerprint -sha256
}

# model_has_a_request NAME: the fake model server NAME has seen a request.
model_has_a_request() { [ "$(model_requests "$1")" -ge 1 ]; }

@test "enflame-epp answers --version and --help, and its man page names every flag" {
  requires man
  run "$EPP" --version
  [ "$status" -eq 0 ]
  [[ $output == "enflame-epp "* ]]
  run "$EPP" --help
  [ "$status" -eq 0 ]
  [[ $output == *"--grpc-port"* ]]
  man_covers_flags "$TOP/man/enflame-epp.8" "$EPP"
}

@test "cmake --install carries the daemon, its man page and its manifests" {
  installs_daemon enflame-epp man8/enflame-epp.8 inference
}

@test "bad input is one line naming it, and exit 1" {
  local args
  while IFS= read -r args; do
    # shellcheck disable=SC2086 # each line is a list of arguments
    run "$EPP" --secure-serving=false --grpc-port 0 --grpc-health-port 0 --metrics-port 0 $args
    echo "$args: $output"
    [ "$status" -eq 1 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ $output == "error: "* ]]
  done <<EOF
--endpoints 127.0.0.1:1 --bogus
--endpoints 127.0.0.1:1 --grpc-port 70000
--endpoints 127.0.0.1:1 --body-mode streamed
--endpoints 127.0.0.1:1 --drain-timeout soon
--endpoints 127.0.0.1:1 --cert-reload-interval 0s
--endpoints 10.0.0.1
--endpoints 127.0.0.1:1 --pool-name p
--endpoints 127.0.0.1:1 --cert-path $SCRATCH/none
EOF
  run "$EPP" --endpoints 127.0.0.1:1 --cert-path "$SCRATCH/none" \
    --grpc-port 0 --grpc-health-port 0 --metrics-port 0
  [ "$output" = "error: $SCRATCH/none/tls.crt: cannot read it" ]
}

@test "a port already taken is one line naming its flag, and exit 1" {
  model_start a
  epp_start "$MODEL_ADDR"
  local taken=${EPP_GRPC##*:}
  # (timeout: an EPP that started on the taken port anyway must not hang the test)
  run timeout 10 "$EPP" --endpoints "$MODEL_ADDR" --secure-serving=false --grpc-port "$taken" \
    --grpc-health-port 0 --metrics-port 0
  echo "$output"
  [ "$status" -eq 1 ]
  [[ ${lines[-1]} == "error: --grpc-port $taken: cannot listen on "* ]]
  taken=${EPP_METRICS##*:}
  run timeout 10 "$EPP" --endpoints "$MODEL_ADDR" --secure-serving=false --grpc-port 0 \
    --grpc-health-port 0 --metrics-port "$taken"
  [ "$status" -eq 1 ]
  [[ ${lines[-1]} == "error: --metrics-port $taken: "* ]]
  # the health port shares the ext_proc server: the line still names the right flag
  taken=${EPP_HEALTH##*:}
  run timeout 10 "$EPP" --endpoints "$MODEL_ADDR" --secure-serving=false --grpc-port 0 \
    --grpc-health-port "$taken" --metrics-port 0
  [ "$status" -eq 1 ]
  [[ ${lines[-1]} == "error: --grpc-health-port $taken: cannot listen on "* ]]
}

@test "TLS by default with a self-signed certificate made at start, routed through" {
  model_start a
  EPP_TLS=1 epp_start "$MODEL_ADDR"
  local subject
  subject=$(openssl s_client -connect "$EPP_GRPC" -alpn h2 < /dev/null 2> /dev/null |
    openssl x509 -noout -subject -issuer)
  [[ $subject == *"subject=O = Enflame, CN = enflame-epp"* ]]
  [[ $subject == *"issuer=O = Enflame, CN = enflame-epp"* ]]
  EPP_TLS=1 gateway_start
  [ "$(post '{"model":"tiny","prompt":"hi"}')" = 200 ]
  [ "$(model_requests a)" -eq 1 ]
  # Envoy's ext_proc cluster health check asks the ext_proc port itself, over TLS.
  run "$EPP_GATEWAY" --health-check --epp "$EPP_GRPC" --epp-tls \
    --service envoy.service.ext_proc.v3.ExternalProcessor --timeout 1000
  [ "$output" = SERVING ]
  # ext_proc on the plaintext health port is refused while TLS is on.
  EPP_GRPC=$EPP_HEALTH gateway_start
  run post '{"model":"tiny","prompt":"hi"}'
  [ "$output" != 200 ]
  [ "$(model_requests a)" -eq 1 ]
  # A gateway speaking plaintext to it gets no answer from the EPP.
  gateway_start
  run post '{"model":"tiny","prompt":"hi"}'
  [ "$output" != 200 ]
  [ "$(model_requests a)" -eq 1 ]
}

@test "--cert-path serves the given certificate" {
  model_start a
  mkdir "$SCRATCH/tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=epp.example \
    -keyout "$SCRATCH/tls/tls.key" -out "$SCRATCH/tls/tls.crt" 2> /dev/null
  EPP_TLS=1 epp_start "$MODEL_ADDR" --cert-path "$SCRATCH/tls"
  [ "$(served_cert_sha256)" = "$(openssl x509 -noout -fingerprint -sha256 -in "$SCRATCH/tls/tls.crt")" ]
  EPP_TLS=1 gateway_start
  [ "$(post '{"model":"tiny","prompt":"hi"}')" = 200 ]
}

# secret_pair DIR VERSION: DIR holds tls.crt and tls.key as a Secret's volume does (links into
# ..data, which links to a folder of the pair), the pair VERSION made fresh and swapped in with
# one rename of ..data.
secret_pair() {
  mkdir -p "$1/v$2"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=epp-v$2.example" \
    -keyout "$1/v$2/tls.key" -out "$1/v$2/tls.crt" 2> /dev/null
  ln -sfn "v$2" "$1/..data.tmp"
  mv -T "$1/..data.tmp" "$1/..data"
  ln -sfn ..data/tls.crt "$1/tls.crt"
  ln -sfn ..data/tls.key "$1/tls.key"
}
serves_pair() { [ "$(served_cert_sha256)" = "$(openssl x509 -noout -fingerprint -sha256 -in "$1")" ]; }

@test "--cert-path: a renewed pair (swapped in as a Secret's volume does) is served within --cert-reload-interval, without a restart" {
  model_start a
  secret_pair "$SCRATCH/tls" 1
  EPP_TLS=1 epp_start "$MODEL_ADDR" --cert-path "$SCRATCH/tls" --cert-reload-interval 1s
  serves_pair "$SCRATCH/tls/v1/tls.crt"
  secret_pair "$SCRATCH/tls" 2
  wait_for serves_pair "$SCRATCH/tls/v2/tls.crt"
  epp_alive
  EPP_TLS=1 gateway_start
  [ "$(post '{"model":"tiny","prompt":"hi"}')" = 200 ]
}

@test "/metrics counts requests by the status they were given" {
  model_start a
  epp_start "$MODEL_ADDR"
  gateway_start
  [ "$(post '{"model":"tiny","prompt":"hi"}')" = 200 ]
  [ "$(post '{"model":"tiny","prompt":"hi"}')" = 200 ]
  [ "$(post '{"prompt":"no model"}')" = 400 ]
  [ "$(epp_metric 'enflame_epp_requests_total{status="200"}')" = 2 ]
  [ "$(epp_metric 'enflame_epp_requests_total{status="400"}')" = 1 ]
  # One registry: the scheduler's series are on the same page.
  curl -sf "http://$EPP_METRICS/metrics" > "$SCRATCH/metrics"
  grep -q '^enflame_epp_scheduling_duration_seconds_count' "$SCRATCH/metrics"
}

@test "SIGTERM: readiness goes, a request in flight finishes, a new one is refused, exit 0" {
  model_start slow --token-delay-ms 100
  epp_start "$MODEL_ADDR" --drain-timeout 10s
  gateway_start
  curl -sS --max-time 30 -o "$SCRATCH/slow.body" -w '%{http_code}' \
    -H 'content-type: application/json' \
    --data-binary '{"model":"tiny","prompt":"hi","stream":true,"max_tokens":20}' \
    "http://127.0.0.1:$GATEWAY_PORT/v1/completions" > "$SCRATCH/slow.status" &
  local curl_pid=$!
  on_teardown "stop_pid $curl_pid"
  wait_for model_has_a_request slow
  kill -TERM "$EPP_PID"
  wait_for grep -q 'draining' "$EPP_LOG"
  run epp_health readiness
  [ "$output" = NOT_SERVING ]
  run post '{"model":"tiny","prompt":"late"}'
  [ "$output" != 200 ]
  wait "$curl_pid"
  [ "$(cat "$SCRATCH/slow.status")" = 200 ]
  grep -q 'data: \[DONE\]' "$SCRATCH/slow.body"
  [ "$(grep -c '"text"' "$SCRATCH/slow.body")" -eq 20 ]
  local epp_status=0
  wait "$EPP_PID" || epp_status=$?
  [ "$epp_status" -eq 0 ]
  [ "$(model_requests slow)" -eq 1 ]
}
