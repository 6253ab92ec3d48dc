#!/usr/bin/env bats
# The one-node Kubernetes of tests/cluster/cluster.sh (v1.32: etcd, kube-apiserver under
# Node,RBAC, scheduler, controller-manager, kubelet on containerd 1.7 restarted by a supervisor),
# brought up once for this file in setup_file. Each test acts as a user of it would (kubectl,
# the harness's restart commands); the last one takes it down and checks that nothing is left:
# no process, no mount, no cgroup, the host's folders as they were. Without the Kubernetes
# binaries (ENFLAME_KUBE_BIN unset) the tests skip with the line saying what to set, under CI
# too; a folder named there that lacks one fails under CI.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

CLUSTER=$TOP/tests/cluster/cluster.sh
# the host folders the cluster's node software writes (bind-mounted from the cluster's folder
# in its namespace): they must look the same after `down` as before `up`
HOST_PATHS=(/etc/cdi /run/cdi /var/run/cdi /etc/containerd /var/lib/kubelet /usr/local/enflame
            /etc/enflame-container-runtime /var/log/pods /var/log/containers /opt)

# host_listing: every host path above, recursively: type, mode, size, mtime and a checksum of
# each file.
host_listing() {
  find "${HOST_PATHS[@]}" 2>/dev/null | sort | while read -r f; do
    stat -c '%n %F %a %s %Y' "$f"
    if [ -f "$f" ] && [ -r "$f" ]; then sha256sum "$f"; fi
  done
}

setup_file() {
  CL=$(mktemp -d /tmp/ectk-cluster.XXXXXX)
  export CL
  chmod 755 "$CL"
  # without ENFLAME_KUBE_BIN only the test of that very error runs (setup)
  if [ -z "${ENFLAME_KUBE_BIN:-}" ]; then echo unset > "$CL/up.status"; return 0; fi
  host_listing > "$CL/host-before"
  local t0=$SECONDS
  "$CLUSTER" up "$CL/c" > "$CL/up.out" 2>&1 3>&- && echo 0 > "$CL/up.status" || echo $? > "$CL/up.status"
  echo "$((SECONDS - t0))" > "$CL/up.seconds"
}

teardown_file() {
  [ -n "${CL:-}" ] || return 0
  "$CLUSTER" down "$CL/c" >/dev/null 2>&1 3>&- || true
  rm -rf "$CL"
}

setup() {
  setup_scratch
  local st
  st=$(cat "$CL/up.status")
  if [ "$st" = unset ]; then
    [[ $BATS_TEST_DESCRIPTION == "bad input: no Kubernetes binaries"* ]] || skip "$KUBE_BIN_REASON"
    return 0
  fi
  if [ "$st" -eq 3 ]; then skip_or_fail "$(tail -n 1 "$CL/up.out")"; fi
  if [[ $BATS_TEST_DESCRIPTION == "bad input"* ]]; then return 0; fi
  if [ "$st" -ne 0 ]; then
    echo "cluster.sh up failed: $(cat "$CL/up.out")"
    return 1
  fi
  # shellcheck disable=SC1091
  . "$CL/c/env"
}

teardown() { teardown_scratch; }

kc() { "$KUBECTL" --request-timeout 20s "$@"; }

# pod NAME IMAGE [CMD [NAMESPACE]]: a pod running IMAGE (CMD through sh -c when given) that
# ends, deleted in teardown.
pod() {
  local cmd=
  [ -z "${3:-}" ] || cmd="    command: [\"sh\", \"-c\", \"$3\"]"
  kc -n "${4:-default}" apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: $2
    imagePullPolicy: Never
$cmd
EOF
  on_teardown "kc -n ${4:-default} delete pod $1 --wait=false >/dev/null 2>&1"
}

busybox_pod() { pod "$1" docker.io/library/busybox:1.36 "$2"; }

# succeeds NAME: pod NAME ran to Succeeded (within 60 s).
succeeds() {
  kc wait --for=jsonpath='{.status.phase}'=Succeeded "pod/$1" --timeout=60s ||
    { kc describe pod "$1"; return 1; }
}

# container_of NAME: "<container id> <restart count> <phase>" of pod NAME's only container.
container_of() {
  kc get pod "$1" -o jsonpath='{.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount} {.status.phase}'
}

# exited PID: PID is gone or a zombie (init here reaps orphans late).
exited() {
  [ -n "$1" ] || return 0
  case $(ps -o stat= -p "$1") in ''|Z*) return 0 ;; esac
  echo "pid $1 still runs: $(ps -o args= -p "$1")"
  return 1
}

node_ready() {
  [ "$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

@test "up: the node is Ready and untainted, DRA v1beta1 is served, a busybox pod runs to Succeeded and logs what it printed" {
  echo "up took $(cat "$CL/up.seconds") s: $(cat "$CL/up.out")" >&3
  # one line: the time it took
  [ "$(wc -l < "$CL/up.out")" -eq 1 ]
  grep -E '^cluster: up in [0-9.]+ s' "$CL/up.out"
  for v in KUBECONFIG KUBECTL CLUSTER_DIR NODE_NAME APISERVER_PORT NS_PID CTR CONTAINERD_SOCK CONTAINERD_CONFIG CONTAINERD_PID_FILE; do
    [ -n "${!v}" ] || { echo "env lacks $v"; return 1; }
  done
  node_ready
  [ -z "$(kc get node "$NODE_NAME" -o jsonpath='{.spec.taints}')" ]
  run kc get --raw /apis/resource.k8s.io/v1beta1
  [ "$status" -eq 0 ]
  [ "$(jq -r .groupVersion <<<"$output")" = resource.k8s.io/v1beta1 ]
  jq -e '.resources[] | select(.name == "resourceclaims")' <<<"$output"
  # the containerd the env names is the node's: it runs the busybox and pinned pause images
  run $CTR -n k8s.io images ls -q
  grep -Fx docker.io/library/busybox:latest <<<"$output"
  run $CTR -n k8s.io images ls "name==$PAUSE_IMAGE"
  grep -F io.cri-containerd.pinned=pinned <<<"$output"
  busybox_pod hello 'echo hello from $(hostname); echo second line'
  succeeds hello
  run kc logs hello
  [ "$status" -eq 0 ]
  [ "$output" = "hello from hello
second line" ]
}

@test "a DaemonSet's pod is scheduled onto the node and becomes Ready (DaemonSet controller and scheduler work)" {
  kc apply -f - <<'EOF'
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ds-probe
spec:
  selector:
    matchLabels: {app: ds-probe}
  template:
    metadata:
      labels: {app: ds-probe}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: docker.io/library/busybox:latest
        imagePullPolicy: Never
        command: ["sleep", "3600"]
        readinessProbe:
          exec: {command: ["true"]}
          periodSeconds: 1
EOF
  on_teardown "kc delete daemonset ds-probe --wait=false >/dev/null 2>&1"
  kc rollout status daemonset/ds-probe --timeout=60s
  run kc get pods -l app=ds-probe -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}'
  [ "$output" = "$NODE_NAME True" ]
}

@test "network: kubelet's HTTP probe reaches a pod through its veth; pod addresses route nowhere but this machine" {
  kc apply -f - > /dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: docker.io/library/busybox:1.36
    imagePullPolicy: Never
    command: ["sh", "-c", "mkdir /w && echo ok > /w/healthz && exec httpd -f -p 8080 -h /w"]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
EOF
  on_teardown "kc delete pod web --wait=false >/dev/null 2>&1"
  kc wait --for=condition=Ready pod/web --timeout=60s
  local ip; ip=$(kc get pod web -o jsonpath='{.status.podIP}')
  [[ $ip == 10.88.* ]]
  # the pod's own /32 route through its veth; any other pod address is unreachable here
  run ip route get "$ip"
  [[ $output == *" dev ectk"* ]]
  run ip route show type unreachable
  [[ $output == *"10.88.0.0/16"* ]]
  run ip route get 10.88.255.254
  [ "$status" -ne 0 ]
  kc delete pod web --wait > /dev/null
  run ip route get "$ip"
  [ "$status" -ne 0 ]
}

@test "restart-kubelet and restart-containerd: a running pod keeps its container, the node stays Ready, new pods still run" {
  busybox_pod keeper 'sleep 3600'
  kc wait --for=condition=Ready pod/keeper --timeout=60s
  local before kubelet_pid ctrd_pid
  before=$(container_of keeper)
  [[ $before == "containerd://"*" 0 Running" ]]
  kubelet_pid=$(cat "$CLUSTER_DIR/pids/kubelet.pid")
  run "$CLUSTER" restart-kubelet "$CLUSTER_DIR"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(cat "$CLUSTER_DIR/pids/kubelet.pid")" != "$kubelet_pid" ]
  exited "$kubelet_pid"
  node_ready
  [ "$(container_of keeper)" = "$before" ]

  ctrd_pid=$(cat "$CONTAINERD_PID_FILE")
  run "$CLUSTER" restart-containerd "$CLUSTER_DIR"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(cat "$CONTAINERD_PID_FILE")" != "$ctrd_pid" ]
  exited "$ctrd_pid"
  $CTR version
  # kubelet works with the new containerd: a new pod runs, the old one kept its container
  busybox_pod after-restarts 'echo still here'
  succeeds after-restarts
  node_ready
  [ "$(container_of keeper)" = "$before" ]
  run $CTR -n k8s.io tasks ls
  local id=${before#containerd://}
  id=${id%% *}
  grep -E "^$id +[0-9]+ +RUNNING" <<<"$output"
}

# started_nothing DIR: no process names DIR in its command line, no pid file under it holds a
# live process, nothing is mounted under it.
started_nothing() {
  local p f
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' 2>/dev/null < "$p/cmdline" | grep -qE "^$1(/|$)"; then
      echo "still running: ${p#/proc/} $(tr '\0' ' ' 2>/dev/null < "$p/cmdline")"
      return 1
    fi
  done
  for f in "$1"/pids/*.pid; do
    [ -f "$f" ] || continue
    exited "$(cat "$f")"
  done
  [ -z "$(findmnt -rn -o TARGET,SOURCE | grep -F "$1")" ]
}

@test "bad input: no Kubernetes binaries in ENFLAME_KUBE_BIN: one line naming them and the variable, nothing started" {
  mkdir "$SCRATCH/empty"
  ENFLAME_KUBE_BIN=$SCRATCH/empty run -3 "$CLUSTER" up "$SCRATCH/c"
  echo "$output"
  [ "${#lines[@]}" -eq 1 ]
  [[ $output == "cluster: no kubelet kube-apiserver kube-scheduler kube-controller-manager kubectl in '$SCRATCH/empty': set ENFLAME_KUBE_BIN to "* ]]
  started_nothing "$SCRATCH/c"
  # one binary missing is named alone
  for n in kubelet kube-apiserver kube-scheduler kubectl; do
    printf '#!/bin/sh\n' > "$SCRATCH/empty/$n"
    chmod +x "$SCRATCH/empty/$n"
  done
  ENFLAME_KUBE_BIN=$SCRATCH/empty run -3 "$CLUSTER" up "$SCRATCH/c"
  [[ $output == "cluster: no kube-controller-manager in '$SCRATCH/empty': set ENFLAME_KUBE_BIN to "* ]]
  # the variable unset: one line naming it and what to put there
  ENFLAME_KUBE_BIN= run -3 "$CLUSTER" up "$SCRATCH/c"
  [ "${#lines[@]}" -eq 1 ]
  [[ $output == "cluster: ENFLAME_KUBE_BIN is not set: name a folder holding kubelet "* ]]
  # five binaries that are not of one release 1.32 or newer are refused before anything starts
  for n in kubelet kube-apiserver kube-scheduler kube-controller-manager; do
    printf '#!/bin/sh\necho "Kubernetes v1.31.4"\n' > "$SCRATCH/empty/$n"
  done
  printf '#!/bin/sh\necho "Client Version: v1.31.4"\n' > "$SCRATCH/empty/kubectl"
  chmod +x "$SCRATCH/empty"/*
  ENFLAME_KUBE_BIN=$SCRATCH/empty run -3 "$CLUSTER" up "$SCRATCH/c"
  [ "$output" = "cluster: '$SCRATCH/empty' holds Kubernetes v1.31.4: the cluster suites need 1.32 or newer" ]
  printf '#!/bin/sh\necho "Kubernetes v1.33.1"\n' > "$SCRATCH/empty/kubelet"
  ENFLAME_KUBE_BIN=$SCRATCH/empty run -3 "$CLUSTER" up "$SCRATCH/c"
  [[ $output == "cluster: '$SCRATCH/empty' mixes releases: kubelet is v1.33.1, kube-apiserver v1.31.4,"* ]]
  started_nothing "$SCRATCH/c"
  # a folder that is not empty is refused before anything
  mkdir -p "$SCRATCH/full" && touch "$SCRATCH/full/x"
  run -2 "$CLUSTER" up "$SCRATCH/full"
  [ "$output" = "cluster: '$SCRATCH/full' is not empty (up needs an empty or absent folder)" ]
}

@test "bad input: the API server's port taken: one line naming the port, nothing started" {
  # a second cluster's ports (offset), the API server's held by a listener
  local off port
  off=$(offset)
  port=$((6443 + off))
  python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(120)' "$port" 3>&- &
  on_teardown "stop_pid $!"
  wait_for sh -c "ss -Htln 'sport = :$port' | grep -q ."
  CLUSTER_PORT_OFFSET=$off run -1 "$CLUSTER" up "$SCRATCH/c"
  echo "$output"
  [ "$output" = "cluster: port $port (kube-apiserver, CLUSTER_APISERVER_PORT) is already in use on this host" ]
  started_nothing "$SCRATCH/c"
}

# offset: CLUSTER_PORT_OFFSET for a second cluster beside the running one.
offset() { echo $((20000 + RANDOM % 20000)); }

# fake_bins DIR BROKEN: DIR holding links to the real binaries of the cluster in $CL/c (the
# five Kubernetes ones in DIR/kube, Debian's in DIR/trixie/usr/bin), but BROKEN, a script that
# fails at once.
fake_bins() {
  local d=$1 f
  [ -f "$CL/c/state" ] || skip "the cluster did not come up"
  # shellcheck disable=SC1091
  (. "$CL/c/state"
   mkdir -p "$d/kube" "$d/trixie/usr/bin"
   for f in "$KBIN"/*; do ln -s "$f" "$d/kube/"; done
   for f in "$PREFIX"/usr/bin/*; do ln -s "$f" "$d/trixie/usr/bin/"; done)
  f=$(find "$d" -name "$2")
  # it still tells its version (cluster.sh checks the release before starting anything)
  printf '#!/bin/sh\n[ "$1" != --version ] || exec %s --version\necho "%s: broken on purpose" >&2\nexit 1\n' \
    "$(readlink -f "$f")" "$2" > "$f.broken"
  rm "$f"
  mv "$f.broken" "$f"
  chmod +x "$f"
}

# up_broken PART: `up` where PART (a binary) fails at once: one line naming PART and its log,
# and what was started before is stopped.
up_broken() {
  fake_bins "$SCRATCH/bin" "$1"
  ENFLAME_KUBE_BIN=$SCRATCH/bin/kube BUILD_DIR=$SCRATCH/bin CLUSTER_PORT_OFFSET=$(offset) \
    run -1 "$CLUSTER" up "$SCRATCH/c"
  echo "$output"
  [ "$output" = "cluster: $1 exited while starting; log: $SCRATCH/c/logs/$1.log" ]
  grep -Fx "$1: broken on purpose" "$SCRATCH/c/logs/$1.log"
  started_nothing "$SCRATCH/c"
  [ -z "$(find /sys/fs/cgroup/*/ -maxdepth 1 -name "ectk-cluster-$(printf %s "$SCRATCH/c" | cksum | cut -d' ' -f1)")" ]
}

@test "bad input: a kube-apiserver that exits at once: one line naming it and its log, what was started is stopped" {
  up_broken kube-apiserver
}

@test "bad input: a containerd that exits at once: one line naming it and its log, what was started is stopped" {
  up_broken containerd
}

@test "import: an OCI archive's images land in the node's containerd and a pod runs one; an unreadable archive is one line" {
  python3 "$TOP/tests/cluster/oci_image.py" "$SCRATCH/probe.tar" --name docker.io/library/ectk-probe:1 \
    --cmd '["sh", "-c", "echo probe image"]'
  run "$CLUSTER" import "$CLUSTER_DIR" "$SCRATCH/probe.tar"
  echo "$output"
  [ "$status" -eq 0 ]
  run $CTR -n k8s.io images ls -q
  grep -Fx docker.io/library/ectk-probe:1 <<<"$output"
  pod probe docker.io/library/ectk-probe:1
  succeeds probe
  [ "$(kc logs probe)" = "probe image" ]
  run -1 "$CLUSTER" import "$CLUSTER_DIR" "$SCRATCH/nothing.tar"
  [ "$output" = "cluster: cannot read archive '$SCRATCH/nothing.tar'" ]
}

@test "namespace: a new namespace where a pod with a service-account token runs (this fork's ConfigMap is there)" {
  local ns=ectk-probe-$RANDOM
  run "$CLUSTER" namespace "$CLUSTER_DIR" "$ns"
  [ "$status" -eq 0 ]
  on_teardown "kc delete namespace $ns --wait=false >/dev/null 2>&1"
  kc -n "$ns" get configmap openshift-service-ca.crt
  # the ServiceAccount "default" comes from the controller-manager, a moment later
  wait_for kc -n "$ns" get serviceaccount default
  pod token docker.io/library/busybox:1.36 "ls /var/run/secrets/kubernetes.io/serviceaccount" "$ns"
  kc -n "$ns" wait --for=jsonpath='{.status.phase}'=Succeeded pod/token --timeout=60s
  run kc -n "$ns" logs token
  grep -Fx service-ca.crt <<<"$output"
  grep -Fx token <<<"$output"
}

@test "down: every process, mount and cgroup of the cluster gone, the host's folders as before; down again is a no-op" {
  local cg=$CGROUP_ROOT
  [ -d "/sys/fs/cgroup/memory$cg" ]
  run "$CLUSTER" down "$CLUSTER_DIR"
  echo "$output" >&3
  [ "$status" -eq 0 ]
  grep -E '^cluster: down in [0-9.]+ s' <<<"$output"
  started_nothing "$CLUSTER_DIR"
  exited "$NS_PID"
  local h
  for h in /sys/fs/cgroup/*/; do
    [ ! -e "$h$cg" ] || { echo "left: $h$cg"; return 1; }
  done
  host_listing > "$SCRATCH/host-after"
  diff "$CL/host-before" "$SCRATCH/host-after"
  # no veth and no route of the cluster's network left in the host's network namespace
  run ip -br link
  [[ $output != *ectk* ]]
  run ip route show type unreachable
  [[ $output != *10.88.0.0/16* ]]
  run "$CLUSTER" down "$CLUSTER_DIR"
  [ "$status" -eq 0 ]
}
