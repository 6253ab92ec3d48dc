#!/usr/bin/env bats
# enflame-drs-manager keeps the node's CDI spec naming the DRS instances it makes
# (docs/drs-manager.md, "The CDI spec"): the toolkit installed as its DaemonSet does
# (`enflame-ctk toolkit install --host-root`) into a node root of the test's own (the simulated
# 4 S60 cards with DRS at /sim, enflame-ctk's libraries, a dockerd it never runs, Debian's
# `/var/run` -> `/run`), the fake API server (k8s/tests/fake_apiserver.py), and the manager
# with --host-root at that root. The installer and the manager run as on a node (host_roots.bash
# node_ns: the root a mount point with /proc, /sys and /dev in it, all gone with the namespace).

load helpers
load host_roots
load drs_manager
bats_require_minimum_version 1.5.0

MGR=$BUILD_DIR/k8s/drs-manager/enflame-drs-manager
SPEC_AT=/run/cdi/enflame.com-gpu.yaml   # where the installer's /var/run/cdi is on this node

setup() {
  requires root jq python3 openssl unshare
  [ -x "$MGR" ] || skip_or_fail "no $MGR (build enflame-drs-manager)"
  [ -x "$CTK" ] || skip_or_fail "no $CTK (build enflame-ctk)"
  setup_scratch
  API=$SCRATCH/api
  N=$SCRATCH/node
  SPEC=$N$SPEC_AT
  STATE_FILE=$SCRATCH/ledger/state.json
  mkdir -p "$API" "$SCRATCH/src"
  cp "$CTK" "$SHIM" "$HOOK" "$SCRATCH/src/"
  node_root
}
teardown() { teardown_scratch; }

# node_root: the node's root at $N, with no toolkit; its listing before any install in
# $SCRATCH/before.
node_root() {
  local l lib
  mkdir -p "$N"/{proc,sys,dev,tmp,etc,run,var,usr/bin,usr/lib,usr/lib64,usr/sbin}
  for l in bin lib lib64 sbin; do ln -s "usr/$l" "$N/$l"; done
  ln -s /run "$N/var/run"
  install -m 755 /dev/null "$N/usr/bin/dockerd"
  mkdir "$N/etc/docker"   # a docker node has it (the installer writes daemon.json in it)
  for lib in $(ldd "$CTK" | grep -oE '/[^ ]+'); do
    mkdir -p "$N$(dirname "$lib")"
    cp -L "$lib" "$N$lib"
  done
  sim_example 4 --drs | sed '/^  instances:/,/^runtime_libraries:/{/^runtime_libraries:/!d}' > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$N/sim" >/dev/null
  write_config "$SCRATCH/config.toml" "$N/sim"
  EFSMI=$(echo "$N"/sim/usr/local/efsmi/efsmi-*/efsmi)
  listing > "$SCRATCH/before"
}

# listing: every path of the node's root but the simulated cards, with its type, mode and
# checksum.
listing() {
  (cd "$N" && find . -path ./sim -prune -o -path ./proc -prune -o -printf '%p %y %m\n' | sort |
    while read -r p y m; do echo "$p $y $m $([ "$y" = f ] && md5sum < "$p" | cut -c1-32)"; done)
}

install_tk() {
  node_ns "$N" "$SCRATCH/src/enflame-ctk" toolkit install --host-root "$N" --runtime docker \
    --restart-mode none --driver-root /sim --dev-root /sim --cdi-dir=/var/run/cdi \
    --source-dir "$SCRATCH/src"
}
uninstall_tk() { node_ns "$N" "$SCRATCH/src/enflame-ctk" toolkit uninstall --host-root "$N"; }

# uuids: the DRS-<uuid> of every instance efsmi lists, sorted, one a line.
uuids() { "$EFSMI" --drs --list-instance | awk -F'|' '$3 ~ /g\./ { gsub(/ /, "", $5); print "DRS-" $5 }' | sort; }
# spec_drs: the DRS devices the spec names, sorted, one a line.
spec_drs() { grep -oE 'name: "?DRS-[^" ]+' "$SPEC" | sed -E 's/name: "?//' | sort; }
count_is() { [ "$(uuids | wc -l)" -eq "$1" ]; }
spec_names_instances() { [ "$(spec_drs)" = "$(uuids)" ]; }
# stamp: the spec's inode and mtime (ns).
stamp() { stat -c '%i %.9Y' "$SPEC"; }
refreshes_are() { [ "$(grep -c "CDI spec refreshed: 16 DRS instance" "$SCRATCH/mgr.log")" -eq "$1" ]; }
mgr_log_has() { grep -q "$1" "$SCRATCH/mgr.log"; }

# up: the API server with node1 and the shipped layouts ConfigMap, and the manager.
up() {
  api_up
  start_manager
}

# start_manager: the manager in the node's namespace (node_ns, spelled out: a function run in
# the background would be a subshell, and $! not the manager's PID), --host-root at the node's
# root.
start_manager() {
  # shellcheck disable=SC2016  # expands in the namespace's shell
  env -i PATH="$NODE_PATH" unshare --mount --propagation private /bin/sh -c "$NODE_MOUNTS"'exec "$@"' node-ns \
    "$N" "$MGR" --node-name node1 --kubeconfig "$KC" --config "$SCRATCH/config.toml" \
    --checkpoint "$SCRATCH/ledger/ledger.json" --state-file "$STATE_FILE" \
    --pod-resources-socket "$SCRATCH/pr/kubelet.sock" --holders-checkpoint "$SCRATCH/dra.json" \
    --retry 1s --host-root "$N" >>"$SCRATCH/mgr.log" 2>&1 3>&- &
  MPID=$!
  on_teardown "stop_pid $MPID"
  wait_for mgr_log_has "watching node node1"
}

@test "toolkit installed: all-1g.11gb -> the spec names the 16 DRS-<uuid> efsmi lists, written before success; the same label, a restart -> not rewritten; all-full -> no DRS device; uninstall -> the node as before the install" {
  install_tk
  [ -f "$SPEC" ]
  run -0 spec_drs
  [ "$output" = "" ]
  up
  label all-1g.11gb
  wait_for state_is success
  [ "$(uuids | wc -l)" -eq 16 ]
  spec_names_instances
  # refreshed before success: the spec is no newer than the state file, and the log says so
  [ "$(stat -c %.9Y "$SPEC" | tr -d .)" -le "$(stat -c %.9Y "$STATE_FILE" | tr -d .)" ]
  run -0 grep -nE "CDI spec refreshed: 16 DRS instance|$STATE=success" "$SCRATCH/mgr.log"
  [[ ${lines[0]} == *"CDI spec refreshed: 16 DRS instance(s) in "*" ms" ]]
  [[ ${lines[1]} == *"$STATE=success" ]]
  echo "# refresh: ${lines[0]##*: }; the plan: $(grep -o '16 efsmi operation(s) in .*' "$SCRATCH/mgr.log")" >&3
  local before
  before=$(stamp)
  label all-1g.11gb
  patch_node '{"metadata":{"labels":{"example.com/other":"x"}}}'
  sleep 2
  [ "$(stamp)" = "$before" ]
  # a restart with the layout in force: generated again once, the same text, not written
  stop_pid "$MPID"
  start_manager
  wait_for mgr_log_has "CDI spec unchanged (16 DRS instance(s)"
  [ "$(stamp)" = "$before" ]
  label all-full
  wait_for count_is 0
  wait_for state_is success
  run -0 spec_drs
  [ "$output" = "" ]
  grep -q 'enflame.com/gpu' "$SPEC"
  run -0 events
  echo "$output"
  [ "$output" = "" ]
  stop_pid "$MPID"
  run -0 uninstall_tk
  [ ! -e "$SPEC" ]
  listing > "$SCRATCH/after"
  diff "$SCRATCH/before" "$SCRATCH/after"
}

@test "no toolkit installed: all-1g.11gb -> success, one info line, nothing written in the node's root" {
  up
  label all-1g.11gb
  wait_for state_is success
  count_is 16
  run -0 grep -c "no toolkit installed in '$N/usr/local/enflame/toolkit': no CDI spec to refresh" "$SCRATCH/mgr.log"
  [ "$output" -eq 1 ]
  run ! grep -E "warn|error" "$SCRATCH/mgr.log"
  [ "$(events)" = "" ]
  listing > "$SCRATCH/after"
  diff "$SCRATCH/before" "$SCRATCH/after"
}

@test "a refresh that fails (the toolkit's enflame-ctk cannot run): success, one warning line and one Warning Event DrsCdiSpecStale naming the spec; it runs again: the spec refreshed at the next retry" {
  install_tk
  chmod 000 "$N/usr/local/enflame/toolkit/enflame-ctk"
  up
  label all-1g.11gb
  wait_for state_is success
  wait_for mgr_log_has "the CDI spec is stale"
  sleep 2   # two retries
  run -0 grep -c "warn.*the CDI spec is stale: refreshing '$N/var/run/cdi/enflame.com-gpu.yaml': generating the CDI spec: " "$SCRATCH/mgr.log"
  [ "$output" -eq 1 ]
  run -0 events
  [ "${#lines[@]}" -eq 1 ]
  [[ $output == "Warning DrsCdiSpecStale: the CDI spec is stale: refreshing '$N/var/run/cdi/enflame.com-gpu.yaml': generating the CDI spec: "* ]]
  run -0 spec_drs
  [ "$output" = "" ]
  chmod 755 "$N/usr/local/enflame/toolkit/enflame-ctk"
  wait_for spec_names_instances
  count_is 16
  state_is success
}

@test "a driver reload that takes the instances with it: the manager makes them again and the spec names the new UUIDs" {
  install_tk
  up
  label all-1g.11gb
  wait_for state_is success
  spec_names_instances
  local old
  old=$(spec_drs)
  wait_for mgr_log_has "health: watching driver events"
  local c id
  for c in 0 1 2 3; do
    for id in 0 1 2 3; do "$EFSMI" -i "$c" --drs --destroy-instance "$id" > /dev/null; done
  done
  "$SIM_HOST" driver --root "$N/sim" gone
  wait_for mgr_log_has "health: no driver events"
  "$SIM_HOST" driver --root "$N/sim" back
  wait_for count_is 16
  wait_for refreshes_are 2
  wait_for spec_names_instances
  [ "$(spec_drs)" != "$old" ]
}

@test "the shipped DaemonSet's mounts under /host, made by runc: the spec's folder as the manager resolves it in the node's root (/var/run -> /run) is the node's /run/cdi, writable; the rest of /host read-only" {
  requires runc
  local h=$SCRATCH/host b=$SCRATCH/bundle id
  mkdir -p "$h"/{run,var,bin,etc}
  ln -s /run "$h/var/run"
  cp /bin/busybox "$h/bin/"
  # chroot resolves /var/run/cdi in /host as the manager's openat2 RESOLVE_IN_ROOT does
  oci_bundle "$b" '["/bin/sh","-c","chroot /host /bin/busybox touch /var/run/cdi/probe && echo spec-folder-writable; chroot /host /bin/busybox touch /etc/probe"]'
  python3 - "$TOP/deployments/drs-manager/daemonset.yaml" "$b/config.json" "$h" <<'PY'
import json, os, sys, yaml
ds = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o and o["kind"] == "DaemonSet"][0]
pod = ds["spec"]["template"]["spec"]
host = {v["name"]: v["hostPath"] for v in pod["volumes"] if "hostPath" in v}
c = json.load(open(sys.argv[2]))
for caps in c["process"]["capabilities"].values():   # the manager runs privileged
    caps.append("CAP_SYS_CHROOT")
for m in pod["containers"][0]["volumeMounts"]:   # in the pod's order, as kubelet passes them
    if not m["mountPath"].startswith("/host"):
        continue
    src = sys.argv[3] + host[m["name"]]["path"].rstrip("/")
    if host[m["name"]].get("type") == "DirectoryOrCreate":   # what kubelet does first
        os.makedirs(src, exist_ok=True)
    c["mounts"].append({"destination": m["mountPath"], "type": "bind", "source": src,
                        "options": ["rbind", "ro" if m.get("readOnly") else "rw"]})
json.dump(c, open(sys.argv[2], "w"))
PY
  id=$(unique_id ectk-drs-cdi)
  on_teardown "runc delete -f $id >/dev/null 2>&1"
  run bash -c "cd '$b' && runc run '$id' 2>&1"
  echo "$output"
  [ -f "$h/run/cdi/probe" ]
  [[ $output == *spec-folder-writable* ]]
  [[ $output == *"/etc/probe: Read-only file system"* ]]
  [ ! -e "$h/etc/probe" ]
}
