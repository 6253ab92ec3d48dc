#!/usr/bin/env bats
# enflame-gpu-operator on a real one-node Kubernetes (tests/cluster/cluster.sh): the GpuResource
# CRD as the API server sees it (defaults, CEL, kubectl explain), then the operator installed
# as shipped (`kubectl apply -k deployments/operator`, unpatched: the harness routes the
# kubernetes Service to the API server as kube-proxy would) running the whole stack from one
# CR. The simulated host's folder is the CR's spec.hostPaths.driverRoot and devRoot, fields users
# set too.
# The tests run in order on one cluster. Run under the cluster lock:
#   BUILD_DIR=$PWD/build/dev bats tests/integration/operator.bats

load helpers
load one_node_cluster
load operator_cluster
load npd
bats_require_minimum_version 1.5.0

NS=enflame-system
ONS=enflame-operator

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  export OP; OP=$(mktemp -d /tmp/ectk-op.XXXXXX)
  chmod 755 "$OP"
  # the simulated host: four cards
  "$SIM_HOST" example --cards 4 > "$OP/desc.yaml"
  "$SIM_HOST" build --desc "$OP/desc.yaml" --root "$OP/host" > /dev/null
  cluster_up "$OP" images "$TOP/build/images/enflame-toolkit.oci.tar"
  nsenter -t "$NS_PID" -m -- cat "$CONTAINERD_CONFIG" > "$OP/containerd.before"
  operator_node
}

teardown_file() {
  cluster_down "${OP:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$OP/cluster/env" ] || skip "the cluster is not up"
}

@test "CRD: applied, Established, short name gr, printer columns Ready State Age" {
  run kc apply -f "$TOP/deployments/operator/crd.yaml"
  echo "$output"
  [ "$status" -eq 0 ]
  run -0 kc wait --for=condition=Established crd/gpuresources.enflame.com --timeout=90s
  run -0 kc get crd gpuresources.enflame.com -o json
  jq -e '.spec.scope == "Cluster"' <<<"$output" > /dev/null
  jq -e '.spec.names.shortNames == ["gr"]' <<<"$output" > /dev/null
  jq -e '[.spec.versions[0].additionalPrinterColumns[].name] == ["Ready","State","Age"]' <<<"$output" > /dev/null
  run -0 jq -r '[.status.conditions[] | select(.type == "NonStructuralSchema")] | length' <<<"$output"
  [ "$output" = 0 ]
}

@test "CRD: the sample CR is accepted, defaults filled in; kubectl get gr shows the columns" {
  run -0 kc apply --dry-run=server -f "$TOP/deployments/operator/examples/gpuresource.yaml" -o json
  jq -e '.spec.toolkit.runtime == "auto"' <<<"$output" > /dev/null
  jq -e '.spec.toolkit | has("cdi") | not' <<<"$output" > /dev/null
  jq -e '.spec.featureDiscovery.enabled == true' <<<"$output" > /dev/null
  jq -e '.spec.npd.enabled == false' <<<"$output" > /dev/null
  jq -e '.spec.daemonsets.updateStrategy == "RollingUpdate"' <<<"$output" > /dev/null
  jq -e '.spec.daemonsets.maxUnavailable == 1' <<<"$output" > /dev/null
  jq -e '.spec.hostPaths.kubeletRoot == "/var/lib/kubelet"' <<<"$output" > /dev/null
  cr probe '  npd: {enabled: true}' | kc apply -f - > /dev/null
  run -0 kc get gr
  [[ ${lines[0]} =~ ^NAME\ +READY\ +STATE\ +AGE$ ]]
  [[ ${lines[1]} == probe\ * ]]
  run -0 kc delete gr probe
}

@test "CRD: wrong CRs are refused with the field named" {
  refused '  toolkit: {runtime: podman}' 'spec.toolkit.runtime' 'Unsupported value: "podman"'
  refused '  devicePlugin: {version: "1.0/evil"}' 'spec.devicePlugin.version' 'must be an image tag'
  refused '  exporter: {repository: "registry.example.com/"}' 'spec.exporter.repository' "must not end with '/'"
  refused '  hostPaths: {driverRoot: relative/path}' 'spec.hostPaths.driverRoot' 'driverRoot must be an absolute path'
  refused '  hostPaths: {devRoot: dev}' 'spec.hostPaths.devRoot' 'devRoot must be an absolute path'
  refused '  daemonsets: {maxUnavailable: 0}' 'spec.daemonsets.maxUnavailable' 'must be a number of nodes'
  refused '  daemonsets: {maxUnavailable: "150%"}' 'spec.daemonsets.maxUnavailable' 'or a percentage'
  refused '  toolkit: {enabled: false, setAsDefault: true}' 'spec.toolkit' 'setAsDefault needs the toolkit enabled'
  refused '  devicePlugin: {sharing: {timeSlicing: {replicas: 1}}}' 'spec.devicePlugin.sharing.timeSlicing.replicas' 'should be greater than or equal to 2'
  refused '  draDriver: {imagePullPolicy: Sometimes}' 'spec.draDriver.imagePullPolicy' 'Unsupported value: "Sometimes"'
}

@test "CRD: kubectl explain gr.spec.toolkit documents the fields" {
  run -0 kc explain gr.spec.toolkit
  local text; text=$(tr -s ' \n\t' ' ' <<<"$output")  # explain wraps and indents its lines
  echo "$text"
  [[ $text == *"KIND: GpuResource"* ]]
  [[ $text == *"setAsDefault <boolean>"* ]]
  [[ $text == *"Make enflame the engine's default runtime"* ]]
  [[ $text == *"runtime <string>"* ]]
  [[ $text == *"enum: auto, containerd, crio, docker"* ]]
  [[ $text == *"The container engine to configure"* ]]
  [[ $text == *"version <string> Image tag"* ]]
  run -0 kc explain gr.status.state
  text=$(tr -s ' \n\t' ' ' <<<"$output")
  [[ $text == *"ignored: another GpuResource is older and is the one in effect"* ]]
}

@test "install: kubectl apply -k deployments/operator + the sample CR -> every component Ready, state ready 4/4" {
  run -0 kc apply -k "$TOP/deployments/operator"
  run kc -n "$ONS" rollout status deploy/enflame-gpu-operator --timeout=120s
  [ "$status" -eq 0 ] || {
    kc -n "$ONS" get pods -o wide; kc -n "$ONS" describe pods | tail -n 20
    kc -n "$ONS" logs -l app.kubernetes.io/name=enflame-gpu-operator --tail=20 --prefix; false
  }
  sample_cr | kc apply -f - > /dev/null
  run kc wait gr/enflame --for=jsonpath='{.status.state}'=ready --timeout=180s
  if [ "$status" -ne 0 ]; then
    kc get gr enflame -o yaml; kc -n "$NS" get pods -o wide
    kc -n "$ONS" logs -l app.kubernetes.io/name=enflame-gpu-operator --tail=30 --prefix
  fi
  [ "$status" -eq 0 ]
  run -0 kc get gr enflame -o json
  jq -e '.status.readyResource == "4/4"' <<<"$output" > /dev/null
  jq -e '.metadata.finalizers == ["enflame.com/gpu-operator"]' <<<"$output" > /dev/null
  jq -e '.status.conditions[] | select(.type == "Ready") | .status == "True"' <<<"$output" > /dev/null
  jq -e '[.status.components[].name] | sort == ["devicePlugin","exporter","featureDiscovery","toolkit"]' <<<"$output" > /dev/null
  run -0 kc get gr
  [[ ${lines[1]} =~ ^enflame\ +4/4\ +ready\  ]]
  # the node NFD reported: labelled by the operator, which recorded that it did
  run -0 kc get node "$NODE_NAME" -o json
  jq -e '.metadata.labels["enflame.com/gpu.present"] == "true"' <<<"$output" > /dev/null
  jq -e '.metadata.annotations["enflame.com/gpu-operator.labels"] == "enflame.com/gpu.present"' <<<"$output" > /dev/null
  run -0 kc get gr enflame -o jsonpath='{.status.clusterGCUNodes}'
  [ "$output" = 1 ]
  # every object the operator applied is owned by the CR
  run -0 kc -n "$NS" get ds,cm,sa,svc -l app.kubernetes.io/managed-by=enflame-gpu-operator -o json
  jq -e '(.items | length) >= 8' <<<"$output" > /dev/null
  jq -e 'all(.items[]; .metadata.ownerReferences[0].kind == "GpuResource" and .metadata.ownerReferences[0].controller)' <<<"$output" > /dev/null
}

@test "least privilege on the cluster: the operator's account binds the stack's roles by name and cannot write a role, bind cluster-admin, write in default, list DaemonSets everywhere, delete a namespace or read a Secret" {
  local as=--as=system:serviceaccount:$ONS:enflame-gpu-operator
  run -0 kc auth can-i "$as" bind clusterroles/enflame-dra-plugin
  run -0 kc auth can-i "$as" -n "$NS" create daemonsets
  run -1 kc auth can-i "$as" create clusterroles
  run -1 kc auth can-i "$as" escalate clusterroles/enflame-dra-plugin
  run -1 kc auth can-i "$as" bind clusterroles/cluster-admin
  run -1 kc auth can-i "$as" -n default create daemonsets
  run -1 kc auth can-i "$as" list daemonsets --all-namespaces
  run -1 kc auth can-i "$as" delete namespaces/"$NS"
  run -1 kc auth can-i "$as" -n "$NS" get secrets
}

@test "install: the shipped example pod gets its two cards" {
  run -0 kc apply -f "$TOP/deployments/device-plugin/example-pod.yaml"
  run -0 kc wait --for=jsonpath='{.status.phase}'=Succeeded pod/gcu-example --timeout=120s
  run -0 kc logs gcu-example
  echo "$output"
  run -0 grep -cE '/dev/gcu[0-9]+$' <<<"$output"
  [ "$output" = 2 ]
  kc delete pod gcu-example --wait > /dev/null
}

@test "drift: a DaemonSet deleted by hand is back within 2 s" {
  local uid; uid=$(kc -n "$NS" get ds enflame-device-plugin -o jsonpath='{.metadata.uid}')
  [ -n "$uid" ]
  kc -n "$NS" delete ds enflame-device-plugin --wait=false > /dev/null
  run -0 wait_for 10 ds_is_new enflame-device-plugin "$uid"
  echo "# DaemonSet back after $output ms" >&3
  [ "$output" -lt 2000 ]
}

@test "drift: a DaemonSet's image edited by hand is reverted within 2 s" {
  local was; was=$(kc -n "$NS" get ds enflame-gcu-exporter -o jsonpath='{.spec.template.spec.containers[0].image}')
  kc -n "$NS" set image ds/enflame-gcu-exporter enflame-gcu-exporter=busybox:1.36 > /dev/null
  run -0 wait_for 10 image_is enflame-gcu-exporter "$was"
  echo "# image reverted after $output ms" >&3
  [ "$output" -lt 2000 ]
}

@test "budget: a reconcile of an unchanged cluster writes nothing; RSS and idle CPU of the leader" {
  # settled: the drift tests' rollouts over
  local ds
  # (rollout status refuses the OnDelete DaemonSets the roll uses: compare the counts instead)
  run -0 wait_for 120 ds_settled
  run -0 kc wait gr/enflame --for=jsonpath='{.status.state}'=ready --timeout=60s
  sleep 2
  local pod; pod=$(leader)
  kc -n "$ONS" logs "$pod" > "$OP/before.log"
  local uids; uids=$(pod_uids)
  [ -f "$AUDIT_LOG" ]
  local audit0; audit0=$(wc -l < "$AUDIT_LOG")
  # a metadata-only change: the CR's watch event makes the operator reconcile
  kc annotate gr enflame test.enflame.com/poke="$(date +%s%N)" --overwrite > /dev/null
  run -0 wait_for 10 new_reconcile "$pod" "$(wc -l < "$OP/before.log")"
  run -0 bash -c "kc() { \"$KUBECTL\" \"\$@\"; }; kc -n $ONS logs $pod | tail -n +$(( $(wc -l < "$OP/before.log") + 1 )) | grep 'reconciled GpuResource enflame'"
  echo "$output"
  [[ $output == *"reconciled GpuResource enflame (active): 0 writes"* ]]
  run ! grep -E ' [1-9][0-9]* writes' <<<"$output"
  # ... and restarted nothing
  [ "$(pod_uids)" = "$uids" ]
  # the operator process of the leading pod
  local pid; pid=$(operator_pid "$pod")
  [ -n "$pid" ]
  local rss; rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  local t0; t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  sleep 10
  local t1; t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  echo "# leader RSS ${rss} kB; CPU over 10 s idle: $(( (t1 - t0) * 10 )) ms" >&3
  [ "$rss" -lt 32768 ]
  # the API server's own count (its audit log) over the reconcile and the 10 s idle: no write
  # by the operator's ServiceAccount but its Lease's renewals
  run -0 operator_writes "$audit0"
  echo "# API server audit log, the operator's writes over the reconcile + 10 s idle: $output" >&3
  [[ $output == "0 writes, "*" lease renewals" ]]
}

@test "upgrade: spec.toolkit.version changed -> a cordoned node is skipped and reported; uncordoned: the toolkit first (handed over: containerd not restarted), the plugin once the toolkit is Ready" {
  # the "new version": the imported image under a second tag
  local src; src=$($CTR -n k8s.io images ls -q | grep -m1 'enflame-toolkit:0\.1\.0$')
  [ -n "$src" ]
  $CTR -n k8s.io images tag --force "$src" "${src%:0.1.0}:0.1.1" > /dev/null
  local tk dp ctrd
  tk=$(live_pod enflame-toolkit-installer); dp=$(live_pod enflame-device-plugin)
  # the node's containerd: same install flags, same config bytes -> never restarted by the roll
  ctrd=$(cat "$CONTAINERD_PID_FILE")
  kill -0 "$ctrd"
  kc cordon "$NODE_NAME" > /dev/null
  kc patch gr enflame --type=merge -p '{"spec":{"toolkit":{"version":"0.1.1"}}}' > /dev/null
  run wait_for 20 state_is cordoned
  if [ "$status" -ne 0 ]; then
    kc get gr enflame -o jsonpath='{.status.upgrade}'; echo
    kc -n "$NS" get pods -o wide
    kc -n "$ONS" logs "$(leader)" | tail -n 30
  fi
  [ "$status" -eq 0 ]
  run -0 kc get gr enflame -o json
  jq -e '.status.upgrade.cordonedNodes == 1' <<<"$output" > /dev/null
  jq -e '.status.upgrade.nodes[0].message | test("cordoned")' <<<"$output" > /dev/null
  # the DaemonSet has the new template, its pod stays (OnDelete): nothing touched for 5 s
  run -0 kc -n "$NS" get ds enflame-toolkit-installer -o jsonpath='{.spec.template.spec.containers[0].image}'
  [[ $output == *:0.1.1 ]]
  run -1 wait_for 5 uid_changed enflame-toolkit-installer "${tk%% *}"
  [ "$(uid_of enflame-toolkit-installer)" = "${tk%% *}" ]
  [ "$(uid_of enflame-device-plugin)" = "${dp%% *}" ]
  # uncordoned: the toolkit pod is replaced while the plugin pod is still the old one
  kc uncordon "$NODE_NAME" > /dev/null
  run -0 wait_for 90 uid_changed enflame-toolkit-installer "${tk%% *}"
  [ "$(uid_of enflame-device-plugin)" = "${dp%% *}" ]
  run -0 wait_for 120 toolkit_new_ready
  echo "# new toolkit pod Ready after $output ms" >&3
  run -0 wait_for 60 uid_changed enflame-device-plugin "${dp%% *}"
  run -0 wait_for 120 state_is upToDate
  # the plugin pod was created after the new toolkit pod became Ready
  run -0 kc -n "$NS" get pods -o json
  local ready created
  ready=$(jq -r '.items[] | select(.metadata.labels["app.kubernetes.io/name"] == "enflame-toolkit-installer" and .metadata.deletionTimestamp == null) | .status.conditions[] | select(.type == "Ready") | .lastTransitionTime' <<<"$output")
  created=$(jq -r '.items[] | select(.metadata.labels["app.kubernetes.io/name"] == "enflame-device-plugin" and .metadata.deletionTimestamp == null) | .metadata.creationTimestamp' <<<"$output")
  echo "toolkit Ready $ready, plugin created $created"
  [ -n "$ready" ]
  [[ ! $created < $ready ]]
  # in that order in the leader's log, too
  run -0 kc -n "$ONS" logs "$(leader)"
  local a b
  a=$(grep -n 'upgrade: node .*DaemonSet enflame-toolkit-installer' <<<"$output" | tail -n 1 | cut -d: -f1)
  b=$(grep -n 'upgrade: node .*DaemonSet enflame-device-plugin' <<<"$output" | tail -n 1 | cut -d: -f1)
  [ -n "$a" ]
  [ -n "$b" ]
  [ "$a" -lt "$b" ]
  # the old toolkit pod was handed over (marked, then deleted once not Ready), not uninstalled:
  # containerd kept running throughout, its config as before the roll
  [[ $output == *"marked pod enflame-toolkit-installer-"*"for handover"* ]]
  echo "# containerd pid before the roll $ctrd, after $(cat "$CONTAINERD_PID_FILE")" >&3
  [ "$(cat "$CONTAINERD_PID_FILE")" = "$ctrd" ]
  kill -0 "$ctrd"
  run -0 kc wait gr/enflame --for=jsonpath='{.status.state}'=ready --timeout=120s
}

@test "failover: the leader killed -> the other replica takes the Lease, puts back what drifted meanwhile, no duplicates" {
  local id; id=$(holder)
  local old; old=$(leader)
  [ -n "$old" ]
  # one identity per process: a container the kubelet restarts in the killed leader's pod is
  # someone new and waits for the Lease to expire like the others (with the pod's name alone
  # it took the Lease back at once and the drift was repaired by the pod being deleted)
  [[ $id =~ ^${old}_[0-9a-f]{16}$ ]]
  local pid; pid=$(operator_pid "$old")
  [ -n "$pid" ]
  local uid; uid=$(kc -n "$NS" get ds enflame-gcu-exporter -o jsonpath='{.metadata.uid}')
  # the leader gone at once (its process, then its pod), then drift nobody repairs but a new leader
  local since; since=$(date -u +%Y-%m-%dT%H:%M:%S)
  kill -KILL "$pid"
  kc -n "$ONS" delete pod "$old" --grace-period=0 --force > /dev/null 2>&1
  kc -n "$NS" delete ds enflame-gcu-exporter --wait=false > /dev/null
  run -0 wait_for 60 leader_is_not "$old"
  echo "# Lease taken over after $output ms" >&3
  run -0 wait_for 30 ds_is_new enflame-gcu-exporter "$uid"
  # put back by a replica that is not the killed one: the leader now, or one that led before
  # it (a leader that lost its Lease under load exits and restarts: its earlier lines are in
  # the previous container's log)
  run -0 replica_logs "$old" "$since"
  [[ $output == *"applied DaemonSet/enflame-system/enflame-gcu-exporter"* ]]
  run -0 kc wait gr/enflame --for=jsonpath='{.status.state}'=ready --timeout=120s
  dup_free
}

@test "failover: the leader's pod deleted as kubectl does -> it gives the Lease up on SIGTERM, the other replica leads within 5 s (not the lease's 15 s)" {
  local old; old=$(leader)
  [ -n "$old" ]
  kc -n "$ONS" delete pod "$old" --wait=false > /dev/null
  run -0 wait_for 30 leader_is_not "$old"
  echo "# Lease taken over after $output ms" >&3
  [ "$output" -lt 5000 ]
  run -0 wait_for 30 in_ns_gone "$ONS" pod "$old"
  echo "# the old pod gone after $output ms (terminationGracePeriodSeconds 5)" >&3
  run -0 kc wait gr/enflame --for=jsonpath='{.status.state}'=ready --timeout=120s
  run -0 kc -n "$ONS" rollout status deploy/enflame-gpu-operator --timeout=120s
}

@test "failover: the API server restarted -> watches resume and drift is still repaired within 2 s" {
  local since; since=$(date -u +%Y-%m-%dT%H:%M:%S)
  run "$TOP/tests/cluster/cluster.sh" restart-apiserver "$OP/cluster"
  echo "$output"
  [ "$status" -eq 0 ]
  # the leader may have lost its Lease while the server was down (and exited, as client-go's
  # OnStoppedLeading): wait for a leader that renews, then for the informers' next list (their
  # backoff is at most 5 s)
  run -0 wait_for 90 leader_renews
  sleep 6
  run -0 replica_logs none "$since"
  echo "# after the API server's restart: $(grep -c 'relisting' <<<"$output") relists, $(grep -c 'relisting.*\(410\|too old\)' <<<"$output") on 410" >&3
  grep 'relisting' <<<"$output" | head -n 3 | sed 's/^/# /' >&3
  drift_repaired_after "after the API server's restart"
}

@test "failover: etcd compacted and restarted -> the API server's watch cache lists etcd again, the operator's watches get 410 Gone and list again; drift still repaired within 2 s" {
  local since; since=$(date -u +%Y-%m-%dT%H:%M:%S)
  local pod; pod=$(leader)
  [ -n "$pod" ]
  run -0 "$TOP/tests/cluster/cluster.sh" compact-etcd "$OP/cluster"
  run "$TOP/tests/cluster/cluster.sh" restart-etcd "$OP/cluster"
  echo "$output"
  [ "$status" -eq 0 ]
  run -0 wait_for 90 leader_renews
  # each informer's watch comes back with its resourceVersion, older than what the API server's
  # new watch cache starts from: 410 Gone, one "relisting" line per informer that got it
  run wait_for 30 relisted_on_410 "$since"
  [ "$status" -eq 0 ] || { replica_logs none "$since" | tail -n 20; false; }
  run -0 replica_logs none "$since"
  echo "# after etcd's compaction and restart: $(grep -c 'relisting' <<<"$output") informers listed again, e.g.:" >&3
  grep 'relisting' <<<"$output" | head -n 2 | sed 's/^/#   /' >&3
  drift_repaired_after "after the 410s"
}
relisted_on_410() { replica_logs none "$1" | grep -qE 'relisting: .*(410|too old)'; }

@test "a second GpuResource is ignored, the first stays in effect" {
  cr second '  npd: {enabled: false}' | kc apply -f - > /dev/null
  run -0 kc wait gr/second --for=jsonpath='{.status.state}'=ignored --timeout=20s
  run -0 kc get gr second -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}'
  [[ $output == *"another GpuResource is older"* ]]
  run -0 kc delete gr second --timeout=30s
  run -0 kc get gr enflame -o jsonpath='{.status.state}'
  [ "$output" = ready ]
}

@test "disable a component: its objects go; enable it: they are back" {
  kc patch gr enflame --type=merge -p '{"spec":{"exporter":{"enabled":false}}}' > /dev/null
  run -0 wait_for 20 gone ds enflame-gcu-exporter
  run -0 wait_for 5 gone cm enflame-gcu-exporter
  run -0 wait_for 5 gone svc enflame-gcu-exporter
  run -0 kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=3/3 --timeout=20s
  kc patch gr enflame --type=merge -p '{"spec":{"exporter":{"enabled":true}}}' > /dev/null
  run -0 kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=4/4 --timeout=120s
}

@test "dual track: draDriver on beside the device plugin (auto: v1beta1, what 1.32 serves) -> the DRA plugin Ready, the cards as ResourceSlices, the shipped CEL S60 claim's pod gets one card; off -> its objects go, the device plugin stays" {
  kc patch gr enflame --type=merge -p '{"spec":{"draDriver":{"enabled":true}}}' > /dev/null
  run kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=5/5 --timeout=180s
  [ "$status" -eq 0 ] || { kc get gr enflame -o yaml; kc -n "$NS" get pods -o wide; false; }
  # the roll's status settles to the roll's nodes alone: the "DaemonSets being applied" message
  # the first reconcile wrote (the DRA plugin's DaemonSet not yet in the cache) goes with a later
  # status (a patch that only added fields kept it for good, and every reconcile wrote again)
  run wait_for 10 upgrade_settled
  [ "$status" -eq 0 ] || { upgrade_status; false; }
  run -0 kc get deviceclass gcu.enflame.com -o jsonpath='{.apiVersion} {.metadata.labels.app\.kubernetes\.io/managed-by}'
  [ "$output" = "resource.k8s.io/v1beta1 enflame-gpu-operator" ]
  run wait_for 30 has_slices
  [ "$status" -eq 0 ] || { slice_devices; kc -n "$NS" logs ds/enflame-dra-plugin --tail=20; false; }
  run -0 kc apply -f "$TOP/deployments/dra/examples/v1beta1/s60-32gi.yaml"
  run kc wait --for=condition=Ready pod/s60-32gi --timeout=120s
  [ "$status" -eq 0 ] || { kc describe pod s60-32gi | tail -n 15; false; }
  run -0 wait_for 10 logs_name_a_card s60-32gi
  run -0 kc logs s60-32gi
  echo "$output"
  run -0 grep -cE '/dev/gcu[0-9]+$' <<<"$output"
  [ "$output" = 1 ]
  kc delete -f "$TOP/deployments/dra/examples/v1beta1/s60-32gi.yaml" --grace-period=1 --wait > /dev/null
  kc patch gr enflame --type=merge -p '{"spec":{"draDriver":{"enabled":false}}}' > /dev/null
  run -0 wait_for 30 gone ds enflame-dra-plugin
  run -0 wait_for 10 in_ns_gone "" deviceclass gcu.enflame.com
  run -0 kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=4/4 --timeout=60s
  run -0 kc -n "$NS" get ds enflame-device-plugin -o jsonpath='{.status.numberReady}'
  [ "$output" = 1 ]
}

@test "npd, nodeExporter, exporter.serviceMonitor: on -> NPD and the node exporter Ready, the ServiceMonitor once its CRD is served; off -> all gone" {
  port_closed 9100 || skip_or_fail "port 9100 is in use on this machine (the node exporter's, hostNetwork)"
  local image; image=$(npd_image)
  npd_and_node_exporter_images
  kc patch gr enflame --type=merge -p '{"spec":{"npd":{"enabled":true},"nodeExporter":{"enabled":true},
    "exporter":{"serviceMonitor":{"enabled":true,"interval":"30s","labels":{"release":"kube-prom"}}}}}' > /dev/null
  run kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=6/6 --timeout=120s
  if [ "$status" -ne 0 ]; then
    kc get gr enflame -o jsonpath='{.status.components}'; echo
    kc get pods -A -o wide; kc -n "$ONS" logs "$(leader)" | tail -n 20
  fi
  [ "$status" -eq 0 ]
  run -0 kc -n "$NS" get ds enflame-npd -o json
  jq -e '.status.numberReady == 1' <<<"$output" > /dev/null
  jq -e --arg i "$image" '.spec.template.spec.containers[0].image == $i' <<<"$output" > /dev/null
  jq -e '.metadata.ownerReferences[0].kind == "GpuResource"' <<<"$output" > /dev/null
  run -0 kc get clusterrolebinding enflame-npd -o jsonpath='{.roleRef.name}'
  [ "$output" = system:node-problem-detector ]
  run -0 kc -n kube-system get ds enflame-node-exporter -o json
  jq -e '.status.numberReady == 1' <<<"$output" > /dev/null
  jq -e '.metadata.ownerReferences[0].kind == "GpuResource"' <<<"$output" > /dev/null
  # the node exporter answers with this node's figures (hostNetwork, as shipped)
  run -0 curl -sf --max-time 5 "http://127.0.0.1:9100/metrics"
  [[ $output == *"node_uname_info{"*"nodename=\"$(uname -n)\""* ]]
  # no ServiceMonitor kind on this server: skipped, and the status says why
  run -0 wait_for 10 monitor_says "does not serve monitoring.coreos.com/v1 ServiceMonitor"
  # the kind appears (just prometheus-operator's CRD): the ServiceMonitor follows, as the CR says
  run -0 kc apply -f "$TOP/tests/cluster/servicemonitor-crd.yaml"
  run wait_for 30 kc -n "$NS" get servicemonitor enflame-gcu-exporter
  echo "# ServiceMonitor applied $output ms after its CRD" >&3
  [ "$status" -eq 0 ] || { kc -n "$ONS" logs "$(leader)" | tail -n 20; false; }
  run -0 kc -n "$NS" get servicemonitor enflame-gcu-exporter -o json
  jq -e '.spec.endpoints[0].interval == "30s"' <<<"$output" > /dev/null
  jq -e '.metadata.labels.release == "kube-prom"' <<<"$output" > /dev/null
  jq -e '.spec.namespaceSelector.matchNames == ["enflame-system"]' <<<"$output" > /dev/null
  jq -e '.metadata.ownerReferences[0].kind == "GpuResource"' <<<"$output" > /dev/null
  run -0 wait_for 10 monitor_says "applied ServiceMonitor/enflame-system/enflame-gcu-exporter"
  # the kind's CRD deleted with the ServiceMonitor in place (the API server deletes it first):
  # skipped again, and nothing left for the operator to delete on every reconcile
  run -0 kc delete -f "$TOP/tests/cluster/servicemonitor-crd.yaml" --wait=true
  run -0 wait_for 30 monitor_says "does not serve monitoring.coreos.com/v1 ServiceMonitor"
  reconcile_writes_nothing
  # the CRD back: the ServiceMonitor applied again, then left alone (its informer lists at once)
  run -0 kc apply -f "$TOP/tests/cluster/servicemonitor-crd.yaml"
  run -0 wait_for 30 kc -n "$NS" get servicemonitor enflame-gcu-exporter
  reconcile_writes_nothing
  # all three off: their objects go, the node exporter's port closes
  kc patch gr enflame --type=merge -p '{"spec":{"npd":{"enabled":false},"nodeExporter":{"enabled":false},
    "exporter":{"serviceMonitor":{"enabled":false}}}}' > /dev/null
  run -0 wait_for 30 in_ns_gone "$NS" ds enflame-npd
  run -0 wait_for 10 in_ns_gone "" clusterrolebinding enflame-npd
  run -0 wait_for 10 in_ns_gone "$NS" sa enflame-npd
  run -0 wait_for 10 no_npd_configmap
  run -0 wait_for 10 in_ns_gone kube-system ds enflame-node-exporter
  run -0 wait_for 10 in_ns_gone kube-system svc enflame-node-exporter
  run -0 wait_for 10 in_ns_gone "$NS" servicemonitor enflame-gcu-exporter
  run -0 wait_for 60 port_closed 9100
  run -0 kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=4/4 --timeout=60s
  [ -z "$(component_field exporter serviceMonitor)" ]
  run -0 kc delete -f "$TOP/tests/cluster/servicemonitor-crd.yaml" --wait=true
}

@test "nfd, npd.podMonitor, nodeExporter.serviceMonitor, exporter.prometheusRule: NFD's objects applied and Ready (a stand-in image), each monitoring object skipped until its kind is served, then applied; an unchanged reconcile writes nothing; off -> all gone" {
  port_closed 9100 || skip_or_fail "port 9100 is in use on this machine (the node exporter's, hostNetwork)"
  npd_and_node_exporter_images
  local image; image=$(nfd_image)
  [[ $image == registry.k8s.io/nfd/node-feature-discovery:v* ]]
  nfd_stand_in "$OP/nfd.oci.tar" "$image"
  "$TOP/tests/cluster/cluster.sh" import "$OP/cluster" "$OP/nfd.oci.tar" > /dev/null
  kc patch gr enflame --type=merge -p '{"spec":{"nfd":{"enabled":true},
    "npd":{"enabled":true,"podMonitor":{"enabled":true,"interval":"45s"}},
    "nodeExporter":{"enabled":true,"serviceMonitor":{"enabled":true,"labels":{"release":"kube-prom"}}},
    "exporter":{"prometheusRule":{"enabled":true}}}}' > /dev/null
  run kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=7/7 --timeout=150s
  if [ "$status" -ne 0 ]; then
    kc get gr enflame -o jsonpath='{.status.components}'; echo
    kc get pods -A -o wide; kc -n "$ONS" logs "$(leader)" | tail -n 20
  fi
  [ "$status" -eq 0 ]
  # NFD: upstream's image by the reference deployments/nfd pins; master and worker Ready; its
  # CRDs served; all owned by the CR
  run -0 kc -n "$NS" get deploy enflame-nfd-master -o json
  jq -e '.status.readyReplicas == 1' <<<"$output" > /dev/null
  jq -e --arg i "$image" '.spec.template.spec.containers[0].image == $i' <<<"$output" > /dev/null
  jq -e '.metadata.ownerReferences[0].kind == "GpuResource"' <<<"$output" > /dev/null
  run -0 kc -n "$NS" get ds enflame-nfd-worker -o json
  jq -e '.status.numberReady == 1' <<<"$output" > /dev/null
  jq -e --arg i "$image" '.spec.template.spec.containers[0].image == $i' <<<"$output" > /dev/null
  local crd
  for crd in nodefeatures nodefeaturerules nodefeaturegroups; do
    run -0 crd_established "$crd.nfd.k8s-sigs.io"
    run -0 kc get crd "$crd.nfd.k8s-sigs.io" -o jsonpath='{.metadata.ownerReferences[0].kind}'
    [ "$output" = GpuResource ]
  done
  run -0 kc get clusterrolebinding enflame-nfd-master -o jsonpath='{.subjects[0].namespace}'
  [ "$output" = "$NS" ]
  run -0 component_field nfd message
  [ "$output" = "1/1 pods ready" ]
  # no monitoring kind on this server: each object skipped, the status says which kind is missing
  run -0 wait_for 10 component_says npd podMonitor "does not serve monitoring.coreos.com/v1 PodMonitor"
  run -0 component_says nodeExporter serviceMonitor "does not serve monitoring.coreos.com/v1 ServiceMonitor"
  run -0 component_says exporter prometheusRule "does not serve monitoring.coreos.com/v1 PrometheusRule"
  # PodMonitor served: NPD's PodMonitor follows; the other two stay skipped
  run -0 kc apply -f "$TOP/tests/cluster/podmonitor-crd.yaml"
  run wait_for 30 kc -n kube-system get podmonitor enflame-npd
  echo "# PodMonitor applied $output ms after its CRD" >&3
  [ "$status" -eq 0 ] || { kc -n "$ONS" logs "$(leader)" | tail -n 20; false; }
  run -0 kc -n kube-system get podmonitor enflame-npd -o json
  jq -e '.spec.podMetricsEndpoints[0].interval == "45s"' <<<"$output" > /dev/null
  jq -e '.metadata.ownerReferences[0].kind == "GpuResource"' <<<"$output" > /dev/null
  run -0 wait_for 10 component_says npd podMonitor "applied PodMonitor/kube-system/enflame-npd"
  run -0 component_says exporter prometheusRule "does not serve monitoring.coreos.com/v1 PrometheusRule"
  run -1 kc -n kube-system get prometheusrule enflame-gcu
  # the other two kinds served: the node exporter's ServiceMonitor and the rules
  run -0 kc apply -f "$TOP/tests/cluster/servicemonitor-crd.yaml" -f "$TOP/tests/cluster/prometheusrule-crd.yaml"
  run -0 wait_for 30 kc -n kube-system get servicemonitor enflame-node-exporter
  run -0 wait_for 30 kc -n kube-system get prometheusrule enflame-gcu
  run -0 kc -n kube-system get servicemonitor enflame-node-exporter -o jsonpath='{.metadata.labels.release}'
  [ "$output" = kube-prom ]
  # the rules as deployments/monitoring/operator ships them (one source of truth)
  kc -n kube-system get prometheusrule enflame-gcu -o json | jq -S .spec > "$OP/rule.live.json"
  python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))["spec"]))' \
    "$TOP/deployments/monitoring/operator/prometheusrule.yaml" | jq -S . > "$OP/rule.tree.json"
  diff "$OP/rule.tree.json" "$OP/rule.live.json"
  run -0 wait_for 10 component_says exporter prometheusRule "applied PrometheusRule/kube-system/enflame-gcu"
  run -0 component_says nodeExporter serviceMonitor "applied ServiceMonitor/kube-system/enflame-node-exporter"
  # the exporter's own ServiceMonitor was not asked for: none
  run -1 kc -n "$NS" get servicemonitor enflame-gcu-exporter
  # settled with all of it on: a reconcile of the unchanged cluster writes nothing (NFD's CRDs
  # and Deployment as the server keeps them still contain what the operator renders)
  run -0 kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=7/7 --timeout=60s
  # (the ServiceMonitor kind was served, gone and served again in the last test: its informer
  # lists it again, so the node exporter's ServiceMonitor is not applied on every reconcile)
  reconcile_writes_nothing
  # all off: NFD's objects (its CRDs too) and the monitoring objects go
  kc patch gr enflame --type=merge -p '{"spec":{"nfd":{"enabled":false},"npd":{"enabled":false},
    "nodeExporter":{"enabled":false},"exporter":{"prometheusRule":{"enabled":false}}}}' > /dev/null
  run -0 wait_for 30 in_ns_gone "$NS" deploy enflame-nfd-master
  run -0 wait_for 10 in_ns_gone "$NS" ds enflame-nfd-worker
  for crd in nodefeatures nodefeaturerules nodefeaturegroups; do
    run wait_for 90 in_ns_gone "" crd "$crd.nfd.k8s-sigs.io"
    [ "$status" -eq 0 ] || { kc get crd "$crd.nfd.k8s-sigs.io" -o json | jq -c '{metadata: (.metadata | {deletionTimestamp, finalizers, ownerReferences}), status: .status.conditions}'
      kc -n "$ONS" logs "$(leader)" | grep -v reconciled | tail -n 15; false; }
  done
  run -0 wait_for 10 in_ns_gone "" clusterrolebinding enflame-nfd-master
  run -0 wait_for 10 in_ns_gone "$NS" rolebinding enflame-nfd-worker
  # their roles came with deployments/operator, not from the operator: they stay
  run -0 kc get clusterrole enflame-nfd-master enflame-nfd-worker
  run -0 wait_for 10 in_ns_gone "$NS" sa enflame-nfd-worker
  run -0 wait_for 10 in_ns_gone kube-system podmonitor enflame-npd
  run -0 wait_for 10 in_ns_gone kube-system servicemonitor enflame-node-exporter
  run -0 wait_for 10 in_ns_gone kube-system prometheusrule enflame-gcu
  run -0 wait_for 30 in_ns_gone "$NS" ds enflame-npd
  run -0 wait_for 60 port_closed 9100
  run -0 kc wait gr/enflame --for=jsonpath='{.status.readyResource}'=4/4 --timeout=60s
  [ -z "$(component_field exporter prometheusRule)" ]
  run -0 kc delete -f "$TOP/tests/cluster/podmonitor-crd.yaml" -f "$TOP/tests/cluster/servicemonitor-crd.yaml" \
    -f "$TOP/tests/cluster/prometheusrule-crd.yaml" --wait=true
}

@test "deletion: CR deleted -> plugins, then the toolkit uninstalled, then the rest; containerd's config as before" {
  run kc delete gr enflame --timeout=180s
  echo "$output"
  if [ "$status" -ne 0 ]; then
    kc get gr enflame -o yaml | tail -n 40; kc get ds,deploy,pods -A -o wide
    kc -n "$ONS" logs "$(leader)" | tail -n 30
  fi
  [ "$status" -eq 0 ]
  run -0 wait_for 120 stack_gone
  # the label the operator set is gone with its record; NFD's stays
  run -0 wait_for 10 no_gpu_label
  run -0 kc get node "$NODE_NAME" -o json
  jq -e '.metadata.annotations["enflame.com/gpu-operator.labels"] == null' <<<"$output" > /dev/null
  jq -e '.metadata.labels["feature.node.kubernetes.io/pci-1e36.present"] == "true"' <<<"$output" > /dev/null
  nsenter -t "$NS_PID" -m -- cat "$CONTAINERD_CONFIG" > "$OP/containerd.after"
  cmp "$OP/containerd.before" "$OP/containerd.after"
  # the toolkit folder and the CDI spec gone (/usr/local/enflame is the harness's mount point)
  run -0 nsenter -t "$NS_PID" -m -- find /usr/local/enflame /run/cdi
  echo "$output"
  [[ $output != */toolkit* ]]
  [[ $output != *enflame.com-gpu.yaml* ]]
  # the order: the leader's log names the device plugin before the installer
  run -0 kc -n "$ONS" logs "$(leader)"
  local dp inst
  dp=$(grep -n 'removing DaemonSet/enflame-system/enflame-device-plugin' <<<"$output" | cut -d: -f1)
  inst=$(grep -n 'removing DaemonSet/enflame-system/enflame-toolkit-installer' <<<"$output" | cut -d: -f1)
  [ -n "$dp" ]
  [ -n "$inst" ]
  [ "$dp" -lt "$inst" ]
}
