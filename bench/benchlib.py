# SPDX-License-Identifier: Apache-2.0
"""What every bench script shares: timing a command through shim_time, quartiles, and the one
row schema that bench/report.py turns into the `make bench` table.

A row (one per case; every script writes {"bench": NAME, "runs": N, "rows": [...], "detail": ...}):
  {"bench": "shim", "case": "create, 8 cards, cdi mode", "runs": 60,
   "ours":      {"what": "<command>", "median_ms", "p25_ms", "p75_ms", "peak_rss_kib"},
   "reference": {"what": "<command>", "median_ms", "p25_ms", "p75_ms", "peak_rss_kib"} or null,
   "added_ms": ours - reference median (null without a reference),
   "ratio":    ours / reference median (null without a reference),
   "target":   {"added_ms_max": x, "peak_rss_kib_max": y, "source": "docs/budgets.md ..."} or null,
   "note": "..." or absent}
peak_rss_kib is null where it cannot be measured honestly (the table prints n/a).
"""
import json
import os
import statistics
import subprocess
import sys


def side(what, samples, rss_kib=None):
    """One measured command: median and quartiles (inclusive method) of SAMPLES in ms."""
    s = sorted(samples)
    q = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else [s[0]] * 3
    return {"what": what, "median_ms": round(statistics.median(s), 4), "p25_ms": round(q[0], 4),
            "p75_ms": round(q[2], 4), "peak_rss_kib": rss_kib}


def side_from(what, median, p25, p75, rss_kib=None):
    """A side whose statistics were computed elsewhere (discovery_bench)."""
    return {"what": what, "median_ms": round(median, 4), "p25_ms": round(p25, 4), "p75_ms": round(p75, 4),
            "peak_rss_kib": rss_kib}


def target(added_ms_max=None, peak_rss_kib_max=None, source="docs/budgets.md"):
    return {"added_ms_max": added_ms_max, "peak_rss_kib_max": peak_rss_kib_max, "source": source}


def row(bench, case, runs, ours, reference=None, tgt=None, note=None):
    r = {"bench": bench, "case": case, "runs": runs, "ours": ours, "reference": reference,
         "added_ms": None, "ratio": None, "target": tgt}
    if reference is not None:
        r["added_ms"] = round(ours["median_ms"] - reference["median_ms"], 4)
        r["ratio"] = round(ours["median_ms"] / reference["median_ms"], 4) if reference["median_ms"] > 0 else None
    if note:
        r["note"] = note
    return r


def write(path, bench, runs, rows, detail=None):
    if not path:
        return
    with open(path, "w") as fh:
        json.dump({"bench": bench, "runs": runs, "rows": rows, "detail": detail}, fh, indent=1)
        fh.write("\n")


class Timer:
    """Runs commands through shim_time (fork + execve + wait4): wall ms and the child's own
    peak RSS in KiB, without Python's own start-up or spawn cost in the number."""

    def __init__(self, shim_time, env=None):
        self.shim_time = shim_time
        self.env = env if env is not None else {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

    def run(self, argv, env=None, out=None, cwd=None):
        cmd = [self.shim_time] + (["-o", out] if out else []) + (["-C", cwd] if cwd else []) + ["--"] + argv
        r = subprocess.run(cmd, env=env if env is not None else self.env, capture_output=True, text=True, check=True)
        ns, rss, rc = (int(x) for x in r.stdout.split())
        if rc != 0:
            detail = ""
            if out and os.path.exists(out):
                with open(out) as fh:
                    detail = ": " + fh.read().strip()[-2000:]
            sys.exit(f"bench: {' '.join(argv)} exited {rc}{detail}")
        return ns / 1e6, rss


def alternate(timer, cmds, env, runs):
    """Times every command of the dict CMDS (name -> argv) RUNS times in one loop, every other
    round in reverse order so no command always runs right after another, after one untimed
    warm-up run each. Returns ({name: [ms, ...]}, {name: peak RSS KiB})."""
    for c in cmds.values():
        timer.run(c, env)
    t = {k: [] for k in cmds}
    rss = {k: 0 for k in cmds}
    for r in range(runs):
        for k, c in (list(cmds.items()) if r % 2 == 0 else list(cmds.items())[::-1]):
            ms, kib = timer.run(c, env)
            t[k].append(ms)
            rss[k] = max(rss[k], kib)
    return t, rss


def read_results(path):
    """Result lines a wrapped process appended (shim_time -r): [(ms, rss_kib, rc), ...]."""
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [(int(a) / 1e6, int(b), int(c)) for a, b, c in (ln.split() for ln in fh if ln.strip())]
