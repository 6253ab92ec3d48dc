# The one-node cluster (tests/cluster/cluster.sh), one per bats file: helpers of the cluster
# suites (loaded after helpers.bash by cluster_dra, cluster_rbac, drs_manager_cluster, e2e, hami,
# monitoring_cluster, npd_cluster, nri_cluster and operator.bats). They run only when
# ENFLAME_KUBE_BIN names Kubernetes binaries (helpers.bash: kube_bin_named).

# cluster_dir NAME CARDS [drs]: prints a new folder /tmp/ectk-NAME.XXXXXX (mode 755) for a
# cluster suite, with the simulated host of enflame-sim-host's example of CARDS cards: its
# description in desc.yaml, the host laid out in host/. Nothing is left when it fails. drs: S60
# cards with DRS profiles and no instance yet (the DRS manager's host; see node_writable).
cluster_dir() {
  local d
  d=$(mktemp -d "/tmp/ectk-$1.XXXXXX") || return 1
  if chmod 755 "$d" && example_desc "$2" "${3:-}" > "$d/desc.yaml" &&
    "$SIM_HOST" build --desc "$d/desc.yaml" --root "$d/host" > /dev/null; then
    echo "$d"
  else
    rm -rf "$d"
    return 1
  fi
}

# example_desc CARDS [drs]: enflame-sim-host's example description of CARDS cards; drs: with
# the S60's DRS profiles and without the example's instances.
example_desc() {
  if [ "${2:-}" != drs ]; then
    "$SIM_HOST" example --cards "$1"
    return
  fi
  "$SIM_HOST" example --cards "$1" --drs | python3 -c 'import sys, yaml
d = yaml.safe_load(sys.stdin)
d["drs"]["instances"] = []
yaml.safe_dump(d, sys.stdout, sort_keys=False)'
}

# node_writable DIR: DIR (a folder of a cluster_dir's host) bound over itself in the node's mount
# namespace, after cluster_up, so that a pod mounting the host's / read-only (the shipped
# DaemonSets' /host) can write there: runc makes only the top mount of a read-only bind
# read-only, and nothing asks for recursiveReadOnly. For the simulated efsmi, which keeps its
# DRS instances in a file beside its binary where the real one asks the driver.
node_writable() { nsenter -t "$NS_PID" -m -- mount --bind "$1" "$1"; }

# cluster_up DIR TARGET [ARCHIVE...]: for a cluster suite's setup_file: `make TARGET` (the images
# it runs: images, node-exporter-image), the cluster up in DIR/cluster, each ARCHIVE imported
# into its containerd, and DIR/cluster/env sourced (KUBECONFIG, KUBECTL, NODE_NAME, NS_PID,
# APISERVER_PORT, CTR, CONTAINERD_CONFIG, ... exported). Skips (fails under CI) when this machine
# lacks the cluster's binaries (cluster.sh exits 3); fails with the log's last lines otherwise.
cluster_up() {
  local dir=$1 target=$2 rc=0
  shift 2
  make -s -C "$TOP" "$target" > "$dir/$target.log" 2>&1 ||
    { echo "make $target failed: $(tail -n 3 "$dir/$target.log")" >&2; return 1; }
  "$TOP/tests/cluster/cluster.sh" up "$dir/cluster" > "$dir/up.log" 2>&1 || rc=$?
  if [ "$rc" -eq 3 ]; then skip_or_fail "$(tail -n 1 "$dir/up.log")" || return 1; fi
  [ "$rc" -eq 0 ] || { tail -n 1 "$dir/up.log" >&2; return 1; }
  if [ $# -gt 0 ]; then
    "$TOP/tests/cluster/cluster.sh" import "$dir/cluster" "$@" > /dev/null || return 1
  fi
  # shellcheck disable=SC1091
  . "$dir/cluster/env"
}

# cluster_down DIR: for teardown_file: the cluster in DIR/cluster stopped, whatever state
# setup_file left it in, and DIR removed; nothing when DIR is unset or gone.
cluster_down() {
  if [ -z "${1:-}" ] || [ ! -d "$1" ]; then return 0; fi
  "$TOP/tests/cluster/cluster.sh" down "$1/cluster" >&3 2>&1 || true
  # KEEP_CLUSTER_LOGS=DIR: the daemons' logs kept (DIR/<suite folder>) to read a failure after
  if [ -n "${KEEP_CLUSTER_LOGS:-}" ] && [ -d "$1/cluster/logs" ]; then
    mkdir -p "$KEEP_CLUSTER_LOGS" && cp -r "$1/cluster/logs" "$KEEP_CLUSTER_LOGS/$(basename "$1")" || true
  fi
  rm -rf "$1"
}

# cluster_overlay DIR OUT KUSTOMIZATION: for setup_file, with the cluster up: the node labelled
# as NFD would (enflame.com/gpu.present=true), deployments/ copied to DIR/deployments (once), and
# DIR/deployments/KUSTOMIZATION ("." for deployments/ itself) with the harness's changes only
# (tests/cluster/overlay.sh: the simulated host DIR/host, the route to the API server) in DIR/OUT.
cluster_overlay() {
  "$KUBECTL" label node "$NODE_NAME" enflame.com/gpu.present=true --overwrite > /dev/null || return 1
  [ -d "$1/deployments" ] || cp -r "$TOP/deployments" "$1/deployments" || return 1
  "$TOP/tests/cluster/overlay.sh" "$1/$2" "$1/deployments/$3" "$1/host" "$APISERVER_PORT"
}

# cluster_apply DIR OUT: `kubectl apply -k DIR/OUT` into the namespace $NS the harness makes
# first (this fork's ServiceAccount admission needs a ConfigMap in every namespace with pods);
# fails with kubectl's output (kept in DIR/apply.log).
cluster_apply() {
  "$TOP/tests/cluster/cluster.sh" namespace "$1/cluster" "$NS" > /dev/null || return 1
  "$KUBECTL" apply -k "$1/$2" > "$1/apply.log" 2>&1 || { cat "$1/apply.log" >&2; return 1; }
}

# cluster_pod NAME SCRIPT LIMITS [SPEC_FIELD]: `kubectl apply` of a pod NAME (namespace default,
# terminationGracePeriodSeconds 1) whose container `main` (busybox:1.36) runs `sh -c SCRIPT` (no
# double quote in it) with resources.limits LIMITS (the inside of a YAML flow map, e.g.
# "enflame.com/gcu: 1"); SPEC_FIELD one more field of the pod's spec, e.g.
# "schedulerName: hami-scheduler".
cluster_pod() {
  "$KUBECTL" apply -f - > /dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  ${4:-}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "$2"]
    resources: {limits: {$3}}
YAML
}

# tenant_pod NAME ENV LIMITS [SPEC_LINE [ANNOTATIONS]]: a tenant's pod, not privileged, whose
# container sets ENFLAME_VISIBLE_DEVICES=ENV, lists /dev and exits.
tenant_pod() {
  "$KUBECTL" apply -f - > /dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {${5:-}}
spec:
  ${4:-}
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "ls /dev; true"]
    env: [{name: ENFLAME_VISIBLE_DEVICES, value: "$2"}]
    resources: {limits: {$3}}
YAML
}

# pod_outcome POD: "ran" once the pod ran to its end, "refused: REASON" once its container could
# not be made (the shim's one line in the event), within 60 s.
pod_outcome() {
  local phase reason
  for _ in $(seq 60); do
    phase=$("$KUBECTL" get pod "$1" -o jsonpath='{.status.phase}')
    reason=$("$KUBECTL" get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')
    [[ $phase != Succeeded && $phase != Failed ]] || { echo ran; return 0; }
    [[ $reason != *Error ]] || { echo "refused: $reason"; return 0; }
    sleep 1
  done
  "$KUBECTL" describe pod "$1" | tail -n 15
  return 1
}

# tenant_cards POD: the gcuN (not gcuctl) in a tenant_pod's /dev, one a line.
tenant_cards() { "$KUBECTL" logs "$1" | grep -E '^gcu[0-9]+$' | sort; }

# no_card_in POD...: each tenant_pod ran or was refused, and none saw a card.
no_card_in() {
  local p out
  for p in "$@"; do
    out=$(pod_outcome "$p") || return 1
    echo "$p: $out"
    out=$(tenant_cards "$p" || true)
    [ -z "$out" ] || { echo "$p got $out"; return 1; }
  done
}

# one_card_in POD: the tenant_pod ran and saw exactly one card.
one_card_in() {
  local out
  out=$(pod_outcome "$1") || return 1
  [ "$out" = ran ] || { echo "$1: $out"; return 1; }
  out=$(tenant_cards "$1" || true)
  echo "$1: $out"
  [ "$(grep -c . <<<"$out")" -eq 1 ]
}

# cluster_diag: what a suite wants shown when a wait below fails (say, a daemon's last log
# lines); a suite defines it, or nothing more is shown.
_cluster_diag() { if declare -F cluster_diag > /dev/null; then cluster_diag || true; fi; }

# ds_ready [SECONDS]: every DaemonSet in namespace $NS (there is one at least) rolled out and
# Ready, each within SECONDS (180); on failure the pods, the DaemonSet's last lines and
# cluster_diag.
ds_ready() {
  local list ds
  list=$("$KUBECTL" -n "$NS" get ds -o name) || return 1
  [ -n "$list" ] || { echo "no DaemonSet in $NS"; return 1; }
  for ds in $list; do
    "$KUBECTL" -n "$NS" rollout status "$ds" --timeout="${1:-180}s" > /dev/null || {
      "$KUBECTL" -n "$NS" get pods -o wide
      "$KUBECTL" -n "$NS" describe "$ds" | tail -n 15
      _cluster_diag
      return 1
    }
  done
}

# allocatable_is RESOURCE N: wait (60 s) until the node's allocatable RESOURCE (e.g.
# enflame.com/gcu) is N; on failure what it is.
allocatable_is() {
  local n=
  for _ in $(seq 60); do
    n=$("$KUBECTL" get node "$NODE_NAME" -o json | jq -r --arg r "$1" '.status.allocatable[$r] // ""')
    [ "$n" = "$2" ] && return 0
    sleep 1
  done
  echo "allocatable $1 is '$n', not $2, after 60 s"
  return 1
}

# wait_phase POD PHASE [NAMESPACE]: wait (120 s) until the pod's phase is PHASE (NAMESPACE:
# default); on failure the pod's description and cluster_diag.
wait_phase() {
  "$KUBECTL" -n "${3:-default}" wait --for=jsonpath='{.status.phase}'="$2" "pod/$1" --timeout=120s > /dev/null || {
    "$KUBECTL" -n "${3:-default}" describe "pod/$1" | tail -n 25
    _cluster_diag
    return 1
  }
}

