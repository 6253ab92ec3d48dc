#!/bin/bash
# bench/epp_ab.sh EPP_A EPP_B [ROUNDS]: the ext_proc decision latency and CPU of two enflame-epp
# binaries (a change and what it replaces), in one run: both route to the same 4 fake model
# servers (k8s/tests/fake_model_server.py, vLLM metrics, scraped every 50 ms), and each round
# drives A then B with epp-gateway --drive (2 processes, 250 streams/s each, 5000 streams), so
# both see the same load. Prints p50/p99/max of the worse driver and the EPP's CPU a request per
# round, with the 1-minute load. A report, not a test.
set -eo pipefail
: "${BUILD_DIR:?BUILD_DIR must point at the build folder (for epp-gateway)}"
A=${1:?usage: epp_ab.sh EPP_A EPP_B [ROUNDS]} B=${2:?usage: epp_ab.sh EPP_A EPP_B [ROUNDS]}
ROUNDS=${3:-3}
GW=$BUILD_DIR/k8s/tests/epp-gateway
FAKE=$(cd "$(dirname "$0")/.." && pwd)/k8s/tests/fake_model_server.py
[ -x "$GW" ] || { echo "epp_ab: no $GW (cmake --build --preset dev --target epp-gateway)"; exit 1; }
d=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$d"; }
trap cleanup EXIT
python3 -c 'import json; print(json.dumps({"model": "tiny", "prompt": "x" * 1200, "max_tokens": 8}))' > "$d/body.json"
eps=
for i in 1 2 3 4; do
  mkdir "$d/fm$i"
  python3 "$FAKE" --dir "$d/fm$i" > /dev/null 2>&1 &
  pids+=($!)
  while [ ! -s "$d/fm$i/port" ]; do sleep 0.1; done
  eps+=${eps:+,}127.0.0.1:$(cat "$d/fm$i/port")
done
# start NAME BINARY: the EPP, its ext_proc port in $d/NAME.port, its PID in $d/NAME.pid
start() {
  "$2" --endpoints "$eps" --secure-serving=false --grpc-port 0 --grpc-health-port 0 \
    --metrics-port 0 > "$d/$1.log" 2>&1 &
  pids+=($!)
  echo $! > "$d/$1.pid"
  while ! grep -q ' ext_proc on ' "$d/$1.log"; do sleep 0.1; done
  sed -n 's/.* ext_proc on .*:\([0-9][0-9]*\) (.*/\1/p;T;q' "$d/$1.log" > "$d/$1.port"
  sleep 1  # the first scrape round
}
start a "$A"
start b "$B"
for r in $(seq "$ROUNDS"); do
  for s in a b; do
    pid=$(cat "$d/$s.pid")
    cpu0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    drivers=()
    for k in 0 1; do
      "$GW" --drive 2500 --rate 250 --body "$d/body.json" --epp "127.0.0.1:$(cat "$d/$s.port")" > "$d/$s-$r-$k.json" &
      drivers+=($!)
    done
    wait "${drivers[@]}"
    cpu1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    python3 - "$d" "$s" "$r" "$((cpu1 - cpu0))" "$(getconf CLK_TCK)" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
d, s, r, ticks, hz, load = sys.argv[1:7]
xs = [json.load(open(f"{d}/{s}-{r}-{k}.json")) for k in (0, 1)]
n = sum(x["requests"] for x in xs)
p = [x["decision_ms"] for x in xs]
bad = {k: v for x in xs for k, v in x["status"].items() if k != "200"}
print(f"round {r} {s.upper()}: p50 {max(q['p50'] for q in p):.3f} ms  p99 {max(q['p99'] for q in p):.3f} ms"
      f"  max {max(q['max'] for q in p):.2f} ms  CPU {int(ticks) * 1000 / int(hz) / n:.3f} ms a request"
      f"  load {load}" + (f"  non-200: {bad}" if bad else ""))
PY
  done
done
