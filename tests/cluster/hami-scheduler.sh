#!/usr/bin/env bash
# hami-scheduler.sh: the part of HAMi's scheduler (v2.10, pkg/device/enflame and
# pkg/scheduler) the HAMi tests need, since HAMi itself cannot be built or pulled here. It
# writes on a pod exactly the annotations HAMi's Enflame backend writes for a decision
# (HAMi's Filter, PatchAnnotations and Bind; k8s/device-plugin/hami.hpp lists them), and then
# binds the pod to the node through pods/binding as HAMi's Bind does. Everything after that
# (kubelet, our device plugin, containerd) is the real thing. The decision (which card, which
# DRS profile) is the caller's: that is the part of HAMi this stands in for.
#
#   hami-scheduler.sh card NS POD NODE I[,J...]                  whole cards NODE-GCU-I (GCU type)
#   hami-scheduler.sh drs NS POD NODE INDEX MINOR PROFILE_ID PROFILE_NAME
#                                                               one DRS slice request (Enflame type);
#                                                               for drs-gcu and for gcu-memory +
#                                                               gcu-core alike (HAMi's choice of the
#                                                               smallest fitting profile is the caller's)
#   hami-scheduler.sh shared NS POD NODE INDEX                  HAMi <= 2.9 (gcushare shared mode)
#   hami-scheduler.sh bind NS POD NODE                          only the Bind step (pods/binding)
#
# With NO_BIND=1 only the annotations are written (the Filter/PatchAnnotations half).
# Uses $KUBECTL (default kubectl) with $KUBECONFIG, writing as HAMi's scheduler's account
# ($HAMI_USER, default system:serviceaccount:kube-system:hami-scheduler, impersonated with
# HAMi's cluster-wide rights; empty: as the kubeconfig's user): deployments/overlays/hami's
# admission policy lets only that account write HAMi's annotations. Exit 0 done, 1 kubectl
# failed, 2 usage.
set -euo pipefail
KUBECTL=${KUBECTL:-kubectl}
HAMI_USER=${HAMI_USER-system:serviceaccount:kube-system:hami-scheduler}
as_hami=()
[ -z "$HAMI_USER" ] || as_hami=(--as "$HAMI_USER" --as-group system:masters)
kc() { "$KUBECTL" "${as_hami[@]}" "$@"; }
usage() { sed -n '10,18p' "$0" >&2; exit 2; }
[ $# -ge 4 ] || usage
mode=$1 ns=$2 pod=$3 node=$4
shift 4

bind() {
  # HAMi's Bind: bind-phase and bind-time on the pod, then the Binding.
  kc -n "$ns" annotate --overwrite pod "$pod" hami.io/bind-phase=allocating \
    "hami.io/bind-time=$(date +%s)" > /dev/null
  kc create --raw "/api/v1/namespaces/$ns/pods/$pod/binding" -f - > /dev/null <<JSON
{"apiVersion":"v1","kind":"Binding","metadata":{"name":"$pod","namespace":"$ns"},
 "target":{"apiVersion":"v1","kind":"Node","name":"$node"}}
JSON
}

# What Filter writes for any device type: the node it chose and when.
common=("hami.io/vgpu-node=$node" "hami.io/vgpu-time=$(date +%s)")

case $mode in
  card)
    [ $# -eq 1 ] || usage
    # GCUDevices.PatchAnnotations: EncodePodSingleDevice of the container's devices
    # ("<node>-GCU-<i>,GCU,100,100:" each, ";" after the container), to-allocate and allocated.
    devs=
    IFS=, read -ra idx <<< "$1"
    for i in "${idx[@]}"; do devs+="$node-GCU-$i,GCU,100,100:"; done
    devs+=";"
    kc -n "$ns" annotate --overwrite pod "$pod" "${common[@]}" \
      "hami.io/enflame-gcu-devices-to-allocate=$devs" "hami.io/enflame-gcu-devices-allocated=$devs" > /dev/null
    ;;
  drs)
    [ $# -eq 4 ] || usage
    index=$1 minor=$2 pid=$3 pname=$4
    # EnflameDevices.PatchAnnotations for the pod's first container: slices and memory from
    # the profile name (<g>g.<m>gb), cores ceil(slices * 100 / maxSlice) with the S60's 4 slices.
    slices=${pname%%g.*} mem=${pname#*g.}
    mem=$(( ${mem%gb} * 1024 ))
    cores=$(( (slices * 100 + 3) / 4 ))
    ctr=$("$KUBECTL" -n "$ns" get pod "$pod" -o jsonpath='{.spec.containers[0].name}')
    kc -n "$ns" annotate --overwrite pod "$pod" "${common[@]}" \
      "hami.io/enflame-vgpu-devices-allocated=$node-enflame-drs-$index,Enflame,$mem,$cores:;" \
      enflame.com/gcu-assigned=false "enflame.com/gcu-assigned-time=$(date +%s%N)" \
      "enflame.com/gcu-assigned-index=$index" "enflame.com/gcu-assigned-id=$index" \
      "enflame.com/gcu-assigned-minor=$minor" "enflame.com/gcu-request-size=$slices" \
      "assigned-containers={\"$ctr\":{\"allocated\":false,\"request\":$slices,\"profileID\":\"$pid\",\"profileName\":\"$pname\"}}" \
      > /dev/null
    ;;
  shared)
    [ $# -eq 1 ] || usage
    # HAMi <= 2.9 (facts "v2.9.0 and earlier"): its webhook (MutateAdmission) already put
    # `enflame.com/shared-gcu: <slices>` in the container's limits, so the caller creates the
    # pod with it; PatchAnnotations writes the card index list and the assumed-pod marks, and
    # nothing per container (no assigned-containers before v2.10).
    kc -n "$ns" annotate --overwrite pod "$pod" "${common[@]}" \
      "enflame.com/gcu-assigned-id=$1" enflame.com/gcu-assigned=false \
      "enflame.com/gcu-assigned-time=$(date +%s%N)" > /dev/null
    ;;
  bind) [ $# -eq 0 ] || usage; bind; exit 0 ;;
  *) usage ;;
esac
[ "${NO_BIND:-}" = 1 ] || bind
