#!/usr/bin/env bats
# enflame-device-plugin with a fake kubelet: registration (options, resource name, ID strategy),
# Allocate in each device-list strategy, GetPreferredAllocation, refusals, kubelet and plugin
# restarts, kubelet absent at start, SIGHUP, bad input. The fakes and helpers: device_plugin.bash.

load helpers
load device_plugin
bats_require_minimum_version 1.5.0   # `run !`

setup() { device_plugin_setup; }
teardown() { teardown_scratch; }

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
