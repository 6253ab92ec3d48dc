#!/usr/bin/env bats
# The DRA plugin's ResourceSlices on a real one-node Kubernetes (tests/cluster/cluster.sh) under
# faults: kubelet restarted many times in a row (its startup wipe of the node's slices runs in
# the background and may land after the publish its plugin registration asked for) and a
# `kubectl delete resourceslice` by hand. Each time the slices must be back within 2 s of their
# deletion: the plugin watches them (resync is 60 s). Also the plugin's idle CPU with the
# watch open. Set up as e2e.bats does: `make images`, the archive imported, the shipped
# overlays/dra-v1beta1 with only tests/cluster/overlay.sh's changes. One cluster for the file;
# one cluster at a time on a machine (ports, the pod network).

load helpers
load one_node_cluster
bats_require_minimum_version 1.5.0

DRIVER=gcu.enflame.com
NS=enflame-system

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  export CD; CD=$(cluster_dir cdra 2)
  cluster_up "$CD" images "$TOP/build/images/enflame-toolkit.oci.tar"
  cluster_overlay "$CD" dra overlays/dra-v1beta1
  cluster_apply "$CD" dra
  ds_ready >&2
}

teardown_file() {
  [ -z "${WATCH_PID:-}" ] || stop_pid "$WATCH_PID"
  cluster_down "${CD:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$CD/cluster/env" ] || skip "the cluster is not up"
}

kc() { "$KUBECTL" "$@"; }
SLICES=/apis/resource.k8s.io/v1beta1/resourceslices
ours() { echo "fieldSelector=spec.nodeName=$NODE_NAME,spec.driver=$DRIVER"; }
# devices: the device names of this node's slices of our driver, sorted, one line.
devices() { kc get --raw "$SLICES?$(ours)" | jq -r '[.items[].spec.devices[]?.name] | sort | join(" ")'; }
has_devices() { [ "$(devices)" = "gcu-0 gcu-1" ]; }

# start_events: a watch on this node's slices like the plugin's, each event line stamped with
# the time it arrived ("<epoch s> <json>") in $CD/events.log.
start_events() {
  local rv
  rv=$(kc get --raw "$SLICES?$(ours)" | jq -r .metadata.resourceVersion)
  kc get --raw "$SLICES?watch=1&timeoutSeconds=600&resourceVersion=$rv&$(ours)" 2> "$CD/events.err" |
    python3 -u -c 'import sys, time
for line in sys.stdin:
    print("%.3f %s" % (time.time(), line), end="", flush=True)' > "$CD/events.log" 3>&- &
  WATCH_PID=$!
}

# gaps: for each DELETED event in events.log, the seconds until that slice was ADDED again
# ("name deleted_at gap", gap "never" when it was not).
gaps() {
  python3 - "$CD/events.log" <<'PY'
import json, sys
events = []
for line in open(sys.argv[1]):
    t, _, body = line.partition(" ")
    e = json.loads(body)
    events.append((float(t), e["type"], e["object"]["metadata"]["name"]))
for i, (t, kind, name) in enumerate(events):
    if kind != "DELETED":
        continue
    back = next((t2 for t2, k2, n2 in events[i + 1:] if k2 == "ADDED" and n2 == name), None)
    print(name, "%.3f" % t, "never" if back is None else "%.3f" % (back - t))
PY
}

# worst_gap: the longest gap (fails when a deleted slice never came back).
worst_gap() {
  gaps | awk '$3 == "never" { bad = 1 } $3 > w { w = $3 } END { if (bad) exit 1; printf "%.3f\n", w }'
}

@test "cluster DRA: the API server serves the watch's field selectors (spec.nodeName, spec.driver) and the plugin published the node's cards" {
  wait_for has_devices
  run kc get --raw "$SLICES?fieldSelector=spec.nodeName=no-such-node,spec.driver=$DRIVER"
  [ "$status" -eq 0 ]
  jq -e '.items | length == 0' <<<"$output"
  run kc get --raw "$SLICES?$(ours)"
  [ "$status" -eq 0 ]
  jq -e '.items | length >= 1' <<<"$output"
  # the plugin logged its watch and no watch error (RBAC allows it, the selector is served)
  run kc -n "$NS" logs ds/enflame-dra-plugin
  [[ $output != *"ResourceSlice watch:"* ]]
}

@test "cluster DRA: kubelet restarted 5 times in a row: each time the node's ResourceSlices are back within 2 s of their deletion" {
  wait_for has_devices
  start_events
  local i n
  for i in 1 2 3 4 5; do
    "$TOP/tests/cluster/cluster.sh" restart-kubelet "$CD/cluster"
    wait_for has_devices
  done
  sleep 2  # the last wipe may land after Ready; its re-publish within 2 s
  wait_for has_devices
  gaps
  # kubelet's startup wipe deleted them (a kubelet stopped again before its background wipe
  # ran deletes nothing, so not necessarily 5 times; without any this test shows nothing)
  n=$(gaps | wc -l)
  echo "deletions seen: $n"
  [ "$n" -ge 1 ]
  run worst_gap
  echo "worst time from deletion to back: $output s"
  [ "$status" -eq 0 ]
  [[ $(awk -v g="$output" 'BEGIN { print (g < 2) }') == 1 ]]
}

@test "cluster DRA: kubectl delete resourceslice by hand: back within 2 s" {
  wait_for has_devices
  local before name
  before=$(gaps | wc -l)
  name=$(kc get resourceslices -o json | jq -r --arg n "$NODE_NAME" '[.items[] | select(.spec.nodeName == $n)][0].metadata.name')
  run kc delete resourceslice "$name"
  [ "$status" -eq 0 ]
  sleep 2.5
  has_devices
  [ "$(gaps | wc -l)" -gt "$before" ]
  gaps | tail -n 1
  run worst_gap
  echo "worst: $output s"
  [ "$status" -eq 0 ]
  [[ $(awk -v g="$output" 'BEGIN { print (g < 2) }') == 1 ]]
}

# plugin_pid: the host PID of the plugin's process (the one talking to this cluster's API server).
plugin_pid() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = /usr/bin/enflame-dra-plugin ] || continue
    tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qx "KUBERNETES_SERVICE_PORT=$APISERVER_PORT" || continue
    echo "${p#/proc/}"
    return 0
  done
  return 1
}
# cpu_ns PID: the CPU time of every thread of PID so far, in ns (the scheduler's own count in
# /proc/PID/task/*/schedstat; utime+stime are 10 ms ticks charged to whoever runs when the tick
# comes, so a few ms of work can show as two ticks, as a full run under load once did)
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ n += $1 } END { print n }'; }

@test "cluster DRA: idle with the watch open, the plugin uses at most 30 ms of CPU in 30 s (0.1 % of a core)" {
  wait_for has_devices
  local pid t0 t1 try ok=""
  pid=$(plugin_pid)
  echo "plugin pid $pid"
  sleep 1
  # measured with the scheduler's count: 13-17 ms per 30 s on a loaded machine (its threads'
  # timers, not examined further; the old check of at most one 10 ms tick passed by the ticks'
  # sampling); a client that listed the API server every second would spend more. Two 30 s
  # windows at most: a poller or a busy loop exceeds both, a loaded machine slows down one
  for try in 1 2; do
    t0=$(cpu_ns "$pid")
    sleep 30
    t1=$(cpu_ns "$pid")
    echo "# plugin $pid, window $try: $(( (t1 - t0) / 1000 )) us of CPU in 30 s idle" >&3
    if [ $(( t1 - t0 )) -le 30000000 ]; then ok=$try; break; fi
  done
  [ -n "$ok" ]
}
