# shellcheck shell=bash
# cluster.sh's small helpers (time, exit with one line, log and pid file paths, the ports) and
# its processes: which are its own (by pid file, command line and namespace), starting,
# stopping and waiting for them.
# Sourced by cluster.sh, which runs under `set -Eeuo pipefail` and sets HERE, TOP, the constants
# and D (DIR) before calling any of these.

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
