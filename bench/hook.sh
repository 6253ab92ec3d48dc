#!/usr/bin/env bash
# enflame-container-runtime-hook: what the legacy prestart hook adds to a container start.
# `runc run` of a busybox bundle whose process is `true`, median of $RUNS (default 50) starts
# per variant, all variants alternating in one loop so they see the same machine load:
#   plain            no hook (the reference)
#   /bin/true hook   runc's own cost of running a prestart hook at all
#   N cards          the hook with ENFLAME_VISIBLE_DEVICES=0 (1 card) or all (8 cards):
#                    device nodes, efsmi + libefml + runtime library mounts, devices.allow,
#                    sandboxed host ldconfig
#   N cards, no ld   the same on a host without libraries (only nodes + efsmi): no ldcache update
# Reports the median, p25-p75, the ratio to plain and the added milliseconds.
# Needs root, runc and the build's hook and simulated host builder.
set -euo pipefail
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the (release) build folder}
RUNS=${RUNS:-50}
if [ "$(id -u)" -ne 0 ]; then echo "hook: skipped (needs root)"; exit 0; fi
command -v runc >/dev/null || { echo "hook: skipped (no runc)"; exit 0; }
hook=$BUILD_DIR/hooks/enflame-container-runtime-hook
sim=$BUILD_DIR/sim/enflame-sim-host
for b in "$hook" "$sim"; do [ -x "$b" ] || { echo "hook: no $b (build it first)" >&2; exit 1; }; done
tmp=$(mktemp -d /tmp/ectk-bench-hook.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$sim" example --cards 8 > "$tmp/full.yaml"
"$sim" build --desc "$tmp/full.yaml" --root "$tmp/full" >/dev/null
# The same cards, without libefml and runtime libraries: nothing for ldconfig to index.
python3 - "$tmp/full.yaml" "$tmp/nolib.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read()
s = s.split("runtime_libraries:")[0] + "runtime_libraries: []\nfaults:\n  efml_absent: true\n"
open(sys.argv[2], "w").write(s)
PY
"$sim" build --desc "$tmp/nolib.yaml" --root "$tmp/nolib" >/dev/null
for h in full nolib; do
  printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$tmp/$h" "$tmp/$h" > "$tmp/$h.toml"
done

mkdir -p "$tmp/rootfs"/{bin,proc,sys,dev,etc,tmp}
cp /bin/busybox "$tmp/rootfs/bin/"; ln -s busybox "$tmp/rootfs/bin/true"
python3 - "$tmp" "$hook" <<'PY'
import json, os, subprocess, sys
tmp, hook = sys.argv[1], sys.argv[2]
def bundle(name, env=None, host=None):
    d = f"{tmp}/{name}"
    os.makedirs(d)
    subprocess.run(["runc", "spec"], cwd=d, check=True)
    c = json.load(open(f"{d}/config.json"))
    c["root"] = {"path": f"{tmp}/rootfs", "readonly": False}
    c["process"]["terminal"] = False
    c["process"]["args"] = ["/bin/true"]
    if env:
        c["process"]["env"].append(env)
        c["hooks"] = {"prestart": [{"path": hook, "args": ["enflame-container-runtime-hook", "prestart"],
                                    "env": [f"ENFLAME_CTK_CONFIG={tmp}/{host}.toml"]}]}
    json.dump(c, open(f"{d}/config.json", "w"))
bundle("plain")
# runc's own cost of running any prestart hook: /bin/true as the hook
bundle("true-hook")
c = json.load(open(f"{tmp}/true-hook/config.json"))
c["hooks"] = {"prestart": [{"path": "/bin/true", "args": ["true"]}]}
json.dump(c, open(f"{tmp}/true-hook/config.json", "w"))
for cards, sel in (("1", "0"), ("8", "all")):
    for host in ("full", "nolib"):
        bundle(f"{cards}-{host}", f"ENFLAME_VISIBLE_DEVICES={sel}", host)
PY

python3 - "$tmp" "$RUNS" "${BENCH_JSON:-}" <<'PY'
import json, os, statistics, subprocess, sys, time
tmp, runs, out_json = sys.argv[1], int(sys.argv[2]), sys.argv[3]
variants = [("plain", "plain"), ("/bin/true hook", "true-hook"), ("1 card", "1-full"), ("8 cards", "8-full"),
            ("1 card, no ld", "1-nolib"), ("8 cards, no ld", "8-nolib")]
def start(bundle, n):
    cid = f"bench-hook-{os.getpid()}-{bundle}-{n}"
    t0 = time.perf_counter_ns()
    r = subprocess.run(["runc", "run", "--bundle", f"{tmp}/{bundle}", cid],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = (time.perf_counter_ns() - t0) / 1e6
    if r.returncode != 0:
        subprocess.run(["runc", "delete", "-f", cid], stderr=subprocess.DEVNULL)
        sys.exit(f"hook bench: {bundle}: runc failed: {r.stderr.decode().strip()}")
    return dt
for _, b in variants:
    start(b, "warm")
times = {b: [] for _, b in variants}
for i in range(runs):
    for _, b in variants:
        times[b].append(start(b, i))
def q(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1) + 0.5)]
base = statistics.median(times["plain"])
print(f"runc run of `true`, {runs} starts per variant, alternating; milliseconds")
print(f"{'variant':<16} {'median':>8} {'p25-p75':>15} {'ratio':>7} {'added':>8}")
rows = []
for name, b in variants:
    m = statistics.median(times[b])
    row = {"variant": name, "median_ms": round(m, 3), "p25_ms": round(q(times[b], .25), 3),
           "p75_ms": round(q(times[b], .75), 3), "ratio": round(m / base, 3), "added_ms": round(m - base, 3)}
    rows.append(row)
    print(f"{name:<16} {m:8.2f} {row['p25_ms']:7.2f}-{row['p75_ms']:<7.2f} {row['ratio']:7.2f} {row['added_ms']:+8.2f}")
if out_json:
    json.dump({"bench": "hook", "runs": runs, "rows": rows}, open(out_json, "w"), indent=1)
PY
