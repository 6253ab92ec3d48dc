#!/usr/bin/env bash
# enflame-container-runtime-hook: what the legacy prestart hook adds to a container start.
# `runc run` of a busybox bundle whose process is `true`, median of $RUNS (default 100) starts
# per variant, all variants alternating in one loop so they see the same machine load:
#   plain            no hook (the reference)
#   /bin/true hook   runc's own cost of running a prestart hook at all
#   N cards          the hook with ENFLAME_VISIBLE_DEVICES=0 (1 card) or all (8 cards), no spec
#                    on disk: libefml in process, device nodes, efsmi + libefml + runtime
#                    library mounts, devices.allow, sandboxed host ldconfig (the simulated
#                    runtime libraries share one soname, so no cache ever resolves them all)
#   N cards, efsmi   a host without libefml and libraries (only nodes + efsmi): efsmi spawned
#                    for discovery, no ldcache update
#   1 card, spec     a host with libefml only (no runtime libraries), a fresh CDI spec on disk,
#                    and a rootfs whose ld.so.cache already resolves libefml: no discovery, no
#                    ldconfig (issue 15 part 3's target: under 3 ms added)
#   1 card, libefml  the same host and rootfs, no spec: discovery with libefml in process
# BASELINE_HOOK=/path/to/an/older/enflame-container-runtime-hook adds the three single-card
# cases (efsmi host, spec host, libefml host) run by that hook, in the same rounds.
# Rows (common schema, bench/benchlib.py, to $BENCH_JSON): each hook variant against the
# /bin/true hook (so only our hook's work is "added"), and the /bin/true hook against plain.
# Starts are timed with shim_time around `runc run` (private runc root). Peak RSS of the hook
# itself: runc, not we, starts it, so after the timed loop every variant runs 9 more times,
# untimed, with the hook wrapped as `shim_time -k -r FILE -- hook prestart` (stdin kept for
# the OCI state; shim_time appends the hook's own wall time and peak RSS to FILE).
# Needs root, runc and the build's hook and simulated host builder.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the (release) build folder}
RUNS=${RUNS:-100}
if [ "$(id -u)" -ne 0 ]; then echo "hook: skipped (needs root)"; exit 0; fi
command -v runc >/dev/null || { echo "hook: skipped (no runc)"; exit 0; }
hook=$BUILD_DIR/hooks/enflame-container-runtime-hook
sim=$BUILD_DIR/sim/enflame-sim-host
for b in "$hook" "$sim"; do [ -x "$b" ] || { echo "hook: no $b (build it first)" >&2; exit 1; }; done
tmp=$(mktemp -d /tmp/ectk-bench-hook.XXXXXX)
trap 'runc_cleanup "$tmp/rr"; rm -rf "$tmp"' EXIT
build_shim_time "$tmp"

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
# libefml and efsmi, no runtime libraries: one library file for the ldcache to resolve.
python3 - "$tmp/full.yaml" "$tmp/util.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(s.split("runtime_libraries:")[0] + "runtime_libraries: []\n")
PY
"$sim" build --desc "$tmp/util.yaml" --root "$tmp/util" >/dev/null
mkdir -p "$tmp/no-cdi" "$tmp/cdi"
for h in full nolib util; do
  printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n[enflame-container-runtime]\nspec-dirs = ["%s"]\n' \
    "$tmp/$h" "$tmp/$h" "$tmp/no-cdi" > "$tmp/$h.toml"
done
sed "s|$tmp/no-cdi|$tmp/cdi|" "$tmp/util.toml" > "$tmp/util-spec.toml"
ENFLAME_CTK_CONFIG=$tmp/util-spec.toml "$BUILD_DIR/ctk/enflame-ctk" cdi generate --output "$tmp/cdi/enflame.com-gpu.yaml"

mkdir -p "$tmp/rootfs"/{bin,proc,sys,dev,etc,tmp}
cp /bin/busybox "$tmp/rootfs/bin/"; ln -s busybox "$tmp/rootfs/bin/true"
# A rootfs whose ld.so.cache already resolves libefml (as an image built with it would): the
# hook runs once on a copy, and its ldconfig leaves the cache there.
cp -a "$tmp/rootfs" "$tmp/rootfs-cached"
python3 - "$tmp" "$hook" "${BASELINE_HOOK:-}" <<'PY'
import json, os, subprocess, sys
tmp, our_hook, base_hook = sys.argv[1], sys.argv[2], sys.argv[3]
def bundle(name, env=None, host=None, wrap=None, rootfs="rootfs", hook=our_hook):
    """WRAP: a file name; the hook then runs under shim_time, which appends its RSS there."""
    d = f"{tmp}/{name}"
    os.makedirs(d)
    subprocess.run(["runc", "spec"], cwd=d, check=True)
    c = json.load(open(f"{d}/config.json"))
    c["root"] = {"path": f"{tmp}/{rootfs}", "readonly": False}
    c["process"]["terminal"] = False
    c["process"]["args"] = ["/bin/true"]
    if env:
        c["process"]["env"].append(env)
        h = {"path": hook, "args": ["enflame-container-runtime-hook", "prestart"],
             "env": [f"ENFLAME_CTK_CONFIG={tmp}/{host}.toml"]}
        if wrap:
            h["path"], h["args"] = f"{tmp}/shim_time", ["shim_time", "-k", "-r", f"{tmp}/{wrap}", "--", hook, "prestart"]
        c["hooks"] = {"prestart": [h]}
    json.dump(c, open(f"{d}/config.json", "w"))
bundle("plain")
# runc's own cost of running any prestart hook: /bin/true as the hook
bundle("true-hook")
c = json.load(open(f"{tmp}/true-hook/config.json"))
c["hooks"] = {"prestart": [{"path": "/bin/true", "args": ["true"]}]}
json.dump(c, open(f"{tmp}/true-hook/config.json", "w"))
os.makedirs(f"{tmp}/true-hook-rss")
c["hooks"]["prestart"][0] = {"path": f"{tmp}/shim_time", "args": ["shim_time", "-k", "-r", f"{tmp}/true-hook.rss", "--", "/bin/true"]}
json.dump(c, open(f"{tmp}/true-hook-rss/config.json", "w"))
for cards, sel in (("1", "0"), ("8", "all")):
    for host in ("full", "nolib"):
        bundle(f"{cards}-{host}", f"ENFLAME_VISIBLE_DEVICES={sel}", host)
        bundle(f"{cards}-{host}-rss", f"ENFLAME_VISIBLE_DEVICES={sel}", host, wrap=f"{cards}-{host}.rss")
for host in ("util", "util-spec"):
    bundle(f"1-{host}", "ENFLAME_VISIBLE_DEVICES=0", host, rootfs="rootfs-cached")
    bundle(f"1-{host}-rss", "ENFLAME_VISIBLE_DEVICES=0", host, wrap=f"1-{host}.rss", rootfs="rootfs-cached")
    if base_hook:  # BASELINE_HOOK: an older hook on the same hosts, bundles and rootfs
        bundle(f"base-1-{host}", "ENFLAME_VISIBLE_DEVICES=0", host, rootfs="rootfs-base", hook=base_hook)
        bundle(f"base-1-{host}-rss", "ENFLAME_VISIBLE_DEVICES=0", host, wrap=f"base-1-{host}.rss",
               rootfs="rootfs-base", hook=base_hook)
if base_hook:
    bundle("base-1-nolib", "ENFLAME_VISIBLE_DEVICES=0", "nolib", hook=base_hook)
    bundle("base-1-nolib-rss", "ENFLAME_VISIBLE_DEVICES=0", "nolib", wrap="base-1-nolib.rss", hook=base_hook)
PY
# Seed rootfs-cached's ld.so.cache, then check that the hook now skips ldconfig there and
# takes the spec (its debug log says so): otherwise the rows below would not measure that.
runc --root "$tmp/rr" run --bundle "$tmp/1-util" "bench-hook-seed-$$" >/dev/null
for v in util util-spec; do
  printf 'log-file = "%s"\nlog-level = "debug"\n' "$tmp/$v.log" >> "$tmp/$v.toml"
  runc --root "$tmp/rr" run --bundle "$tmp/1-$v" "bench-hook-check-$v-$$" >/dev/null
  grep -q "ldconfig not run" "$tmp/$v.log" || { echo "hook bench: the hook ran ldconfig for 1-$v:" >&2; cat "$tmp/$v.log" >&2; exit 1; }
  sed -i '/^log-file = /d; /^log-level = /d' "$tmp/$v.toml"
done
# The baseline's own copy, so whatever it writes there never changes what ours sees.
[ -z "${BASELINE_HOOK:-}" ] || cp -a "$tmp/rootfs-cached" "$tmp/rootfs-base"
grep -q "edits from the CDI spec on disk" "$tmp/util-spec.log" || { echo "hook bench: the spec was not used" >&2; exit 1; }
grep -q "edits from discovery (libefml)" "$tmp/util.log" || { echo "hook bench: libefml did not answer" >&2; exit 1; }

python3 - "$tmp" "$RUNS" "${BENCH_JSON:-}" "${BASELINE_HOOK:-}" <<'PY'
import os, statistics, subprocess, sys
import benchlib as bl
tmp, runs, out_json, base_hook = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
variants = [("plain", "plain"), ("/bin/true hook", "true-hook"), ("1 card", "1-full"), ("8 cards", "8-full"),
            ("1 card, efsmi", "1-nolib"), ("8 cards, efsmi", "8-nolib"), ("1 card, spec", "1-util-spec"),
            ("1 card, libefml", "1-util")]
if base_hook:  # the same three single-card cases with the older hook, in the same rounds
    variants += [("base: efsmi", "base-1-nolib"), ("base: spec", "base-1-util-spec"), ("base: libefml", "base-1-util")]
timer = bl.Timer(f"{tmp}/shim_time")
rr = f"{tmp}/rr"
counter = [0]
def start(bundle):
    counter[0] += 1
    cid = f"bench-hook-{os.getpid()}-{counter[0]}"
    ms, _ = timer.run(["/usr/sbin/runc", "--root", rr, "run", "--bundle", f"{tmp}/{bundle}", cid], out=f"{tmp}/run.out")
    return ms
for _, b in variants:
    start(b)  # warm-up
times = {b: [] for _, b in variants}
for i in range(runs):
    # every other round in reverse, so no variant always runs right after another
    for _, b in (variants if i % 2 == 0 else variants[::-1]):
        times[b].append(start(b))
# The hook's own peak RSS and wall time: 9 untimed starts per variant with the hook under shim_time.
hook_rss, hook_ms = {}, {}
for _, b in variants[1:]:
    for _ in range(9):
        start(f"{b}-rss")
    res = bl.read_results(f"{tmp}/{b}.rss")
    if len(res) != 9 or any(rc != 0 for _, _, rc in res):
        sys.exit(f"hook bench: the wrapped hook of {b} reported {res}")
    hook_rss[b] = max(kib for _, kib, _ in res)
    hook_ms[b] = statistics.median(ms for ms, _, _ in res)
print(f"runc run of `true`, {runs} starts per variant, alternating; milliseconds; RSS of the hook in MiB")
print(f"{'variant':<16} {'median':>8} {'p25-p75':>15} {'ratio':>7} {'added':>8} {'vs true':>8} {'hook RSS':>8} {'hook ms':>8}")
print("  (ratio, added: vs plain; vs true: vs the /bin/true hook; hook ms: the hook process's own wall time,")
print("   median of the 9 wrapped runs, /bin/true's for the /bin/true hook)")
base = statistics.median(times["plain"])
tbase = statistics.median(times["true-hook"])
for name, b in variants:
    s = bl.side(name, times[b])
    print(f"{name:<16} {s['median_ms']:8.2f} {s['p25_ms']:7.2f}-{s['p75_ms']:<7.2f} {s['median_ms'] / base:7.2f} "
          f"{s['median_ms'] - base:+8.2f} {s['median_ms'] - tbase:+8.2f} "
          f"{hook_rss[b] / 1024 if b in hook_rss else float('nan'):8.2f} "
          f"{hook_ms[b] if b in hook_ms else float('nan'):8.2f}")
def sd(b, what):
    return bl.side(what, times[b], hook_rss.get(b))
rows = [bl.row("hook", "runc running a prestart hook at all (/bin/true)", runs,
               sd("true-hook", "runc run + /bin/true hook"), sd("plain", "runc run, no hook"),
               note="runc's cost, not ours; RSS is the /bin/true hook's")]
tref = sd("true-hook", "runc run + /bin/true hook")
cases = {"1-full": "1 card, libefml, ldconfig", "8-full": "8 cards, libefml, ldconfig",
         "1-nolib": "1 card, efsmi, no ldcache update", "8-nolib": "8 cards, efsmi, no ldcache update",
         "1-util-spec": "1 card, spec on disk, ldcache current", "1-util": "1 card, libefml, ldcache current",
         "base-1-nolib": "1 card, efsmi host, BASELINE_HOOK", "base-1-util-spec": "1 card, spec host, BASELINE_HOOK",
         "base-1-util": "1 card, libefml host, BASELINE_HOOK"}
for name, b in variants[2:]:
    case = f"prestart hook, {cases[b]}"
    rows.append(bl.row("hook", case, runs, sd(b, f"runc run + our hook ({name})"), tref,
                       note="RSS is the hook process's own (9 untimed wrapped runs)"))
bl.write(out_json, "hook", runs, rows)
PY
