# shellcheck shell=bash
# cluster.sh's commands (cmd_up, cmd_down, the restarts, compact-etcd, import, namespace) and
# what they share (the state of a running cluster, taking it down).
# Sourced by cluster.sh, which runs under `set -Eeuo pipefail` and sets HERE, TOP, the constants
# and D (DIR) before calling any of these.
# shellcheck disable=SC2034  # what this sets, the other parts of cluster.sh read; read's fillers

# load_state: what a command on a running cluster needs, from DIR's files.
load_state() {
  D=$(cd "$D" 2>/dev/null && pwd) || { echo "cluster: no folder '$D'" >&2; exit 1; }
  [ -f "$D/state" ] || { echo "cluster: no cluster in '$D' (no $D/state)" >&2; exit 1; }
  # shellcheck disable=SC1091
  . "$D/state"
}

cmd_up() {
  local t0 ns
  t0=$(now)
  if [ -e "$D" ] && [ -n "$(ls -A "$D" 2>/dev/null)" ]; then
    echo "cluster: '$D' is not empty (up needs an empty or absent folder)" >&2; exit 2
  fi
  local p
  [[ $D != *[[:space:]]* ]] || { echo "cluster: '$D' has a blank in it: use a folder without" >&2; exit 2; }
  for p in "${OVERLAID[@]}" /run; do
    case $(realpath -m "$D")/ in "$p"/*)
      echo "cluster: '$D' is under $p, which the cluster's namespace covers: use a folder elsewhere (/tmp)" >&2; exit 2 ;;
    esac
  done
  prerequisites
  kube_bins
  # ports before anything is started
  local name var def pt
  for p in "${PORTS[@]}"; do
    read -r name var def <<<"$p"
    pt=$(port "$name")
    [[ $pt =~ ^[0-9]+$ ]] && [ "$pt" -gt 0 ] && [ "$pt" -lt 65536 ] ||
      { echo "cluster: $var='$pt' is not a port number" >&2; exit 2; }
    if [ -n "$(ss -Htln "sport = :$pt")" ]; then
      echo "cluster: port $pt ($name, $var) is already in use on this host" >&2; exit 1
    fi
  done
  mkdir -p "$D"
  D=$(cd "$D" && pwd)
  mkdir -p "$D/logs" "$D/pids" "$D/cmd" "$D/ns"
  debian_bins

  UP_STARTED=1
  trap 'fail "cluster.sh failed at ${BASH_SOURCE[0]##*/} line $LINENO ($BASH_COMMAND); logs: $D/logs"' ERR
  trap 'fail "interrupted; logs: $D/logs"' INT TERM
  node_name
  APISERVER_PORT=$(port kube-apiserver)
  CGROUP_ROOT=ectk-cluster-$(printf %s "$D" | cksum | cut -d' ' -f1)
  pki
  identities
  containerd_config
  cni
  kubelet_config
  cat > "$D/state" <<EOF
KBIN=$KBIN
PREFIX=$PREFIX
NODE_NAME=$NODE_NAME
APISERVER_PORT=$APISERVER_PORT
CGROUP_ROOT=$CGROUP_ROOT
ADMIN_TOKEN=$ADMIN_TOKEN
EOF

  local ep epp
  ep=$(port etcd); epp=$(port etcd-peer)
  start etcd "$PREFIX/usr/bin/etcd" --name ectk --data-dir "$D/etcd" \
    --listen-client-urls "http://127.0.0.1:$ep" --advertise-client-urls "http://127.0.0.1:$ep" \
    --listen-peer-urls "http://127.0.0.1:$epp" --initial-advertise-peer-urls "http://127.0.0.1:$epp" \
    --initial-cluster "ectk=http://127.0.0.1:$epp" --unsafe-no-fsync --log-level warn
  namespace
  cgroup_root
  start containerd-supervisor ns /bin/sh -c '
    # containerd under a supervisor, as systemd Restart=always: started again whenever it exits
    while :; do
      /usr/bin/containerd --config "$1" >> "$2/logs/containerd.log" 2>&1 &
      echo $! > "$2/pids/containerd.pid"
      wait $!
      echo "supervisor: containerd exited with $?, starting it again" >> "$2/logs/containerd.log"
      sleep 0.2
    done' containerd-supervisor "$NS_CONFIG" "$D"

  wait_ready etcd 20 etcd_ready
  start kube-apiserver "$KBIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ep" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$D/pki/apiserver.crt" --tls-private-key-file "$D/pki/apiserver.key" \
    --client-ca-file "$D/pki/ca.crt" --token-auth-file "$D/kube/tokens.csv" \
    --kubelet-client-certificate "$D/pki/kubelet-client.crt" --kubelet-client-key "$D/pki/kubelet-client.key" \
    --service-account-key-file "$D/pki/sa.pub" --service-account-signing-key-file "$D/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/24 \
    --kubelet-preferred-address-types Hostname,InternalIP \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true --endpoint-reconciler-type none --cert-dir "$D/kube/apiserver-certs" \
    --feature-gates DynamicResourceAllocation=true --runtime-config resource.k8s.io/v1beta1=true \
    --audit-policy-file "$D/kube/audit-policy.yaml" --audit-log-path "$(log audit)" \
    --audit-log-maxsize 200 --audit-log-maxbackup 1

  # while the API server starts: containerd, and the images in it
  local i n
  for (( i = 0; i < 150; i++ )); do
    ours containerd >/dev/null && containerd_answers && break
    # its supervisor starts it again at once: three exits are a crash loop
    n=$(grep -c '^supervisor: containerd exited' "$(log containerd)" 2>/dev/null || true)
    [ "${n:-0}" -lt 3 ] || fail "containerd exited while starting; log: $(log containerd)"
    sleep 0.2
  done
  containerd_answers || fail "containerd did not become ready in 30s; log: $(log containerd)"
  mkdir -p "$D/images"
  local bb=()
  for name in "${BUSYBOX_NAMES[@]}"; do bb+=(--name "$name"); done
  python3 "$HERE/oci_image.py" "$D/images/busybox.oci.tar" "${bb[@]}" > "$(log images)" 2>&1 &&
    python3 "$HERE/oci_image.py" "$D/images/pause.oci.tar" --name "$PAUSE_IMAGE" \
      --entrypoint '["/bin/sleep", "infinity"]' --cmd '[]' >> "$(log images)" 2>&1 ||
    fail "the busybox and pause images could not be built; log: $(log images)"
  for name in busybox pause; do
    import_archive "$D/images/$name.oci.tar" >> "$(log images)" 2>&1 ||
      fail "importing the $name image into containerd failed; log: $(log images)"
  done
  ctr_ns -n k8s.io images label "$PAUSE_IMAGE" io.cri-containerd.pinned=pinned >> "$(log images)" 2>&1 ||
    fail "pinning the pause image failed; log: $(log images)"

  wait_ready kube-apiserver 45 apiserver_ready
  start kube-scheduler "$KBIN/kube-scheduler" --kubeconfig "$D/kube/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$(port kube-scheduler)" --cert-dir "$D/kube/scheduler-certs" \
    --leader-elect=false --feature-gates DynamicResourceAllocation=true
  start kube-controller-manager "$KBIN/kube-controller-manager" \
    --kubeconfig "$D/kube/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$(port kube-controller-manager)" \
    --cert-dir "$D/kube/controller-manager-certs" --leader-elect=false --controllers "$CONTROLLERS" \
    --service-account-private-key-file "$D/pki/sa.key" --root-ca-file "$D/pki/ca.crt" \
    --use-service-account-credentials=true --feature-gates DynamicResourceAllocation=true
  start kubelet ns "$KBIN/kubelet" --config "$D/kubelet/config.yaml" \
    --kubeconfig "$D/kube/kubelet.kubeconfig" --hostname-override "$NODE_NAME" \
    --v=2
  for ns in default kube-system; do
    for (( i = 0; i < 50; i++ )); do service_ca "$ns" 2>/dev/null && break; sleep 0.2; done
  done
  service_ca default kube-system 2>> "$(log kube-apiserver)" ||
    fail "creating the openshift-service-ca.crt ConfigMaps failed; log: $(log kube-apiserver)"

  wait_ready kube-scheduler 30 healthz "$(port kube-scheduler)"
  wait_ready kube-controller-manager 30 healthz "$(port kube-controller-manager)"
  wait_ready kubelet 45 node_usable
  wait_ready kube-controller-manager 30 namespace_ready default
  wait_ready kube-controller-manager 30 namespace_ready kube-system

  cat > "$D/env" <<EOF
# the test cluster in $D (tests/cluster/cluster.sh); source this file
export CLUSTER_DIR=$D
export KUBECONFIG=$D/kubeconfig
export KUBECTL=$KBIN/kubectl
export NODE_NAME=$NODE_NAME
export APISERVER_PORT=$APISERVER_PORT
export KUBELET_PORT=$(port kubelet)
export NS_PID=$NS_PID
export CTR="nsenter -t $NS_PID -m -- $PREFIX/usr/bin/ctr --address $NS_SOCK"
export CONTAINERD_SOCK=$NS_SOCK
export CONTAINERD_CONFIG=$NS_CONFIG
export CONTAINERD_PID_FILE=$(pidfile containerd)
# every write the API server accepted, one JSON line each (audit.k8s.io/v1 Event, Metadata level)
export AUDIT_LOG=$(log audit)
export CONTAINERD_BIN=$PREFIX/usr/bin
# the namespace's /etc/containerd, /etc/cdi, /run/cdi, /var/lib/kubelet, ... seen from the host
export CLUSTER_HOST_DIR=$D/host
export CGROUP_ROOT=/$CGROUP_ROOT
export BUSYBOX_IMAGE=${BUSYBOX_NAMES[0]}
export PAUSE_IMAGE=$PAUSE_IMAGE
EOF
  trap - ERR
  echo "cluster: up in $(since "$t0") s ($D; source $D/env)"
}

# remove_containers: with kubelet stopped, every task and container in containerd's k8s.io
# namespace killed and deleted (which unmounts their root filesystems), then anything still in
# the cluster's cgroups killed by pid.
remove_containers() {
  local ids id h pids
  if ours containerd >/dev/null && ctr_ns version >/dev/null 2>&1; then
    ids=$(ctr_ns -n k8s.io tasks ls -q 2>/dev/null || true)
    for id in $ids; do ctr_ns -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    for id in $ids; do
      timeout 10 nsenter -t "$NS_PID" -m -- "$PREFIX/usr/bin/ctr" --address "$NS_SOCK" -n k8s.io \
        tasks delete -f "$id" >/dev/null 2>&1 || true
    done
    for id in $(ctr_ns -n k8s.io containers ls -q 2>/dev/null || true); do
      ctr_ns -n k8s.io containers rm "$id" >/dev/null 2>&1 || true
    done
  fi
  for h in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
    [ -d "$h" ] || continue
    pids=$(find "$h" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
    # shellcheck disable=SC2086  # one word per pid
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  done
}

do_down() {
  [ -d "$D" ] || return 0
  D=$(cd "$D" && pwd)
  [ -f "$D/state" ] || [ -d "$D/pids" ] || return 0
  if [ -f "$D/state" ]; then . "$D/state"; fi
  KBIN=${KBIN:-}; PREFIX=${PREFIX:-}; CGROUP_ROOT=${CGROUP_ROOT:-}
  NS_PID=$(ours namespace || true)
  stop kubelet
  stop kube-controller-manager kube-scheduler
  if [ -n "$NS_PID" ] && [ -n "$PREFIX" ]; then remove_containers; fi
  stop containerd-supervisor
  stop containerd kube-apiserver
  # whatever else runs in the namespace (containerd's shims, an exec left behind): ours
  local ns pid left=()
  ns=$(cat "$D/ns/mnt" 2>/dev/null || true)
  if [ -n "$ns" ]; then
    for pid in $(all_pids); do
      [ "$pid" != "${NS_PID:-}" ] && [ "$(ns_of "$pid")" = "$ns" ] && left+=("$pid")
    done
  fi
  stop_pids 5 "${left[@]}"
  stop namespace etcd
  cni_down
  local h m
  if [ -n "$CGROUP_ROOT" ]; then
    for h in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
      [ ! -d "$h" ] || find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
  fi
  # the namespace's mounts vanished with it; nothing of it may show on the host
  for m in $(findmnt -rn -o TARGET | grep -F "$D" | sort -r); do umount -l "$m" 2>/dev/null || true; done
  rm -f "$D/env"
}

# leftovers: sets LEFT, the pids whose command line names DIR, but this script and its callers.
leftovers() {
  local pid mine=" $$ " p=$$
  while [ "$p" -gt 1 ]; do
    p=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
    mine+="$p "
  done
  LEFT=()
  for pid in $(all_pids); do
    [[ $mine == *" $pid "* ]] || ! names_dir "$pid" || LEFT+=("$pid")
  done
}

cmd_down() {
  local t0
  t0=$(now)
  do_down
  leftovers
  [ ${#LEFT[@]} -eq 0 ] || { echo "cluster: still running after down: pids ${LEFT[*]}" >&2; exit 1; }
  echo "cluster: down in $(since "$t0") s ($D)"
}

# heartbeat_since T: the node is Ready by a status kubelet posted at or after T (RFC 3339).
heartbeat_since() {
  local hb
  hb=$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}') &&
    [[ ! $hb < $1 ]] && node_usable
}

cmd_restart_kubelet() {
  load_state
  local t
  NS_PID=$(ours namespace) || { echo "cluster: the cluster in '$D' is not running" >&2; exit 1; }
  t=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  stop kubelet
  relaunch kubelet
  wait_ready kubelet 60 heartbeat_since "$t"
}

# Every client's watch on it breaks; etcd keeps the state, so what reconnects resumes.
cmd_restart_apiserver() {
  load_state
  ours kube-apiserver >/dev/null || { echo "cluster: the API server in '$D' is not running" >&2; exit 1; }
  stop kube-apiserver
  relaunch kube-apiserver
  wait_ready kube-apiserver 45 apiserver_ready
}

# What the API server does every 5 min (--etcd-compaction-interval), now: history before the
# current revision is gone. Through etcd's gRPC gateway (Debian's etcd-server has no etcdctl).
cmd_compact_etcd() {
  load_state
  ours etcd >/dev/null || { echo "cluster: etcd in '$D' is not running" >&2; exit 1; }
  local url rev
  url=http://127.0.0.1:$(port etcd)/v3
  rev=$(curl -fsS --max-time 5 -X POST "$url/kv/range" -d '{"key":"AA=="}' | sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p') &&
    [[ $rev =~ ^[0-9]+$ ]] || { echo "cluster: etcd's revision could not be read at $url" >&2; exit 1; }
  curl -fsS --max-time 30 -X POST "$url/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" > /dev/null ||
    { echo "cluster: compacting etcd at revision $rev failed" >&2; exit 1; }
  echo "$rev"
}

# The API server's etcd watches break; each resumes from its last revision, and one whose
# revision was compacted meanwhile makes its watch cache list etcd again (ending the clients'
# watches on it: they come back with their resourceVersion and get 410 Gone).
cmd_restart_etcd() {
  load_state
  ours etcd >/dev/null || { echo "cluster: etcd in '$D' is not running" >&2; exit 1; }
  stop etcd
  relaunch etcd
  wait_ready etcd 20 etcd_ready
}

cmd_restart_containerd() {
  load_state
  NS_PID=$(ours namespace) || { echo "cluster: the cluster in '$D' is not running" >&2; exit 1; }
  local old i
  old=$(ours containerd) || { echo "cluster: containerd in '$D' is not running" >&2; exit 1; }
  kill -TERM "$old"
  for (( i = 0; i < 300; i++ )); do
    if ! kill -0 "$old" 2>/dev/null && [ "$(cat "$(pidfile containerd)")" != "$old" ] &&
       ours containerd >/dev/null && containerd_answers; then
      return 0
    fi
    sleep 0.1
  done
  echo "cluster: containerd did not come back in 30s after SIGTERM; log: $(log containerd)" >&2
  exit 1
}

cmd_import() {
  load_state
  NS_PID=$(ours namespace) || { echo "cluster: the cluster in '$D' is not running" >&2; exit 1; }
  local a
  for a in "$@"; do import_archive "$a" || exit 1; done
}

cmd_namespace() {
  load_state
  local ns
  for ns in "$@"; do
    kc create namespace "$ns" --dry-run=client -o yaml | kc apply -f - >/dev/null
    service_ca "$ns"
  done
}
