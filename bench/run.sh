#!/usr/bin/env bash
# make bench: runs every benchmark script in bench/ against the release build, then
# bench/report.py prints ONE table of all their rows (ours against the reference measured in
# the same alternating loop: medians, p25-p75, added ms, ratio, peak RSS, the
# docs/budgets.md target where one applies) and writes build/bench/report.json. Each script's own
# detailed table goes to build/bench/<name>.txt, its rows to <name>.json.
# RUNS=N applies to every script (defaults: each script's own, chosen for < 10 minutes on 2 cores).
set -uo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the release build folder}
top=$(cd "$(dirname "$0")/.." && pwd)
out=${BENCH_OUT:-$top/build/bench}
mkdir -p "$out"
start=$EPOCHREALTIME
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rm -f "$out"/*.json "$out"/*.txt "$out/times"
rc=0
# NVIDIA's runtime: no package registry serves it, so the user names an official release binary
# (plain or .zst) in NVIDIA_RUNTIME; shim_interleaved.sh then puts it into the same rounds.
nv=
if [ -z "${NVIDIA_RUNTIME:-}" ]; then
  echo "NVIDIA not given: ours alone (set NVIDIA_RUNTIME to nvidia-container-runtime 1.17.x for the ratios)"
elif [[ $NVIDIA_RUNTIME == *.zst ]]; then
  nv=$out/nvidia-container-runtime
  zstd -q -f -d -o "$nv" "$NVIDIA_RUNTIME" && chmod +x "$nv" || { echo "NVIDIA_RUNTIME '$NVIDIA_RUNTIME': cannot unpack"; rc=1; nv=; }
elif [ -x "$NVIDIA_RUNTIME" ]; then
  nv=$(realpath "$NVIDIA_RUNTIME")
else
  echo "NVIDIA_RUNTIME '$NVIDIA_RUNTIME' is not an executable file"; rc=1
fi
for b in "$top"/bench/*.sh; do
  name=$(basename "$b" .sh)
  case $name in run | lib | shim_order) continue ;; esac  # shim_order writes the link order, measures nothing
  t0=$EPOCHREALTIME
  NVIDIA=$nv BUILD_DIR=$BUILD_DIR BENCH_JSON=$out/$name.json bash "$b" > "$out/$name.txt" 2>&1
  s=$?
  t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  printf '%s %s %d\n' "$name" "$t" "$s" >> "$out/times"
  printf '== %-13s %6s s%s\n' "$name" "$t" "$([ $s -ne 0 ] && echo "  FAILED (exit $s):")"
  if [ $s -ne 0 ]; then rc=1; tail -n 5 "$out/$name.txt" | sed 's/^/   /'; fi
done
echo
python3 "$top/bench/report.py" "$out" --build-dir "$BUILD_DIR" --start "$start" \
  --load-before "$load_before" --times "$out/times" || rc=1
exit $rc
