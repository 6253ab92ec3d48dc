#!/usr/bin/env bash
# cluster.sh: a real one-node Kubernetes (v1.32) for the tests, everything under one folder.
#
#   cluster.sh up DIR                    start it; returns when the node is Ready and untainted
#   cluster.sh down DIR                  stop everything it started (by pid), undo its mounts
#   cluster.sh import DIR ARCHIVE...     OCI archives into containerd's k8s.io namespace
#   cluster.sh namespace DIR NAME...     namespaces pods can run in (with this fork's ConfigMap)
#   cluster.sh restart-kubelet DIR       stop kubelet and start it again, wait until Ready
#   cluster.sh restart-containerd DIR    SIGTERM containerd; its supervisor starts it again
#   cluster.sh restart-apiserver DIR     stop kube-apiserver and start it again, wait until ready
#   cluster.sh compact-etcd DIR          compact etcd's history up to its current revision (printed)
#   cluster.sh restart-etcd DIR          stop etcd and start it again, wait until healthy
#
# etcd and the control plane run on the host, bound to 127.0.0.1 only. containerd 1.7 (under a
# supervisor that restarts it, as systemd's Restart=always) and kubelet run in a private mount
# namespace where the host-global folders our installer and plugins write (/etc/containerd,
# /etc/cdi, /run/cdi, /var/lib/kubelet, /usr/local/enflame, ...) are bind-mounted from
# DIR/host, so the real host is never written. `up` writes DIR/env (source it). Exit status:
# 0 done, 1 failed (one line naming the part and its log; what was started is stopped),
# 2 usage, 3 something this machine lacks (one line saying what and what to set).
# See tests/cluster/README.md.
set -Eeuo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
KUBE_NAMES=(kubelet kube-apiserver kube-scheduler kube-controller-manager kubectl)
BUSYBOX_NAMES=(docker.io/library/busybox:1.36 docker.io/library/busybox:latest)
PAUSE_IMAGE=registry.k8s.io/pause:3.10
NS_SOCK=/run/containerd/containerd.sock
NS_CONFIG=/etc/containerd/config.toml
# Host folders the node's software writes, bind-mounted from DIR/host inside the namespace.
HOST_DIRS=(/etc/containerd /etc/cdi /etc/enflame-container-runtime /run/containerd /run/cdi
           /var/lib/kubelet /usr/local/enflame /var/log/pods /var/log/containers)
# Their parents are overlays there (writes land in DIR/ns, the host's files stay visible) so
# that mount points the host lacks can be made without touching the host; /run is a tmpfs.
OVERLAID=(/etc /var/lib /var/log /usr/local)
SYSCTLS=("vm/overcommit_memory 1" "vm/panic_on_oom 0" "kernel/panic 10" "kernel/panic_on_oops 1"
         "kernel/keys/root_maxkeys 1000000" "kernel/keys/root_maxbytes 25000000")
CONTROLLERS=daemonset-controller,replicaset-controller,deployment-controller,job-controller,\
serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,\
garbage-collector-controller,namespace-controller,resourceclaim-controller
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

usage() {
  echo "usage: cluster.sh up|down|restart-kubelet|restart-containerd|restart-apiserver|compact-etcd|restart-etcd DIR | import DIR ARCHIVE... | namespace DIR NAME..." >&2
  exit 2
}

# --- small helpers -------------------------------------------------------------------------

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# missing WHAT: this machine lacks something; exit 3 (tests skip, or fail under CI).
missing() { echo "cluster: $*" >&2; exit 3; }

# fail MESSAGE: one line, then stop what `up` started (when it was `up`), exit 1.
fail() {
  trap - ERR
  echo "cluster: $*" >&2
  if [ -n "${UP_STARTED:-}" ]; then do_down "$D" >/dev/null 2>&1 || true; fi
  exit 1
}

log() { echo "$D/logs/$1.log"; }
pidfile() { echo "$D/pids/$1.pid"; }

# ports: the name, env variable and default of each port the cluster listens on (127.0.0.1).
PORTS=("etcd CLUSTER_ETCD_PORT 2379" "etcd-peer CLUSTER_ETCD_PEER_PORT 2380"
       "kube-apiserver CLUSTER_APISERVER_PORT 6443" "kube-scheduler CLUSTER_SCHEDULER_PORT 10259"
       "kube-controller-manager CLUSTER_CONTROLLER_MANAGER_PORT 10257"
       "kubelet CLUSTER_KUBELET_PORT 10250" "kubelet-healthz CLUSTER_KUBELET_HEALTHZ_PORT 10248")
# port NAME: the port for NAME ($CLUSTER_..._PORT, or its default plus $CLUSTER_PORT_OFFSET).
port() {
  local p name var def
  for p in "${PORTS[@]}"; do
    read -r name var def <<<"$p"
    [ "$name" = "$1" ] || continue
    echo "${!var:-$((def + ${CLUSTER_PORT_OFFSET:-0}))}"
    return 0
  done
  return 1
}

# --- processes -------------------------------------------------------------------------------

all_pids() { local p; for p in /proc/[0-9]*; do echo "${p#/proc/}"; done; }

# ns_of PID: the mount namespace of PID ("mnt:[...]"), empty when gone.
ns_of() { readlink "/proc/$1/ns/mnt" 2>/dev/null || true; }

# names_dir PID: PID's command line has DIR or a path in it as an argument.
names_dir() {
  local a
  while IFS= read -r -d '' a; do
    case $a in "$D" | "$D"/* | *=$D/*) return 0 ;; esac
  done 2>/dev/null < "/proc/$1/cmdline"
  return 1
}

# ours NAME: the pid in NAME's pid file when that process is still the one started here (its
# command line names DIR; containerd, whose does not, runs in the cluster's namespace).
ours() {
  local f pid
  f=$(pidfile "$1")
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  [ -d "/proc/$pid" ] || return 1
  case $(ps -o stat= -p "$pid") in Z*) return 1 ;; esac
  if [ "$1" = containerd ]; then
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = containerd ] || return 1
    [ -n "$(ns_of "$pid")" ] && [ "$(ns_of "$pid")" = "$(cat "$D/ns/mnt" 2>/dev/null)" ] || return 1
  else
    names_dir "$pid" || return 1
  fi
  echo "$pid"
}

# stop_pids SECONDS PID...: SIGTERM, wait up to SECONDS for all to exit, then SIGKILL.
stop_pids() {
  local t=$1 pid left i; shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for (( i = 0; i < t * 10; i++ )); do
    left=
    for pid in "$@"; do
      case $(ps -o stat= -p "$pid" 2>/dev/null) in ''|Z*) ;; *) left=1 ;; esac
    done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}

# stop NAME...: stop the named daemons (those still ours) together.
stop() {
  local n pid pids=()
  for n in "$@"; do
    if pid=$(ours "$n"); then pids+=("$pid"); fi
  done
  stop_pids 10 "${pids[@]}"
}

# start NAME [ns] CMD...: CMD as a daemon, detached, output to DIR/logs/NAME.log; with "ns",
# inside the cluster's mount namespace. The command is kept in DIR/cmd/NAME for restarts.
# Nothing forks on the way (setsid and nsenter -m exec), so the pid file holds CMD's pid.
start() {
  local name=$1; shift
  if [ "$1" = ns ]; then
    shift
    set -- nsenter -t "$(cat "$(pidfile namespace)")" -m -- "$@"
  fi
  { echo '#!/bin/bash'; printf 'exec'; printf ' %q' "$@"; echo; } > "$D/cmd/$name"
  chmod +x "$D/cmd/$name"
  relaunch "$name"
}

relaunch() {
  setsid "$D/cmd/$1" >> "$(log "$1")" 2>&1 < /dev/null 3>&- 4>&- &
  echo $! > "$(pidfile "$1")"
}

# wait_ready NAME SECONDS CMD...: poll CMD until it succeeds; fail naming NAME and its log when
# NAME's process exits or SECONDS pass.
wait_ready() {
  local name=$1 secs=$2 start; shift 2
  start=$(date +%s)
  until "$@" >/dev/null 2>&1; do
    ours "$name" >/dev/null || fail "$name exited while starting; log: $(log "$name")"
    [ $(( $(date +%s) - start )) -lt "$secs" ] || fail "$name did not become ready in ${secs}s; log: $(log "$name")"
    sleep 0.2
  done
}

# --- binaries --------------------------------------------------------------------------------

# kube_bins: sets KBIN (a folder holding the five Kubernetes binaries of one release, 1.32 or
# newer) from $ENFLAME_KUBE_BIN, unpacking NAME.zst files there into build/kube/bin once (checked
# against a SHA256SUMS beside them when there is one). No package registry serves these
# binaries: the user names them (tests/cluster/README.md).
kube_bins() {
  local src=${ENFLAME_KUBE_BIN:-} n lacking=()
  [ -n "$src" ] ||
    missing "ENFLAME_KUBE_BIN is not set: name a folder holding ${KUBE_NAMES[*]} of one release, 1.32 or newer (plain or NAME.zst)"
  [ -d "$src" ] || missing "ENFLAME_KUBE_BIN '$src' is not a folder: set it to a folder holding ${KUBE_NAMES[*]} (1.32 or newer)"
  for n in "${KUBE_NAMES[@]}"; do
    [ -x "$src/$n" ] || [ -f "$src/$n.zst" ] || lacking+=("$n")
  done
  [ ${#lacking[@]} -eq 0 ] ||
    missing "no ${lacking[*]} in '$src': set ENFLAME_KUBE_BIN to a folder holding ${KUBE_NAMES[*]} (1.32 or newer, plain or NAME.zst)"
  unpack_kube_bins "$src"
  kube_release "$src"
}

# kube_release SRC: the five binaries in $KBIN are of one release, 1.32 or newer; else missing.
kube_release() {
  local n v first= bad=()
  for n in "${KUBE_NAMES[@]}"; do
    if [ "$n" = kubectl ]; then v=$("$KBIN/$n" version --client 2>/dev/null | grep -oE 'v[0-9]+\.[0-9]+\.[0-9]+' | sed -n 1p)
    else v=$("$KBIN/$n" --version 2>/dev/null | grep -oE 'v[0-9]+\.[0-9]+\.[0-9]+' | sed -n 1p); fi
    [ -n "$v" ] || missing "'$1/$n' does not tell its version: ENFLAME_KUBE_BIN must hold the release binaries (1.32 or newer)"
    first=${first:-$v}
    [ "$v" = "$first" ] || bad+=("$n $v")
  done
  [ ${#bad[@]} -eq 0 ] || missing "'$1' mixes releases: ${KUBE_NAMES[0]} is $first, $(IFS=,; echo "${bad[*]}"): use the five binaries of one release"
  v=${first#v}; v=${v#1.}; v=${v%%.*}
  [ "$v" -ge 32 ] || missing "'$1' holds Kubernetes $first: the cluster suites need 1.32 or newer"
  KUBE_VERSION=$first
}

# unpack_kube_bins SRC: KBIN=SRC for plain binaries; NAME.zst files unpacked into build/kube/bin.
unpack_kube_bins() {
  local src=$1 n want got tmp
  if [ ! -f "$src/${KUBE_NAMES[0]}.zst" ]; then KBIN=$(cd "$src" && pwd); return 0; fi
  KBIN=$TOP/build/kube/bin
  mkdir -p "$KBIN"
  for n in "${KUBE_NAMES[@]}"; do
    [ ! -x "$KBIN/$n" ] || [ "$KBIN/$n" -nt "$src/$n.zst" ] || rm -f "$KBIN/$n"
    [ ! -x "$KBIN/$n" ] || continue
    command -v zstd >/dev/null || missing "zstd is needed to unpack '$src/$n.zst' (apt-get install zstd)"
    tmp=$(mktemp "$KBIN/.$n.XXXXXX")
    zstd -q -d -f --long=27 -o "$tmp" "$src/$n.zst" || { rm -f "$tmp"; missing "cannot unpack '$src/$n.zst'"; }
    want=$(awk -v n="$n" '$2 == n || $2 == "*" n {print $1}' "$src/SHA256SUMS" 2>/dev/null || true)
    got=$(sha256sum "$tmp" | cut -d' ' -f1)
    if [ -n "$want" ] && [ "$want" != "$got" ]; then
      rm -f "$tmp"
      missing "'$src/$n.zst' unpacks to sha256 $got, SHA256SUMS says $want"
    fi
    chmod 755 "$tmp"
    mv -f "$tmp" "$KBIN/$n"
  done
}

# debian_bins: sets PREFIX, the folder Debian 13's etcd-server and containerd are unpacked in
# (shared with the other tests: $BUILD_DIR/trixie, or build/trixie).
debian_bins() {
  PREFIX=${BUILD_DIR:-$TOP/build}/trixie
  if [ ! -x "$PREFIX/usr/bin/etcd" ] || [ ! -x "$PREFIX/usr/bin/containerd" ]; then
    mkdir -p "$D/logs"
    "$TOP/scripts/fetch-trixie.sh" "$PREFIX" etcd-server containerd > "$D/logs/fetch-trixie.log" 2>&1 ||
      missing "etcd 3.5 and containerd 1.7 from Debian 13 could not be fetched into '$PREFIX': $(tail -n 1 "$D/logs/fetch-trixie.log")"
  fi
  PREFIX=$(cd "$PREFIX" && pwd)
}

prerequisites() {
  local c
  [ "$(id -u)" -eq 0 ] || missing "needs root (mount namespaces, cgroups, containers)"
  for c in runc unshare nsenter setsid openssl python3 curl ss ip iptables; do
    command -v "$c" >/dev/null || missing "needs $c on PATH"
  done
  [ -x /bin/busybox ] && file -L /bin/busybox | grep 'statically linked' >/dev/null ||
    missing "needs a static /bin/busybox for the busybox and pause images (apt-get install busybox-static)"
}

# --- configuration ---------------------------------------------------------------------------

# pki: a CA, the API server's serving cert, its client cert for kubelet, the service-account
# key pair (all EC P-256: quick to make).
pki() {
  local p=$D/pki
  mkdir -p "$p"
  (
    cd "$p"
    key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key"; }
    key ca
    openssl req -x509 -new -key ca.key -subj /CN=ectk-cluster-ca -days 30 -out ca.crt
    # cert NAME SUBJECT EXTENSIONS: a leaf signed by the CA.
    cert() {
      key "$1"
      openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
      printf '%s\n' "$3" > "$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
        -extfile "$1.ext" -out "$1.crt"
    }
    cert apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth"
    cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
    key sa
    openssl ec -in sa.key -pubout -out sa.pub
  ) > "$D/logs/pki.log" 2>&1 || fail "openssl could not make the certificates; log: $D/logs/pki.log"
}

# kubeconfig FILE TOKEN: a kubeconfig for the API server with a static token.
kubeconfig() {
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ectk
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $D/pki/ca.crt
users:
- name: ectk
  user:
    token: $2
contexts:
- name: ectk
  context:
    cluster: ectk
    user: ectk
current-context: ectk
EOF
}

# identities: static tokens (an admin in system:masters, the node, scheduler and
# controller-manager under their RBAC bootstrap names) and a kubeconfig for each.
identities() {
  local k=$D/kube t
  mkdir -p "$k"
  t() { openssl rand -hex 16; }
  local admin node sched cm
  admin=$(t); node=$(t); sched=$(t); cm=$(t)
  {
    echo "$admin,admin,admin,\"system:masters\""
    echo "$node,system:node:$NODE_NAME,node,\"system:nodes\""
    echo "$sched,system:kube-scheduler,kube-scheduler"
    echo "$cm,system:kube-controller-manager,kube-controller-manager"
  } > "$k/tokens.csv"
  chmod 600 "$k/tokens.csv"
  # the API server's audit log: every write (who, verb, object; no bodies), so a suite can count
  # what a client wrote (operator.bats: no write on an unchanged cluster)
  cat > "$k/audit-policy.yaml" <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
YAML
  kubeconfig "$D/kubeconfig" "$admin"
  kubeconfig "$k/kubelet.kubeconfig" "$node"
  kubeconfig "$k/scheduler.kubeconfig" "$sched"
  kubeconfig "$k/controller-manager.kubeconfig" "$cm"
  ADMIN_TOKEN=$admin
}

containerd_config() {
  mkdir -p "$D/host/etc/containerd" "$D/containerd/root" "$D/containerd/opt"
  cat > "$D/host$NS_CONFIG" <<EOF
# containerd 1.7 of the test cluster (tests/cluster/cluster.sh). Its paths are as seen in the
# cluster's mount namespace: /etc/containerd and /run/containerd there are $D/host/...
version = 2
root = "$D/containerd/root"
state = "/run/containerd"
[grpc]
  address = "$NS_SOCK"
# (default /opt/containerd, on the host)
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  # root here lacks CAP_SYS_RESOURCE; no AppArmor on these hosts
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$D/cni/bin"
    conf_dir = "$D/cni/conf"
EOF
}

# cni: the test cluster's network plugin. Each pod gets a veth pair: eth0 in the pod with an
# address from POD_NET (a /32), the host's end with a /32 route to it and the gateway address
# GW (the same on every host end, as Calico does), so kubelet's HTTP probes reach the pod and
# the pod can answer. The pod gets no default route: it can reach the host, nothing else. While
# the cluster is up, the whole POD_NET is `unreachable` in the host's routing table, so a packet
# for a pod that is gone fails here instead of leaving the machine (pod addresses are never
# sent anywhere but to this machine's own network namespaces). containerd also runs
# "loopback" for lo, the same script. The "kubernetes" Service (SVC_IP:443) reaches the API
# server as kube-proxy would route it (there is no kube-proxy here): each pod has a route to
# SVC_IP through GW, and one DNAT rule in the host's nat table (svc_rule) sends what pods send
# there to the API server on 127.0.0.1, which the kernel allows from a pod's host end only
# (route_localnet is set on those interfaces, not globally). So in-cluster clients work as
# shipped, with no hostNetwork or KUBERNETES_SERVICE_HOST override.
POD_NET=10.88
GW=169.254.88.1
SVC_IP=10.96.0.1
# svc_rule -A|-D: add or delete the DNAT rule (tagged with DIR) in the host's nat table.
svc_rule() {
  iptables -w 5 -t nat "$1" PREROUTING -s "$POD_NET.0.0/16" -d "$SVC_IP/32" -p tcp --dport 443 \
    -m comment --comment "ectk-cluster $D" -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT"
}
cni() {
  mkdir -p "$D/cni/bin" "$D/cni/conf" "$D/cni/state"
  cat > "$D/cni/bin/ectk-noop" <<EOF
#!/bin/bash
# CNI plugin of the test cluster (tests/cluster/cluster.sh, cni()): lo up; for eth0 a veth pair
# with a /32 address from $POD_NET.0.0/16 and a host route to it; DEL removes the pair.
state=$D/cni/state
EOF
  cat >> "$D/cni/bin/ectk-noop" <<'EOF'
cat > /dev/null
err() { printf '{"cniVersion":"0.4.0","code":999,"msg":"%s"}\n' "$1"; exit 1; }
host_if() { echo "ectk$(printf %s "$CNI_CONTAINERID" | cksum | cut -d' ' -f1 | cut -c1-9)"; }
case $CNI_COMMAND in
  VERSION) echo '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}' ;;
  ADD)
    nsenter --net="$CNI_NETNS" ip link set lo up || err "cannot bring lo up"
    if [ "$CNI_IFNAME" = lo ]; then ip=127.0.0.1/8; else
      exec 9> "$state/lock"; flock 9
      n=$(cat "$state/next" 2>/dev/null || echo 2)
      echo $(( n + 1 )) > "$state/next"
      exec 9>&-
      ip=__POD_NET__.$(( n / 250 % 250 )).$(( n % 250 + 2 ))
      h=$(host_if)
      ip link add "$h" type veth peer name "$CNI_IFNAME" netns "$CNI_NETNS" || err "veth $h"
      ip addr add __GW__/32 dev "$h" && ip link set "$h" up &&
        ip route add "$ip/32" dev "$h" src __GW__ || err "host side of $h"
      echo 1 > "/proc/sys/net/ipv4/conf/$h/route_localnet" || err "route_localnet on $h"
      nsenter --net="$CNI_NETNS" sh -c "ip addr add $ip/32 dev $CNI_IFNAME && ip link set $CNI_IFNAME up &&
        ip route add __GW__/32 dev $CNI_IFNAME && ip route add __SVC_IP__/32 via __GW__ dev $CNI_IFNAME" ||
        err "pod side of $h"
      echo "$CNI_CONTAINERID $h $ip" >> "$state/pods"
      ip=$ip/32
    fi
    printf '{"cniVersion":"0.4.0","interfaces":[{"name":"%s","sandbox":"%s"}],"ips":[{"version":"4","address":"%s","interface":0}]}\n' \
      "$CNI_IFNAME" "$CNI_NETNS" "$ip" ;;
  DEL)
    [ "$CNI_IFNAME" = lo ] || ip link del "$(host_if)" 2>/dev/null ;;
esac
exit 0
EOF
  sed -i "s/__POD_NET__/$POD_NET/; s/__GW__/$GW/g; s/__SVC_IP__/$SVC_IP/g" "$D/cni/bin/ectk-noop"
  chmod 755 "$D/cni/bin/ectk-noop"
  ln -sf ectk-noop "$D/cni/bin/loopback"
  echo '{"cniVersion":"0.4.0","name":"ectk-noop","plugins":[{"type":"ectk-noop"}]}' > "$D/cni/conf/10-ectk-noop.conflist"
  # a packet for a pod address without its /32 route stops here
  ip route add unreachable "$POD_NET.0.0/16" 2>/dev/null || true
  svc_rule -A || fail "iptables: cannot add the kubernetes Service's DNAT rule"
}

# cni_down: the veth pairs of pods whose DEL never came, the unreachable route, the DNAT rule.
cni_down() {
  local id h ip
  if [ -f "$D/cni/state/pods" ]; then
    while read -r id h ip; do ip link del "$h" 2>/dev/null || true; done < "$D/cni/state/pods"
  fi
  ip route del unreachable "$POD_NET.0.0/16" 2>/dev/null || true
  if [ -n "${APISERVER_PORT:-}" ]; then
    while svc_rule -D 2>/dev/null; do :; done
  fi
}

kubelet_config() {
  mkdir -p "$D/kubelet/manifests"
  cat > "$D/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $(port kubelet)
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $(port kubelet-healthz)
containerRuntimeEndpoint: unix://$NS_SOCK
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_ROOT
failSwapOn: false
failCgroupV1: false
makeIPTablesUtilChains: false
protectKernelDefaults: false
staticPodPath: $D/kubelet/manifests
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $D/pki/ca.crt
authorization:
  mode: Webhook
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
featureGates:
  DynamicResourceAllocation: true
EOF
}

# --- the namespace and the cgroup root -------------------------------------------------------

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

# --- talking to it ---------------------------------------------------------------------------

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

# --- commands --------------------------------------------------------------------------------

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
  trap 'fail "cluster.sh failed at line $LINENO ($BASH_COMMAND); logs: $D/logs"' ERR
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

[ $# -ge 2 ] || usage
cmd=$1 D=$2
shift 2
case $cmd in
  up) [ $# -eq 0 ] || usage; cmd_up ;;
  down) [ $# -eq 0 ] || usage; cmd_down ;;
  import) [ $# -ge 1 ] || usage; cmd_import "$@" ;;
  namespace) [ $# -ge 1 ] || usage; cmd_namespace "$@" ;;
  restart-kubelet) [ $# -eq 0 ] || usage; cmd_restart_kubelet ;;
  restart-containerd) [ $# -eq 0 ] || usage; cmd_restart_containerd ;;
  restart-apiserver) [ $# -eq 0 ] || usage; cmd_restart_apiserver ;;
  compact-etcd) [ $# -eq 0 ] || usage; cmd_compact_etcd ;;
  restart-etcd) [ $# -eq 0 ] || usage; cmd_restart_etcd ;;
  *) usage ;;
esac
