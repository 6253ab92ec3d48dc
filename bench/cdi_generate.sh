#!/usr/bin/env bash
# `enflame-ctk cdi generate` for 8 and 64 simulated cards (with DRS), per discovery backend,
# median of $RUNS (default 60) runs, alternating in one loop with `env /bin/true` (the cost of
# starting any process) so every command sees the same machine load. "cost" =
# median(generate to stdout) - median(env /bin/true), split into process start
# (enflame-ctk --version), discovery (enflame-ctk info) and generation; --output (atomic write
# with fsyncs) is timed separately. Targets (docs/budgets.md, cdi generate): 64 cards under
# 50 ms with efsmi, under 10 ms with libefml. Every command runs through shim_time (fork +
# wait4: wall time and the child's own peak RSS). Prints its detailed table and writes the
# common row schema (bench/benchlib.py) to $BENCH_JSON: generate to stdout against env /bin/true
# for every size and backend, --output for 64 cards.
# Needs root (the host builder makes device nodes).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the (release) build folder}
RUNS=${RUNS:-60}
CARDS_LIST=${CARDS_LIST:-"8 64"}
BACKENDS=${BACKENDS:-"efsmi-json efsmi-text libefml"}
PY=/usr/bin/python3
if [ "$(id -u)" -ne 0 ]; then echo "cdi_generate: skipped (needs root for the simulated host's mknod)"; exit 0; fi
ctk=$BUILD_DIR/ctk/enflame-ctk
sim=$BUILD_DIR/sim/enflame-sim-host
for b in "$ctk" "$sim"; do [ -x "$b" ] || { echo "cdi_generate: no $b (build it first)" >&2; exit 1; }; done
tmp=$(mktemp -d /tmp/ectk-bench-cdi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
build_shim_time "$tmp"
for n in $CARDS_LIST; do
  "$sim" example --cards "$n" --drs > "$tmp/host$n.yaml"
  "$sim" build --desc "$tmp/host$n.yaml" --root "$tmp/host$n"
  printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$tmp/host$n" "$tmp/host$n" > "$tmp/config$n.toml"
done

"$PY" - "$ctk" "$tmp" "$RUNS" "$CARDS_LIST" "$BACKENDS" "${BENCH_JSON:-}" <<'PY'
import os, statistics, sys
import benchlib as bl
ctk, tmp, runs, cards_list, backends, out_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split(), sys.argv[6]
timer = bl.Timer(f"{tmp}/shim_time")
targets = {"efsmi-json": 50.0, "efsmi-text": 50.0, "libefml": 10.0}

detail, rows = [], []
print(f"runs={runs}; medians in milliseconds, all commands alternating in one loop.")
print("  true   = env /bin/true (process start floor)   version = enflame-ctk --version")
print("  info   = enflame-ctk info --backend B          stdout  = cdi generate --backend B > /dev/null")
print("  output = cdi generate --backend B --output F (atomic write: fsync file and folder)")
print("  cost = stdout - true; of it: start = version - true, discovery = info - version,")
print("  generation (build + serialize the spec) = stdout - info; write = output - stdout")
hdr = ("cards", "backend", "true", "version", "info", "stdout", "output", "cost", "start", "discov", "generat", "write", "bytes")
print("%5s %-10s %7s %7s %7s %7s %7s | %7s %7s %7s %7s %7s %6s" % hdr)
for n in cards_list:
    env = {"PATH": "/usr/bin:/bin", "ENFLAME_CTK_CONFIG": f"{tmp}/config{n}.toml"}
    for b in backends:
        out = f"{tmp}/spec{n}-{b}.yaml"
        cmds = {
            "true": ["/usr/bin/env", "/bin/true"],
            "version": [ctk, "--version"],
            "info": [ctk, "info", "--backend", b],
            "stdout": [ctk, "cdi", "generate", "--backend", b],
            "output": [ctk, "cdi", "generate", "--backend", b, "--output", out],
        }
        t, rss = bl.alternate(timer, cmds, env, runs)
        m = {k: statistics.median(v) for k, v in t.items()}
        d = {"cards": int(n), "backend": b, "runs": runs, "median_ms": m,
             "cost_ms": m["stdout"] - m["true"], "start_ms": m["version"] - m["true"],
             "discovery_ms": m["info"] - m["version"], "generation_ms": m["stdout"] - m["info"],
             "write_ms": m["output"] - m["stdout"], "spec_bytes": os.path.getsize(out)}
        detail.append(d)
        print("%5s %-10s %7.2f %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f %7.2f %7.2f %6d" % (
            n, b, m["true"], m["version"], m["info"], m["stdout"], m["output"], d["cost_ms"], d["start_ms"],
            d["discovery_ms"], d["generation_ms"], d["write_ms"], d["spec_bytes"]))
        floor = bl.side("env /bin/true", t["true"], rss["true"])
        tgt = bl.target(targets[b], source="docs/budgets.md, cdi generate: 64 cards") if int(n) == 64 and b in targets else None
        rows.append(bl.row("cdi_generate", f"generate to stdout, {n} cards, {b}", runs,
                           bl.side(f"enflame-ctk cdi generate --backend {b}", t["stdout"], rss["stdout"]), floor, tgt))
        if int(n) == 64:
            rows.append(bl.row("cdi_generate", f"generate --output, {n} cards, {b}", runs,
                               bl.side(f"enflame-ctk cdi generate --backend {b} --output F", t["output"], rss["output"]),
                               floor))
for r in rows:
    if r["target"] and r["added_ms"] > r["target"]["added_ms_max"]:
        print(f"over target: {r['case']}: {r['added_ms']:.3f} ms > {r['target']['added_ms_max']} ms")
bl.write(out_json, "cdi_generate", runs, rows, detail={"breakdown": detail, "targets_ms_64_cards": targets})
PY
