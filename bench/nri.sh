#!/bin/bash
# bench/nri.sh [ROUNDS]: what enflame-nri-plugin costs a container (issue 27), a report, not a
# test. Two private containerd 1.7 (Debian 13's, as tests/integration/cri.bash runs it), the
# same simulated 8-card host and the same generated CDI spec; CRI calls timed by nri-bench in
# interleaved rounds of random order (default 100 rounds after 5 warm-up), one card asked:
#   nri       containerd A (NRI on, our plugin connected, its own CDI on too): ENFLAME_VISIBLE_DEVICES=0
#   cdi       containerd A: the cdi.k8s.io annotation naming the same card, which containerd's own
#             CDI applies before NRI (the plugin is still asked and finds nothing to do): the same
#             final spec without the plugin's work
#   none      containerd A, nothing asked
#   cdi-b     containerd B (NRI off, CDI on): the annotation
#   shim      containerd B, runtime handler `enflame` (our shim), ENFLAME_VISIBLE_DEVICES=0
#   none-b    containerd B, nothing asked
# All on runc. A - B differences mix NRI's own cost in containerd with two daemons' differences.
# Prints median and p25-p75 per call and variant, then the differences that matter, and the load
# average before and after (a busy machine spreads every number).
# NRI=... and BENCH_SHIM=... take the plugin and the shim from another build (build/release).
# Needs root, podman, BUILD_DIR with enflame-nri-plugin, nri-bench, fake-cri's prerequisites,
# enflame-container-runtime, enflame-ctk, enflame-sim-host, and containerd 1.7 in
# $BUILD_DIR/trixie (scripts/fetch-trixie.sh).
set -eo pipefail
: "${BUILD_DIR:?BUILD_DIR must point at the build folder}"
rounds=${1:-100}
BATS_TEST_DIRNAME=$(cd "$(dirname "$0")/../tests/integration" && pwd)
skip() { echo "nri bench: skipped ($*)"; exit 0; }
skip_or_fail() { skip "$@"; }
# shellcheck source=tests/integration/helpers.bash
. "$BATS_TEST_DIRNAME/helpers.bash"
# shellcheck source=tests/integration/cri.bash
. "$BATS_TEST_DIRNAME/cri.bash"
[ "$(id -u)" -eq 0 ] || skip "needs root"
# NRI and SHIM may name other builds' binaries (an optimised plugin and shim with the dev tree's tools)
NRI=${NRI:-$BUILD_DIR/k8s/nri/enflame-nri-plugin}
SHIM=${BENCH_SHIM:-$SHIM}
BENCH=$BUILD_DIR/k8s/nri/nri-bench
for b in "$NRI" "$BENCH" "$SHIM" "$CTK" "$SIM_HOST" "$BUILD_DIR/trixie/usr/bin/containerd"; do
  [ -x "$b" ] || { echo "nri bench: no $b (build it first)" >&2; exit 1; }
done

base=$(mktemp -d /tmp/ectk-bench-nri.XXXXXX)
chmod 755 "$base"
declare -A side_cmds side_pid side_cg
side_done=()
cleanup() {
  local s i
  for s in "${side_done[@]}"; do
    SCRATCH=$base/$s CTRD_PID=${side_pid[$s]} CRI_CG=${side_cg[$s]}
    # shellcheck disable=SC2034  # read by cri_teardown
    CTR=("$BUILD_DIR/trixie/usr/bin/ctr" --address "$SCRATCH/ctrd/containerd.sock" -n k8s.io)
    eval "_TEARDOWN_CMDS=(${side_cmds[$s]})"
    for (( i=${#_TEARDOWN_CMDS[@]}-1; i>=0; i-- )); do eval "${_TEARDOWN_CMDS[$i]}" || true; done
  done
  rm -rf "$base"
}
trap cleanup EXIT
trap "exit 130" INT TERM

# side NAME CDIR: containerd under $base/NAME with cri_setup (its CDI spec folder CDIR).
side() {
  # shellcheck disable=SC2034  # CDIR is read by cri_setup
  SCRATCH=$base/$1 CDIR=$2
  mkdir -p "$SCRATCH"
  _TEARDOWN_CMDS=()
  side_done+=("$1")
  cri_setup
}
side_save() { side_cmds[$1]=$(printf '%q ' "${_TEARDOWN_CMDS[@]}"); side_pid[$1]=$CTRD_PID; side_cg[$1]=$CRI_CG; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
SCRATCH=$base/host && mkdir -p "$SCRATCH" && sim_setup 8
mkdir -p "$base/cdi"
"$CTK" cdi generate --output "$base/cdi/enflame.com-gpu.yaml" >/dev/null
printf '[enflame-container-runtime]\nspec-dirs = ["%s"]\n' "$base/cdi" >> "$ENFLAME_CTK_CONFIG"

side a "$base/cdi"
printf '[plugins."io.containerd.nri.v1.nri"]\n  disable = false\n  disable_connections = false\n  socket_path = "%s"\n  plugin_path = "%s"\n' \
  "$base/a/nri.sock" "$base/a/plugins" >> "$SCRATCH/ctrd/config.toml"
mkdir -p "$base/a/plugins"
cri_restart
wait_for test -S "$base/a/nri.sock"
"$NRI" --socket "$base/a/nri.sock" --log-level debug >> "$base/a/nri.log" 2>&1 &
nri_pid=$!
on_teardown "stop_pid $nri_pid"
side_save a
side b "$base/cdi"
side_save b
sleep 1   # the plugin registered (a second is plenty; the first rounds are warm-up anyway)

mkdir -p "$base/logs"
sa=$base/a/ctrd/containerd.sock sb=$base/b/ctrd/containerd.sock
"$BENCH" --image localhost/dra-bb:latest --log-dir "$base/logs" --cgroup-parent "${side_cg[a]}" \
  --rounds "$rounds" --warmup 5 \
  --variant "nri,$sa,,env:ENFLAME_VISIBLE_DEVICES=0" \
  --variant "cdi,$sa,,ann:cdi.k8s.io/bench=enflame.com/gpu=0" \
  --variant "none,$sa,," \
  --variant "cdi-b,$sb,,ann:cdi.k8s.io/bench=enflame.com/gpu=0" \
  --variant "shim,$sb,enflame,env:ENFLAME_VISIBLE_DEVICES=0" \
  --variant "none-b,$sb,," > "$base/out.jsonl"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$base/out.jsonl" "$load_before" "$load_after" "$base/a/nri.log" <<'PY'
import json, re, statistics, sys
rows = {r["variant"]: r for r in map(json.loads, open(sys.argv[1]))}
print(f"nri bench: {next(iter(rows.values()))['rounds']} interleaved rounds; ms, median (p25-p75)")
print(f"{'variant':10} {'create':>22} {'start':>22} {'remove':>22}")
for v, r in rows.items():
    print(f"{v:10} " + " ".join(f"{r[c][0]:8.2f} ({r[c][1]:5.2f}-{r[c][2]:5.2f})" for c in ("create", "start", "remove")))
d = lambda a, b, c: rows[a][c][0] - rows[b][c][0]
for a, b in (("nri", "cdi"), ("cdi", "none"), ("shim", "cdi-b"), ("cdi-b", "none-b"), ("none", "none-b")):
    print(f"{a} - {b}: create {d(a, b, 'create'):+.2f} ms, start {d(a, b, 'start'):+.2f} ms, remove {d(a, b, 'remove'):+.2f} ms")
own = {"asked": [], "no request": []}
for m in re.finditer(r"(device nodes|no request)[^\n]*\((\d+) us\)", open(sys.argv[4]).read()):
    own["no request" if m.group(1) == "no request" else "asked"].append(int(m.group(2)))
for k, xs in own.items():
    if xs:
        print(f"plugin's own time per CreateContainer, {k}: median {statistics.median(xs) / 1000:.3f} ms over {len(xs)} calls (warm-up included)")
print(f"load average before: {sys.argv[2]}, after: {sys.argv[3]}")
PY
