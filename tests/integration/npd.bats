#!/usr/bin/env bats
# The real Node Problem Detector (an official v0.8.x release named by ENFLAME_NPD_BIN) with deployments/npd's monitors on a
# simulated 8-card host, no cluster: the shipped custom-plugin-monitor JSON with only its paths
# changed (the plugin copied by `enflame-ctk health --install` into $SCRATCH, the toolkit config
# and state folder in $SCRATCH) and its invoke_interval cut from 30s to 2s; the shipped
# kernel monitor read from a file instead of /dev/kmsg. A card turned unhealthy, removed or
# over temperature sets problem_gauge{type=...} to 1 within one interval, and back to 0.

load helpers
load npd
bats_require_minimum_version 1.5.0

INTERVAL=2

setup() {
  needs_npd_bin
  requires root python3 curl zstd
  setup_scratch
  [ -x "$SIM_HOST" ] || skip_or_fail "no $SIM_HOST (build enflame-sim-host)"
  NPD=$(npd_binary) || skip_or_fail "no Node Problem Detector: $NPD"
  sim_example 8 > "$SCRATCH/desc.yaml"
  printf 'faults: {}\n' >> "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  SIMDIR=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*)
  full_links "$SCRATCH/host" 8
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  printf '[enflame-container-runtime]\nspec-dirs = ["%s"]\n' "$SCRATCH/cdi" >> "$SCRATCH/config.toml"
  mkdir -p "$SCRATCH/cdi"
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml "$CTK" cdi generate --output "$SCRATCH/cdi/enflame.com-gpu.yaml"
  "$CTK" health --install "$SCRATCH/plugin" >/dev/null
}

teardown() { teardown_scratch; }

# monitor: the shipped custom-plugin monitor into $SCRATCH/mon.json, paths into $SCRATCH.
monitor() {
  monitor_config "$SCRATCH/mon.json" "$INTERVAL" "$SCRATCH/plugin" "$SCRATCH/config.toml" "$SCRATCH/state"
}

# start_npd ARGS...: NPD on a free loopback port ($PORT), no API server, stopped in teardown.
start_npd() {
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$NPD" --logtostderr --enable-k8s-exporter=false --port=0 --prometheus-address=127.0.0.1 \
    --prometheus-port="$PORT" "$@" > "$SCRATCH/npd.log" 2>&1 &
  NPD_PID=$!
  on_teardown "stop_pid $NPD_PID"
  wait_for curl -sf "http://127.0.0.1:$PORT/metrics" -o /dev/null
}

# gauge TYPE: 1 when any reason of condition TYPE is 1 in NPD's problem_gauge, else 0.
gauge() {
  curl -sf "http://127.0.0.1:$PORT/metrics" |
    awk -v t="type=\"$1\"" 'index($0, "problem_gauge{") == 1 && index($0, t) { if ($NF + 0 > v) v = $NF + 0 } END { print v + 0 }'
}

# gauge_is TYPE V SECONDS: waits (0.1 s steps) until gauge TYPE is V; fails after SECONDS.
# Prints how long it took.
gauge_is() {
  local start; start=$(date +%s%N)
  while (( ($(date +%s%N) - start) / 1000000 < $3 * 1000 )); do
    if [ "$(gauge "$1")" = "$2" ]; then
      echo "$1 -> $2 in $(( ($(date +%s%N) - start) / 1000000 )) ms"
      return 0
    fi
    sleep 0.1
  done
  echo "$1 is $(gauge "$1"), not $2, after $3 s"; tail -n 5 "$SCRATCH/npd.log"
  return 1
}

# within one interval, plus the plugin's run and a scrape
WITHIN=$((INTERVAL + 1))

@test "npd: the shipped monitor on a healthy host: every GCU condition 0, the plugin runs" {
  monitor
  start_npd --config.custom-plugin-monitor="$SCRATCH/mon.json"
  sleep $((INTERVAL + 1))
  local t
  for t in GCUDriverProblem GCUMissing GCUUnhealthy GCUEccErrors GCUOverTemperature GCUPCIeLinkDegraded GCUCDISpecStale; do
    curl -sf "http://127.0.0.1:$PORT/metrics" | grep -F "type=\"$t\"" | grep -q '^problem_gauge'
    [ "$(gauge $t)" = 0 ]
  done
  run ! grep -iE 'error in starting plugin|timeout when running' "$SCRATCH/npd.log"
}

@test "npd: a card turned unhealthy sets GCUUnhealthy within one interval, and clears" {
  monitor
  start_npd --config.custom-plugin-monitor="$SCRATCH/mon.json"
  gauge_is GCUUnhealthy 0 "$WITHIN"
  echo 5 > "$SIMDIR/enflame-sim-unhealthy"
  gauge_is GCUUnhealthy 1 "$WITHIN"
  grep -F 'GCU 5 is unhealthy (libefml)' "$SCRATCH/npd.log"
  rm "$SIMDIR/enflame-sim-unhealthy"
  gauge_is GCUUnhealthy 0 "$WITHIN"
}

@test "npd: a card removed sets GCUMissing within one interval, and clears when it is back" {
  monitor
  start_npd --config.custom-plugin-monitor="$SCRATCH/mon.json"
  gauge_is GCUMissing 0 "$WITHIN"
  sleep "$INTERVAL"   # the devices check has recorded the 8 cards
  cp "$SCRATCH/desc.yaml" "$SCRATCH/desc8.yaml"
  sim_rebuild "$SCRATCH/desc.yaml" "$SCRATCH/host" "del d['cards'][7]"
  gauge_is GCUMissing 1 "$WITHIN"
  grep -F 'GCU 0000:17:00.0 is gone from the PCI bus' "$SCRATCH/npd.log"
  sim_host "$SCRATCH/desc8.yaml" "$SCRATCH/host" >/dev/null
  full_links "$SCRATCH/host" 8
  gauge_is GCUMissing 0 "$WITHIN"
}

@test "npd: a card over temperature sets GCUOverTemperature within one interval, and clears" {
  monitor
  start_npd --config.custom-plugin-monitor="$SCRATCH/mon.json"
  gauge_is GCUOverTemperature 0 "$WITHIN"
  "$SIM_HOST" telemetry --root "$SCRATCH/host" --card 6 temperature=96
  gauge_is GCUOverTemperature 1 "$WITHIN"
  grep -F 'GCU 6 (0000:16:00.0) at 96 C, over 85 C' "$SCRATCH/npd.log"
  "$SIM_HOST" telemetry --root "$SCRATCH/host" --card 6 temperature=60
  gauge_is GCUOverTemperature 0 "$WITHIN"
}

@test "npd: the shipped kernel monitor turns enflame AER lines into events and a fatal one into a condition" {
  python3 - "$TOP/deployments/npd/enflame-kernel-monitor.json" "$SCRATCH/kern.json" "$SCRATCH/kern.log" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
# the same rules over a syslog-style file instead of /dev/kmsg
m["plugin"] = "filelog"
m["logPath"] = sys.argv[3]
m["lookback"] = "0"
m["pluginConfig"] = {"timestamp": "^.{15}", "message": "kernel: \\[.*\\] (.*)", "timestampFormat": "Jan _2 15:04:05"}
json.dump(m, open(sys.argv[2], "w"))
PY
  : > "$SCRATCH/kern.log"
  start_npd --config.system-log-monitor="$SCRATCH/kern.json"
  sleep 1
  kline() { echo "$(LC_ALL=C date '+%b %e %H:%M:%S') host kernel: [ 12.345678] $1" >> "$SCRATCH/kern.log"; }
  kline "enflame 0000:10:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"
  kline "nvme 0000:02:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)"
  wait_for sh -c "curl -sf http://127.0.0.1:$PORT/metrics | grep -Fx 'problem_counter{reason=\"GCUPCIeCorrected\"} 1'"
  [ "$(gauge GCUPCIeFatalError)" = 0 ]   # another device's fatal error is not ours
  kline "enflame 0000:11:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)"
  gauge_is GCUPCIeFatalError 1 5
}
