# shellcheck shell=bash
# cluster.sh's configuration, written under DIR before anything starts: the PKI, kubeconfigs and
# identities, containerd's config, the CNI plugin and its network, kubelet's config.
# Sourced by cluster.sh, which runs under `set -Eeuo pipefail` and sets HERE, TOP, the constants
# and D (DIR) before calling any of these.
# shellcheck disable=SC2034  # what this sets, the other parts of cluster.sh read; read's fillers

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
