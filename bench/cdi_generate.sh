#!/usr/bin/env bash
# `enflame-ctk cdi generate` for 8 and 64 simulated cards (with DRS), per discovery backend,
# median of $RUNS (default 50) runs, alternating in one loop with `env /bin/true` (the cost of
# starting any process) so both see the same machine load. "cost" = median(generate) -
# median(env /bin/true). Each backend is timed writing the spec to stdout (what generation
# costs) and with --output (atomic write: temp file, fsync, rename, fsync of the folder, which
# on ext4 is most of the time). Targets (DESIGN.md section 8, issue 3): 64 cards under 50 ms with
# efsmi, under 10 ms with libefml. Needs root (the host builder makes device nodes).
set -euo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the (release) build folder}
RUNS=${RUNS:-50}
CARDS_LIST=${CARDS_LIST:-"8 64"}
BACKENDS=${BACKENDS:-"efsmi-json efsmi-text libefml"}
PY=/usr/bin/python3
if [ "$(id -u)" -ne 0 ]; then echo "cdi_generate: skipped (needs root for the simulated host's mknod)"; exit 0; fi
ctk=$BUILD_DIR/cdi-gen/enflame-ctk
sim=$BUILD_DIR/sim/enflame-sim-host
for b in "$ctk" "$sim"; do [ -x "$b" ] || { echo "cdi_generate: no $b (build it first)" >&2; exit 1; }; done
tmp=$(mktemp -d /tmp/ectk-bench-cdi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for n in $CARDS_LIST; do
  "$sim" example --cards "$n" --drs > "$tmp/host$n.yaml"
  "$sim" build --desc "$tmp/host$n.yaml" --root "$tmp/host$n"
  printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$tmp/host$n" "$tmp/host$n" > "$tmp/config$n.toml"
done

"$PY" - "$ctk" "$tmp" "$RUNS" "$CARDS_LIST" "$BACKENDS" "${BENCH_JSON:-}" <<'PY'
import json, os, statistics, subprocess, sys, time
ctk, tmp, runs, cards_list, backends, out_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5].split(), sys.argv[6]

def run(argv, env):
    t0 = time.perf_counter_ns()
    subprocess.run(argv, env=env, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return (time.perf_counter_ns() - t0) / 1e6

def q(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1) + 0.5)]

rows = []
print(f"runs={runs}; milliseconds, median [p25-p75]; cost = generate - env /bin/true")
print(f"{'cards':>5} {'backend':<11} {'env /bin/true':>22} {'generate > stdout':>22} {'cost':>7} "
      f"{'generate --output':>22} {'cost':>7}  bytes")
for n in cards_list:
    env = {"PATH": "/usr/bin:/bin", "ENFLAME_CTK_CONFIG": f"{tmp}/config{n}.toml"}
    for b in backends:
        out = f"{tmp}/spec{n}-{b}.yaml"
        gen = [ctk, "cdi", "generate", "--backend", b]
        run(gen + ["--output", out], env)  # warm the page cache
        floor, cmd, cmdf = [], [], []
        for _ in range(runs):
            floor.append(run(["/usr/bin/env", "/bin/true"], env))
            cmd.append(run(gen, env))
            cmdf.append(run(gen + ["--output", out], env))
        f, c, cf = statistics.median(floor), statistics.median(cmd), statistics.median(cmdf)
        st = lambda v: {"median": statistics.median(v), "p25": q(v, .25), "p75": q(v, .75)}
        row = {"cards": int(n), "backend": b, "runs": runs, "floor_ms": st(floor),
               "generate_stdout_ms": st(cmd), "generate_output_ms": st(cmdf),
               "cost_ms": c - f, "cost_output_ms": cf - f, "spec_bytes": os.path.getsize(out)}
        rows.append(row)
        print(f"{n:>5} {b:<11} {f:8.3f} [{q(floor,.25):.3f}-{q(floor,.75):.3f}] "
              f"{c:8.3f} [{q(cmd,.25):.3f}-{q(cmd,.75):.3f}] {c-f:7.3f} "
              f"{cf:8.3f} [{q(cmdf,.25):.3f}-{q(cmdf,.75):.3f}] {cf-f:7.3f}  {row['spec_bytes']}")
targets = {"efsmi-json": 50.0, "efsmi-text": 50.0, "libefml": 10.0}
bad = [r for r in rows if r["cards"] == 64 and r["cost_ms"] > targets.get(r["backend"], 1e9)]
for r in bad:
    print(f"over target: 64 cards {r['backend']} (stdout): {r['cost_ms']:.3f} ms > {targets[r['backend']]} ms")
if out_json:
    json.dump({"bench": "cdi_generate", "rows": rows, "targets_ms_64_cards": targets}, open(out_json, "w"), indent=2)
PY
