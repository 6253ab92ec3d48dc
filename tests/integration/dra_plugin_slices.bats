#!/usr/bin/env bats
# enflame-dra-plugin's ResourceSlices on the fake API server: published at start, kubelet's
# startup wipe undone, cards leaving on ill health and driver events, the golden slices with and
# without partitionable devices. Helpers: dra_plugin.bash.

load helpers
load dra_plugin
bats_require_minimum_version 1.5.0   # `run !`

setup() { dra_plugin_setup; }
teardown() { teardown_scratch; }

# wipe_slices: what kubelet's startup wipe does, node1's slices of our driver deleted.
wipe_slices() {
  local n
  for n in $(api GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=node1" | jq -r '.items[].metadata.name'); do
    api DELETE "/apis/resource.k8s.io/v1/resourceslices/$n" >/dev/null
  done
}

# back_within SECONDS DEVICES: the slices offer DEVICES again within SECONDS (prints the time).
back_within() {
  local t0 i
  t0=$(date +%s%N)
  for (( i = 0; i < $1 * 20; i++ )); do
    if has_slices "$2"; then echo "back in $(( ($(date +%s%N) - t0) / 1000000 )) ms"; return 0; fi
    sleep 0.05
  done
  echo "not back within $1 s: '$(slice_devices)'" >&2
  return 1
}

@test "ResourceSlices: published at start (without counters, a card split into DRS instances as its instances); kubelet's startup wipe landing after its registration's publish is undone within 2 s (watch, resync 60 s); SIGTERM removes them" {
  UP_API=--no-partitionable up 2 --drs
  local want="gcu-0-drs-0 gcu-0-drs-1 gcu-1-drs-0" r
  wait_for has_slices "$want"
  run api GET "/apis/resource.k8s.io/v1/resourceslices"
  [ "$(jq -r '[.items[].spec.pool.name] | unique | join(" ")' <<<"$output")" = node1 ]
  [ "$(jq -r '.items[0].spec.devices[] | select(.name == "gcu-0-drs-1") | .attributes.profile.string' <<<"$output")" = 1g.11gb ]
  # kubelet restarting, three times: it registers the plugin (which publishes; nothing changed,
  # so nothing is written), and only then does its wipe of the node's slices, which runs in the
  # background, land. The sockets stay: kubelet deletes no socket in plugins_registry.
  for r in 1 2 3; do
    "$FDK" register --registry "$REG" >/dev/null
    wait_for registered "$r"
    sleep 0.3  # the publish it triggered has listed the slices and found nothing to do
    wipe_slices
    back_within 2 "$want"
  done
  # each time the watch saw the wipe (the next resync is 60 s away)
  [ "$(grep -c "deleted by someone else: publishing again" "$SCRATCH/dra.log")" -ge 3 ]
  # someone deleting one slice by hand: the same
  api DELETE "/apis/resource.k8s.io/v1/resourceslices/$(api GET /apis/resource.k8s.io/v1/resourceslices | jq -r '.items[0].metadata.name')" >/dev/null
  back_within 2 "$want"
  test -S "$REG/gcu.enflame.com-reg.sock"
  stop_pid "$DPID"
  [ "$(slice_devices)" = "" ]
}

@test "ResourceSlices: a card turning unhealthy leaves them within --resync, and comes back when it recovers" {
  sim_setup 2
  start_api
  start_plugin --resync 5
  wait_for has_slices "gcu-0 gcu-1"
  local sim i
  sim=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*)
  echo TR6Y46010001 > "$sim/enflame-sim-unhealthy"
  for (( i = 0; i < 80 && $(slice_devices | wc -w) != 1; i++ )); do sleep 0.25; done
  [ "$(slice_devices)" = "gcu-0" ]
  rm "$sim/enflame-sim-unhealthy"
  for (( i = 0; i < 80 && $(slice_devices | wc -w) != 2; i++ )); do sleep 0.25; done
  [ "$(slice_devices)" = "gcu-0 gcu-1" ]
}

# The driver's reset-start event (EfmlGetEvent's event_type 10, docs/efsmi-model.md, libefml).
EV_RESET_START=10
@test "ResourceSlices: a driver event publishes at once (within 2 s, resync 60 s): a card libefml calls unhealthy at that moment leaves them" {
  sim_setup 2
  start_api
  start_plugin --resync 60
  wait_for has_slices "gcu-0 gcu-1"
  wait_for grep -q "registration socket .* is up" "$SCRATCH/dra.log"
  local sim i
  sim=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*)
  echo TR6Y46010001 > "$sim/enflame-sim-unhealthy"
  # without an event nothing looks before the resync: still both after 2 s
  sleep 2
  [ "$(slice_devices)" = "gcu-0 gcu-1" ]
  "$SIM_HOST" event --root "$SCRATCH/host" --card 1 --type "$EV_RESET_START" --message "function level reset"
  for (( i = 0; i < 20 && $(slice_devices | wc -w) != 1; i++ )); do sleep 0.1; done
  [ "$(slice_devices)" = "gcu-0" ]
  grep -F "driver event on card 1 (type 10: function level reset): publishing ResourceSlices again" "$SCRATCH/dra.log"
  rm "$sim/enflame-sim-unhealthy"
  "$SIM_HOST" event --root "$SCRATCH/host" --card 1 --type 11
  for (( i = 0; i < 20 && $(slice_devices | wc -w) != 2; i++ )); do sleep 0.1; done
  [ "$(slice_devices)" = "gcu-0 gcu-1" ]
}

# slices_now: node1's slices as the server stores them, without what the server made up
# (resourceVersion, uid, creationTimestamp), by name.
slices_now() {
  api GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=node1,spec.driver=gcu.enflame.com" |
    jq -S '[.items[] | {apiVersion, kind, metadata: {name: .metadata.name, ownerReferences: .metadata.ownerReferences}, spec}] | sort_by(.metadata.name)'
}

# same_as_golden GOT GOLDEN: diff; with ENFLAME_UPDATE_GOLDEN=1 the golden file is rewritten and
# the test fails (a rewritten golden never approves itself: a person reviews the diff).
same_as_golden() {
  if [ "${ENFLAME_UPDATE_GOLDEN:-}" = 1 ]; then
    cp "$1" "$2"
    echo "rewrote $2" >&2
    return 1
  fi
  diff -u "$2" "$1"
}

@test "ResourceSlices golden: the daemon (DRS auto) against a 1.34 server publishes counters; against one without the feature gate, the existing instances, and no stored generation ever had partitions without counters (a dryRun=All probe first)" {
  local golden=$TOP/tests/fixtures/dra
  UP_API= up 2 --drs
  wait_for has_slices "$(placements 0) $(placements 1)"
  slices_now > "$SCRATCH/counters.json"
  same_as_golden "$SCRATCH/counters.json" "$golden/slices-auto-counters.json"
  stop_pid "$DPID"
  stop_pid "$APID"
  rm -rf "$API" && mkdir -p "$API/claims"
  start_api --no-partitionable
  start_plugin
  wait_for has_slices "gcu-0-drs-0 gcu-0-drs-1 gcu-1-drs-0"
  slices_now > "$SCRATCH/instances.json"
  same_as_golden "$SCRATCH/instances.json" "$golden/slices-auto-no-counters.json"
  # Not for one generation did the server store a partition without its counters (the
  # scheduler would have offered it and the whole card independently): the plugin asked with
  # one dryRun=All create, which stores nothing, and published instances from its first write.
  [ -s "$API/stored.jsonl" ]
  run jq -s '[.[] | .spec.devices[]? | select(.name | test("^gcu-[0-9]+-[0-9]+g-")) | select(has("consumesCounters") | not) | .name]' "$API/stored.jsonl"
  [ "$status" -eq 0 ]
  [ "$output" = "[]" ]
  run jq -s -e 'length == 1 and (.[0].body.spec | has("sharedCounters"))' "$API/dryruns.jsonl"
  [ "$status" -eq 0 ]
  grep -F "drops counter sets (a dryRun=All create; DRAPartitionableDevices off): publishing DRS instances" "$SCRATCH/dra.log"
}
