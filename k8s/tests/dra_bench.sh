#!/usr/bin/env bash
# DRA plugin figures (issue 13's budget: NodePrepareResources for one card under 5 ms median;
# a report, never a pass/fail test): prepare of a one-card claim measured kubelet-side through
# fake-dra-kubelet, each timed call fetching the claim from the loopback fake API server (HTTPS)
# and writing its CDI spec and the checkpoint afresh (an untimed unprepare in between); medians
# of 300 calls, three runs. Then the same for a DRS placement (gcu-3-1g-11gb-0): each timed
# prepare also makes the instance through efsmi (list, create, list back) and writes the pending
# checkpoint first; the untimed unprepare destroys it (100 calls, three runs). Then the daemon's RSS and its idle CPU over 20 s, and the load
# average (the figures depend on it: every prepare is a few processes' worth of CPU). Needs
# root (the simulated host's device nodes), python3 and openssl (the fake API server).
#
#   BUILD_DIR=$PWD/build/dev [DRA=$PWD/build/release/k8s/dra/enflame-dra-plugin] k8s/tests/dra_bench.sh
set -euo pipefail
B=${BUILD_DIR:?set BUILD_DIR to a build with tests (fake-dra-kubelet, the simulator)}
DRA=${DRA:-$B/k8s/dra/enflame-dra-plugin}
FDK=$B/k8s/tests/fake-dra-kubelet
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/edrab.XXXXXX)
API_PID= DRA_PID=
cleanup() {
  [ -n "$DRA_PID" ] && kill "$DRA_PID" 2>/dev/null
  [ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
until_ok() { local i; for (( i = 0; i < 4000; i++ )); do "$@" && return 0; sleep 0.005; done; echo "timed out: $*" >&2; exit 1; }

"$B/sim/enflame-sim-host" example --cards 8 --drs > "$T/desc.yaml"
"$B/sim/enflame-sim-host" build --desc "$T/desc.yaml" --root "$T/host" >/dev/null
printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$T/host" "$T/host" > "$T/config.toml"
mkdir -p "$T/api/claims/ns" "$T/reg" "$T/plugins" "$T/cdi"
python3 "$HERE/fake_apiserver.py" --dir "$T/api" >/dev/null 2>&1 & API_PID=$!
until_ok test -s "$T/api/port"
cat > "$T/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: f, cluster: {server: "https://127.0.0.1:$(cat "$T/api/port")", certificate-authority: "$T/api/ca.crt"}}]
users: [{name: u, user: {token: test-token}}]
contexts: [{name: c, context: {cluster: f, user: u}}]
current-context: c
KC
cat > "$T/api/claims/ns/c1.json" <<'JSON'
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "c1", "namespace": "ns", "uid": "0d6f1c1e-8f6a-4d38-9d59-5b0b6f6c2a11"},
 "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gcu.enflame.com", "pool": "n", "device": "gcu-3"}]}}}}
JSON
sed 's/"c1"/"c2"/; s/2a11/2a12/; s/"gcu-3"/"gcu-3-1g-11gb-0"/' "$T/api/claims/ns/c1.json" > "$T/api/claims/ns/c2.json"
ENFLAME_CTK_CONFIG=$T/config.toml "$DRA" --node-name n --kubeconfig "$T/kubeconfig" --plugins-registry "$T/reg" \
  --plugins-dir "$T/plugins" --cdi-root "$T/cdi" --log-level debug > "$T/dra.log" 2>&1 & DRA_PID=$!
until_ok test -S "$T/reg/gcu.enflame.com-reg.sock"
sock=$T/plugins/gcu.enflame.com/dra.sock
echo "load average before: $(cut -d" " -f1-3 /proc/loadavg) on $(nproc) cores"
for _ in 1 2 3; do
  "$FDK" prepare --socket "$sock" --claim ns/c1/0d6f1c1e-8f6a-4d38-9d59-5b0b6f6c2a11 --repeat 300 --unprepare-between 2>&1 >/dev/null
done
# The daemon's own split of those prepares (its debug log): API call, then spec + checkpoint.
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "plugin side: median $(grep -o '[0-9]* us asking' "$T/dra.log" | cut -d' ' -f1 | median) us asking the API server," \
  "$(grep -o '[0-9]* us specs' "$T/dra.log" | cut -d' ' -f1 | median) us writing spec and checkpoint"
# The last timed prepare left card 3 prepared whole: a placement on it would be refused.
"$FDK" unprepare --socket "$sock" --claim ns/c1/0d6f1c1e-8f6a-4d38-9d59-5b0b6f6c2a11 >/dev/null
for _ in 1 2 3; do
  "$FDK" prepare --socket "$sock" --claim ns/c2/0d6f1c1e-8f6a-4d38-9d59-5b0b6f6c2a12 --repeat 100 --unprepare-between 2>&1 >/dev/null |
    sed 's/^prepare:/prepare (DRS placement, efsmi create):/'
done
"$FDK" unprepare --socket "$sock" --claim ns/c2/0d6f1c1e-8f6a-4d38-9d59-5b0b6f6c2a12 >/dev/null
"$FDK" prepare --socket "$sock" --claim ns/c1/0d6f1c1e-8f6a-4d38-9d59-5b0b6f6c2a11 --repeat 300 2>&1 >/dev/null |
  sed 's/^prepare:/prepare (retry, from the checkpoint):/'
echo "rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$DRA_PID/status")"
t0=$(awk '{print $14 + $15}' "/proc/$DRA_PID/stat"); sleep 20; t1=$(awk '{print $14 + $15}' "/proc/$DRA_PID/stat")
echo "idle cpu: $(( t1 - t0 )) ticks of $(getconf CLK_TCK)/s in 20 s"
echo "load average after: $(cut -d" " -f1-3 /proc/loadavg) on $(nproc) cores"
