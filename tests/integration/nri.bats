#!/usr/bin/env bats
# enflame-nri-plugin (issue 27) against real containerd 1.7 from Debian 13 with NRI enabled,
# containers started through its CRI as kubelet starts them (fake-cri), runc as the runtime:
# no shim anywhere on the path, the cards come from the plugin's adjustment alone. containerd
# runs in a private mount namespace (cri.bash); its NRI socket, plugin folders and every file are
# under $SCRATCH; the cards are the simulated host's ($SCRATCH/host/dev, real device nodes).

load helpers
load cri
bats_require_minimum_version 1.5.0   # `run !`

NRI=$BUILD_DIR/k8s/nri/enflame-nri-plugin

setup() {
  requires root jq
  [ -x "$NRI" ] || skip_or_fail "no $NRI (build enflame-nri-plugin)"
  [ -x "$BUILD_DIR/k8s/tests/fake-cri" ] || skip_or_fail "no fake-cri (build fake-cri)"
  setup_scratch
  CDIR=$SCRATCH/cdi   # no spec there: containerd's own CDI gives nothing, the plugin everything
  mkdir -p "$CDIR" "$SCRATCH/nri/plugins" "$SCRATCH/nri/conf.d"
  NRI_SOCK=$SCRATCH/nri/nri.sock
}

teardown() { teardown_scratch; }

# nri_containerd_up: sim host of 3 cards, containerd 1.7 (cri_setup) restarted with NRI enabled
# on $NRI_SOCK and the plugin folder $SCRATCH/nri/plugins, and its own CDI off.
nri_containerd_up() {
  sim_setup 3
  cri_setup
  # CDI annotations are the plugin's, not containerd's own CDI (which would refuse a name with no
  # spec in its folders before NRI is called)
  sed -i 's/^  enable_cdi = true$/  enable_cdi = false/' "$SCRATCH/ctrd/config.toml"
  grep -q '^  enable_cdi = false$' "$SCRATCH/ctrd/config.toml"
  cat >> "$SCRATCH/ctrd/config.toml" <<TOML
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  disable_connections = false
  socket_path = "$NRI_SOCK"
  plugin_path = "$SCRATCH/nri/plugins"
  plugin_config_path = "$SCRATCH/nri/conf.d"
  plugin_request_timeout = "2s"
TOML
  restart_containerd
}

# restart_containerd: containerd stopped and started again (its NRI socket is removed and made anew).
restart_containerd() {
  cri_restart
  wait_for test -S "$NRI_SOCK"
}

# start_nri [FLAG]...: the plugin, external, on $NRI_SOCK; waits until containerd has it.
start_nri() {
  local n
  n=$(grep -c 'registered as' "$SCRATCH/nri.log" 2>/dev/null || true)
  "$NRI" --socket "$NRI_SOCK" --retry-interval 0.2 "$@" >>"$SCRATCH/nri.log" 2>&1 3>&- &
  NRI_PID=$!
  on_teardown "stop_pid $NRI_PID"
  wait_for registered_more_than "${n:-0}"
}
registered_more_than() { [ "$(grep -c 'registered as' "$SCRATCH/nri.log" 2>/dev/null)" -gt "$1" ]; }

# What a container sees of the cards: its /dev/gcu* nodes (name and major:minor) and, for every
# card and gcuctl, whether the device cgroup lets it open one (DEVICE_OPEN, helpers.bash).
PROBE="for d in /dev/gcu*; do [ -c \"\$d\" ] && echo \"node \${d#/dev/}\"; done; $DEVICE_OPEN; echo end"

# only_cards N...: the probe's $output shows gcuctl and exactly the cards N... as nodes, the
# device cgroup allows exactly those and denies the others.
only_cards() {
  echo "$output"
  [ "$status" -eq 0 ]
  local want n
  want=$({ echo "node gcuctl"; for n in "$@"; do echo "node gcu$n"; done; } | sort | tr '\n' ' ')
  [ "$(grep '^node ' <<<"$output" | sort | tr '\n' ' ')" = "$want" ]
  for n in 0 1 2; do
    if [[ " $* " == *" $n "* ]]; then
      [[ "$output" == *"open gcu$n: allowed"* ]]
    else
      [[ "$output" == *"open gcu$n: denied"* || "$output" == *"open gcu$n: absent"* ]]
    fi
  done
  [[ "$output" == *"open gcuctl: allowed"* ]]
}

@test "nri: containerd 1.7 + runc, no shim: each request form gives exactly its cards (nodes and device cgroup), others absent" {
  nri_containerd_up
  start_nri
  # ENFLAME_VISIBLE_DEVICES as a device plugin's Allocate sets it (CRI envs)
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=1 -- /bin/sh -c "$PROBE"
  only_cards 1
  # two cards by index and by GCU name
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=0,GCU-2 -- /bin/sh -c "$PROBE"
  only_cards 0 2
  # our CDI name in a cdi.k8s.io annotation (the device plugin's cdi-annotations strategy)
  run in_cri_pod --annotation cdi.k8s.io/enflame-device-plugin_x=enflame.com/gpu=2 -- /bin/sh -c "$PROBE"
  only_cards 2
  # no request: nothing at all
  run in_cri_pod -- /bin/sh -c "$PROBE"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = end ]
  grep -q 'container c (pod default/fake-cri-pod): ENFLAME_VISIBLE_DEVICES: ' "$SCRATCH/nri.log"
}

@test "nri attack matrix, the installer's config: env all from the spec or the image, another vendor's name, CDI annotations on the pod give nothing; the device plugin's annotation for card 1 with env all gives exactly card 1" {
  nri_containerd_up
  # the toolkit config as the installer writes it on a node
  printf '[enflame-container-runtime]\naccept-envvar-when-unprivileged = false\n' >> "$SCRATCH/config.toml"
  start_nri
  cri_image_with_env localhost/attack-env:latest ENFLAME_VISIBLE_DEVICES=all
  other_vendor_spec "$SCRATCH/cdi"
  local args
  for args in "--env ENFLAME_VISIBLE_DEVICES=all" "--env ENFLAME_VISIBLE_DEVICES=0,1,2" \
              "--env ENFLAME_VISIBLE_DEVICES=othervendor.com/gpu=all" \
              "--pod-annotation cdi.k8s.io/mine=enflame.com/gpu=all"; do
    # shellcheck disable=SC2086
    run in_cri_pod $args -- /bin/sh -c "cat /other.txt 2>/dev/null; $PROBE"
    echo "$args: $output"
    [ "$status" -eq 0 ]
    [ "$output" = end ]
  done
  CRI_IMAGE=localhost/attack-env:latest run in_cri_pod -- /bin/sh -c "$PROBE"
  [ "$status" -eq 0 ]
  [ "$output" = end ]
  # a pod the device plugin gave card 1 (kubelet's container annotation) raising it to all
  run in_cri_pod --annotation cdi.k8s.io/enflame-device-plugin_x=enflame.com/gpu=1 \
    --env ENFLAME_VISIBLE_DEVICES=all -- /bin/sh -c "$PROBE"
  only_cards 1
  CRI_IMAGE=localhost/attack-env:latest run in_cri_pod \
    --annotation cdi.k8s.io/enflame-device-plugin_x=enflame.com/gpu=1 -- /bin/sh -c "$PROBE"
  only_cards 1
}

@test "nri: a request the plugin cannot satisfy fails the container's creation, naming the device" {
  nri_containerd_up
  start_nri
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=7 -- /bin/sh -c "$PROBE"
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"error: CreateContainer: "*"enflame-nri-plugin: container c (pod default/fake-cri-pod): "*"'7'"* ]]
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=x1 -- /bin/true
  [ "$status" -eq 125 ]
  [[ "$output" == *"ENFLAME_VISIBLE_DEVICES: bad entry 'x1'"* ]]
  # the plugin is still connected: the next one gets its card
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=0 -- /bin/sh -c "$PROBE"
  only_cards 0
}

@test "nri: containerd restarted mid-way: the plugin reconnects and the next container gets its card" {
  nri_containerd_up
  start_nri
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=0 -- /bin/sh -c "$PROBE"
  only_cards 0
  restart_containerd
  wait_for registered_more_than 1
  kill -0 "$NRI_PID"   # the same process
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=2 -- /bin/sh -c "$PROBE"
  only_cards 2
}

@test "nri: the plugin killed: a container asking a card gets none, one asking none starts" {
  nri_containerd_up
  start_nri
  kill -KILL "$NRI_PID"
  wait "$NRI_PID" 2>/dev/null || true
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=1 -- /bin/sh -c "$PROBE"
  echo "$output"
  # containerd 1.7 (NRI 0.6.1) has no required plugins: it creates the container without the
  # plugin. No card reaches it: no node, and the device cgroup denies every card.
  [ "$status" -eq 0 ]
  [ "$output" = end ]
  run in_cri_pod -- /bin/sh -c "echo started"
  [ "$status" -eq 0 ]
  [ "$output" = started ]
}

# lock_held FILE: some process holds an open-file-description read lock on FILE, as the kernel
# lists it in /proc/locks (by the file's inode); lock_free FILE: none does.
lock_held() {
  local ino; ino=$(stat -c %i "$1") || return 1
  grep -Eq "OFDLCK +ADVISORY +READ +[-0-9]+ [0-9a-f]+:[0-9a-f]+:$ino " /proc/locks
}
lock_free() { ! lock_held "$1"; }

@test "nri: --lock-file held while registered, through a containerd restart; released --lock-grace after containerd stays away; gone with the process" {
  nri_containerd_up
  local lock=$SCRATCH/run/enflame/nri-plugin.lock
  mkdir "$SCRATCH/run"   # as /var/run: the plugin makes only the last folder
  start_nri --lock-file "$lock" --lock-grace 2
  wait_for lock_held "$lock"
  [ "$(stat -c %a "$SCRATCH/run/enflame")" = 755 ]
  grep -q "holding $lock" "$SCRATCH/nri.log"
  # a restart is not the plugin gone: held throughout, and after the reconnection
  restart_containerd
  wait_for registered_more_than 1
  lock_held "$lock"
  # containerd away for longer than the grace: released, so a device plugin with --require-nri
  # no longer allocates cards no one would inject
  stop_pid "$CTRD_PID"
  lock_held "$lock"
  wait_for lock_free "$lock"
  grep -q "released $lock: not registered with the runtime for 2s" "$SCRATCH/nri.log"
  # containerd back: held again
  cri_start
  wait_for ctr_up
  wait_for registered_more_than 2
  wait_for lock_held "$lock"
  # the plugin killed: the kernel drops it at once
  kill -KILL "$NRI_PID"
  wait "$NRI_PID" 2>/dev/null || true
  lock_free "$lock"
}

# nri_request_timeout T: containerd's NRI request timeout set to T, containerd restarted. At 1ns
# its Configure call times out before any plugin can answer: it drops every plugin that registers.
nri_request_timeout() {
  sed -i "s/^  plugin_request_timeout = .*/  plugin_request_timeout = \"$1\"/" "$SCRATCH/ctrd/config.toml"
  grep -q "^  plugin_request_timeout = \"$1\"$" "$SCRATCH/ctrd/config.toml"
  restart_containerd
}
# refused_more_than N: containerd has dropped a plugin at its start more than N times (when its
# Configure wins the race, its Synchronize is late).
refused() { grep -cE 'failed to (start external|synchronize) plugin' "$SCRATCH/ctrd/containerd.log" || true; }
refused_more_than() { [ "$(refused)" -gt "$1" ]; }

@test "nri: --lock-file only while containerd has the plugin: never while it refuses every registration; refused attempts do not keep it past --lock-grace" {
  nri_containerd_up
  local lock=$SCRATCH/run/enflame/nri-plugin.lock n
  mkdir "$SCRATCH/run"
  start_nri --lock-file "$lock" --lock-grace 2
  wait_for lock_held "$lock"
  [ "$(stat -c '%a %u' "$lock")" = "600 0" ]
  # containerd refusing the plugin: connections go on, each dropped; the lock goes after the grace
  nri_request_timeout 1ns
  wait_for refused_more_than 0
  wait_for lock_free "$lock"
  grep -q "released $lock: not registered with the runtime for 2s" "$SCRATCH/nri.log"
  n=$(refused)
  wait_for refused_more_than $((n + 2))
  lock_free "$lock"
  kill -0 "$NRI_PID"
  # a new plugin process against the refusing containerd never takes it
  stop_pid "$NRI_PID"
  "$NRI" --socket "$NRI_SOCK" --retry-interval 0.2 --lock-file "$lock" --lock-grace 2 \
    >>"$SCRATCH/nri.log" 2>&1 3>&- &
  NRI_PID=$!
  on_teardown "stop_pid $NRI_PID"
  n=$(refused)
  wait_for refused_more_than $((n + 3))
  lock_free "$lock"
  # containerd accepting it again: held
  nri_request_timeout 2s
  wait_for lock_held "$lock"
  grep -q "holding $lock" "$SCRATCH/nri.log"
}

@test "nri: pre-installed in containerd's plugin folder as 10-enflame, started by containerd itself" {
  sim_setup 3
  # containerd gives a pre-launched plugin only NRI_PLUGIN_NAME/IDX/SOCKET: the config is a flag
  printf '#!/bin/sh\nexec %s --config %s 2>>%s\n' "$NRI" "$ENFLAME_CTK_CONFIG" "$SCRATCH/nri.log" \
    > "$SCRATCH/nri/plugins/10-enflame"
  chmod 755 "$SCRATCH/nri/plugins/10-enflame"
  nri_containerd_up
  wait_for grep -q 'registered as 10-enflame' "$SCRATCH/nri.log"
  run in_cri_pod --env ENFLAME_VISIBLE_DEVICES=1 -- /bin/sh -c "$PROBE"
  only_cards 1
}

@test "nri: the man page renders and names every flag" {
  man_covers_flags "$TOP/man/enflame-nri-plugin.8" "$NRI"
}
