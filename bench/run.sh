#!/usr/bin/env bash
# make bench: runs every benchmark script in bench/ against the release build and collects
# their reports in build/bench/. Each script prints a table (medians, spread, ratio to the
# reference measured in the same alternating loop) and writes a JSON copy next to it.
set -uo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the release build folder}
top=$(cd "$(dirname "$0")/.." && pwd)
out=${BENCH_OUT:-$top/build/bench}
mkdir -p "$out"
rc=0
for b in "$top"/bench/*.sh; do
  [ "$(basename "$b")" = run.sh ] && continue
  name=$(basename "$b" .sh)
  echo "== $name"
  BUILD_DIR=$BUILD_DIR BENCH_JSON=$out/$name.json bash "$b" | tee "$out/$name.txt" || rc=1
done
# One machine-readable copy of everything: {"<bench>": <its JSON>, ...}
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
report = {}
for f in sorted(os.listdir(out)):
    if f.endswith(".json") and f != "report.json":
        with open(os.path.join(out, f)) as fh:
            report[f[:-5]] = json.load(fh)
with open(os.path.join(out, "report.json"), "w") as fh:
    json.dump(report, fh, indent=1)
PY
echo "reports: $out (report.json has them all)"
exit $rc
