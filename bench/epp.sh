#!/bin/bash
# bench/epp.sh [ROUNDS]: what enflame-epp's routing is worth on real model servers, and what the
# EPP itself costs; a report, not a test. Three sets, each its own EPP, epp-gateway (the Envoy
# stand-in, k8s/tests/FAKES.md) and LLAMAS llama-servers (Debian sid's, tests/integration/llama.bash,
# the tiny random-weight model; --cache-ram CACHE_RAM, default 0: a server's prefix cache is
# then what its 2 slots hold, and the 8 conversations' working set is 4 times what one server
# keeps, so an uneven spread costs hits; CACHE_RAM=64 gives each server a host-memory cache that
# holds them all, so only stickiness counts):
#   epp          the EPP with its built-in default config (prefix-aware, queue and cache scorers)
#   random       the same EPP, --picker random-picker
#   round-robin  the same EPP, --picker round-robin-picker
# ROUNDS (default 5) rounds, in each every set gets the same workloads, the sets' order rotated
# (bench/epp_bench.py): shared-prefix conversations (cached / ideal tokens, latency) and a skew
# (one server kept busy: latency, requests sent to the busy one). Then the EPP's own decision
# latency: epp-gateway --drive at RATE (default 500) streams per second from DRIVERS (2)
# processes, no model server in the path, its CPU time per request and its RSS. Prints the
# tables and writes the common rows to $BENCH_JSON.
# Needs BUILD_DIR with enflame-epp and epp-gateway, and llama-server (fetched on first use).
set -eo pipefail
: "${BUILD_DIR:?BUILD_DIR must point at the build folder}"
rounds=${1:-${EPP_ROUNDS:-5}}
LLAMAS=${LLAMAS:-4}
RATE=${RATE:-500}
DRIVE_REQUESTS=${DRIVE_REQUESTS:-5000}
DRIVERS=${DRIVERS:-2}
CACHE_RAM=${CACHE_RAM:-0}
BATS_TEST_DIRNAME=$(cd "$(dirname "$0")/../tests/integration" && pwd)
skip() { echo "epp bench: skipped ($*)"; exit 0; }  # helpers.bash skip_or_fail calls it
# shellcheck source=tests/integration/helpers.bash
. "$BATS_TEST_DIRNAME/helpers.bash"
# shellcheck source=tests/integration/epp.bash
. "$BATS_TEST_DIRNAME/epp.bash"
# shellcheck source=tests/integration/llama.bash
. "$BATS_TEST_DIRNAME/llama.bash"
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# the release preset builds no test tools: the gateway stand-in then comes from the dev build
[ -x "$EPP_GATEWAY" ] || EPP_GATEWAY=$TOP/build/dev/k8s/tests/epp-gateway
# make bench builds enflame-epp but no test tool: say what is missing and measure nothing
for b in "$EPP" "$EPP_GATEWAY"; do
  [ -x "$b" ] || skip "no $b: cmake --build --preset dev --target enflame-epp epp-gateway"
done

setup_scratch
trap teardown_scratch EXIT
trap "exit 130" INT TERM
llama_setup

# start_set NAME [EPP ARGS...]: LLAMAS llama-servers NAME-0.., an EPP routing to them and a
# gateway in front of it; appends the set to $SCRATCH/sets.jsonl.
start_set() {
  local name=$1 i servers=() endpoints='' t0
  shift
  for (( i = 0; i < LLAMAS; i++ )); do
    t0=$EPOCHREALTIME
    llama_start "$name-$i" --cache-ram "$CACHE_RAM"
    echo "$LLAMA_PID" >> "$SCRATCH/pids-$name"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }' >> "$SCRATCH/start_ms"
    grep VmRSS "/proc/$LLAMA_PID/status" | awk '{ print $2 }' >> "$SCRATCH/rss_kib"
    servers+=("{\"name\": \"$name-$i\", \"port\": $LLAMA_PORT}")
    endpoints+=${endpoints:+,}127.0.0.1:$LLAMA_PORT
  done
  epp_start "$endpoints" "$@"
  # shellcheck disable=SC2119 # no extra flags
  gateway_start
  printf '%s\n' "$EPP_PID" "$GATEWAY_PID" >> "$SCRATCH/pids-$name"
  local IFS=,
  echo "{\"name\": \"$name\", \"gateway\": $GATEWAY_PORT, \"epp_pid\": $EPP_PID, \"epp_grpc\": \"$EPP_GRPC\", \"epp_metrics\": \"$EPP_METRICS\", \"servers\": [${servers[*]}]}" >> "$SCRATCH/sets.jsonl"
}

start_set epp
start_set random --picker random-picker
start_set round-robin --picker round-robin-picker

/usr/bin/python3 - "$SCRATCH" "$CACHE_RAM" <<'PY'
import json, sys
d, cache_ram = sys.argv[1:3]
sets = [json.loads(ln) for ln in open(f"{d}/sets.jsonl")]
json.dump({"sets": sets, "llama_args": f"-np 2 -c 4096 -t 1 --cache-ram {cache_ram}", "llama_start_ms": [float(x) for x in open(f"{d}/start_ms")],
           "llama_rss_kib": [int(x) for x in open(f"{d}/rss_kib")]}, open(f"{d}/topology.json", "w"))
PY
/usr/bin/python3 "$bench_dir/epp_bench.py" "$SCRATCH/topology.json" "$rounds" "$SCRATCH/rounds.json"

# The EPP's own latency: streams straight from epp-gateway --drive to the default set's EPP,
# open loop at RATE per second in all, from DRIVERS processes (one gRPC connection each, as
# Envoy opens one per worker thread: one core, one connection; a single connection tops out near
# 400 streams/s here); the model servers are only scraped, not sent anything. The other two
# sets are stopped first, so only this EPP's scrapes run beside it.
for name in random round-robin; do
  while read -r pid; do stop_pid "$pid"; done < "$SCRATCH/pids-$name"
done
/usr/bin/python3 -c 'import json; print(json.dumps({"model": "tiny", "prompt": "x" * 1200, "max_tokens": 8}))' > "$SCRATCH/body.json"
epp_grpc=$(/usr/bin/python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["epp_grpc"])' "$SCRATCH/sets.jsonl")
epp_pid=$(/usr/bin/python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["epp_pid"])' "$SCRATCH/sets.jsonl")
epp_metrics=$(/usr/bin/python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["epp_metrics"])' "$SCRATCH/sets.jsonl")
# sched_seconds: the EPP's time in the scheduler so far (its scheduling latency histogram's sum)
sched_seconds() {
  curl -sf "http://$epp_metrics/metrics" | awk '$1 == "enflame_epp_scheduling_duration_seconds_sum" { print $2 }'
}
sched_before=$(sched_seconds)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_before=$(awk '{ print $14 + $15 }' "/proc/$epp_pid/stat")
drivers=()
for (( d = 0; d < DRIVERS; d++ )); do
  "$EPP_GATEWAY" --drive $(( DRIVE_REQUESTS / DRIVERS )) --rate "$(awk -v r="$RATE" -v n="$DRIVERS" 'BEGIN { print r / n }')" \
    --body "$SCRATCH/body.json" --epp "$epp_grpc" > "$SCRATCH/drive-$d.json" &
  drivers+=($!)
done
for pid in "${drivers[@]}"; do wait "$pid"; done
cpu_after=$(awk '{ print $14 + $15 }' "/proc/$epp_pid/stat")
sched_after=$(sched_seconds)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$SCRATCH" "$epp_pid" "$load_before" "$load_after" "$(( cpu_after - cpu_before ))" \
  "$(getconf CLK_TCK)" "$(awk -v a="$sched_before" -v b="$sched_after" 'BEGIN { print b - a }')" \
  "${BENCH_JSON:-}" <<'PY'
import glob, json, sys
import benchlib as bl
d, pid, lb, la, ticks, hz, sched_s, out = sys.argv[1:9]
drives = [json.load(open(f)) for f in sorted(glob.glob(f"{d}/drive-*.json"))]
rounds = json.load(open(f"{d}/rounds.json"))
rss = next(int(ln.split()[1]) for ln in open(f"/proc/{pid}/status") if ln.startswith("VmRSS:"))
hwm = next(int(ln.split()[1]) for ln in open(f"/proc/{pid}/status") if ln.startswith("VmHWM:"))
n = sum(x["requests"] for x in drives)
rate = sum(x["rate"] for x in drives)
achieved = sum(x["achieved_rate"] for x in drives)
statuses = {}
for x in drives:
    for k, v in x["status"].items():
        statuses[k] = statuses.get(k, 0) + v
# each driver's percentiles of its own streams; the worst of them stands for the whole
worst = {k: max(x["decision_ms"][k] for x in drives) for k in ("p50", "p90", "p99", "max")}
cpu_ms = int(ticks) * 1000 / int(hz)
print(f"\nEPP decision latency, epp-gateway --drive from {len(drives)} processes: {n} streams asked at {rate:g}/s,"
      f" achieved {achieved:.0f}/s (driver lag max {max(x['late_ms_max'] for x in drives):.1f} ms); statuses {statuses}")
for i, x in enumerate(drives):
    dm = x["decision_ms"]
    print(f"  driver {i}: p50 {dm['p50']:.3f} ms  p90 {dm['p90']:.3f} ms  p99 {dm['p99']:.3f} ms  max {dm['max']:.3f} ms")
print(f"  the EPP's CPU: {cpu_ms:.0f} ms for {n} streams = {cpu_ms / n:.3f} ms a request,"
      f" of which in the scheduler {float(sched_s) * 1e6 / n:.0f} us (enflame_epp_scheduling_duration_seconds)")
print(f"EPP RSS now {rss / 1024:.1f} MiB, peak {hwm / 1024:.1f} MiB; load {lb} -> {la}")
row = bl.row("epp", f"EPP decision at {rate:g} req/s (drive)", n,
             bl.side_from("ext_proc decision (worst driver)", worst["p50"], worst["p50"], worst["p90"], hwm),
             note=f"p99 {worst['p99']:.3f} ms, achieved {achieved:.0f}/s, CPU {cpu_ms / n:.3f} ms a request")
rounds["rows"].append(row)
rounds["detail"]["drive"] = drives
rounds["detail"]["drive_epp_cpu_ms"] = cpu_ms
rounds["detail"]["drive_scheduler_s"] = float(sched_s)
rounds["detail"]["drive_load"] = [lb, la]
rounds["detail"]["epp_rss_kib"] = {"now": rss, "peak": hwm}
if out:
    json.dump(rounds, open(out, "w"), indent=1)
PY
