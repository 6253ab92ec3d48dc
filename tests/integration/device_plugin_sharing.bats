#!/usr/bin/env bats
# enflame-device-plugin sharing a card: time-slicing replicas from the plugin config (and a bad
# one), the scheduler setting, DRS instances as one resource per profile. Helpers:
# device_plugin.bash.

load helpers
load device_plugin
bats_require_minimum_version 1.5.0   # `run !`

setup() { device_plugin_setup; }
teardown() { teardown_scratch; }

# --- time-slicing ---

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
