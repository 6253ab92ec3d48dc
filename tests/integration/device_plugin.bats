#!/usr/bin/env bats
# enflame-device-plugin against the simulated host and a fake kubelet (tests/README.md):
# build/dev/k8s/tests/fake-kubelet serves Registration on a temp kubelet.sock, dials the plugin
# back, holds ListAndWatch open and logs every event as a JSON line; its one-shot commands call
# Allocate / GetPreferredAllocation on the plugin's socket as kubelet would. A "kubelet restart"
# is what kubelet does: the process goes, and the new one deletes every socket in the folder and
# serves kubelet.sock again. End to end, the envs of an envvar Allocate go through our shim with runc, and the
# cdi_devices of a cdi-cri Allocate go to podman --device (specs in a private mount namespace,
# cdi_ns: never the host's /etc/cdi or /var/run/cdi).

load helpers
load cri
bats_require_minimum_version 1.5.0   # `run !`

DP=$BUILD_DIR/k8s/device-plugin/enflame-device-plugin
FK=$BUILD_DIR/k8s/tests/fake-kubelet

setup() {
  requires root jq
  [ -x "$DP" ] || skip_or_fail "no $DP (build enflame-device-plugin)"
  [ -x "$FK" ] || skip_or_fail "no $FK (build fake-kubelet)"
  setup_scratch
  sim_setup 4
  KDIR=$SCRATCH/k
  mkdir "$KDIR"
  SOCK=$KDIR/enflame-gcu.sock
  EV=$SCRATCH/events
  SIMDIR=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*)
  U0=TR6Y46010000 U1=TR6Y46010001 U2=TR6Y46010002 U3=TR6Y46010003
}

teardown() { teardown_scratch; }

# start_kubelet: the fake kubelet on $KDIR/kubelet.sock, events appended to $EV.
start_kubelet() {
  "$FK" serve --dir "$KDIR" --events "$EV" >>"$SCRATCH/fk.log" 2>&1 3>&- &
  KPID=$!
  on_teardown "stop_pid $KPID"
  wait_for test -S "$KDIR/kubelet.sock"
}

# start_plugin ARGS...: the daemon (health every $INTERVAL, 300 ms unless set), log in $SCRATCH/dp.log.
start_plugin() {
  "$DP" --kubelet-dir "$KDIR" --health-interval "${INTERVAL:-300ms}" "$@" >>"$SCRATCH/dp.log" 2>&1 3>&- &
  DPID=$!
  on_teardown "stop_pid $DPID"
}

# count EVENT: how many EVENT lines the fake kubelet logged.
count() { local c; c=$(grep -c "\"event\":\"$1\"" "$EV" 2>/dev/null) || true; echo "${c:-0}"; }
# at_least N EVENT: at least N EVENT lines were logged.
at_least() { [ "$(count "$2")" -ge "$1" ]; }
# health ID: the health of ID in the last ListAndWatch message.
health() { grep '"event":"list"' "$EV" | tail -1 | jq -r --arg id "$1" '.data.devices[] | select(.ID == $id) | .health'; }
is_health() { [ "$(health "$1")" = "$2" ]; }
# listed ID: some ListAndWatch message listed device ID.
listed() { jq -r 'select(.event == "list") | .data.devices[].ID' "$EV" | grep -qx -- "$1"; }
# registered: plugin and fake kubelet up, the first list received.
registered() { start_kubelet; start_plugin "$@"; wait_for at_least 1 list; }

allocate() { "$FK" allocate --socket "$SOCK" --ids "$1"; }

@test "registration: version, endpoint, resource name, options; dial-back gets options and the list" {
  registered
  run jq -c 'select(.event == "register") | .data' "$EV"
  [ "$output" = '{"version":"v1beta1","endpoint":"enflame-gcu.sock","resource_name":"enflame.com/gcu","options":{"pre_start_required":false,"get_preferred_allocation_available":true}}' ]
  [ "$(count options)" -eq 1 ]
  run jq -c 'select(.event == "list") | [.data.devices[] | [.ID, .health, .topology.nodes[0].ID]]' "$EV"
  [ "$output" = '[["TR6Y46010000","Healthy","0"],["TR6Y46010001","Healthy","0"],["TR6Y46010002","Healthy","1"],["TR6Y46010003","Healthy","1"]]' ]
  [ "$(stat -c %a "$SOCK")" = 600 ]
  run "$FK" options --socket "$SOCK"
  [ "$output" = '{"pre_start_required":false,"get_preferred_allocation_available":true}' ]
  # kubelet calls PreStartContainer only when asked to; called anyway, it answers empty and OK
  run "$FK" prestart --socket "$SOCK" --ids TR6Y46010000
  [ "$status" -eq 0 ]
  [ "$output" = '{}' ]
}

@test "--resource-name and --device-id-strategy index: registered name, index IDs, index envvar" {
  registered --resource-name example.com/accel --device-id-strategy index --device-list-strategy envvar
  run jq -r 'select(.event == "register") | .data.resource_name' "$EV"
  [ "$output" = example.com/accel ]
  run jq -c 'select(.event == "list") | [.data.devices[].ID]' "$EV"
  [ "$output" = '["0","1","2","3"]' ]
  run allocate 1,3
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -r '.envs.ENFLAME_VISIBLE_DEVICES')" = 1,3 ]
}

@test "health: a card turning unhealthy is re-sent and refused by Allocate; it recovers" {
  registered
  echo "$U1" > "$SIMDIR/enflame-sim-unhealthy"
  wait_for is_health "$U1" Unhealthy
  [ "$(health "$U0")" = Healthy ]
  run allocate "$U0,$U1"
  [ "$status" -eq 1 ]
  [ "$output" = "error: INVALID_ARGUMENT: device '$U1' is unhealthy" ]
  rm "$SIMDIR/enflame-sim-unhealthy"
  wait_for is_health "$U1" Healthy
  run allocate "$U0,$U1"
  [ "$status" -eq 0 ]
  grep -F "device $U1 is unhealthy: the driver reports it unhealthy" "$SCRATCH/dp.log"
  grep -F "device $U1 is healthy again" "$SCRATCH/dp.log"
}

@test "health: a device node that disappears makes its card Unhealthy until it is back" {
  registered
  mv "$SCRATCH/host/dev/gcu2" "$SCRATCH/host/dev/gone"
  wait_for is_health "$U2" Unhealthy
  grep -F "device $U2 is unhealthy: device node '$SCRATCH/host/dev/gcu2' is gone" "$SCRATCH/dp.log"
  mv "$SCRATCH/host/dev/gone" "$SCRATCH/host/dev/gcu2"
  wait_for is_health "$U2" Healthy
}

# The driver's events as DESIGN.md section 3 documents EfmlGetEvent's event_type (3 suspend,
# 10 reset start, 11 reset finish, 20 EID), written here once as this file's expectation and
# handed to the simulated libefml as numbers: the simulator's own table of names is not used,
# so a plugin and a simulator that agreed on a wrong number would fail here. That event_id is
# the card's index is k8s/README.md's reading of the ABI, which the documentation does not
# state: these tests cannot check it.
EV_SUSPEND=3
EV_RESET_START=10
EV_RESET_FINISH=11
EV_EID=20
# event CARD TYPE [MESSAGE]: a driver event (TYPE a number) from the simulated libefml.
event() { "$SIM_HOST" event --root "$SCRATCH/host" --card "$1" --type "$2" ${3:+--message "$3"}; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# within_2s ID HEALTH: ID's health becomes HEALTH within 2 s (the periodic pass is 30 s away).
within_2s() {
  local t0 i
  t0=$(now_ms)
  for (( i = 0; i < 40; i++ )); do
    if is_health "$1" "$2"; then break; fi
    sleep 0.05
  done
  echo "$1 became $(health "$1") after $(( $(now_ms) - t0 )) ms" >&3
  is_health "$1" "$2"
  [ $(( $(now_ms) - t0 )) -lt 2000 ]
}

@test "driver events: reset start makes a card Unhealthy in under 2 s (periodic pass 30 s); reset finish brings it back" {
  INTERVAL=30s registered
  wait_for grep -q "health: watching driver events from" "$SCRATCH/dp.log"
  [ "$(health "$U1")" = Healthy ]
  event 1 "$EV_RESET_START" "function level reset"
  within_2s "$U1" Unhealthy
  [ "$(health "$U0")" = Healthy ]
  run allocate "$U1"
  [ "$status" -ne 0 ]
  [ "$output" = "error: INVALID_ARGUMENT: device '$U1' is unhealthy" ]
  grep -F "device $U1 is unhealthy: driver event reset start: function level reset" "$SCRATCH/dp.log"
  event 1 "$EV_RESET_FINISH"
  within_2s "$U1" Healthy
  grep -F "health: driver event reset finish (11) for card 1; checking the cards again" "$SCRATCH/dp.log"
  grep -F "device $U1 is healthy again" "$SCRATCH/dp.log"
}

@test "driver events: EID holds a card Unhealthy; reset finish while the driver says unhealthy keeps it so" {
  INTERVAL=30s registered
  wait_for grep -q "health: watching driver events from" "$SCRATCH/dp.log"
  event 2 "$EV_EID" "uncorrectable ECC"
  within_2s "$U2" Unhealthy
  grep -F "device $U2 is unhealthy: driver event EID: uncorrectable ECC" "$SCRATCH/dp.log"
  echo "$U2" > "$SIMDIR/enflame-sim-unhealthy"
  event 2 "$EV_RESET_FINISH"
  wait_for grep -q "health: driver event reset finish (11) for card 2" "$SCRATCH/dp.log"
  sleep 0.5   # the re-check runs right after that line
  [ "$(health "$U2")" = Unhealthy ]
  refute_grep "device $U2 is healthy again" "$SCRATCH/dp.log"
  rm "$SIMDIR/enflame-sim-unhealthy"
  event 2 "$EV_RESET_FINISH"
  within_2s "$U2" Healthy
}

@test "driver events: a card the plugin does not know is ignored with a log line; suspend is logged only" {
  INTERVAL=30s registered
  wait_for grep -q "health: watching driver events from" "$SCRATCH/dp.log"
  # The driver names card 9 (one that came after the plugin started): one line, no change.
  # (the simulator's CLI knows only its cards: the line as its libefml reads it)
  echo "{\"card\":9,\"type\":$EV_RESET_START,\"message\":\"new card\"}" >> "$SIMDIR/enflame-sim-events.jsonl"
  wait_for grep -q "health: ignoring driver event reset start (10) for card 9: new card: no such card here" "$SCRATCH/dp.log"
  event 0 "$EV_SUSPEND"
  wait_for grep -q "health: driver event suspend (3) for card 0" "$SCRATCH/dp.log"
  stays 1 list_count_is 1
  [ "$(health "$U0")" = Healthy ]
  refute_grep "is unhealthy" "$SCRATCH/dp.log"
}

@test "driver events: the driver going away and back: no spin, no crash, events work again" {
  INTERVAL=30s registered
  wait_for grep -q "health: watching driver events from" "$SCRATCH/dp.log"
  "$SIM_HOST" driver --root "$SCRATCH/host" gone
  wait_for grep -q "health: no driver events (EfmlGetEvent failed" "$SCRATCH/dp.log"
  local before after
  before=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
  sleep 3
  after=$(awk '{print $14 + $15}' "/proc/$DPID/stat")
  echo "CPU ticks while the driver was gone 3 s: $(( after - before ))" >&3
  [ $(( after - before )) -lt 30 ]
  "$SIM_HOST" driver --root "$SCRATCH/host" back
  wait_for grep -q "health: driver events are back; checking every card" "$SCRATCH/dp.log"
  kill -0 "$DPID"
  event 3 "$EV_RESET_START"
  within_2s "$U3" Unhealthy
}

@test "EfmlGetEvent missing (efml_missing_symbols): one log line, the periodic pass still finds an unhealthy card" {
  echo "faults: {efml_missing_symbols: [EfmlGetEvent]}" >> "$SCRATCH/desc.yaml"
  rm -rf "$SCRATCH/host"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  registered
  wait_for grep -q "has no EfmlGetEvent); periodic checks only" "$SCRATCH/dp.log"
  echo "$U1" > "$SIMDIR/enflame-sim-unhealthy"
  wait_for is_health "$U1" Unhealthy
  rm "$SIMDIR/enflame-sim-unhealthy"
  wait_for is_health "$U1" Healthy
  [ "$(grep -c "has no EfmlGetEvent" "$SCRATCH/dp.log")" -eq 1 ]
}

# stays SECONDS CMD...: CMD holds every 0.1 s for SECONDS (a negative check given time to fail).
stays() {
  local i
  for (( i = 0; i < $1 * 10; i++ )); do
    "${@:2}" || { echo "after ${i}00 ms, no longer: ${*:2}"; return 1; }
    sleep 0.1
  done
}
list_count_is() { [ "$(count list)" -eq "$1" ]; }

@test "DP_DISABLE_HEALTHCHECKS=all: an unhealthy card stays Healthy, also after SIGHUP" {
  echo "$U1" > "$SIMDIR/enflame-sim-unhealthy"
  DP_DISABLE_HEALTHCHECKS=all registered
  stays 2 is_health "$U1" Healthy
  kill -HUP "$DPID"
  wait_for grep -q "SIGHUP: configuration re-read" "$SCRATCH/dp.log"
  # no list re-sent and no Unhealthy flip for 2 s after the reload (health passes every 300 ms)
  stays 2 list_count_is 1
  is_health "$U1" Healthy
  run allocate "$U1"
  [ "$status" -eq 0 ]
}

@test "Allocate: cdi-cri,cdi-annotations (default), envvar, cdi-cri, cdi-annotations, combined with --pass-device-specs" {
  # The default: the CDI names (a runtime with CDI on gives the cards with plain runc) and the
  # annotations (our shim, the legacy hook, the NRI plugin); no env, which any pod can forge.
  registered
  run allocate "$U1,$U3"
  [ "$status" -eq 0 ]
  # (a protobuf map's keys come in no fixed order: compared sorted)
  [ "$(jq -cS . <<<"$output")" = "$(jq -cS . <<<'{"envs":{},"mounts":[],"devices":[],"annotations":{"cdi.k8s.io/enflame-device-plugin_TR6Y46010001":"enflame.com/gpu=TR6Y46010001","cdi.k8s.io/enflame-device-plugin_TR6Y46010003":"enflame.com/gpu=TR6Y46010003"},"cdi_devices":[{"name":"enflame.com/gpu=TR6Y46010001"},{"name":"enflame.com/gpu=TR6Y46010003"}]}')" ]
  stop_pid "$DPID"

  start_plugin --device-list-strategy envvar
  wait_for at_least 2 list
  run allocate "$U1,$U3"
  [ "$output" = '{"envs":{"ENFLAME_VISIBLE_DEVICES":"TR6Y46010001,TR6Y46010003"},"mounts":[],"devices":[],"annotations":{},"cdi_devices":[]}' ]
  stop_pid "$DPID"

  start_plugin --device-list-strategy cdi-cri
  wait_for at_least 3 list
  run allocate "$U1,$U3"
  [ "$output" = '{"envs":{},"mounts":[],"devices":[],"annotations":{},"cdi_devices":[{"name":"enflame.com/gpu=TR6Y46010001"},{"name":"enflame.com/gpu=TR6Y46010003"}]}' ]
  stop_pid "$DPID"

  start_plugin --device-list-strategy cdi-annotations
  wait_for at_least 4 list
  run allocate "$U2"
  [ "$output" = '{"envs":{},"mounts":[],"devices":[],"annotations":{"cdi.k8s.io/enflame-device-plugin_TR6Y46010002":"enflame.com/gpu=TR6Y46010002"},"cdi_devices":[]}' ]
  stop_pid "$DPID"

  DEVICE_LIST_STRATEGY=envvar,cdi-cri,cdi-annotations start_plugin --pass-device-specs
  wait_for at_least 5 list
  run allocate "$U0"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -r '.envs.ENFLAME_VISIBLE_DEVICES')" = "$U0" ]
  [ "$(echo "$output" | jq -r '.cdi_devices[].name')" = "enflame.com/gpu=$U0" ]
  [ "$(echo "$output" | jq -r '.annotations | keys[]')" = "cdi.k8s.io/enflame-device-plugin_$U0" ]
  [ "$(echo "$output" | jq -c '.devices')" = "[{\"container_path\":\"/dev/gcu0\",\"host_path\":\"$SCRATCH/host/dev/gcu0\",\"permissions\":\"rw\"},{\"container_path\":\"/dev/gcuctl\",\"host_path\":\"$SCRATCH/host/dev/gcuctl\",\"permissions\":\"rw\"}]" ]
}

# in_spec NAME...: each name is one the spec the installer generates names (`enflame-ctk cdi
# generate` as `toolkit install` runs it, with its default --device-name-strategy).
in_spec() {
  mkdir -p "$SCRATCH/spec"
  [ -f "$SCRATCH/spec/enflame.com-gpu.yaml" ] ||
    "$CTK" cdi generate --format yaml --output "$SCRATCH/spec/enflame.com-gpu.yaml"
  local known n
  known=" $("$CTK" cdi list --spec-dir "$SCRATCH/spec" | tr '\n' ' ') "
  for n in "$@"; do
    [[ $known == *" $n "* ]] || { echo "not in the spec: $n (spec: $known)"; return 1; }
  done
}

@test "the default Allocate's CDI names are names in the installer's spec, under either ID strategy and for DRS" {
  drs_host   # cards 0 and 1 are split into DRS instances: 2 and 3 are whole
  registered
  run allocate "$U2,$U3"
  [ "$status" -eq 0 ]
  local names; names=$(echo "$output" | jq -r '.cdi_devices[].name')
  [ "$(echo "$names" | wc -l)" -eq 2 ]
  in_spec $names
  stop_pid "$DPID"

  start_plugin --device-id-strategy index --device-list-strategy envvar,cdi-cri
  wait_for listed 3
  run allocate "2,3"
  [ "$status" -eq 0 ]
  names=$(echo "$output" | jq -r '.cdi_devices[].name')
  [ "$(echo "$names" | wc -l)" -eq 2 ]
  [ "$(echo "$output" | jq -r '.envs.ENFLAME_VISIBLE_DEVICES')" = "2,3" ]
  in_spec $names
  # a DRS instance: its name in the spec is DRS-<uuid>
  run "$FK" allocate --socket "$KDIR/enflame-drs-2g.22gb.sock" --ids "$D2"
  [ "$status" -eq 0 ]
  names=$(echo "$output" | jq -r '.cdi_devices[].name')
  [ "$names" = "enflame.com/gpu=$D2" ]
  in_spec $names
}

@test "GetPreferredAllocation: must_include first, then its NUMA node; over-asking gets what exists" {
  registered
  run "$FK" preferred --socket "$SOCK" --available "$U0,$U1,$U2,$U3" --size 2
  [ "$output" = "$U0,$U1" ]
  run "$FK" preferred --socket "$SOCK" --available "$U0,$U1,$U2,$U3" --must "$U3" --size 2
  [ "$output" = "$U3,$U2" ]
  run "$FK" preferred --socket "$SOCK" --available "$U0,$U1,$U3" --size 2
  [ "$output" = "$U0,$U1" ]
  run "$FK" preferred --socket "$SOCK" --available "$U1,$U2,$U3" --size 2
  [ "$output" = "$U2,$U3" ]   # node 1 fits both; the nearest bus alone would say U1,U2
  run "$FK" preferred --socket "$SOCK" --available "$U0,$U1,$U2,$U3" --size 6
  [ "$output" = "$U0,$U1,$U2,$U3" ]
}

@test "Allocate refusals: an unknown ID among real ones, an empty request; each named, never an empty success" {
  registered
  run allocate "$U0,$U1,$U2,$U3,TR6Y46019999"
  [ "$status" -eq 1 ]
  [ "$output" = "error: NOT_FOUND: unknown device ID 'TR6Y46019999' for enflame.com/gcu" ]
  run allocate ""
  [ "$status" -eq 1 ]
  [ "$output" = "error: INVALID_ARGUMENT: no device IDs in the request" ]
}

@test "kubelet restart: sockets deleted and kubelet.sock recreated -> served and registered again" {
  registered
  stop_pid "$KPID"
  # the fake kubelet, as kubelet does, deletes every socket in the folder when it starts
  touch "$KDIR/not-a-socket"
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$KDIR/stale.sock"
  start_kubelet
  [ ! -e "$KDIR/stale.sock" ]
  [ -e "$KDIR/not-a-socket" ]
  local t0=$SECONDS
  wait_for at_least 2 register
  wait_for at_least 2 list
  wait_for test -S "$SOCK"
  echo "re-registered after $((SECONDS - t0)) s"
  grep -F "kubelet restarted: serving and registering again" "$SCRATCH/dp.log"
  [ "$(jq -c 'select(.event == "list") | .data' "$EV" | sort -u | wc -l)" -eq 1 ]
  run allocate "$U0"
  [ "$status" -eq 0 ]
}

@test "plugin restart: SIGTERM removes our socket, exits 0; the new one shows the same devices" {
  registered
  kill -TERM "$DPID"
  local st=0
  wait "$DPID" || st=$?
  [ "$st" -eq 0 ]
  [ ! -e "$SOCK" ]
  wait_for at_least 1 stream-end
  start_plugin
  wait_for at_least 2 list
  [ "$(count register)" -eq 2 ]
  [ "$(jq -c 'select(.event == "list") | .data' "$EV" | sort -u | wc -l)" -eq 1 ]
}

@test "kubelet absent at start: one log line per attempt with backoff, registers when kubelet.sock appears" {
  start_plugin
  wait_for grep -q "registering enflame.com/gcu with kubelet (attempt 1)" "$SCRATCH/dp.log"
  wait_for test -S "$SOCK"
  start_kubelet
  wait_for at_least 1 list
  grep -F "registered enflame.com/gcu with kubelet" "$SCRATCH/dp.log"
  # Backoff 1 s, 2 s, ...: in the few seconds this takes, a handful of attempts, not a spin.
  [ "$(grep -c 'registering enflame.com/gcu with kubelet (attempt' "$SCRATCH/dp.log")" -le 4 ]
  grep -F "kubelet socket '$KDIR/kubelet.sock': No such file or directory; retrying in 1 s" "$SCRATCH/dp.log"
}

@test "SIGHUP with a broken config keeps serving the old one" {
  registered
  echo 'bogus-key = 1' >> "$ENFLAME_CTK_CONFIG"
  kill -HUP "$DPID"
  wait_for grep -q "SIGHUP: keeping the running configuration" "$SCRATCH/dp.log"
  grep -F "$ENFLAME_CTK_CONFIG" "$SCRATCH/dp.log" | grep -F "bogus-key"
  run allocate "$U0"
  [ "$status" -eq 0 ]
}

# bad_input WANT ARGS...: the daemon exits 1 at once with the one line WANT and leaves no socket.
bad_input() {
  local want=$1; shift
  run -1 timeout 20 "$DP" --kubelet-dir "$KDIR" "$@"
  echo "$output"
  [ "${#lines[@]}" -eq 1 ]
  [ "$output" = "$want" ]
  [ ! -e "$SOCK" ]
}

@test "bad input: config, resource name, kubelet dir, strategies, interval; one line each, nothing served" {
  printf '[enflame-container-cli]\ndriver-root = 3\n' > "$SCRATCH/bad.toml"
  run -1 timeout 20 "$DP" --kubelet-dir "$KDIR" --config "$SCRATCH/bad.toml"
  [ "$output" = "error: $SCRATCH/bad.toml: line 2: key 'driver-root' must be a string" ]
  [ ! -e "$SOCK" ]
  bad_input "error: resource name 'kubernetes.io/gcu': the kubernetes.io and k8s.io domains are reserved" \
    --resource-name kubernetes.io/gcu
  run -1 "$DP" --kubelet-dir "$SCRATCH/nope"
  [ "$output" = "error: --kubelet-dir: socket folder '$SCRATCH/nope': No such file or directory" ]
  bad_input "error: device list strategy 'volume-mounts': want envvar, cdi-cri or cdi-annotations" \
    --device-list-strategy volume-mounts
  bad_input "error: device ID strategy 'serial': want uuid or index" --device-id-strategy serial
  bad_input "error: --health-interval 'soon': want a duration from 100ms to 24h, such as 90s or 1m30s" --health-interval soon
  DP_DISABLE_HEALTHCHECKS=some bad_input "error: DP_DISABLE_HEALTHCHECKS 'some': want all (or unset)"
  # A folder we cannot write (read-only even for root), seen in a private mount namespace.
  run -1 unshare --mount --propagation private sh -c "mount -t tmpfs -o ro tmpfs '$KDIR' && exec '$DP' --kubelet-dir '$KDIR'"
  [ "$output" = "error: --kubelet-dir: socket folder '$KDIR' is not writable: Read-only file system" ]
  local long; long=$SCRATCH/$(printf 'd%.0s' $(seq 90))
  mkdir "$long"
  run -1 "$DP" --kubelet-dir "$long"
  [[ $output == "error: --kubelet-dir: socket path '$long/enflame-gcu.sock' is "*" bytes, longer than a unix socket allows (107)" ]]
}

# --- time-slicing ---

# sharing_config FILE REPLICAS [MORE YAML LINES under timeSlicing]: a plugin config.
sharing_config() {
  local f=$1 n=$2; shift 2
  printf '%s\n' 'version: v1' 'sharing:' '  timeSlicing:' "$@" '    resources:' \
    '    - name: enflame.com/gcu' "      replicas: $n" > "$f"
}

@test "time-slicing: replicas 2, renameByDefault: enflame.com/gcu.shared, IDs <uuid>::<n>, Allocate gives each card once" {
  sharing_config "$SCRATCH/p.yaml" 2 '    renameByDefault: true'
  registered --plugin-config "$SCRATCH/p.yaml" --device-list-strategy envvar,cdi-cri
  run jq -r 'select(.event == "register") | .data.resource_name' "$EV"
  [ "$output" = enflame.com/gcu.shared ]
  run jq -c 'select(.event == "list") | [.data.devices[].ID]' "$EV"
  [ "$output" = '["TR6Y46010000::0","TR6Y46010000::1","TR6Y46010001::0","TR6Y46010001::1","TR6Y46010002::0","TR6Y46010002::1","TR6Y46010003::0","TR6Y46010003::1"]' ]
  run allocate "$U1::0,$U1::1,$U3::1"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -r '.envs.ENFLAME_VISIBLE_DEVICES')" = "$U1,$U3" ]
  run allocate "$U1::2"
  [ "$output" = "error: NOT_FOUND: unknown device ID '$U1::2' for enflame.com/gcu.shared" ]
  run "$FK" preferred --socket "$SOCK" --available "$U0::0,$U0::1,$U1::0,$U1::1" --size 2
  [ "$output" = "$U0::0,$U1::0" ]
}

@test "time-slicing: SIGHUP with a new replica count re-registers and re-lists" {
  sharing_config "$SCRATCH/p.yaml" 2
  registered --plugin-config "$SCRATCH/p.yaml"
  [ "$(jq -r 'select(.event == "list") | .data.devices | length' "$EV")" -eq 8 ]
  sharing_config "$SCRATCH/p.yaml" 3 '    renameByDefault: true'
  kill -HUP "$DPID"
  wait_for at_least 2 register
  wait_for at_least 2 list
  run jq -r 'select(.event == "register") | .data.resource_name' "$EV"
  [ "$(echo "$output" | tr '\n' ' ')" = "enflame.com/gcu enflame.com/gcu.shared " ]
  [ "$(grep '"event":"list"' "$EV" | tail -1 | jq '.data.devices | length')" -eq 12 ]
}

@test "bad plugin config: one line naming the file, the line and the key; nothing served" {
  sharing_config "$SCRATCH/p.yaml" 0
  run -1 timeout 20 "$DP" --kubelet-dir "$KDIR" --plugin-config "$SCRATCH/p.yaml"
  [ "$output" = "error: $SCRATCH/p.yaml: line 6: sharing.timeSlicing.resources[0].replicas: want a whole number from 1 to 64, got '0'" ]
  [ ! -e "$SOCK" ]
  printf 'version: v1\nsharing:\n  timeslicing: {}\n' > "$SCRATCH/p.yaml"
  run -1 timeout 20 "$DP" --kubelet-dir "$KDIR" --plugin-config "$SCRATCH/p.yaml"
  [ "$output" = "error: $SCRATCH/p.yaml: line 3: sharing.timeslicing: unknown key" ]
  PLUGIN_CONFIG=$SCRATCH/absent.yaml run -1 timeout 20 "$DP" --kubelet-dir "$KDIR"
  [ "$output" = "error: --plugin-config: opening $SCRATCH/absent.yaml: No such file or directory" ]
}

@test "scheduler: --scheduler over SCHEDULER over the plugin config's flags.scheduler" {
  local hami_err="error: --scheduler=hami: --node-name missing (set it or NODE_NAME, e.g. from the pod's spec.nodeName)"
  printf 'version: v1\nflags:\n  scheduler: hami\n' > "$SCRATCH/hami.yaml"
  printf 'version: v1\nflags:\n  scheduler: ""\n' > "$SCRATCH/none.yaml"
  # The config alone asks for HAMi mode (whose missing node name stops the plugin at once).
  NODE_NAME= run -1 timeout 20 "$DP" --kubelet-dir "$KDIR" --plugin-config "$SCRATCH/hami.yaml"
  [ "$output" = "$hami_err" ]
  NODE_NAME= SCHEDULER=hami run -1 timeout 20 "$DP" --kubelet-dir "$KDIR" --plugin-config "$SCRATCH/none.yaml"
  [ "$output" = "$hami_err" ]
  [ ! -e "$SOCK" ]
  printf 'version: v1\nflags:\n  scheduler: volcano\n' > "$SCRATCH/bad.yaml"
  run -1 timeout 20 "$DP" --kubelet-dir "$KDIR" --plugin-config "$SCRATCH/bad.yaml"
  [ "$output" = "error: $SCRATCH/bad.yaml: line 3: flags.scheduler: want hami or \"\", got 'volcano'" ]
  # The flag wins over the env and the config: kubelet's choice, one resource, as without HAMi.
  NODE_NAME= SCHEDULER=hami registered --plugin-config "$SCRATCH/hami.yaml" --scheduler ""
  run jq -r 'select(.event == "register") | .data.resource_name' "$EV"
  [ "$output" = enflame.com/gcu ]
}

# --- DRS instances ---

D0=DRS-4c1e9a52-0000-4000-8000-000000000000
D1=DRS-4c1e9a52-0000-4000-8000-000000000001
D2=DRS-4c1e9a52-0000-4000-8000-000000000002

# drs_host: the 4-card host again, with the example's DRS instances (two 1g.11gb on card 0,
# one 2g.22gb on card 1).
drs_host() {
  sim_example 4 --drs > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
}

# list_of RESOURCE: the IDs and health of RESOURCE's last ListAndWatch message.
list_of() {
  grep '"event":"list"' "$EV" | jq -c --arg r "$1" 'select(.resource == $r) | [.data.devices[] | [.ID, .health]]' | tail -1
}

@test "DRS: one resource per profile with its instances as DRS-<uuid>; split cards not advertised whole" {
  drs_host
  start_kubelet
  start_plugin --device-list-strategy envvar,cdi-cri
  wait_for at_least 3 list
  run jq -r 'select(.event == "register") | "\(.data.resource_name) \(.data.endpoint)"' "$EV"
  [ "$(echo "$output" | sort | tr '\n' ' ')" = "enflame.com/drs-1g.11gb enflame-drs-1g.11gb.sock enflame.com/drs-2g.22gb enflame-drs-2g.22gb.sock enflame.com/gcu enflame-gcu.sock " ]
  [ "$(list_of enflame.com/gcu)" = '[["TR6Y46010002","Healthy"],["TR6Y46010003","Healthy"]]' ]
  [ "$(list_of enflame.com/drs-1g.11gb)" = "[[\"$D0\",\"Healthy\"],[\"$D1\",\"Healthy\"]]" ]
  [ "$(list_of enflame.com/drs-2g.22gb)" = "[[\"$D2\",\"Healthy\"]]" ]
  run "$FK" allocate --socket "$KDIR/enflame-drs-1g.11gb.sock" --ids "$D1"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -cS .envs)" = "{\"ENFLAME_VISIBLE_DEVICES\":\"$D1\",\"TOPS_VISIBLE_DEVICES\":\"$D1\"}" ]
  # A whole card's ID is not a DRS resource's device, nor the other way round.
  run "$FK" allocate --socket "$KDIR/enflame-drs-1g.11gb.sock" --ids "$D2"
  [ "$output" = "error: NOT_FOUND: unknown device ID '$D2' for enflame.com/drs-1g.11gb" ]
  run allocate "$U0"
  [ "$output" = "error: NOT_FOUND: unknown device ID '$U0' for enflame.com/gcu" ]
  # An instance follows its card's health.
  echo 0 > "$SIMDIR/enflame-sim-unhealthy"
  wait_for eval '[ "$(list_of enflame.com/drs-1g.11gb)" = "[[\"$D0\",\"Unhealthy\"],[\"$D1\",\"Unhealthy\"]]" ]'
  [ "$(list_of enflame.com/drs-2g.22gb)" = "[[\"$D2\",\"Healthy\"]]" ]
}

@test "DRS: --no-drs (NO_DRS=true) advertises every card whole and nothing else" {
  drs_host
  NO_DRS=true registered
  run jq -r 'select(.event == "register") | .data.resource_name' "$EV"
  [ "$output" = enflame.com/gcu ]
  [ "$(list_of enflame.com/gcu | jq length)" -eq 4 ]
  [ ! -e "$KDIR/enflame-drs-1g.11gb.sock" ]
}

@test "DRS: kubelet restart re-registers every resource" {
  drs_host
  start_kubelet
  start_plugin
  wait_for at_least 3 list
  stop_pid "$KPID"
  start_kubelet   # deletes every socket, as kubelet does
  wait_for at_least 6 register
  wait_for at_least 6 list
  [ "$(jq -r 'select(.event == "register") | .data.resource_name' "$EV" | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" = "2 2 2 " ]
}

# --- end to end: the Allocate answer given to real runtimes ---

# in_shim ENV: run a busybox bundle with ENV through our shim and runc; $output lists its
# /dev/gcu* nodes, one per line, then TOPS=<value> if TOPS_VISIBLE_DEVICES is set.
in_shim() {
  oci_bundle "$SCRATCH/b" '["sh","-c","for d in /dev/gcu*; do echo ${d#/dev/}; done; case ${TOPS_VISIBLE_DEVICES:-} in ?*) echo TOPS=$TOPS_VISIBLE_DEVICES;; esac"]'
  bundle_edit "$SCRATCH/b" "c['process']['env'].append('$1')"
  local id; id=$(unique_id edp)
  on_teardown "runc --root '$SCRATCH/rr' delete -f $id >/dev/null 2>&1"
  run timeout 60 "$SHIM" --root "$SCRATCH/rr" run --bundle "$SCRATCH/b" "$id"
  echo "$output"
}

# in_podman NAME...: podman run --device NAME... with the spec `cdi generate` writes; $output
# lists the container's /dev/gcu* nodes, then TOPS=<value> as in_shim does. podman 4.3 reads
# specs only from /etc/cdi and /var/run/cdi: it runs in cdi_ns (helpers.bash), where /run is
# $SCRATCH/run, so the host's CDI folders are neither read nor written.
in_podman() {
  local devs=() n
  for n in "$@"; do devs+=(--device "$n"); done
  cdi_ns "$SCRATCH/run"
  "$CTK" cdi generate --output "$SCRATCH/run/cdi/enflame.com-gpu.yaml"
  busybox_rootfs "$SCRATCH/rootfs"
  podman_conf "$SCRATCH/containers.conf"
  local pm=(podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --tmpdir "$SCRATCH/pm/tmp")
  on_teardown "CONTAINERS_CONF='$SCRATCH/containers.conf' ${CDI_NS[*]@Q} ${pm[*]@Q} rm -af -t 0 >/dev/null 2>&1"
  # shellcheck disable=SC2016  # expanded in the container
  CONTAINERS_CONF=$SCRATCH/containers.conf run timeout 120 "${CDI_NS[@]}" "${pm[@]}" run --rm "${devs[@]}" \
    --rootfs "$SCRATCH/rootfs" sh -c 'for d in /dev/gcu*; do echo ${d#/dev/}; done; case ${TOPS_VISIBLE_DEVICES:-} in ?*) echo TOPS=$TOPS_VISIBLE_DEVICES;; esac'
  echo "$output"
}

# Allocate's answer handed by the test to one runtime, with no kubelet: what each runtime makes of
# the plugin's envs and CDI names (the shim of RuntimeClass enflame; podman's CDI). These are not
# end to end: the shipped default (kubelet, containerd, runc, cdi-cri,cdi-annotations, no RuntimeClass)
# runs in e2e.bats ("the shipped example pod"), and kubelet's hand-over of the answer to
# containerd in the containerd 1.7 test below.
@test "Allocate's envvar answer, handed to our shim (RuntimeClass enflame's path) with runc, gives exactly those /dev/gcu nodes" {
  requires runc python3
  registered --device-list-strategy envvar
  run allocate "$U1,$U3"
  [ "$status" -eq 0 ]
  local env; env=$(echo "$output" | jq -r '.envs | to_entries[] | "\(.key)=\(.value)"')
  [ "$env" = "ENFLAME_VISIBLE_DEVICES=$U1,$U3" ]
  in_shim "$env"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu1 gcu3 gcuctl " ]
}

@test "Allocate's cdi-cri names, handed to podman --device, give exactly those cards" {
  requires podman runc
  registered --device-list-strategy cdi-cri
  run allocate "$U0,$U2"
  [ "$status" -eq 0 ]
  local names; names=$(echo "$output" | jq -r '.cdi_devices[].name' | tr '\n' ' ')
  [ "$names" = "enflame.com/gpu=$U0 enflame.com/gpu=$U2 " ]
  in_podman $names
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu0 gcu2 gcuctl " ]
}

@test "Allocate's answer for time-sliced replicas, handed to the shim (envvar) and podman (cdi-cri), gives each card once" {
  requires runc podman python3
  sharing_config "$SCRATCH/p.yaml" 4
  registered --plugin-config "$SCRATCH/p.yaml" --device-list-strategy envvar,cdi-cri
  run allocate "$U2::0,$U2::3,$U3::1"
  [ "$status" -eq 0 ]
  local env names
  env=$(echo "$output" | jq -r '.envs | to_entries[] | "\(.key)=\(.value)"')
  names=$(echo "$output" | jq -r '.cdi_devices[].name' | tr '\n' ' ')
  [ "$env" = "ENFLAME_VISIBLE_DEVICES=$U2,$U3" ]
  in_shim "$env"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu2 gcu3 gcuctl " ]
  in_podman $names
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu2 gcu3 gcuctl " ]
}

# allocation_args IDS: the default Allocate for IDS as kubelet hands it to the runtime: a
# --cdi-device per cdi_devices name, an --env per env and an --annotation per annotation (the
# container's, where kubelet puts them), for in_cri_pod (cri.bash).
allocation_args() {
  local out n kv
  out=$(allocate "$1")
  ALLOC=()
  for n in $(echo "$out" | jq -r '.cdi_devices[].name'); do ALLOC+=(--cdi-device "$n"); done
  for kv in $(echo "$out" | jq -r '.envs | to_entries[] | "\(.key)=\(.value)"'); do ALLOC+=(--env "$kv"); done
  for kv in $(echo "$out" | jq -r '.annotations | to_entries[] | "\(.key)=\(.value)"'); do ALLOC+=(--annotation "$kv"); done
}
# What a pod sees: its /dev/gcu* nodes, any mount point it has twice, its libefml mounts, the env.
POD_PROBE='ls /dev | grep ^gcu; awk "{print \$5}" /proc/self/mountinfo | sort | uniq -d | sed "s/^/twice: /"; echo libefml=$(grep -c libefml /proc/self/mountinfo); echo env=$ENFLAME_VISIBLE_DEVICES'

@test "containerd 1.7 (CRI, enable_cdi): the default Allocate gives a pod exactly its cards with runc, and with the shim (RuntimeClass enflame) nothing twice" {
  requires root
  CDIR=$SCRATCH/cdi
  mkdir -p "$CDIR"
  # the spec as the installer writes it
  "$CTK" cdi generate --format yaml --output "$CDIR/enflame.com-gpu.yaml"
  cri_setup
  registered
  allocation_args "$U1,$U3"
  [ "${#ALLOC[@]}" -eq 8 ]   # two CDI names and two annotations
  # runc, containerd's default runtime: the example pod as shipped
  run in_cri_pod "${ALLOC[@]}" -- /bin/sh -c "$POD_PROBE"
  echo "$output"
  [ "$status" -eq 0 ]
  local want; want=$(echo "$output" | tr '\n' ' ')
  # exactly cards 1 and 3, libefml mounted, and the spec's env (void: the shim and the legacy
  # hook add nothing more)
  [[ $want =~ ^gcu1\ gcu3\ gcuctl\ libefml=[1-9][0-9]*\ env=void\ $ ]]
  # our shim after containerd applied the CDI devices: the same, nothing twice
  run in_cri_pod "${ALLOC[@]}" --runtime-handler enflame -- /bin/sh -c "$POD_PROBE"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "$want" ]
  # the old default (the env alone) gave the example pod under runc no card
  run in_cri_pod --env "ENFLAME_VISIBLE_DEVICES=$U1,$U3" -- /bin/sh -c "$POD_PROBE"
  [ "$(echo "$output" | tr '\n' ' ')" = "libefml=0 env=$U1,$U3 " ]
}

# --- shipping: man page, manifests, install ---

@test "man page: renders without warnings and names every flag of --help" {
  requires man
  man_covers_flags "$TOP/man/enflame-device-plugin.8" "$DP"
}

@test "deployments: the DaemonSet mounts kubelet's folder and selects enflame.com/gpu.present; the ConfigMap's configs are accepted" {
  requires python3
  local d=$TOP/deployments/device-plugin
  python3 - "$d" > "$SCRATCH/cm.json" <<'PY'
import json, sys, yaml
d = sys.argv[1]
k = yaml.safe_load(open(d + "/kustomization.yaml"))
docs = {}
for r in k["resources"]:
    doc = yaml.safe_load(open(d + "/" + r))
    docs[doc["kind"]] = doc
ds = docs["DaemonSet"]["spec"]["template"]["spec"]
assert ds["nodeSelector"] == {"enflame.com/gpu.present": "true"}, ds["nodeSelector"]
mounts = {m["mountPath"] for m in ds["containers"][0]["volumeMounts"]}
assert "/var/lib/kubelet/device-plugins" in mounts, mounts
paths = {v["hostPath"]["path"] for v in ds["volumes"] if "hostPath" in v}
assert "/var/lib/kubelet/device-plugins" in paths, paths
assert docs["ConfigMap"]["metadata"]["name"] == ds["volumes"][-1]["configMap"]["name"]
# the example pod (no RuntimeClass) gets its cards through containerd's CDI; the annotations
# (which a pod cannot set, unlike the env) for the shim, the legacy hook and the NRI plugin
env = {e["name"]: e.get("value") for e in ds["containers"][0]["env"]}
assert env["DEVICE_LIST_STRATEGY"] == "cdi-cri,cdi-annotations", env
print(json.dumps(docs["ConfigMap"]["data"]))
PY
  jq -r '."config.toml"' "$SCRATCH/cm.json" > "$SCRATCH/cm-config.toml"
  run "$CTK" --config "$SCRATCH/cm-config.toml" config
  [ "$status" -eq 0 ]
  # plugin.yaml with its sharing block switched on drives the real daemon.
  jq -r '."plugin.yaml"' "$SCRATCH/cm.json" | sed 's/^# //; s/^    # /    /' > "$SCRATCH/cm-plugin.yaml"
  grep -q 'replicas: 4' "$SCRATCH/cm-plugin.yaml"
  registered --plugin-config "$SCRATCH/cm-plugin.yaml"
  [ "$(jq -r 'select(.event == "list") | .data.devices | length' "$EV")" -eq 16 ]
}

@test "cmake --install carries the daemon, its man page and its manifests" {
  # DESTDIR: never into the real /usr or /etc (the config file's folder is absolute)
  DESTDIR=$SCRATCH/stage run cmake --install "$BUILD_DIR" --prefix /usr
  [ "$status" -eq 0 ]
  local s=$SCRATCH/stage/usr
  [ -x "$s/bin/enflame-device-plugin" ]
  [ -f "$s/share/man/man8/enflame-device-plugin.8" ]
  [ -f "$s/share/doc/enflame-container-toolkit/deployments/device-plugin/daemonset.yaml" ]
  run "$s/bin/enflame-device-plugin" --version
  [[ $output == "enflame-device-plugin "* ]]
}

@test "Allocate's answer for a DRS instance, handed to the shim (envvar) and podman (cdi-cri), gives the parent card and TOPS_VISIBLE_DEVICES" {
  requires runc podman python3
  drs_host
  registered --device-list-strategy envvar,cdi-cri
  run "$FK" allocate --socket "$KDIR/enflame-drs-2g.22gb.sock" --ids "$D2"
  [ "$status" -eq 0 ]
  local env names
  env=$(echo "$output" | jq -r '.envs.ENFLAME_VISIBLE_DEVICES')
  names=$(echo "$output" | jq -r '.cdi_devices[].name' | tr '\n' ' ')
  [ "$env" = "$D2" ]
  [ "$names" = "enflame.com/gpu=$D2 " ]
  in_shim "ENFLAME_VISIBLE_DEVICES=$env"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu1 gcuctl TOPS=$D2 " ]
  in_podman $names
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | tr '\n' ' ')" = "gcu1 gcuctl TOPS=$D2 " ]
}
