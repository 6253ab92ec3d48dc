#!/usr/bin/env bash
# demo-cluster.sh: `make demo-cluster`, the Kubernetes half of the demo for a newcomer. On a
# simulated Enflame host (four S60 cards) it starts a real one-node Kubernetes 1.32
# (tests/cluster/cluster.sh), builds the image (`make images`) and imports it into the node's
# containerd, installs the toolkit with `kubectl apply -k deployments/` as shipped (plus the
# harness's own changes, tests/cluster/overlay.sh), runs the shipped example pod and prints
# what it saw, the node's enflame.com/gcu capacity, the labels the labeler writes for NFD and a
# scrape of the exporter; then it removes everything (kubectl delete -k, the cluster stopped).
# Needs root, the Kubernetes binaries of one release, 1.32 or newer, in the folder ENFLAME_KUBE_BIN
# names (no package registry serves them; tests/cluster/README.md), and Debian's mirror the first
# time (etcd and containerd 1.7 from Debian 13, unpacked under build/).
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$TOP/build/dev}
SIM_HOST=$BUILD_DIR/sim/enflame-sim-host
[ "$(id -u)" -eq 0 ] || { echo "demo-cluster: needs root (containerd, kubelet)" >&2; exit 1; }
[ -x "$SIM_HOST" ] || { echo "demo-cluster: $SIM_HOST missing: run make build" >&2; exit 1; }
[ -n "${ENFLAME_KUBE_BIN:-}" ] || { echo "demo-cluster: ENFLAME_KUBE_BIN is not set: name a folder holding kubelet, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl of one release, 1.32 or newer" >&2; exit 1; }

D=$(mktemp -d /tmp/ectk-demo-cluster.XXXXXX)
chmod 755 "$D"
start=$SECONDS
step() { printf '\n== %s (%ss)\n' "$*" "$(( SECONDS - start ))"; }
cleanup() {
  step "removing everything"
  if [ -f "$D/cluster/env" ]; then
    "$KUBECTL" delete -k "$D/overlay" --wait --timeout=180s > /dev/null 2>&1 || true
  fi
  "$TOP/tests/cluster/cluster.sh" down "$D/cluster" || true
  rm -rf "$D"
  echo "demo-cluster: done in $(( SECONDS - start ))s"
}
KUBECTL=
trap cleanup EXIT

step "a simulated host with 4 S60 cards in $D/host (card 0 split into two DRS instances)"
"$SIM_HOST" example --cards 4 --drs | python3 -c 'import sys, yaml
d = yaml.safe_load(sys.stdin)
d["drs"]["instances"] = [i for i in d["drs"]["instances"] if i["card"] == 0]
yaml.safe_dump(d, sys.stdout, sort_keys=False)' > "$D/desc.yaml"
"$SIM_HOST" build --desc "$D/desc.yaml" --root "$D/host" > /dev/null
ls -l "$D"/host/dev/gcu*

step "make images (the release build, one image for every daemon)"
make -s -C "$TOP" images

step "a one-node Kubernetes (etcd, apiserver, scheduler, controller-manager, kubelet, containerd 1.7)"
"$TOP/tests/cluster/cluster.sh" up "$D/cluster"
# shellcheck disable=SC1091
. "$D/cluster/env"
export KUBECONFIG
"$TOP/tests/cluster/cluster.sh" import "$D/cluster" "$TOP/build/images/enflame-toolkit.oci.tar"
"$KUBECTL" get nodes -o wide

step "kubectl apply -k deployments/"
cp -r "$TOP/deployments" "$D/deployments"
"$TOP/tests/cluster/overlay.sh" "$D/overlay" "$D/deployments" "$D/host" "$APISERVER_PORT"
"$KUBECTL" label node "$NODE_NAME" enflame.com/gpu.present=true --overwrite  # what NFD would set
# the namespace made first: this Kubernetes build's ServiceAccount admission needs a ConfigMap
# in every namespace with pods (tests/cluster/README.md)
"$TOP/tests/cluster/cluster.sh" namespace "$D/cluster" enflame-system
"$KUBECTL" apply -k "$D/overlay"
for ds in $("$KUBECTL" -n enflame-system get ds -o name); do
  "$KUBECTL" -n enflame-system rollout status "$ds" --timeout=180s
done

step "the node's enflame.com/gcu"
for _ in $(seq 60); do
  [ -n "$("$KUBECTL" get node "$NODE_NAME" -o jsonpath='{.status.allocatable.enflame\.com/gcu}')" ] && break
  sleep 1
done
"$KUBECTL" get node "$NODE_NAME" \
  -o jsonpath='capacity {.status.capacity.enflame\.com/gcu}, allocatable {.status.allocatable.enflame\.com/gcu}{"\n"}'

step "the shipped example pod (deployments/device-plugin/example-pod.yaml, plain runc)"
"$KUBECTL" apply -f "$D/deployments/device-plugin/example-pod.yaml"
"$KUBECTL" wait --for=jsonpath='{.status.phase}'=Succeeded pod/gcu-example --timeout=120s
"$KUBECTL" logs gcu-example
"$KUBECTL" delete pod gcu-example --wait

step "the labels the labeler hands NFD (features.d)"
nsenter -t "$NS_PID" -m -- sh -c 'cat /etc/kubernetes/node-feature-discovery/features.d/*' || true

step "a scrape of the exporter (first lines)"
pid=$(nsenter -t "$NS_PID" -m -- sh -c "grep -l enflame-gcu-exporter /proc/[0-9]*/cmdline 2>/dev/null" |
      sed -n 1p | cut -d/ -f3)
if [ -n "$pid" ]; then
  nsenter -t "$pid" -n -- curl -s http://127.0.0.1:9400/metrics | grep '^enflame_' | sed -n 1,12p
else
  echo "(no exporter process found)"
fi
