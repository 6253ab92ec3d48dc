# shellcheck shell=bash
# enflame-epp on loopback with what the tests put around it: fake model servers
# (k8s/tests/fake_model_server.py) and the gateway stand-in epp-gateway (k8s/tests/FAKES.md),
# each started in the background and stopped by its PID in teardown (on_teardown). Used by the
# epp_*.bats files and bench/epp.sh. Needs helpers.bash, and setup_scratch before any start.
# shellcheck disable=SC2034  # what this sets, the suites that load it use

EPP=${EPP:-$BUILD_DIR/k8s/epp/enflame-epp}
EPP_GATEWAY=${EPP_GATEWAY:-$BUILD_DIR/k8s/tests/epp-gateway}
FAKE_MODEL_SERVER=$TOP/k8s/tests/fake_model_server.py

# epp_binaries: skip (fail under CI) unless enflame-epp and epp-gateway are built.
epp_binaries() {
  local b
  for b in "$EPP" "$EPP_GATEWAY"; do
    [ -x "$b" ] || skip_or_fail "no $b (build enflame-epp and epp-gateway)"
  done
}

# free_port: a loopback TCP port nobody listens on now (the kernel's pick, released again).
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# model_start NAME [ARGS...]: a fake model server answering as NAME (x-served-by) in
# $SCRATCH/model-NAME (its port, requests.jsonl, metrics.json), on a port the kernel picks, with
# ARGS (fake_model_server.py --help). Sets MODEL_ADDR (127.0.0.1:port) and MODEL_PID; stopped by
# PID in teardown.
model_start() {
  local name=$1 dir=$SCRATCH/model-$1
  shift
  mkdir -p "$dir"
  /usr/bin/python3 "$FAKE_MODEL_SERVER" --dir "$dir" --name "$name" "$@" > "$dir/log" 2>&1 3>&- &
  MODEL_PID=$!
  on_teardown "stop_pid $MODEL_PID"
  wait_for test -s "$dir/port" || { tail -n 3 "$dir/log" >&2; return 1; }
  MODEL_ADDR=127.0.0.1:$(cat "$dir/port")
}

# model_requests NAME: how many requests the fake model server NAME has seen.
model_requests() {
  local log=$SCRATCH/model-$1/requests.jsonl
  if [ -f "$log" ]; then wc -l < "$log"; else echo 0; fi
}

# model_metrics NAME JSON: what the fake model server NAME's /metrics says from now on.
model_metrics() {
  local dir=$SCRATCH/model-$1
  printf '%s\n' "$2" > "$dir/metrics.json.new"
  mv "$dir/metrics.json.new" "$dir/metrics.json"
}

# epp_start ENDPOINTS [ARGS...]: enflame-epp routing to ENDPOINTS (host:port,...) on ports the
# kernel picks (port 0; the EPP logs the ones it got), plaintext (--secure-serving=false) unless
# EPP_TLS=1 (then its default, TLS), with ARGS.
# Sets EPP_PID, EPP_GRPC (its ext_proc address), EPP_HEALTH, EPP_METRICS (127.0.0.1:port each)
# and EPP_LOG; stopped by PID in teardown. Up once its gRPC health says it is ready.
epp_start() {
  local endpoints=$1 plaintext=(--secure-serving=false)
  shift
  [ "${EPP_TLS:-0}" = 1 ] && plaintext=()
  EPP_LOG=$(mktemp "$SCRATCH/epp.XXXXXX.log")
  "$EPP" --endpoints "$endpoints" "${plaintext[@]}" --grpc-port 0 \
    --grpc-health-port 0 --metrics-port 0 "$@" > "$EPP_LOG" 2>&1 3>&- &
  EPP_PID=$!
  on_teardown "stop_pid $EPP_PID"
  wait_for epp_listening || { tail -n 3 "$EPP_LOG" >&2; return 1; }
  epp_alive
  EPP_GRPC=127.0.0.1:$(sed -n 's/.* ext_proc on .*:\([0-9][0-9]*\) (.*/\1/p;T;q' "$EPP_LOG")
  EPP_HEALTH=127.0.0.1:$(sed -n 's/.*, health on .*:\([0-9][0-9]*\)$/\1/p;T;q' "$EPP_LOG")
  EPP_METRICS=127.0.0.1:$(sed -n 's|.* /metrics on .*:\([0-9][0-9]*\)$|\1|p;T;q' "$EPP_LOG")
  wait_for epp_serving || { tail -n 3 "$EPP_LOG" >&2; return 1; }
  epp_alive
}

# epp_alive: the EPP still runs (epp_listening and epp_serving end their wait when it dies);
# else its log's last lines and a failure.
epp_alive() {
  kill -0 "$EPP_PID" 2>/dev/null && return 0
  echo "enflame-epp exited:" >&2
  tail -n 3 "$EPP_LOG" >&2
  return 1
}

# epp_listening: the EPP has logged its ports (or died: then wait_for ends early).
epp_listening() {
  grep -q ' /metrics on .*:[0-9]' "$EPP_LOG" && return 0
  kill -0 "$EPP_PID" 2>/dev/null || { echo "enflame-epp exited" >&2; return 0; }
  return 1
}

# epp_health SERVICE: the EPP's gRPC health status of SERVICE ('' for the server), asked as a
# gateway's health check or kubelet's probe does; exit 0 only for SERVING.
epp_health() {
  "$EPP_GATEWAY" --health-check --epp "$EPP_HEALTH" --service "$1" --timeout 1000 2>&1
}

# epp_serving: the EPP's readiness Check says SERVING (or it died: then wait_for ends early).
epp_serving() {
  epp_health readiness > /dev/null && return 0
  kill -0 "$EPP_PID" 2>/dev/null || { echo "enflame-epp exited" >&2; return 0; }
  return 1
}

# epp_metric NAME_AND_LABELS: the value of that series on the EPP's /metrics (0 when absent).
epp_metric() {
  curl -sf "http://$EPP_METRICS/metrics" |
    awk -v s="$1" '$1 == s { v = $2 } END { print v == "" ? 0 : v }'
}

# gateway_start [ARGS...]: epp-gateway on a loopback port the kernel picks, asking the EPP at
# $EPP_GRPC (over TLS when EPP_TLS=1), with ARGS. Sets GATEWAY_PORT, GATEWAY_PID and GATEWAY_DIR
# (its log, and stats.json: decision latency and statuses, written when it stops); stopped by
# PID in teardown.
gateway_start() {
  local dir tls=()
  [ "${EPP_TLS:-0}" = 1 ] && tls=(--epp-tls)
  dir=$(mktemp -d "$SCRATCH/gateway.XXXXXX")
  "$EPP_GATEWAY" --listen 127.0.0.1:0 --epp "$EPP_GRPC" "${tls[@]}" --port-file "$dir/port" \
    --stats "$dir/stats.json" "$@" > "$dir/log" 2>&1 3>&- &
  GATEWAY_PID=$!
  GATEWAY_DIR=$dir
  on_teardown "stop_pid $GATEWAY_PID"
  wait_for test -s "$dir/port" || { tail -n 3 "$dir/log" >&2; return 1; }
  GATEWAY_PORT=$(cat "$dir/port")
}

# gateway_stats: stops the gateway of the last gateway_start and prints its stats.json.
gateway_stats() {
  stop_pid "$GATEWAY_PID"
  cat "$GATEWAY_DIR/stats.json"
}
