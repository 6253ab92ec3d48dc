#!/usr/bin/env bash
# enflame-container-runtime on a busy node (issue 20): the shim's calls interleaved, in random
# order each round, with Go binaries (runc state <missing>, runc --version) between them, so
# caches and TLBs are as cold as on a node where containerd, runc and kubelet run around us.
# (bench/shim.sh is the plain mode: the same calls back to back.)
#
# Cases, each round in a fresh random order (seeded, printed):
#   floor        env /bin/true
#   passthrough  shim state x, runtime /bin/true
#   create 1     shim create, 1 card, cdi mode, a minimal hand-written spec (one device node)
#   create 8     shim create, 8 cards, cdi mode, the spec `enflame-ctk cdi generate` writes
#   lifecycle    create + start + delete of a busybox bundle, 1 card, through the shim (real
#                runc) vs runc alone on the config.json the shim wrote (in the same round)
# Per case: median, p25-p75, the paired per-round difference to its reference (floor, or runc
# alone for the lifecycle) with a bootstrap 95 % interval of its median, minor page faults
# (getrusage; perf stat's instruction counter is not available on every VM), peak RSS and the
# CPU time (user + system, and its paired difference: what the load stretches into the wall
# time, without the waits for a core or the disk).
# Needs root and runc. RUNS rounds (default 200), SEED for the order (default: random),
# BENCH_TMPDIR for the bundles' filesystem (default /tmp; /dev/shm for tmpfs like containerd's).
# BASELINE=/path/to/another/enflame-container-runtime adds its passthrough and creates to the
# same rounds ("... (baseline)" rows), for a before/after comparison under the same load:
# medians of two separate runs on a shared machine differ by more than a change's effect.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the (release) build folder}
RUNS=${RUNS:-200}
SEED=${SEED:-$RANDOM}
shim_bench_setup shim_interleaved
mkdir -p "$tmp/cdi8" "$tmp/cdi1"
ENFLAME_CTK_CONFIG=$tmp/plain.toml "$ctk" cdi generate --output "$tmp/cdi8/enflame.com-gpu.yaml"
# The minimal spec: card 0's node and nothing else.
node0=$(find "$tmp/host" -path '*/dev/gcu0' -print -quit)
[ -c "$node0" ] || { echo "shim_interleaved: no gcu0 node in the simulated host" >&2; exit 1; }
printf 'cdiVersion: "0.6.0"\nkind: enflame.com/gpu\ndevices:\n- name: "0"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/gcu0\n      hostPath: %s\n' \
  "$node0" > "$tmp/cdi1/enflame.com-gpu.yaml"
for spec in cdi1 cdi8; do
  for rt in runc true; do
    r=runc; [ $rt = true ] && r=/bin/true
    printf '[enflame-container-runtime]\nmode = "cdi"\nspec-dirs = ["%s"]\nruntimes = ["%s"]\n%s\n' \
      "$tmp/$spec" "$r" "$cli" > "$tmp/$spec-$rt.toml"
  done
done

busybox_bundles 1=0 8=all life=0

python3 - "$tmp" "$shim" "$RUNS" "$SEED" "${BENCH_JSON:-}" "${BASELINE:-}" <<'PY'
import os, random, shutil, statistics, subprocess, sys
import benchlib as bl
tmp, shim, runs, seed, out_json, baseline = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
env0 = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
rr = f"{tmp}/rr"
runc = "/usr/sbin/runc"
counter = [0]

def timed(argv, cfg=None, ok=(0,)):
    """(ms, peak RSS KiB, minor faults, CPU ms) of one run of ARGV through shim_time."""
    env = dict(env0)
    if cfg: env["ENFLAME_CTK_CONFIG"] = f"{tmp}/{cfg}.toml"
    out = f"{tmp}/last.out"
    r = subprocess.run([f"{tmp}/shim_time", "-f", "-c", "-o", out, "--"] + argv, env=env, capture_output=True,
                       text=True, check=True)
    ns, rss, rc, flt, cpu_us = (int(x) for x in r.stdout.split())
    if rc not in ok:
        sys.exit(f"shim_interleaved: {' '.join(argv)} exited {rc}: {open(out).read().strip()[-2000:]}")
    return ns / 1e6, rss, flt, cpu_us / 1e3

def fresh(kind):
    d = f"{tmp}/b-{kind}"
    shutil.copy(f"{d}/orig.json", f"{d}/config.json")
    return d

def shim_create(kind, cfg, binary=shim):
    def run():
        return timed([binary, "create", "--bundle", fresh(kind), "x"], cfg)
    return run

def lifecycle(argv0, cfg, kind):
    """create + start + delete -f of one container; the three times, faults and CPU summed, RSS max."""
    def run():
        d = fresh("life")
        if kind == "runc": shutil.copy(f"{tmp}/life-edited.json", f"{d}/config.json")
        counter[0] += 1
        cid = f"bi-{os.getpid()}-{counter[0]}"
        parts = [timed(argv0 + ["--root", rr, "create", "--bundle", d, cid], cfg),
                 timed(argv0 + ["--root", rr, "start", cid], cfg),
                 timed(argv0 + ["--root", rr, "delete", "-f", cid], cfg)]
        return sum(p[0] for p in parts), max(p[1] for p in parts), sum(p[2] for p in parts), sum(p[3] for p in parts)
    return run

# The reference lifecycle starts from the config.json the shim writes for that bundle.
timed([shim, "create", "--bundle", fresh("life"), "prep"], "cdi1-true")
shutil.copy(f"{tmp}/b-life/config.json", f"{tmp}/life-edited.json")

cases = {
    "floor": lambda: timed(["/usr/bin/env", "/bin/true"]),
    "passthrough": lambda: timed([shim, "state", "x"], "cdi8-true"),
    "create 1": shim_create("1", "cdi1-true"),
    "create 8": shim_create("8", "cdi8-true"),
    "life shim": lifecycle([shim], "cdi1-runc", "shim"),
    "life runc": lifecycle([runc], None, "runc"),
}
if baseline:
    cases["passthrough (baseline)"] = lambda: timed([baseline, "state", "x"], "cdi8-true")
    cases["create 1 (baseline)"] = shim_create("1", "cdi1-true", baseline)
    cases["create 8 (baseline)"] = shim_create("8", "cdi8-true", baseline)
noise = {"runc state <missing>": lambda: timed([runc, "--root", rr, "state", "missing"], ok=(1,)),
         "runc --version": lambda: timed([runc, "--version"])}
ref = {"passthrough": "floor", "create 1": "floor", "create 8": "floor", "life shim": "life runc",
       "passthrough (baseline)": "floor", "create 1 (baseline)": "floor", "create 8 (baseline)": "floor"}
what = {"floor": "env /bin/true", "passthrough": "shim state (runtime /bin/true)",
        "create 1": "shim create, 1 card, cdi mode, minimal spec (runtime /bin/true)",
        "create 8": "shim create, 8 cards, cdi mode, cdi generate's spec (runtime /bin/true)",
        "life shim": "create+start+delete, 1 card, shim -> runc",
        "life runc": "create+start+delete, runc alone, the shim's config.json",
        "runc state <missing>": "runc state <missing>", "runc --version": "runc --version"}
what.update({k + " (baseline)": what[k] + ", " + baseline for k in ("passthrough", "create 1", "create 8")})

rng = random.Random(seed)
ms = {k: [] for k in list(cases) + list(noise)}
flt = {k: [] for k in ms}
cpu = {k: [] for k in ms}
rss = {k: 0 for k in ms}
for f in list(cases.values()) + list(noise.values()): f()  # warm-up
for _ in range(runs):
    order = list(cases.items())
    rng.shuffle(order)
    for name, f in order:
        # A Go binary or two between every pair of our calls, as on a node.
        for nn in rng.sample(list(noise), rng.randint(1, 2)):
            t, r, fl, c = noise[nn]()
            ms[nn].append(t); flt[nn].append(fl); cpu[nn].append(c); rss[nn] = max(rss[nn], r)
        t, r, fl, c = f()
        ms[name].append(t); flt[name].append(fl); cpu[name].append(c); rss[name] = max(rss[name], r)

def q(s):
    return statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0]] * 3

def boot_ci(d, n=2000):
    """95 % percentile-bootstrap interval of the median of the paired differences D."""
    meds = sorted(statistics.median(rng.choices(d, k=len(d))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]

print(f"shim_interleaved: {runs} rounds, random order each round (seed {seed}), 1-2 runc calls before "
      "every case; ms; RSS = peak of the child in MiB; faults = minor page faults (median); cpu = the\n"
      "child's CPU ms (user + system, median) and its paired difference: the work, without the waits")
print(f"{'case':24} {'median':>8} {'p25-p75':>15} {'faults':>7} {'RSS':>6} {'cpu':>6} {'cpu diff':>8}"
      f"   {'paired diff vs ref, median [95% CI]':>40}")
detail = {"seed": seed, "cases": {}}
for name in ms:
    s = ms[name]
    qq = q(s)
    line = (f"{name:24} {statistics.median(s):8.3f} {qq[0]:7.3f}-{qq[2]:<7.3f} {statistics.median(flt[name]):7.0f} "
            f"{rss[name]/1024:6.2f} {statistics.median(cpu[name]):6.3f}")
    dd = None
    if name in ref:
        d = [a - b for a, b in zip(s, ms[ref[name]])]
        dc = statistics.median(a - b for a, b in zip(cpu[name], cpu[ref[name]]))
        lo, hi = boot_ci(d)
        dd = {"median_ms": statistics.median(d), "ci95_ms": [lo, hi], "vs": ref[name], "cpu_median_ms": dc}
        line += f" {dc:+8.3f}   {statistics.median(d):+8.3f} [{lo:+.3f}, {hi:+.3f}] vs {ref[name]}"
    print(line)
    detail["cases"][name] = {"what": what[name], "median_ms": statistics.median(s), "p25_ms": qq[0], "p75_ms": qq[2],
                             "minor_faults_median": statistics.median(flt[name]), "peak_rss_kib": rss[name],
                             "cpu_ms_median": statistics.median(cpu[name]),
                             "paired_diff": dd}

rows = []
for name, tgt in (("passthrough", bl.target(0.5, 2560, "issue 20: passthrough under 0.5 ms, RSS under 2.5 MiB")),
                  ("create 1", bl.target(None, 2560, "issue 20: RSS under 2.5 MiB")),
                  ("create 8", bl.target(1.0, 2560, "issue 20: create (8 cards) under 1 ms, RSS under 2.5 MiB")),
                  ("life shim", bl.target(4.0, None, "issue 20: lifecycle within 4 ms of plain runc"))):
    r_rss = None if name.startswith("life") else rss[name]  # the lifecycle's is runc's (max)
    dd = detail["cases"][name]["paired_diff"]
    rows.append(bl.row("shim_interleaved", what[name], runs, bl.side(what[name], ms[name], r_rss),
                       bl.side(what[ref[name]], ms[ref[name]], None if name.startswith("life") else rss[ref[name]]), tgt,
                       f"paired per-round difference {dd['median_ms']:+.3f} ms, 95% CI "
                       f"[{dd['ci95_ms'][0]:+.3f}, {dd['ci95_ms'][1]:+.3f}]"))
bl.write(out_json, "shim_interleaved", runs, rows, detail)
PY
