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

# The functions, by concern; these files define them and run nothing.
# shellcheck source=tests/cluster/cluster-processes.sh
. "$HERE/cluster-processes.sh"
# shellcheck source=tests/cluster/cluster-binaries.sh
. "$HERE/cluster-binaries.sh"
# shellcheck source=tests/cluster/cluster-config.sh
. "$HERE/cluster-config.sh"
# shellcheck source=tests/cluster/cluster-node.sh
. "$HERE/cluster-node.sh"
# shellcheck source=tests/cluster/cluster-commands.sh
. "$HERE/cluster-commands.sh"

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
