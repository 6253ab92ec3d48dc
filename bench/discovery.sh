#!/usr/bin/env bash
# Discovery of 64 simulated cards, per backend, median of $RUNS (default 80) runs:
#   in process (discover_with, with the DRS queries)   no reference (nothing to subtract)
#   as a command: enflame-ctk info --backend B         against env /bin/true (process start)
# The command and the floor alternate in one loop in discovery_bench (same machine load).
# Peak RSS of enflame-ctk info: 3 extra untimed runs through shim_time (fork + wait4);
# in-process rows have none of their own (n/a). Writes the common row schema
# (bench/benchlib.py) to $BENCH_JSON. Needs root (the host builder makes device nodes).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the (release) build folder}
RUNS=${RUNS:-80}
CARDS=${CARDS:-64}
if [ "$(id -u)" -ne 0 ]; then echo "discovery: skipped (needs root for the simulated host's mknod)"; exit 0; fi
bench=$BUILD_DIR/bench/discovery_bench
ctk=$BUILD_DIR/ctk/enflame-ctk
for b in "$bench" "$ctk"; do [ -x "$b" ] || { echo "discovery: no $b (build it first)" >&2; exit 1; }; done
tmp=$(mktemp -d /tmp/ectk-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
build_shim_time "$tmp"
"$BUILD_DIR/sim/enflame-sim-host" example --cards "$CARDS" --drs > "$tmp/host.yaml"
"$BUILD_DIR/sim/enflame-sim-host" build --desc "$tmp/host.yaml" --root "$tmp/host"
printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$tmp/host" "$tmp/host" > "$tmp/config.toml"
"$bench" --root "$tmp/host" --ctk "$ctk" --config "$tmp/config.toml" --runs "$RUNS" --json "$tmp/raw.json"

# The same numbers in the common schema, plus the peak RSS of `enflame-ctk info`.
python3 - "$tmp" "$ctk" "$RUNS" "${BENCH_JSON:-}" <<'PY'
import json, sys
import benchlib as bl
tmp, ctk, runs, out_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
raw = json.load(open(f"{tmp}/raw.json"))
timer = bl.Timer(f"{tmp}/shim_time", {"PATH": "/usr/bin:/bin", "ENFLAME_CTK_CONFIG": f"{tmp}/config.toml"})
rows = []
for r in raw:
    b, n = r["backend"], r["cards"]
    info = [ctk, "info", "--backend", b, "--format", "json", "--driver-root", f"{tmp}/host", "--dev-root", f"{tmp}/host"]
    rss = max(timer.run(info)[1] for _ in range(3))
    floor = bl.side_from("env /bin/true", r["env_true"]["median_ms"], r["env_true"]["p25_ms"], r["env_true"]["p75_ms"],
                         max(timer.run(["/usr/bin/env", "/bin/true"])[1] for _ in range(3)))
    d = r["in_process_drs"]
    rows.append(bl.row("discovery", f"in process, {n} cards, {b}", runs,
                       bl.side_from(f"discover_with({b}, DRS)", d["median_ms"], d["p25_ms"], d["p75_ms"]),
                       note="in process: no reference, no RSS of its own"))
    d = r["info"]
    rows.append(bl.row("discovery", f"enflame-ctk info, {n} cards, {b}", runs,
                       bl.side_from(f"enflame-ctk info --backend {b}", d["median_ms"], d["p25_ms"], d["p75_ms"], rss),
                       floor))
bl.write(out_json, "discovery", runs, rows, detail=raw)
PY
