# Helpers of the enflame-device-plugin suites (device_plugin_kubelet.bats,
# device_plugin_health.bats, device_plugin_sharing.bats, device_plugin_runtimes.bats,
# device_plugin_shipping.bats): the daemon against the simulated host and a fake kubelet
# (tests/README.md):
# build/dev/k8s/tests/fake-kubelet serves Registration on a temp kubelet.sock, dials the plugin
# back, holds ListAndWatch open and logs every event as a JSON line; its one-shot commands call
# Allocate / GetPreferredAllocation on the plugin's socket as kubelet would. A "kubelet restart"
# is what kubelet does: the process goes, and the new one deletes every socket in the folder and
# serves kubelet.sock again. End to end, the envs of an envvar Allocate go through our shim with runc, and the
# cdi_devices of a cdi-cri Allocate go to podman --device (specs in a private mount namespace,
# cdi_ns: never the host's /etc/cdi or /var/run/cdi).
# shellcheck disable=SC2034  # what this sets, the suites that load it use

DP=$BUILD_DIR/k8s/device-plugin/enflame-device-plugin
FK=$BUILD_DIR/k8s/tests/fake-kubelet

# device_plugin_setup: each test's setup: a simulated host of 4 cards ($U0..$U3 their UUIDs) and
# the fake kubelet's folder, nothing started.
device_plugin_setup() {
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
# list_of RESOURCE: the IDs and health of RESOURCE's last ListAndWatch message.
list_of() {
  grep '"event":"list"' "$EV" | jq -c --arg r "$1" 'select(.resource == $r) | [.data.devices[] | [.ID, .health]]' | tail -1
}
# registered: plugin and fake kubelet up, the first list received.
registered() { start_kubelet; start_plugin "$@"; wait_for at_least 1 list; }

allocate() { "$FK" allocate --socket "$SOCK" --ids "$1"; }

# sharing_config FILE REPLICAS [MORE YAML LINES under timeSlicing]: a plugin config.
sharing_config() {
  local f=$1 n=$2; shift 2
  printf '%s\n' 'version: v1' 'sharing:' '  timeSlicing:' "$@" '    resources:' \
    '    - name: enflame.com/gcu' "      replicas: $n" > "$f"
}

# The IDs of drs_host's DRS instances.
D0=DRS-4c1e9a52-0000-4000-8000-000000000000
D1=DRS-4c1e9a52-0000-4000-8000-000000000001
D2=DRS-4c1e9a52-0000-4000-8000-000000000002

# drs_host: the 4-card host again, with the example's DRS instances (two 1g.11gb on card 0,
# one 2g.22gb on card 1).
drs_host() {
  sim_example 4 --drs > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
}

