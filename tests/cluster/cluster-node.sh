# shellcheck shell=bash
# cluster.sh's node: the private mount namespace and the cgroup root its containerd and kubelet
# run in, the node's name, and talking to the running cluster (kubectl, ctr, readiness checks,
# the service CA, importing archives).
# Sourced by cluster.sh, which runs under `set -Eeuo pipefail` and sets HERE, TOP, the constants
# and D (DIR) before calling any of these.

# namespace: the private mount namespace, held by a process that only sleeps (its pid is
# NS_PID). Inside: the sysctls kubelet insists on as files bound over /proc/sys, overlays over
# the parents of the host folders, a tmpfs on /run, the host folders bound from DIR/host,
# Debian 13's containerd over /usr/bin/containerd (what the installer, chrooted into the host,
# checks its config with), and / made shared for kubelet's mount propagation.
namespace() {
  local s=$D/ns/setup.sh
  mkdir -p "$D/ns/sysctl"
  {
    echo 'set -eu'
    echo "D=$(printf %q "$D")"
    local kv key val p n b
    for kv in "${SYSCTLS[@]}"; do
      read -r key val <<<"$kv"
      echo "$val" > "$D/ns/sysctl/${key//\//.}"
      [ "$(cat "/proc/sys/$key")" = "$val" ] || echo "mount --bind \"\$D/ns/sysctl/${key//\//.}\" /proc/sys/$key"
    done
    for p in "${OVERLAID[@]}"; do
      n=$D/ns/ovl${p//\//_}
      mkdir -p "$n/upper" "$n/work"
      echo "mount -t overlay overlay -o lowerdir=$p,upperdir=$n/upper,workdir=$n/work $p"
    done
    echo 'mount -t tmpfs -o mode=755 tmpfs /run'
    echo 'mkdir -m 1777 /run/lock'
    for p in "${HOST_DIRS[@]}"; do
      mkdir -p "$D/host$p"
      echo "mkdir -p $p && mount --bind \"\$D/host$p\" $p"
    done
    for b in containerd containerd-shim-runc-v2 ctr; do
      [ ! -e "/usr/bin/$b" ] || echo "mount --bind $PREFIX/usr/bin/$b /usr/bin/$b"
    done
    echo 'mount --make-rshared /'
    echo 'readlink /proc/self/ns/mnt > "$D/ns/mnt"'
    echo 'exec -a "$D/ns/holder" sleep infinity'
  } > "$s"
  setsid unshare --mount --propagation private bash "$s" >> "$(log namespace)" 2>&1 < /dev/null 3>&- 4>&- &
  echo $! > "$(pidfile namespace)"
  local i
  for (( i = 0; i < 100; i++ )); do
    [ -s "$D/ns/mnt" ] && break
    kill -0 "$(cat "$(pidfile namespace)")" 2>/dev/null || fail "the mount namespace could not be set up; log: $(log namespace)"
    sleep 0.05
  done
  [ -s "$D/ns/mnt" ] || fail "the mount namespace was not ready in 5s; log: $(log namespace)"
  NS_PID=$(cat "$(pidfile namespace)")
}

# cgroup_root: /CGROUP_ROOT in every hierarchy, kubelet's cgroupRoot (it must exist), so this
# cluster's pods stay apart from any other kubelet's and are found and removed at `down`.
cgroup_root() {
  local h
  for h in /sys/fs/cgroup/*/; do
    mkdir -p "$h$CGROUP_ROOT"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" > "$h$CGROUP_ROOT/cpuset.cpus"
      cat "$h/cpuset.mems" > "$h$CGROUP_ROOT/cpuset.mems"
    fi
  done
}

# node_name: NODE_NAME, the host's name when it resolves to a loopback address (kubelet refuses
# a loopback node IP, so the API server reaches kubelet, which listens on 127.0.0.1 only, by
# the node's Hostname address), else localhost.
node_name() {
  NODE_NAME=$(hostname | tr '[:upper:]' '[:lower:]')
  getent hosts "$NODE_NAME" | awk '{print $1}' | grep -E '^(127\.|::1$)' >/dev/null || NODE_NAME=localhost
}

kc() { "$KBIN/kubectl" --kubeconfig "$D/kubeconfig" --request-timeout 10s "$@"; }
ctr_ns() { nsenter -t "$NS_PID" -m -- "$PREFIX/usr/bin/ctr" --address "$NS_SOCK" "$@"; }
apiserver_ready() {
  [ "$(curl -fsS --max-time 2 --cacert "$D/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
    "https://127.0.0.1:$APISERVER_PORT/readyz" 2>/dev/null)" = ok ]
}
healthz() { [ "$(curl -fsSk --max-time 2 "https://127.0.0.1:$1/healthz" 2>/dev/null)" = ok ]; }
etcd_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$(port etcd)/health" 2>/dev/null | grep '"health":"true"' >/dev/null; }
containerd_answers() { ctr_ns version >/dev/null 2>&1; }

node_ready() {
  [ "$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# node_usable: Ready, and no taint left (with no node-lifecycle controller, the not-ready taint
# kubelet registers with is removed here).
node_usable() {
  node_ready || return 1
  local taints
  taints=$(kc get node "$NODE_NAME" -o 'jsonpath={.spec.taints}') || return 1
  [ -n "$taints" ] || return 0
  kc patch node "$NODE_NAME" --type json -p '[{"op":"remove","path":"/spec/taints"}]' >/dev/null 2>&1
  return 1
}

# service_ca NS...: this fork's ServiceAccount admission puts the ConfigMap
# openshift-service-ca.crt into every token volume: without it pods stay in ContainerCreating.
service_ca() {
  local ns
  for ns in "$@"; do
    kc -n "$ns" create configmap openshift-service-ca.crt --from-file=service-ca.crt="$D/pki/ca.crt" \
      --dry-run=client -o yaml | kc apply -f - >/dev/null
  done
}

# namespace_ready NS: the ServiceAccount "default" and both CA ConfigMaps are there.
namespace_ready() {
  kc -n "$1" get serviceaccount default >/dev/null 2>&1 &&
    kc -n "$1" get configmap kube-root-ca.crt openshift-service-ca.crt >/dev/null 2>&1
}

# archive_names ARCHIVE: the image names an OCI archive's index.json gives.
archive_names() {
  tar -xOf "$1" index.json 2>/dev/null | python3 -c '
import json, sys
for m in json.load(sys.stdin).get("manifests", []):
    a = m.get("annotations") or {}
    n = a.get("io.containerd.image.name") or a.get("org.opencontainers.image.ref.name") or ""
    if "/" in n or ":" in n: print(n)'
}

# import_archive ARCHIVE: ctr import into k8s.io, tried again while an image it names is not
# listed afterwards (containerd can drop the first import right after a start).
import_archive() {
  local a=$1 names n try ok out
  [ -f "$a" ] && [ -r "$a" ] || { echo "cluster: cannot read archive '$a'" >&2; return 1; }
  names=$(archive_names "$a") || { echo "cluster: '$a' is not an OCI archive (no index.json)" >&2; return 1; }
  for try in 1 2 3 4 5; do
    if out=$(ctr_ns -n k8s.io images import --all-platforms - < "$a" 2>&1); then
      ok=1
      for n in $names; do ctr_ns -n k8s.io images ls -q "name==$n" | grep -Fx "$n" >/dev/null || ok=; done
      [ -z "$ok" ] || return 0
    fi
    sleep "$try"
  done
  echo "cluster: importing '$a' into containerd failed 5 times: $(tail -n 1 <<<"$out")" >&2
  return 1
}
