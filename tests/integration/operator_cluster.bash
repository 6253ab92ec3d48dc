# Helpers of operator.bats (enflame-gpu-operator on the one-node cluster): the CR, the Lease's
# holder, waits, the stack's pods and the status fields the tests read.

kc() { "$KUBECTL" "$@"; }

# cr NAME SPEC_YAML: a GpuResource NAME with SPEC_YAML (indented under spec:) on stdin of kubectl.
cr() {
  printf 'apiVersion: enflame.com/v1\nkind: GpuResource\nmetadata: {name: %s}\nspec:\n%s\n' "$1" "$2"
}

# refused SPEC FIELD TEXT: the API server refuses a CR with SPEC, naming FIELD and saying TEXT.
refused() {
  run -1 kc apply --dry-run=server -f - < <(cr bad "$1")
  echo "$output"
  [[ $output == *"$2"* ]]
  [[ $output == *"$3"* ]]
}

# holder: the Lease's holderIdentity (each process adds "_" and 16 hex digits to its
# pod's name); leader: the pod of that process.
holder() { kc -n "$ONS" get lease enflame-gpu-operator -o jsonpath='{.spec.holderIdentity}'; }

leader() { local h; h=$(holder) && echo "${h%_*}"; }

# wait_for SECONDS CMD...: CMD succeeds within SECONDS (tried every 0.1 s); prints the time taken.
wait_for() {
  local t=$1 start; shift
  start=$(date +%s%N)
  while ! "$@" > /dev/null 2>&1; do
    (( $(date +%s%N) - start < t * 1000000000 )) || return 1
    sleep 0.1
  done
  echo $(( ($(date +%s%N) - start) / 1000000 ))
}

# operator_node: for setup_file, with the cluster up in $OP: the operator's namespace and the
# stack's made by the harness first (this fork's ServiceAccount admission needs a ConfigMap in
# every namespace with pods; the operator then takes enflame-system over), and the node labelled
# as NFD labels one with an Enflame card (PCI vendor 1e36): the operator itself puts
# enflame.com/gpu.present=true, which the stack's DaemonSets select, on such nodes.
operator_node() {
  "$TOP/tests/cluster/cluster.sh" namespace "$OP/cluster" "$ONS" "$NS" > /dev/null
  "$KUBECTL" label node "$NODE_NAME" feature.node.kubernetes.io/pci-1e36.present=true --overwrite > /dev/null
}

# the sample CR, pointed at the simulated host
sample_cr() {
  python3 - "$TOP/deployments/operator/examples/gpuresource.yaml" "$OP/host" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
d["spec"]["hostPaths"] = {"driverRoot": sys.argv[2], "devRoot": sys.argv[2]}
print(yaml.safe_dump(d))
PY
}

# ds_is_new NAME OLD_UID: the DaemonSet NAME exists with another uid than OLD_UID.
ds_is_new() {
  local uid; uid=$(kc -n "$NS" get ds "$1" -o jsonpath='{.metadata.uid}') || return 1
  [ -n "$uid" ] && [ "$uid" != "$2" ]
}

image_is() { [ "$(kc -n "$NS" get ds "$1" -o jsonpath='{.spec.template.spec.containers[0].image}')" = "$2" ]; }

# operator_writes FROM_LINE: "N writes, M lease renewals" by the operator's ServiceAccount in the
# audit log after line FROM_LINE (each write is logged once, at ResponseComplete).
operator_writes() {
  tail -n +$(( $1 + 1 )) "$AUDIT_LOG" | jq -rs --arg u "system:serviceaccount:$ONS:enflame-gpu-operator" '
    [.[] | select(.user.username == $u and .stage == "ResponseComplete")] |
    "\([.[] | select(.objectRef.resource != "leases")] | length) writes, \([.[] | select(.objectRef.resource == "leases")] | length) lease renewals"'
}

# ds_settled: every DaemonSet's controller has seen its spec and each scheduled pod is Ready.
ds_settled() {
  kc -n "$NS" get ds -o json | jq -e 'all(.items[]; .status.observedGeneration == .metadata.generation and
    .status.numberReady == .status.desiredNumberScheduled)' > /dev/null
}

pod_uids() { kc -n "$NS" get pods -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}' | sort; }

new_reconcile() { kc -n "$ONS" logs "$1" | tail -n +$(( $2 + 1 )) | grep -q 'reconciled GpuResource enflame'; }

# live_pod DS: "uid ready image created" of DaemonSet DS's pod that is not terminating.
live_pod() {
  kc -n "$NS" get pods -l app.kubernetes.io/name="$1" -o json |
    jq -er '[.items[] | select(.metadata.deletionTimestamp == null)] | if length == 1 then .[0] else error("not one pod") end |
      "\(.metadata.uid) \(any(.status.conditions[]?; .type == "Ready" and .status == "True")) \(.spec.containers[0].image) \(.metadata.creationTimestamp)"'
}

# node_state: the node's entry in status.upgrade.nodes.
node_state() { kc get gr enflame -o json | jq -r --arg n "$NODE_NAME" '.status.upgrade.nodes[] | select(.name == $n) | .state'; }

state_is() { [ "$(node_state)" = "$1" ]; }

uid_of() { local p; p=$(live_pod "$1") && echo "${p%% *}"; }

uid_changed() { local p; p=$(live_pod "$1") && [ "${p%% *}" != "$2" ]; }

toolkit_new_ready() { local p; p=$(live_pod enflame-toolkit-installer) && [[ $p == *" true "*":0.1.1 "* ]]; }

# dup_free: every object the operator applied exists once (per kind and name), each DaemonSet
# has one pod.
dup_free() {
  run -0 kc -n "$NS" get ds -o json
  jq -e 'all(.items[]; .status.currentNumberScheduled == 1 and .status.numberMisscheduled == 0)' <<<"$output" > /dev/null
  run -0 kc -n "$NS" get pods -o json
  jq -e '[.items[] | select(.metadata.deletionTimestamp == null) | .metadata.labels["app.kubernetes.io/name"]] | group_by(.) | all(length == 1)' <<<"$output" > /dev/null
}

# drift_repaired_after WHEN: the device plugin's DaemonSet deleted by hand is back within 2 s
# (WHEN names the moment in the timing line), then the CR is ready and nothing is duplicated.
drift_repaired_after() {
  local uid; uid=$(kc -n "$NS" get ds enflame-device-plugin -o jsonpath='{.metadata.uid}')
  kc -n "$NS" delete ds enflame-device-plugin --wait=false > /dev/null
  run -0 wait_for 10 ds_is_new enflame-device-plugin "$uid"
  echo "# $1: DaemonSet back after $output ms" >&3
  [ "$output" -lt 2000 ]
  run -0 kc wait gr/enflame --for=jsonpath='{.status.state}'=ready --timeout=120s
  dup_free
}

# replica_logs SKIP SINCE: the lines logged at or after SINCE (UTC, 2026-12-02T04:42:12) by every
# operator pod but SKIP, their previous containers included.
replica_logs() {
  local p
  for p in $(kc -n "$ONS" get pods -o name); do
    if [ "${p#pod/}" = "$1" ]; then continue; fi
    kc -n "$ONS" logs "$p"
    kc -n "$ONS" logs --previous "$p" 2>/dev/null || true
  done | awk -v since="$2" '$1 >= since'
}

# operator_pid POD: the pid of the operator process in pod POD.
operator_pid() {
  local p
  for p in $(pgrep -x enflame-gpu-ope); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "POD_NAME=$1"; then echo "$p"; fi
  done
}

renew_time() { kc -n "$ONS" get lease enflame-gpu-operator -o jsonpath='{.spec.renewTime}'; }

leader_renews() { local a; a=$(renew_time) && sleep 2.5 && [ "$(renew_time)" != "$a" ]; }

leader_is_not() { local l; l=$(leader) && [ -n "$l" ] && [ "$l" != "$1" ]; }

# slice_devices: the names of the devices this node's ResourceSlices of our driver publish, sorted.
slice_devices() {
  kc get --raw "/apis/resource.k8s.io/v1beta1/resourceslices?fieldSelector=spec.nodeName=$NODE_NAME,spec.driver=gcu.enflame.com" |
    jq -r '[.items[].spec.devices[]?.name] | sort | join(" ")'
}

has_slices() { [ "$(slice_devices)" = "gcu-0 gcu-1 gcu-2 gcu-3" ]; }

upgrade_status() { kc get gr enflame -o json | jq -c .status.upgrade; }

# upgrade_settled: status.upgrade holds the roll's nodes and no leftover top-level message
upgrade_settled() { kc get gr enflame -o json | jq -e '.status.upgrade | .totalNodes == 1 and (has("message") | not)' > /dev/null; }

logs_name_a_card() { kc logs "$1" | grep -qE '/dev/gcu[0-9]+$'; }

gone() { ! kc -n "$NS" get "$1" "$2" > /dev/null 2>&1; }

# in_ns_gone NS KIND NAME: no KIND NAME in namespace NS ("" for a cluster-scoped KIND).
in_ns_gone() { ! kc ${1:+-n "$1"} get "$2" "$3" > /dev/null 2>&1; }

port_closed() { ! curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1/"; }

# component_field NAME FIELD: status.components[NAME].FIELD of the CR.
component_field() { kc get gr enflame -o json | jq -r --arg n "$1" --arg f "$2" '.status.components[] | select(.name == $n) | .[$f] // ""'; }

no_npd_configmap() { local l; l=$(kc -n "$NS" get cm -o name) && [[ $l != *enflame-npd* ]]; }

monitor_says() { [[ $(component_field exporter serviceMonitor) == *"$1"* ]]; }

npd_image() {
  grep -oE 'registry\.k8s\.io/node-problem-detector/node-problem-detector:[^ ]+' \
    "$TOP/deployments/npd/daemonset.yaml"
}

# npd_and_node_exporter_images: NPD, a stand-in under upstream's shipped name holding the real
# NPD binary (npd_cluster.bats' way: this machine cannot pull upstream's image), and the node
# exporter's image as built, imported into the cluster.
npd_and_node_exporter_images() {
  needs_npd_bin
  local npd; npd=$(npd_binary) || skip_or_fail "no Node Problem Detector: $npd"
  python3 "$TOP/tests/cluster/oci_image.py" "$OP/npd.oci.tar" --name "$(npd_image)" \
    --file "$npd:/node-problem-detector" --entrypoint '["/node-problem-detector"]' --cmd '[]'
  make -s -C "$TOP" node-exporter-image > "$OP/node-exporter-image.log" 2>&1 ||
    { tail -n 3 "$OP/node-exporter-image.log"; false; }
  "$TOP/tests/cluster/cluster.sh" import "$OP/cluster" "$OP/npd.oci.tar" \
    "$TOP/build/images/node-exporter.oci.tar" > /dev/null
}

# nfd_image: the NFD image deployments/nfd pins (its kustomization's images:).
nfd_image() { kc kustomize "$TOP/deployments/nfd" | grep -m1 -oE 'registry\.k8s\.io/nfd/node-feature-discovery:[^ ]+'; }

# nfd_stand_in OUT IMAGE: an image named IMAGE whose nfd-master and nfd-worker only answer
# /healthz on :8080 (kubelet's probes) as user 65534: upstream's image cannot be pulled here.
nfd_stand_in() {
  mkdir -p "$OP/nfd"
  printf '#!/bin/sh\n# stand-in for NFD: /healthz on :8080, nothing else\nexec httpd -f -p 8080 -h /www\n' \
    > "$OP/nfd/nfd"
  chmod 755 "$OP/nfd/nfd"
  echo ok > "$OP/nfd/healthz"
  python3 "$TOP/tests/cluster/oci_image.py" "$1" --name "$2" --user 65534 \
    --file "$OP/nfd/nfd:/usr/bin/nfd-master" --file "$OP/nfd/nfd:/usr/bin/nfd-worker" \
    --file "$OP/nfd/healthz:/www/healthz"
}

component_says() { [[ $(component_field "$1" "$2") == *"$3"* ]]; }

crd_established() { [ "$(kc get crd "$1" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" = True ]; }

# reconcile_writes_nothing: a reconcile of the unchanged cluster writes nothing. A pod that
# just turned Ready still changes the status once: up to five pokes 3 s apart until a reconcile
# reports 0 writes; one that writes on every reconcile fails all five (each poke's log lines
# are printed: the reconcile line names its writes).
reconcile_writes_nothing() {
  local pod; pod=$(leader)
  local before try
  for try in 1 2 3 4 5; do
    sleep 3
    before=$(kc -n "$ONS" logs "$pod" | wc -l)
    kc annotate gr enflame test.enflame.com/poke="$(date +%s%N)" --overwrite > /dev/null
    run -0 wait_for 10 new_reconcile "$pod" "$before"
    run -0 bash -c "\"$KUBECTL\" -n $ONS logs $pod | tail -n +$(( before + 1 ))"
    echo "poke $try: $output"
    if grep 'reconciled GpuResource enflame' <<<"$output" | tail -n 1 | grep -q '(active): 0 writes'; then
      return 0
    fi
  done
  return 1
}

no_gpu_label() {
  [ -z "$(kc get node "$NODE_NAME" -o jsonpath='{.metadata.labels.enflame\.com/gpu\.present}')" ]
}

# stack_gone: no DaemonSet, Deployment or pod left in the stack's namespace (the namespace itself
# came with deployments/operator and stays).
stack_gone() { [ -z "$(kc -n "$NS" get ds,deploy,pods -o name)" ]; }
