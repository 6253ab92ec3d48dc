# Shared helpers for the bats integration tests. Load with `load helpers`.
# Every test gets its own scratch folder ($SCRATCH) removed in teardown; tests that start
# containers or daemons register a cleanup with `on_teardown "cmd"` so it runs pass or fail.

BUILD_DIR=${BUILD_DIR:?BUILD_DIR must point at the build folder}
TOP=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
CTK=$BUILD_DIR/ctk/enflame-ctk
SHIM=$BUILD_DIR/runtime-shim/enflame-container-runtime
HOOK=$BUILD_DIR/hooks/enflame-container-runtime-hook
SIM_HOST=$BUILD_DIR/sim/enflame-sim-host

# skip_or_fail REASON: skip the test with REASON on a developer's machine; under CI (CI set and
# not empty), where scripts/install-deps.sh installed everything, fail instead, so a missing
# package or a daemon that did not start can never turn a whole file into skips.
skip_or_fail() {
  if [ -n "${CI:-}" ]; then
    echo "CI: not skipped but failed: $1" >&2
    return 1
  fi
  skip "$1"
}

# Parts that no package registry our machines reach serves (the Kubernetes release binaries,
# the Node Problem Detector): a test that needs one runs when the user names it in a variable
# and otherwise skips with one line naming the variable and what to put there, under CI too.
# That is the one reason a test may skip under CI (tests/README.md). A variable that is set but
# names something unusable fails under CI like any other missing part (skip_or_fail).
KUBE_BIN_REASON="ENFLAME_KUBE_BIN is not set: name a folder holding kubelet, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl of one Kubernetes release, 1.32 or newer (plain or NAME.zst)"
NPD_BIN_REASON="ENFLAME_NPD_BIN is not set: name the node-problem-detector binary of an official v0.8.x release (plain or .zst)"
# In a test: skip with the reason when the variable is unset.
needs_kube_bin() { [ -n "${ENFLAME_KUBE_BIN:-}" ] || skip "$KUBE_BIN_REASON"; }
needs_npd_bin() { [ -n "${ENFLAME_NPD_BIN:-}" ] || skip "$NPD_BIN_REASON"; }
# In setup_file (`kube_bin_named || return 0`): false when unset, and then every test of the file
# skips with the reason in its setup (skip_if_file_skipped); bats 1.8 cannot skip in setup_file.
kube_bin_named() { [ -n "${ENFLAME_KUBE_BIN:-}" ] || { export FILE_SKIP_REASON=$KUBE_BIN_REASON; return 1; }; }
npd_bin_named() { [ -n "${ENFLAME_NPD_BIN:-}" ] || { export FILE_SKIP_REASON=$NPD_BIN_REASON; return 1; }; }
skip_if_file_skipped() { [ -z "${FILE_SKIP_REASON:-}" ] || skip "$FILE_SKIP_REASON"; }

# requires root|podman|runc|crun|containerd|dockerd ... : skip (fail under CI) with a reason
# when missing.
requires() {
  local r
  for r in "$@"; do
    case $r in
      root) [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root" ;;
      *) command -v "$r" >/dev/null 2>&1 || skip_or_fail "needs $r" ;;
    esac
  done
}

setup_scratch() {
  SCRATCH=$(mktemp -d /tmp/ectk-it.XXXXXX)
  chmod 755 "$SCRATCH"
  _TEARDOWN_CMDS=()
}

# on_teardown CMD: run CMD (with eval) in teardown, last registered first.
on_teardown() { _TEARDOWN_CMDS+=("$1"); }

teardown_scratch() {
  local i
  for (( i=${#_TEARDOWN_CMDS[@]}-1; i>=0; i-- )); do eval "${_TEARDOWN_CMDS[$i]}" || true; done
  _TEARDOWN_CMDS=()
  if [ -n "${SCRATCH:-}" ] && [ -d "$SCRATCH" ]; then rm -rf "$SCRATCH"; fi
}

# sim_host DESC ROOT: lay out a simulated Enflame host from a description file.
sim_host() { "$SIM_HOST" build --desc "$1" --root "$2"; }

# sim_example N [args]: print an example description with N cards.
sim_example() { local n=$1; shift; "$SIM_HOST" example --cards "$n" "$@"; }

# sim_rebuild DESC ROOT PYTHON: edit the host description DESC (parsed as `d`) with PYTHON and
# lay the host out again in ROOT.
sim_rebuild() {
  python3 - "$1" "$3" <<'PY'
import sys, yaml
p = sys.argv[1]
d = yaml.safe_load(open(p))
exec(sys.argv[2])
yaml.safe_dump(d, open(p, "w"), sort_keys=False)
PY
  sim_host "$1" "$2" >/dev/null
}

# write_config FILE ROOT: a config.toml pointing driver-root and dev-root at ROOT.
write_config() {
  cat > "$1" <<TOML
[enflame-container-cli]
driver-root = "$2"
dev-root = "$2"
TOML
}

# --- bundles for OCI hook tests (hooks.bats, security.bats) ---

# busybox_rootfs DIR: a minimal rootfs with a static busybox and its applet links.
busybox_rootfs() {
  local r=$1 a
  mkdir -p "$r"/{bin,proc,sys,dev,etc,tmp,root,run}
  cp /bin/busybox "$r/bin/"
  for a in $("$r/bin/busybox" --list); do [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' > "$r/etc/passwd"
  echo 'root:x:0:' > "$r/etc/group"
}

# bundle_edit DIR PYTHON: edit DIR/config.json in python; the parsed config is `c`.
bundle_edit() {
  python3 - "$1/config.json" "$2" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
exec(sys.argv[2])
json.dump(c, open(p, "w"), indent=1)
PY
}

# oci_bundle DIR ARGS_JSON: busybox rootfs + `runc spec`, no terminal, writable root,
# process.args from ARGS_JSON (e.g. '["sh","-c","ls /dev"]').
oci_bundle() {
  busybox_rootfs "$1/rootfs"
  (cd "$1" && runc spec)
  bundle_edit "$1" "c['process']['terminal']=False; c['root']['readonly']=False; c['process']['args']=json.loads('''$2''')"
}

# crun_hybrid FILE: the crun wrapper for this hybrid-cgroup machine (docs/test-runtimes.md).
crun_hybrid() {
  cat > "$1" <<'SH'
#!/bin/sh
exec unshare --mount --propagation private /bin/sh -c '
  umount /sys/fs/cgroup/unified 2>/dev/null ||
  mount --bind /dev/null /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null
  exec /usr/bin/crun "$@"' crun "$@"
SH
  chmod +x "$1"
}

# unique_id PREFIX: a container id no other test or session uses.
unique_id() { echo "$1-$$-$RANDOM$RANDOM"; }

# podman_conf FILE [LINE...]: a containers.conf podman can run with on our machines (runc, as
# crun refuses hybrid cgroups; rlimits within the hard limit; cgroupfs; no network). Extra
# LINEs go at the end of the [engine] table.
podman_conf() {
  local f=$1; shift
  printf '%s\n' '[containers]' 'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]' \
    'netns = "none"' '[engine]' 'cgroup_manager = "cgroupfs"' 'events_logger = "file"' \
    'runtime = "runc"' "$@" > "$f"
}

# podman_with_shim: what a test needs to run podman with the shim as --runtime: a busybox rootfs
# in $SCRATCH/rootfs, a containers.conf whose conmon passes the shim its config (conmon starts
# the runtime with only conmon_env_vars), private podman storage in the array PM, and every
# container and mount of that storage removed in teardown.
podman_with_shim() {
  busybox_rootfs "$SCRATCH/rootfs"
  podman_conf "$SCRATCH/containers.conf" \
    "conmon_env_vars = [\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \"ENFLAME_CTK_CONFIG=$SCRATCH/config.toml\"]"
  export CONTAINERS_CONF=$SCRATCH/containers.conf
  PM=(podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --tmpdir "$SCRATCH/pm/tmp")
  on_teardown "pm_cleanup"
}

# pm_cleanup: remove every container of podman_with_shim's storage, then anything it left mounted.
pm_cleanup() {
  "${PM[@]}" rm -af -t 0 >/dev/null 2>&1
  local m
  for m in $(awk -v s="$SCRATCH/pm" 'index($5, s) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount -l "$m" 2>/dev/null
  done
}

# sim_setup N: a simulated host of N cards in $SCRATCH/host and a config.toml pointing at it,
# exported as ENFLAME_CTK_CONFIG.
sim_setup() {
  sim_example "$1" > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
}

# --- runtime helpers (shim/hooks files) ---

# other_vendor_spec DIR: DIR/othervendor.yaml, a CDI spec of kind othervendor.com/gpu whose
# device `all` mounts DIR/other.txt ("other-vendor") at /other.txt: a container that shows that
# line got another vendor's device.
other_vendor_spec() {
  mkdir -p "$1"
  echo other-vendor > "$1/other.txt"
  cat > "$1/othervendor.yaml" <<YAML
cdiVersion: "0.6.0"
kind: othervendor.com/gpu
devices:
  - name: all
    containerEdits:
      mounts:
        - {hostPath: "$1/other.txt", containerPath: /other.txt, options: [ro, bind]}
YAML
}

# refute_grep GREP_ARGS...: fail, showing what matched, when `grep GREP_ARGS` finds a line of
# $output. (A mid-test `! echo "$output" | grep ...` asserts nothing under bats' set -e.)
refute_grep() {
  local hits
  if hits=$(grep "$@" <<<"$output"); then
    echo "expected no line matching '${*: -1}', got: $hits" >&2
    return 1
  fi
}

# no_card DESC N...: $output (what a probe printed: `ls /dev` or `ls -l /dev/`, devices.list,
# DEVICE_OPEN, env) shows none of the cards N... of the simulated host described in DESC: no /dev/gcuN, no
# device-cgroup rule for its minor, not its UUID. A card DESC does not have is trivially absent.
no_card() {
  local desc=$1 n minor uuid; shift
  for n in "$@"; do
    refute_grep -E "(^| )gcu$n\$"
    minor=$(card_field "$desc" "$n" minor)
    uuid=$(card_field "$desc" "$n" uuid)
    [ -z "$minor" ] || refute_grep -E "^c $MAJOR:$minor [rwm]+\$"
    [ -z "$uuid" ] || refute_grep -F "$uuid"
  done
}

# DEVICE_OPEN: sh code (no quotes or backslashes: it fits in a JSON string and in sh -c '...')
# for a probe run inside a container: for cards 0-3 and gcuctl one line "open gcuN: R", R being
#   allowed  the device cgroup let open(O_RDWR) through (the simulated node has no driver behind
#            it: ENXIO/ENODEV), on cgroup v1 and v2 alike;
#   denied   EPERM from the device cgroup;
#   absent   no node, and mknod of one (the card's major:minor, in /dev) was refused;
#   or the error itself. A card without a node is made with mknod to show the cgroup denies it.
# Prints nothing when there is no /dev/gcuctl (nothing injected).
DEVICE_OPEN='if [ -e /dev/gcuctl ]; then M=$(stat -c %t /dev/gcuctl); o() { if e=$( (: <> $1) 2>&1); then r=allowed; else case $e in *device*) r=allowed;; *permitted*) r=denied;; *) r=$e;; esac; fi; echo open $2: $r; }; for m in 0 1 2 3 ctl; do n=/dev/gcu$m; mi=$m; [ $m = ctl ] && mi=255; if [ -e $n ]; then o $n gcu$m; elif mknod /dev/.ectk$m c $((0x$M)) $mi 2>/dev/null; then o /dev/.ectk$m gcu$m; rm -f /dev/.ectk$m; else echo open gcu$m: absent; fi; done; fi'

# device_access "0 2" [denied]: $output (from a DEVICE_OPEN probe) shows gcuctl and exactly
# the cards 0 and 2 of 0-3 open through the device cgroup; the others are denied (EPERM) or
# absent, or with "denied" (a container that has CAP_MKNOD, see with_mknod) must be denied.
device_access() {
  local want=" $1 " other=${2:-denied|absent} m
  grep -Fx "open gcuctl: allowed" <<<"$output"
  for m in 0 1 2 3; do
    if [[ $want == *" $m "* ]]; then
      grep -Fx "open gcu$m: allowed" <<<"$output"
    else
      grep -Ex "open gcu$m: ($other)" <<<"$output"
    fi
  done
}

# with_mknod DIR: the bundle's process gets CAP_MKNOD, so DEVICE_OPEN can make the nodes of the
# cards it was not given and show that the device cgroup denies them.
with_mknod() {
  bundle_edit "$1" "[c['process']['capabilities'][k].append('CAP_MKNOD') for k in ('bounding', 'effective', 'permitted')]"
}

# probe_bundle DIR ARGS_JSON ENV...: oci_bundle DIR ARGS_JSON, ENV... appended to the process
# env, and CAP_MKNOD (with_mknod).
probe_bundle() {
  local dir=$1 args=$2 e; shift 2
  oci_bundle "$dir" "$args"
  for e in "$@"; do bundle_edit "$dir" "c['process']['env'].append('$e')"; done
  with_mknod "$dir"
}

# card_field DESC N FIELD: FIELD (minor, uuid, ...) of card index N in a sim-host description.
card_field() {
  awk -v n="$2" -v f="$3:" '$1 == "-" && $2 == "index:" {cur = $3; next}
    $1 == "-" {cur = ""} cur == n && $1 == f {gsub(/"/, "", $2); print $2; exit}' "$1"
}

# without_time: stdin with the leading `time="..."` field of logrus lines (runc, containerd,
# dockerd) removed, the only part of such an error that legitimately differs between two calls.
without_time() { sed -E 's/^time="[^"]*" //'; }

# PRIVATE_RUN: prefix a daemon's command line with it to run the daemon in a private mount
# namespace where /run and /etc/docker are an empty tmpfs (without an /etc/docker to mount on,
# /etc is an overlay whose writes go to that tmpfs) and /opt is an overlay whose writes go there
# too: the fixed paths dockerd and containerd write (/run/docker, /run/containerd/s,
# /etc/docker/key.json, and /opt/containerd, which dockerd's own containerd makes and no
# daemon.json key moves) never reach the host and vanish with the namespace. Nothing forks: the daemon keeps the pid of the command that was
# started (setsid does not fork either when its caller is not a process group leader).
# shellcheck disable=SC2016  # "$@" expands in the inner shell
PRIVATE_RUN=(unshare --mount --propagation private /bin/sh -c '
  mount -t tmpfs -o mode=755 tmpfs /run || exit 125
  if [ -d /etc/docker ]; then mount -t tmpfs -o mode=755 tmpfs /etc/docker || exit 125
  else mkdir /run/.etc /run/.etc-work &&
    mount -t overlay overlay -o lowerdir=/etc,upperdir=/run/.etc,workdir=/run/.etc-work /etc || exit 125
  fi
  if [ -d /opt ]; then mkdir /run/.opt /run/.opt-work &&
    mount -t overlay overlay -o lowerdir=/opt,upperdir=/run/.opt,workdir=/run/.opt-work /opt || exit 125
  fi
  exec "$@"' private-run)

# stop_pid PID: SIGTERM, a bounded wait until PID is gone (or a zombie), then SIGKILL.
stop_pid() {
  local pid=$1
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 120); do
    case $(ps -o stat= -p "$pid") in ''|Z*) break ;; esac
    sleep 0.25
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# wait_for CMD...: poll CMD every 0.1 s until it succeeds; fail after 10 s.
wait_for() {
  local i
  for (( i = 0; i < 100; i++ )); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for: $*" >&2
  return 1
}

# man_covers_flags PAGE BINARY: the man page PAGE renders without warnings and names every
# flag BINARY --help lists (but --help and --version).
man_covers_flags() {
  local warnings page flag
  warnings=$(MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null)
  [ -z "$warnings" ] || { echo "$1: $warnings"; return 1; }
  page=$(MANWIDTH=200 man -l "$1" 2>/dev/null)
  for flag in $("$2" --help | grep -oE -- '--[a-z-]+' | sort -u); do
    [ "$flag" = --help ] && continue
    [ "$flag" = --version ] && continue
    grep -qF -- "$flag" <<<"$page" || { echo "man page lacks $flag"; return 1; }
  done
}

# log_errors LOG: why a daemon did not come up: its last error lines, or its last lines.
log_errors() { { grep -E 'level=(fatal|error)' "$1" || tail -n 3 "$1"; } | tail -n 3; }

# trixie_kubectl: $KUBECTL, Debian 13's kubectl (scripts/fetch-trixie.sh unpacks it under
# $BUILD_DIR/trixie once), or the test skips (fails under CI) saying why it could not be had.
trixie_kubectl() {
  KUBECTL=$BUILD_DIR/trixie/usr/bin/kubectl
  if [ ! -x "$KUBECTL" ]; then
    "$TOP/scripts/fetch-trixie.sh" "$BUILD_DIR/trixie" kubectl > "$SCRATCH/fetch.log" 2>&1 ||
      skip_or_fail "kubectl from Debian 13: $(tail -n 1 "$SCRATCH/fetch.log")"
  fi
}

# fake_api_kubeconfig [TOKEN [FILE]]: $KC (FILE, else $SCRATCH/kubeconfig), a kubeconfig for the
# fake API server whose state folder is $API (k8s/tests/fake_apiserver.py: its port file, its
# CA) with TOKEN (the admin's, test-token, unless given).
fake_api_kubeconfig() {
  KC=${2:-$SCRATCH/kubeconfig}
  cat > "$KC" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: https://127.0.0.1:$(cat "$API/port")
    certificate-authority: $API/ca.crt
users:
- name: test
  user:
    token: ${1:-test-token}
contexts:
- name: fake
  context:
    cluster: fake
    user: test
current-context: fake
EOF
}

# --- cdi/host helpers (cdi/sim/faults/configure/package files) ---

# cdi_ns DIR: sets CDI_NS, a command prefix that runs a command in a private mount namespace
# where DIR is bind-mounted over /run (and an empty folder over /etc/cdi if the host has one).
# podman 4.3.1 reads CDI specs only from /etc/cdi and /var/run/cdi (= /run/cdi here, and
# containers.conf has no cdi_spec_dirs before 4.4), so there it sees exactly the specs in
# DIR/cdi, and the host's CDI folders are neither read nor written. runc's state (/run/runc)
# lands in DIR too, so every command started with the same DIR sees the same containers.
cdi_ns() {
  local run=$1
  mkdir -p "$run/cdi" "$run/etc-cdi" "$run/lock"
  chmod 1777 "$run/lock"
  [ -L "$run/shm" ] || ln -s /dev/shm "$run/shm"
  # shellcheck disable=SC2016  # $1 and $@ expand in the inner shell
  CDI_NS=(unshare --mount --propagation private /bin/sh -c '
    mount --bind "$1" /run || { echo "cdi_ns: cannot bind $1 over /run" >&2; exit 125; }
    [ ! -d /etc/cdi ] || mount --bind "$1/etc-cdi" /etc/cdi || exit 125
    shift; exec "$@"' cdi-ns "$run")
}

# --- Kubernetes daemons (feature_discovery.bats) ---

# manifests_json DIR: the documents DIR/kustomization.yaml lists, as one JSON object keyed by
# kind (the deployments/ tests check them with python3 or jq).
manifests_json() {
  python3 - "$1" <<'PY'
import json, sys, yaml
d = sys.argv[1]
docs = {}
for r in yaml.safe_load(open(d + "/kustomization.yaml"))["resources"]:
    for doc in yaml.safe_load_all(open(d + "/" + r)):
        docs[doc["kind"]] = doc
print(json.dumps(docs))
PY
}

# installs_daemon NAME MANPAGE DEPLOYMENTS: `cmake --install` of $BUILD_DIR (into $SCRATCH/stage,
# never the real /usr) carries bin/NAME (whose --version names it), man/MANPAGE (e.g. man8/x.8)
# and the manifests folder deployments/DEPLOYMENTS.
installs_daemon() {
  DESTDIR=$SCRATCH/stage cmake --install "$BUILD_DIR" --prefix /usr >/dev/null || return 1
  local s=$SCRATCH/stage/usr
  [ -x "$s/bin/$1" ] || { echo "no bin/$1"; return 1; }
  [ -f "$s/share/man/$2" ] || { echo "no man/$2"; return 1; }
  [ -f "$s/share/doc/enflame-container-toolkit/deployments/$3/kustomization.yaml" ] || { echo "no deployments/$3"; return 1; }
  [[ $("$s/bin/$1" --version) == "$1 "* ]] || { echo "$1 --version"; return 1; }
}
