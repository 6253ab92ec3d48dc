#!/usr/bin/env bash
# Exporter figures (issue 14's budgets; a report, never a pass/fail test): a simulated host of
# 64 cards, every card held by a pod through the fake pod-resources server; the scrape time
# from the cache (curl's time_total, median and p90 of 500 scrapes, three runs), then the
# daemon at the default 15 s period for 60 s, scraped every 15 s as Prometheus would: CPU
# (ticks of utime+stime), RSS and its parts (shared library pages vs the process' own).
# Needs root (the simulated host's device nodes).
#
#   BUILD_DIR=$PWD/build/dev [EXPORTER=$PWD/build/release/k8s/exporter/enflame-gcu-exporter] k8s/tests/exporter_bench.sh
set -euo pipefail
B=${BUILD_DIR:?set BUILD_DIR to a build with tests (fake-pod-resources, the simulator)}
EXP=${EXPORTER:-$B/k8s/exporter/enflame-gcu-exporter}
FPR=$B/k8s/tests/fake-pod-resources
CARDS=${CARDS:-64}
WINDOW=${WINDOW:-60}
T=$(mktemp -d /tmp/expb.XXXXXX)
PIDS=()   # what this script started, stopped by pid on exit
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
# poll CMD...: until CMD succeeds, every 10 ms; give up after 20 s.
poll() {
  local deadline=$(( SECONDS + 20 ))
  until "$@"; do
    (( SECONDS < deadline )) || { echo "timed out: $*" >&2; exit 1; }
    sleep 0.01
  done
}
ticks() { awk '{print $14 + $15}' "/proc/$EXP_PID/stat"; }

"$B/sim/enflame-sim-host" example --cards "$CARDS" > "$T/desc.yaml"
"$B/sim/enflame-sim-host" build --desc "$T/desc.yaml" --root "$T/host" >/dev/null
printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$T/host" "$T/host" > "$T/config.toml"
for (( i = 0; i < CARDS; i++ )); do
  "$B/sim/enflame-sim-host" telemetry --root "$T/host" --card "$i" usage=$(( i % 100 )) memory_used_mib=$(( 1024 + i )) \
    process=$(( 1000 + i )):512
done
python3 - "$CARDS" > "$T/pods.json" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps({"pod_resources": [
    {"name": f"train-{i}", "namespace": "ml", "containers": [{"name": "worker",
     "devices": [{"resource_name": "enflame.com/gcu", "device_ids": [f"TR6Y4601{i:04d}"]}]}]}
    for i in range(n)]}))
PY
"$FPR" --socket "$T/kubelet.sock" --response "$T/pods.json" 2>/dev/null & PIDS+=($!)
poll test -S "$T/kubelet.sock"
for _ in 1 2 3 4 5; do
  PORT=$(( 20000 + RANDOM % 40000 ))
  ENFLAME_CTK_CONFIG=$T/config.toml "$EXP" --web.listen-address "127.0.0.1:$PORT" \
    --pod-resources-socket "$T/kubelet.sock" > "$T/exp.log" 2>&1 & EXP_PID=$!
  PIDS+=("$EXP_PID")
  poll bash -c "curl -sf http://127.0.0.1:$PORT/healthz >/dev/null || ! kill -0 $EXP_PID 2>/dev/null"
  kill -0 "$EXP_PID" 2>/dev/null && break
  EXP_PID=
done
[ -n "$EXP_PID" ] || { echo "the exporter did not start:" >&2; cat "$T/exp.log" >&2; exit 1; }

curl -s "http://127.0.0.1:$PORT/metrics" > "$T/metrics"
echo "exposition: $(grep -vc '^#' "$T/metrics") series, $(wc -c < "$T/metrics") bytes, $CARDS cards"
for run in 1 2 3; do
  for _ in $(seq 500); do
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$PORT/metrics"
  done | sort -n | awk -v run="$run" '{ t[NR] = $1 * 1000 } END {
    printf "scrape (run %d): n=%d median_ms=%.3f p90_ms=%.3f max_ms=%.3f\n", run, NR, t[int(NR / 2) + 1], t[int(NR * 0.9)], t[NR] }'
done

# The steady state, as Prometheus sees it: a collection and a scrape every 15 s. The
# simulator's telemetry file stays: its libefml parses it once per change (keyed on inode,
# size and mtime), not once per call, so the simulator adds little the real library would not.
t0=$(ticks)
for (( s = 0; s < WINDOW; s += 15 )); do
  sleep 15
  curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics"
done
t1=$(ticks)
hz=$(getconf CLK_TCK)
echo "cpu: $(( t1 - t0 )) ticks of 1/$hz s in $WINDOW s = $(awk -v d=$(( t1 - t0 )) -v hz="$hz" -v w="$WINDOW" 'BEGIN {printf "%.3f", d / hz / w * 100}') % of a core"
echo "rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$EXP_PID/status"), threads: $(awk '/Threads/ {print $2}' "/proc/$EXP_PID/status")"
awk '/^(Pss|Shared_Clean|Private_Clean|Private_Dirty):/ {printf "%s %s kB  ", $1, $2} END {print ""}' "/proc/$EXP_PID/smaps_rollup"
