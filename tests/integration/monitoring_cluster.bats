#!/usr/bin/env bats
# deployments/node-exporter as shipped, on the one-node cluster (tests/cluster/cluster.sh): the
# image `make node-exporter-image` builds (Debian's prometheus-node-exporter) imported into the
# node's containerd, the folder applied with `kubectl apply -k` unchanged, the pod Ready and
# running as shipped (nobody, no privilege), its port answering with this node's figures, and
# gone again when deleted. One cluster for the file. The DaemonSet uses the host's network:
# port 9100 must be free. Run under the machine-wide lock:
#   BUILD_DIR=$PWD/build/dev bats tests/integration/monitoring_cluster.bats

load helpers
load one_node_cluster
bats_require_minimum_version 1.5.0

NS=kube-system
PORT=9100

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  export MC; MC=$(mktemp -d /tmp/ectk-mon.XXXXXX)
  chmod 755 "$MC"
  cluster_up "$MC" node-exporter-image "$TOP/build/images/node-exporter.oci.tar"
  "$KUBECTL" label node "$NODE_NAME" enflame.com/gpu.present=true --overwrite > /dev/null
}

teardown_file() {
  cluster_down "${MC:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$MC/cluster/env" ] || skip "the cluster is not up"
  setup_scratch
}

teardown() { teardown_scratch; }

kc() { "$KUBECTL" "$@"; }
port_closed() { ! curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/"; }
# ours: the uid of the shipped DaemonSet's process on this host (its args are the manifest's)
ours_uid() { ps -eo uid=,args= | awk -v p="--web.listen-address=:$PORT" '$2 ~ /prometheus-node-exporter$/ && $3 == p {print $1}'; }

@test "node exporter as shipped: Ready, as nobody without privilege, this node's figures on :9100; deleted, the port closes" {
  port_closed || skip_or_fail "port $PORT is in use on this machine"
  run kc apply -k "$TOP/deployments/node-exporter"
  [ "$status" -eq 0 ]
  on_teardown "kc delete -k $TOP/deployments/node-exporter --ignore-not-found --wait=true >/dev/null 2>&1"
  run kc -n "$NS" rollout status ds/enflame-node-exporter --timeout=120s
  [ "$status" -eq 0 ] || { kc -n "$NS" describe ds enflame-node-exporter | tail -n 15; false; }
  curl -sf "http://127.0.0.1:$PORT/metrics" > "$SCRATCH/m"
  # the host's network and UTS namespace (hostNetwork): the node's own name; its / (read through
  # the read-only /host/root) and its CPUs
  grep -q "^node_uname_info{.*nodename=\"$(uname -n)\"" "$SCRATCH/m"
  grep -q '^node_filesystem_avail_bytes{.*mountpoint="/"' "$SCRATCH/m"
  [ "$(grep -c '^node_cpu_seconds_total{.*mode="idle"' "$SCRATCH/m")" -eq "$(grep -c '^cpu[0-9]' /proc/stat)" ]
  # as shipped: nobody, not root
  [ "$(ours_uid)" = 65534 ]
  run kc -n "$NS" get pods -l app.kubernetes.io/name=enflame-node-exporter \
    -o jsonpath='{.items[0].spec.containers[0].securityContext.privileged}'
  [ -z "$output" ]
  kc delete -k "$TOP/deployments/node-exporter" --wait=true > /dev/null
  wait_for port_closed
}
