#!/usr/bin/env bats
# enflame-drs-manager (docs/drs-manager.md) on a simulated host of 4 S60 cards with DRS and the
# fake API server (k8s/tests/fake_apiserver.py): a label applies a layout, a held instance makes
# it wait, a kill between two creates converges, a layout a card cannot hold fails, and an
# unchanged label costs nothing. efsmi is wrapped by a script that logs each call (and sleeps
# after a create while $SCRATCH/slow names seconds); the tests read the real efsmi.

load helpers
load device_plugin
load drs_manager
bats_require_minimum_version 1.5.0

MGR=$BUILD_DIR/k8s/drs-manager/enflame-drs-manager
FPR=$BUILD_DIR/k8s/tests/fake-pod-resources

setup() {
  requires root jq python3 openssl
  [ -x "$MGR" ] || skip_or_fail "no $MGR (build enflame-drs-manager)"
  setup_scratch
  API=$SCRATCH/api
  DRA_CP=$SCRATCH/dra-checkpoint.json
  LEDGER=$SCRATCH/ledger/ledger.json
  STATE_FILE=$SCRATCH/ledger/state.json
  mkdir -p "$API"
}
teardown() { teardown_scratch; }

# drs_list: the instances as the real efsmi lists them, "<card>:<profile>:<id>", sorted.
drs_list() {
  "$EFSMI" --drs --list-instance | awk -F'|' '$3 ~ /g\./ { gsub(/ /, ""); print $2 ":" $3 ":" $4 }' | sort | tr '\n' ' ' | sed 's/ $//'
}
# relabel_waits EVENT: relabelled all-full while something holds an instance, the manager waits:
# state pending, EVENT its one Event, no instance destroyed two seconds later.
relabel_waits() {
  local before
  before=$(drs_list)
  label all-full
  wait_for state_is pending
  wait_for grep -q "waiting for" "$SCRATCH/mgr.log"
  [ "$(events)" = "$1" ]
  sleep 2
  [ "$(drs_list)" = "$before" ]
  state_is pending
}
# uuid_of CARD ID: the UUID efsmi lists for the 1g.11gb instance ID of CARD.
uuid_of() {
  "$EFSMI" -i "$1" --drs --list-instance | awk -F'|' -v id="$2" '$3 ~ /1g\./ && $4+0 == id { gsub(/ /, "", $5); print $5 }'
}
# destroy_all: every instance gone, as a reboot or a driver reload leaves the cards.
destroy_all() {
  local c id
  for c in 0 1 2 3; do
    for id in 0 1 2 3; do "$EFSMI" -i "$c" --drs --destroy-instance "$id" > /dev/null; done
  done
}
# boot_before: the state file as the manager left it in the boot before this one.
boot_before() {
  jq -c '.bootId = "boot-before"' "$STATE_FILE" > "$SCRATCH/state.new"
  mv "$SCRATCH/state.new" "$STATE_FILE"
}
# plugin_setup: the fake kubelet up, the plugin not started.
plugin_setup() {
  [ -x "$DP" ] || skip_or_fail "no $DP (build enflame-device-plugin)"
  [ -x "$FK" ] || skip_or_fail "no $FK (build fake-kubelet)"
  KDIR=$SCRATCH/k
  EV=$SCRATCH/events
  mkdir "$KDIR"
  start_kubelet
}
# list_sizes RESOURCE: the sizes RESOURCE's ListAndWatch messages had, each once, space-separated.
list_sizes() { jq -r --arg r "$1" 'select(.event == "list" and .resource == $r) | .data.devices | length' "$EV" | sort -u | tr '\n' ' '; }
# ms_of LINE: the milliseconds of the day of a daemon's log line (2024-05-01T10:00:01.234 ...).
ms_of() { echo "$1" | awk '{ split(substr($1, 12), t, ":"); printf "%d\n", ((t[1] * 60 + t[2]) * 60 + t[3]) * 1000 }'; }
drs_count() { "$EFSMI" --drs --list-instance | awk -F'|' '$3 ~ /g\./' | wc -l; }
count_is() { [ "$(drs_count)" -eq "$1" ]; }
efsmi_calls() { wc -l < "$SCRATCH/efsmi.log"; }
api_writes() { wc -l < "$API/writes.jsonl"; }

# up [--no-manager]: the simulated host (4 cards, no instance), efsmi wrapped, the API server
# (with $API_ARGS) with node1 and the shipped layouts ConfigMap, the manager.
up() {
  sim_example 4 --drs | sed '/^  instances:/,/^runtime_libraries:/{/^runtime_libraries:/!d}' > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  EFSMI=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*/efsmi)
  rm "$SCRATCH/host/usr/bin/efsmi"
  cat > "$SCRATCH/host/usr/bin/efsmi" <<EOF
#!/bin/sh
echo "\$*" >> $SCRATCH/efsmi.log
$EFSMI "\$@"
rc=\$?
case "\$*" in *--create-instance*) [ -f $SCRATCH/slow ] && /bin/sleep "\$(/bin/cat $SCRATCH/slow)" ;; esac
exit \$rc
EOF
  chmod 755 "$SCRATCH/host/usr/bin/efsmi"
  : > "$SCRATCH/efsmi.log"
  api_up
  [ "${1:-}" = --no-manager ] || start_manager
}

# start_manager: the manager for node1 (kubeconfig $MGR_KC, else $KC; more flags in $MGR_ARGS);
# log in $SCRATCH/mgr.log, PID in $MPID.
start_manager() {
  "$MGR" --node-name node1 --kubeconfig "${MGR_KC:-$KC}" --config "$SCRATCH/config.toml" \
    --checkpoint "$LEDGER" --state-file "$STATE_FILE" --pod-resources-socket "$SCRATCH/pr/kubelet.sock" --holders-checkpoint "$DRA_CP" --retry 1s "${MGR_ARGS[@]}" >>"$SCRATCH/mgr.log" 2>&1 3>&- &
  MPID=$!
  on_teardown "stop_pid $MPID"
  wait_for grep -q "watching node node1" "$SCRATCH/mgr.log"
}

# pod_holds_slice: kubelet's pod-resources (fake-pod-resources on $SCRATCH/pr/kubelet.sock) list
# pod ml/infer-0 holding instance 1:1g.11gb:3 through the device plugin.
pod_holds_slice() {
  local uuid
  uuid=$(uuid_of 1 3)
  [ -n "$uuid" ]
  mkdir "$SCRATCH/pr"
  jq -n --arg id "DRS-$uuid" '{pod_resources: [{name: "infer-0", namespace: "ml", containers: [{name: "c",
    devices: [{resource_name: "enflame.com/drs-1g.11gb", device_ids: [$id]}]}]}]}' > "$SCRATCH/pr/list.json"
  "$FPR" --socket "$SCRATCH/pr/kubelet.sock" --response "$SCRATCH/pr/list.json" 2>>"$SCRATCH/fpr.log" 3>&- &
  on_teardown "stop_pid $!"
  wait_for test -S "$SCRATCH/pr/kubelet.sock"
}

# settled: the manager's log has not grown for a second (it acted on what it saw).
settled() {
  local a b
  a=$(wc -c < "$SCRATCH/mgr.log"); sleep 1; b=$(wc -c < "$SCRATCH/mgr.log")
  [ "$a" = "$b" ]
}

@test "label all-1g.11gb: 16 instances (efsmi lists them), state success; the same label again, an unrelated node change and the ConfigMap rewritten unchanged: zero efsmi calls, zero API writes" {
  up
  label all-1g.11gb
  wait_for state_is success
  [ "$(drs_count)" -eq 16 ]
  [ "$(drs_list | tr ' ' '\n' | cut -d: -f1,2 | sort | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' ')" = "4x0:1g.11gb 4x1:1g.11gb 4x2:1g.11gb 4x3:1g.11gb " ]
  [ "$(jq '.made | length' "$LEDGER")" -eq 16 ]
  [ "$(jq '.pending' "$LEDGER")" = null ]
  wait_for settled
  local calls writes
  calls=$(efsmi_calls)
  writes=$(api_writes)
  label all-1g.11gb
  patch_node '{"metadata":{"labels":{"example.com/other":"x"}}}'
  # the layouts ConfigMap written back as it is (a new resourceVersion, the same layouts)
  api PUT /api/v1/namespaces/enflame-system/configmaps/enflame-drs-layouts application/json \
    "$(api GET /api/v1/namespaces/enflame-system/configmaps/enflame-drs-layouts)" >/dev/null
  sleep 2
  [ "$(efsmi_calls)" -eq "$calls" ]
  # the three writes are the test's own
  [ "$(api_writes)" -eq $((writes + 3)) ]
  state_is success
  [ "$(events)" = "" ]
}

@test "relabel all-full while a DRA claim holds one slice: state pending, a Warning Event naming the claim, nothing destroyed; the holder gone: applied (0 instances), success" {
  up
  label all-1g.11gb
  wait_for state_is success
  local uuid
  uuid=$(uuid_of 2 1)
  [ -n "$uuid" ]
  jq -n --arg u "$uuid" '{version: 1, claims: {"uid-t": {namespace: "ml", name: "train", devices: [
    {requests: ["gpu"], pool: "node1", device: "gcu-2-1g-11gb-1", cdiDeviceIDs: [],
     createdInstance: {card: 2, id: 1, profile: "1g.11gb", uuid: $u}}]}}}' > "$DRA_CP"
  relabel_waits "Warning DrsLayoutWaiting: layout 'all-full': waiting for 2:1g.11gb:1 (held by claim ml/train)"
  # the claim is unprepared: the plugin's checkpoint no longer holds it
  jq -n '{version: 1, claims: {}}' > "$DRA_CP"
  wait_for state_is success
  [ "$(drs_count)" -eq 0 ]
  [ "$(jq '.made | length' "$LEDGER")" -eq 0 ]
}

@test "relabel all-full while a pod holds one slice through the device plugin (kubelet's pod-resources): state pending naming the pod, nothing destroyed; the pod gone: applied" {
  [ -x "$FPR" ] || skip_or_fail "no $FPR (build fake-pod-resources)"
  up
  label all-1g.11gb
  wait_for state_is success
  pod_holds_slice
  relabel_waits "Warning DrsLayoutWaiting: layout 'all-full': waiting for 1:1g.11gb:3 (held by pod ml/infer-0)"
  # the default policy waits: no eviction asked
  [ "$(writes_to POST /api/v1/namespaces/ml/pods/infer-0/eviction)" -eq 0 ]
  # the pod deleted: kubelet lists it no more
  echo '{"pod_resources": []}' > "$SCRATCH/pr/list.json"
  wait_for state_is success
  [ "$(drs_count)" -eq 0 ]
}

@test "killed (SIGKILL) between two creates: restarted, it converges to 16 instances, no extra one, no pending entry left" {
  up
  echo 1 > "$SCRATCH/slow"
  label all-1g.11gb
  wait_for count_is 5
  # efsmi made the fifth; the manager waits for its answer (the wrapper sleeps): killed now
  kill -KILL "$MPID"
  wait "$MPID" 2>/dev/null || true
  [ "$(jq '.pending | length' "$LEDGER")" -eq 1 ]
  [ "$(jq '.made | length' "$LEDGER")" -eq 4 ]
  rm "$SCRATCH/slow"
  sleep 1.2  # the orphaned wrapper's sleep ends; it makes nothing more
  [ "$(drs_count)" -eq 5 ]
  start_manager
  wait_for state_is success
  [ "$(drs_count)" -eq 16 ]
  grep -q "stopped before efsmi answered its create of a 1g.11gb DRS instance on card 1: nothing destroyed" "$SCRATCH/mgr.log"
  [ "$(jq '.pending' "$LEDGER")" = null ]
  # the fifth, which efsmi made for the killed create, counts for the layout but is not
  # recorded as made: it cannot be told from an administrator's
  [ "$(jq '.made | length' "$LEDGER")" -eq 15 ]
}

@test "a driver reload that takes the instances with it: the driver back, the manager makes the layout again (16 instances, success) without a label change" {
  up
  label all-1g.11gb
  wait_for state_is success
  wait_for grep -q "health: watching driver events" "$SCRATCH/mgr.log"
  # what a reload does to DRS: the instances go with the driver, which comes back without them
  destroy_all
  count_is 0
  "$SIM_HOST" driver --root "$SCRATCH/host" gone
  wait_for grep -q "health: no driver events" "$SCRATCH/mgr.log"
  "$SIM_HOST" driver --root "$SCRATCH/host" back
  wait_for grep -q "the driver is back: checking the layout again" "$SCRATCH/mgr.log"
  wait_for count_is 16
  wait_for state_is success
}

@test "a layout a card cannot hold: state failed, one line naming the card and the profile (log and Warning Event), instances untouched" {
  up
  label all-1g.11gb
  wait_for state_is success
  local before
  before=$(drs_list)
  api GET /api/v1/namespaces/enflame-system/configmaps/enflame-drs-layouts |
    jq '.data["layouts.yaml"] += "  too-many:\n  - cards: {index: [1]}\n    profiles: {2g.22gb: 3}\n"' > "$SCRATCH/cm.json"
  api PUT /api/v1/namespaces/enflame-system/configmaps/enflame-drs-layouts application/json "$(cat "$SCRATCH/cm.json")" >/dev/null
  label too-many
  wait_for state_is failed
  local line="layout 'too-many': card 1: 3 instances of '2g.22gb' asked, the profile allows 2"
  [ "$(events)" = "Warning DrsLayoutFailed: $line" ]
  [ "$(grep -c "error: $line$" "$SCRATCH/mgr.log")" -eq 1 ]
  [ "$(drs_list)" = "$before" ]
  # a label naming no layout: the same, naming the label
  label no-such
  wait_for state_is failed
  wait_for grep -q "label enflame.com/drs.config=no-such: no such layout" "$SCRATCH/mgr.log"
  [ "$(drs_list)" = "$before" ]
}

@test "the device plugin follows: all-1g.11gb -> it lists enflame.com/drs-1g.11gb with 16 instances and no whole card; the same label again -> no re-list; all-full -> 4 whole cards, the DRS resource gone" {
  up
  plugin_setup
  # the plugin starts before the manager's first write: the state file's folder does not exist yet
  start_plugin --config "$SCRATCH/config.toml" --drs-state-file "$SCRATCH/ledger/state.json"
  wait_for at_least 1 list
  [ "$(list_of enflame.com/gcu | jq length)" -eq 4 ]
  label all-1g.11gb
  wait_for state_is success
  wait_for eval '[ "$(list_of enflame.com/drs-1g.11gb | jq length)" = 16 ]'
  [ "$(list_of enflame.com/drs-1g.11gb | jq -r '.[][1]' | sort -u)" = Healthy ]
  [ "$(list_of enflame.com/gcu)" = "[]" ]
  [ -S "$KDIR/enflame-drs-1g.11gb.sock" ]
  [ "$(grep -c "DRS layout 'all-1g.11gb' success" "$SCRATCH/dp.log")" -eq 1 ]
  local calls
  calls=$(efsmi_calls)
  label all-1g.11gb
  sleep 2
  [ "$(grep -c "DRS layout 'all-1g.11gb' success" "$SCRATCH/dp.log")" -eq 1 ]
  [ "$(efsmi_calls)" -eq "$calls" ]
  label all-full
  wait_for state_is success
  wait_for eval '[ "$(list_of enflame.com/gcu | jq length)" = 4 ]'
  wait_for test ! -e "$KDIR/enflame-drs-1g.11gb.sock"
}

@test "after a reboot (a state file of another boot saying success for all-1g.11gb, no instance): the plugin started first registers nothing until the manager, started after, has made the 16; then drs-1g.11gb 16 and never a whole card" {
  up
  label all-1g.11gb
  wait_for state_is success
  [ "$(jq -r .bootId "$STATE_FILE")" = "$(cat /proc/sys/kernel/random/boot_id)" ]
  stop_pid "$MPID"
  destroy_all
  count_is 0
  boot_before
  plugin_setup
  start_plugin --config "$SCRATCH/config.toml" --drs-state-file "$STATE_FILE"
  wait_for grep -q "DRS layout 'all-1g.11gb' from another boot ($STATE_FILE): waiting up to 5m for enflame-drs-manager" "$SCRATCH/dp.log"
  sleep 1
  [ "$(count register)" -eq 0 ]
  [ ! -e "$KDIR/enflame-gcu.sock" ]
  start_manager
  wait_for eval '[ "$(list_of enflame.com/drs-1g.11gb | jq length)" = 16 ]'
  [ "$(jq -r .state "$STATE_FILE")" = success ]
  [ "$(jq -r .bootId "$STATE_FILE")" = "$(cat /proc/sys/kernel/random/boot_id)" ]
  [ "$(drs_count)" -eq 16 ]
  [ "$(list_sizes enflame.com/drs-1g.11gb)" = "16 " ]
  [ "$(list_sizes enflame.com/gcu)" = "0 " ]
  [ "$(grep -c "waiting up to" "$SCRATCH/dp.log")" -eq 1 ]
  grep -q "DRS layout 'all-1g.11gb' success in this boot after [0-9]* ms: registering with kubelet" "$SCRATCH/dp.log"
  # from the manager's success to the plugin's registration
  local ok reg
  ok=$(grep "enflame.com/drs.config.state=success" "$SCRATCH/mgr.log" | tail -1)
  reg=$(grep "registered enflame.com/drs-1g.11gb with kubelet" "$SCRATCH/dp.log" | head -1)
  echo "# the manager's success -> the plugin registered: $(( $(ms_of "$reg") - $(ms_of "$ok") )) ms" >&3
  # a manager restart in the same boot rewrites nothing
  local before
  before=$(stat -c %Y.%i "$STATE_FILE")
  stop_pid "$MPID"
  start_manager
  wait_for settled
  [ "$(stat -c %Y.%i "$STATE_FILE")" = "$before" ]
}

@test "after a reboot with no manager: the plugin waits --drs-wait 1s, logs one warning and advertises the 4 whole cards it finds; SIGTERM while it waits stops it at once" {
  up --no-manager
  plugin_setup
  mkdir -p "${STATE_FILE%/*}"
  echo '{"layout": "all-1g.11gb", "state": "success", "bootId": "boot-before"}' > "$STATE_FILE"
  start_plugin --config "$SCRATCH/config.toml" --drs-state-file "$STATE_FILE"
  wait_for grep -q "waiting up to 5m" "$SCRATCH/dp.log"
  local t0
  t0=$(date +%s%N)
  kill -TERM "$DPID"
  wait "$DPID"
  [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 1000 ]
  grep -q "signal 15: stopping" "$SCRATCH/dp.log"
  : > "$SCRATCH/dp.log"
  DRS_WAIT=1s start_plugin --config "$SCRATCH/config.toml" --drs-state-file "$STATE_FILE"
  wait_for at_least 1 list
  [ "$(grep -c "warning: DRS layout 'all-1g.11gb' from another boot after 1s: registering the cards and instances there are now; hint: is enflame-drs-manager running on this node?" "$SCRATCH/dp.log")" -eq 1 ]
  [ "$(grep -c "warning:" "$SCRATCH/dp.log")" -eq 1 ]
  [ "$(list_of enflame.com/gcu | jq length)" -eq 4 ]
  local waited registered
  waited=$(ms_of "$(grep "waiting up to 1s" "$SCRATCH/dp.log")")
  registered=$(ms_of "$(grep "registered enflame.com/gcu with kubelet" "$SCRATCH/dp.log")")
  [ $(( registered - waited )) -ge 1000 ]
}

@test "per-node device plugin config: enflame.com/device-plugin.config=shared4 -> the plugin time-slices 4 cards into 16 at once (no efsmi create, no restart); a name with no config -> one error line, the running config kept; label removed -> 4; a restart with the label -> 16 from the start" {
  up
  plugin_setup
  mkdir "$SCRATCH/pc"
  echo "version: v1" > "$SCRATCH/pc/plugin.yaml"
  sharing_config "$SCRATCH/pc/shared4.yaml" 4
  local pc_label=enflame.com/device-plugin.config
  start_plugin --config "$SCRATCH/config.toml" --drs-state-file "$STATE_FILE" \
    --plugin-config "$SCRATCH/pc/plugin.yaml" --plugin-config-dir "$SCRATCH/pc"
  wait_for at_least 1 list
  [ "$(list_of enflame.com/gcu | jq length)" = 4 ]
  patch_node "{\"metadata\":{\"labels\":{\"$pc_label\":\"shared4\"}}}"
  wait_for eval '[ "$(list_of enflame.com/gcu | jq length)" = 16 ]'
  run ! grep -q -- --create-instance "$SCRATCH/efsmi.log"
  [ "$(jq -r .devicePluginConfig "$STATE_FILE")" = shared4 ]
  patch_node "{\"metadata\":{\"labels\":{\"$pc_label\":\"nope\"}}}"
  wait_for grep -q "$pc_label=nope: no such device plugin config ($SCRATCH/pc/nope.yaml); keeping $SCRATCH/pc/shared4.yaml" "$SCRATCH/dp.log"
  [ "$(list_of enflame.com/gcu | jq length)" = 16 ]
  patch_node "{\"metadata\":{\"labels\":{\"$pc_label\":null}}}"
  wait_for eval '[ "$(list_of enflame.com/gcu | jq length)" = 4 ]'
  patch_node "{\"metadata\":{\"labels\":{\"$pc_label\":\"shared4\"}}}"
  wait_for eval '[ "$(jq -r .devicePluginConfig "$STATE_FILE")" = shared4 ]'
  stop_pid "$DPID"
  : > "$EV"
  start_plugin --config "$SCRATCH/config.toml" --drs-state-file "$STATE_FILE" \
    --plugin-config "$SCRATCH/pc/plugin.yaml" --plugin-config-dir "$SCRATCH/pc"
  wait_for at_least 1 list
  [ "$(list_of enflame.com/gcu | jq length)" = 16 ]
}

@test "feature discovery labels the layout in force and the slice counts: drs.config=all-1g.11gb and drs.1g.11gb.count=16 as soon as the layout is done (not at its hourly pass); a layout being applied is not labelled" {
  local fd=$BUILD_DIR/k8s/feature-discovery/enflame-feature-discovery
  [ -x "$fd" ] || skip_or_fail "no $fd (build enflame-feature-discovery)"
  up
  mkdir "$SCRATCH/features.d"
  local out=$SCRATCH/features.d/enflame
  "$fd" --config "$SCRATCH/config.toml" --output "$out" --sleep-interval 1h \
    --drs-state-file "$STATE_FILE" >>"$SCRATCH/fd.log" 2>&1 3>&- &
  on_teardown "stop_pid $!"
  wait_for grep -q "^enflame.com/gpu.drs.1g.11gb.count=0$" "$out"
  run ! grep -q "drs.config=" "$out"
  label all-1g.11gb
  wait_for grep -q "^enflame.com/gpu.drs.config=all-1g.11gb$" "$out"
  grep -qx "enflame.com/gpu.drs.1g.11gb.count=16" "$out"
  grep -qx "enflame.com/gpu.drs.2g.22gb.count=0" "$out"
  # the manager mid-change: no layout is in force
  echo '{"layout": "all-full", "state": "applying"}' > "$STATE_FILE"
  wait_for eval '! grep -q "drs.config=" "$out"'
}

@test "bad flags: one line naming the flag and the reason, exit 1" {
  run "$MGR" --node-name n --layouts-configmap nonamespace --kubeconfig /dev/null
  [ "$status" -eq 1 ]
  [ "$output" = "error: --layouts-configmap 'nonamespace': want namespace/name" ]
  run env -u NODE_NAME "$MGR" --kubeconfig /dev/null
  [ "$status" -eq 1 ]
  [[ "$output" == "error: --node-name: missing"* ]]
  run "$MGR" --node-name n --eviction-policy drain --kubeconfig /dev/null
  [ "$status" -eq 1 ]
  [ "$output" = "error: --eviction-policy 'drain': want wait or evict" ]
}

@test "man page: renders without warnings and names every flag" {
  man_covers_flags "$TOP/man/enflame-drs-manager.8" "$MGR"
}

# evict_setup ROLES_DIR: the API server authorizing the manager's token as its ServiceAccount,
# with the roles and bindings `kubectl kustomize ROLES_DIR` ships; a pod ml/infer-0 holding
# instance 1:1g.11gb:3 through the device plugin (kubelet's pod-resources, and the pod Running
# in the API server); the manager with --eviction-policy evict, all-1g.11gb applied.
evict_setup() {
  [ -x "$FPR" ] || skip_or_fail "no $FPR (build fake-pod-resources)"
  trixie_kubectl
  API_ARGS=(--rbac-user "mgr-token=system:serviceaccount:enflame-system:enflame-drs-manager")
  MGR_ARGS=(--eviction-policy evict)
  up --no-manager
  "$KUBECTL" kustomize "$1" | python3 -c 'import json, sys, yaml
for o in yaml.safe_load_all(sys.stdin):
    if o and o["kind"] in ("ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"):
        print(json.dumps(o))' > "$SCRATCH/rbac.jsonl"
  local o path
  while read -r o; do
    case $(jq -r .kind <<< "$o") in
      ClusterRole) path=/apis/rbac.authorization.k8s.io/v1/clusterroles ;;
      ClusterRoleBinding) path=/apis/rbac.authorization.k8s.io/v1/clusterrolebindings ;;
      Role) path=/apis/rbac.authorization.k8s.io/v1/namespaces/enflame-system/roles ;;
      RoleBinding) path=/apis/rbac.authorization.k8s.io/v1/namespaces/enflame-system/rolebindings ;;
    esac
    api POST "$path" application/json "$o" > /dev/null
  done < "$SCRATCH/rbac.jsonl"
  local kc=$KC
  fake_api_kubeconfig mgr-token "$SCRATCH/mgr.kubeconfig"
  MGR_KC=$KC
  KC=$kc
  start_manager
  label all-1g.11gb
  wait_for state_is success
  pod_holds_slice
  api POST /api/v1/namespaces/ml/pods application/json \
    '{"metadata":{"name":"infer-0","labels":{"app":"infer"}},"spec":{"nodeName":"node1","containers":[{"name":"c","image":"x"}]}}' > /dev/null
  api PATCH /api/v1/namespaces/ml/pods/infer-0/status application/merge-patch+json '{"status":{"phase":"Running"}}' > /dev/null
}
pod_exists() { [ "$(api GET /api/v1/namespaces/ml/pods/infer-0 | jq -r .kind)" = Pod ]; }
pod_gone() { run ! pod_exists; }
# budget N: ml/infer's PodDisruptionBudget (selecting app=infer) allowing N disruptions.
budget() {
  api POST /apis/policy/v1/namespaces/ml/poddisruptionbudgets application/json \
    '{"metadata":{"name":"infer"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"infer"}}}}' > /dev/null
  api PATCH /apis/policy/v1/namespaces/ml/poddisruptionbudgets/infer/status application/merge-patch+json \
    "{\"status\":{\"disruptionsAllowed\":$1}}" > /dev/null
}
event_of() { events | grep "$1"; }
# writes_to VERB PATH: how many VERB writes to PATH the API server stored.
writes_to() { jq -r --arg v "$1" --arg p "$2" 'select(.verb == $v and .path == $p) | .path' "$API/writes.jsonl" | wc -l; }

@test "evict policy: relabel all-full while pod ml/infer-0 holds a slice and its PodDisruptionBudget allows no disruption -> the eviction refused (a Warning Event with the API server's words), pod and instances kept; the budget allows one -> the pod evicted (never deleted), a Normal Event; kubelet lists it no more -> applied" {
  evict_setup "$TOP/deployments/drs-manager-eviction"
  budget 0
  label all-full
  wait_for state_is pending
  wait_for event_of DrsLayoutEvictionRefused
  local refused
  refused=$(event_of DrsLayoutEvictionRefused)
  [[ $refused == "Warning DrsLayoutEvictionRefused: layout 'all-full': evicting pod ml/infer-0 (holding 1:1g.11gb:3): "*"Cannot evict pod as it would violate the pod's disruption budget." ]]
  sleep 2
  pod_exists
  count_is 16
  # one Event per distinct refusal, though it is asked again every retry
  [ "$(events | grep -c DrsLayoutEvictionRefused)" -eq 1 ]
  [ "$(writes_to POST /api/v1/namespaces/ml/pods/infer-0/eviction)" -eq 0 ]
  api PATCH /apis/policy/v1/namespaces/ml/poddisruptionbudgets/infer/status application/merge-patch+json \
    '{"status":{"disruptionsAllowed":1}}' > /dev/null
  wait_for pod_gone
  wait_for event_of DrsLayoutEvicting
  [ "$(event_of DrsLayoutEvicting)" = "Normal DrsLayoutEvicting: layout 'all-full': evicted pod ml/infer-0 (holding 1:1g.11gb:3)" ]
  [ "$(writes_to POST /api/v1/namespaces/ml/pods/infer-0/eviction)" -eq 1 ]
  [ "$(writes_to DELETE /api/v1/namespaces/ml/pods/infer-0)" -eq 0 ]
  [ "$(api GET /apis/policy/v1/namespaces/ml/poddisruptionbudgets/infer | jq .status.disruptionsAllowed)" -eq 0 ]
  # the instances stay until kubelet stops listing the pod (its containers stopped)
  state_is pending
  count_is 16
  echo '{"pod_resources": []}' > "$SCRATCH/pr/list.json"
  wait_for state_is success
  count_is 0
}

@test "evict policy under deployments/drs-manager's roles alone (no eviction binding): the eviction is forbidden (403 in the Event), nothing destroyed; deployments/drs-manager-eviction's binding added -> the pod evicted at the next retry" {
  evict_setup "$TOP/deployments/drs-manager"
  label all-full
  wait_for event_of DrsLayoutEvictionRefused
  [[ $(event_of DrsLayoutEvictionRefused) == *"evicting pod ml/infer-0 (holding 1:1g.11gb:3): "*"403"* ]]
  grep -q "pods/eviction" "$API/forbidden.log"
  pod_exists
  count_is 16
  api POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings application/json \
    "$(python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$TOP/deployments/drs-manager-eviction/binding.yaml")" > /dev/null
  wait_for pod_gone
  echo '{"pod_resources": []}' > "$SCRATCH/pr/list.json"
  wait_for state_is success
  count_is 0
}
