#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The one `make bench` table: reads every bench/<name>.sh report (<out>/<name>.json, rows in
the schema of bench/benchlib.py) and prints one line per case:
  bench | case | ours median | p25-p75 | reference | ref median | added ms | ratio | RSS MiB | target
then writes <out>/report.json: every row, each script's details, and the machine it ran on.

usage: report.py OUT_DIR --build-dir D --start EPOCH --load-before "1 5 15" [--times FILE]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import time


def first_line(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return None


def machine(args, top):
    cpu = None
    with open("/proc/cpuinfo") as fh:
        for ln in fh:
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    with open("/proc/loadavg") as fh:
        load_after = " ".join(fh.read().split()[:3])
    dirty = subprocess.run(["git", "-C", top, "diff", "--quiet", "HEAD"]).returncode != 0
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
        "load_before": args.load_before, "load_after": load_after,
        "git_commit": first_line(["git", "-C", top, "rev-parse", "HEAD"]), "git_dirty": dirty,
        "versions": {
            "enflame-container-runtime": first_line([os.path.join(args.build_dir, "runtime-shim/enflame-container-runtime"), "--version"]),
            "runc": first_line(["runc", "--version"]), "podman": first_line(["podman", "--version"]),
            "conmon": first_line(["conmon", "--version"]), "c++": first_line(["c++", "--version"]),
            "python": platform.python_version(),
        },
    }


def ms(v, width=8, prec=2):
    return f"{v:{width}.{prec}f}" if v is not None else f"{'n/a':>{width}}"


def verdict(r):
    t = r.get("target")
    if not t:
        return ""
    out = []
    if t.get("added_ms_max") is not None and r["added_ms"] is not None:
        out.append(f"+<={t['added_ms_max']:g}ms {'ok' if r['added_ms'] <= t['added_ms_max'] else 'OVER'}")
    rss = r["ours"].get("peak_rss_kib")
    if t.get("peak_rss_kib_max") is not None and rss is not None:
        out.append(f"<={t['peak_rss_kib_max'] / 1024:g}MiB {'ok' if rss <= t['peak_rss_kib_max'] else 'OVER'}")
    return " ".join(out)


def cut(s, n):
    return s if len(s) <= n else s[:n - 1] + "~"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--start", type=float, required=True)
    ap.add_argument("--load-before", default="")
    ap.add_argument("--times", default=None, help="lines '<script> <seconds> <exit code>' from run.sh")
    args = ap.parse_args()
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    scripts = {}
    if args.times and os.path.exists(args.times):
        with open(args.times) as fh:
            for ln in fh:
                name, secs, rc = ln.split()
                scripts[name] = {"seconds": float(secs), "exit_code": int(rc)}
    rows, benches = [], {}
    for name in scripts or sorted(f[:-5] for f in os.listdir(args.out) if f.endswith(".json") and f != "report.json"):
        path = os.path.join(args.out, name + ".json")
        if not os.path.exists(path):
            benches[name] = {"error": "no report (failed or skipped; see its .txt)"}
            continue
        with open(path) as fh:
            rep = json.load(fh)
        rows += rep["rows"]
        benches[name] = {"runs": rep.get("runs"), "detail": rep.get("detail"), **scripts.get(name, {})}

    hdr = (f"{'bench':<12} {'case':<46} {'ours ms':>8} {'p25-p75':>15}  {'reference':<34} {'ref ms':>8} "
           f"{'added ms':>9} {'ratio':>6} {'RSS MiB':>7}  target")
    print(hdr)
    print("-" * len(hdr))
    prev = None
    for r in rows:
        if prev is not None and r["bench"] != prev:
            print()
        prev = r["bench"]
        o, ref = r["ours"], r["reference"]
        rss = o.get("peak_rss_kib")
        spread = f"{o['p25_ms']:.2f}-{o['p75_ms']:.2f}"
        dash = "-"
        ref_what = cut(ref["what"], 34) if ref else dash
        ref_ms = ms(ref["median_ms"]) if ref else f"{dash:>8}"
        added = f"{r['added_ms']:+9.3f}" if r["added_ms"] is not None else f"{dash:>9}"
        ratio = ms(r["ratio"], 6) if r["ratio"] is not None else f"{dash:>6}"
        rss_s = f"{rss / 1024:7.2f}" if rss is not None else f"{'n/a':>7}"
        print(f"{r['bench']:<12} {cut(r['case'], 46):<46} {ms(o['median_ms'])} {spread:>15}  "
              f"{ref_what:<34} {ref_ms} {added} {ratio} {rss_s}  {verdict(r)}")

    info = machine(args, top)
    wall = time.time() - args.start
    report = {"machine": info, "wall_seconds": round(wall, 1), "rows": rows, "benches": benches}
    with open(os.path.join(args.out, "report.json"), "w") as fh:
        json.dump(report, fh, indent=1)
        fh.write("\n")
    failed = [n for n, s in scripts.items() if s["exit_code"] != 0]
    print()
    runs = ", ".join(f"{n} {b['runs']}" for n, b in benches.items() if "runs" in b)
    print(f"medians over alternating runs (runs: {runs}); spread = p25-p75 of ours;")
    print("added = ours - reference median; ratio = ours / reference; RSS = peak RSS of ours' own process")
    print(f"machine: {info['nproc']} cpus, kernel {info['kernel']}, load {info['load_before']} -> {info['load_after']}, "
          f"commit {(info['git_commit'] or '?')[:12]}{' (dirty)' if info['git_dirty'] else ''}")
    if failed:
        print(f"FAILED: {' '.join(failed)} (see {args.out}/<name>.txt)")
    print(f"report: {os.path.join(args.out, 'report.json')}; per-script tables: {args.out}/<name>.txt")
    print(f"total wall time: {int(wall // 60)}m{wall % 60:04.1f}s")


if __name__ == "__main__":
    main()
