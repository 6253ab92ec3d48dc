# SPDX-License-Identifier: Apache-2.0
"""bench/epp.sh's rounds: the same workloads through each routing set, interleaved.

usage: epp_bench.py TOPOLOGY.json ROUNDS [BENCH_JSON]

TOPOLOGY names the sets: {"sets": [{"name", "gateway": PORT, "epp_pid", "servers": [{"name",
"port"}, ...]}, ...], "llama_start_ms": [...], "llama_rss_kib": [...]}. Each set is its own
gateway, EPP and llama-servers, so no set finds another's prompts in a server's cache.
Every round runs each phase on every set, the order of the sets rotated from round to round:
  prefix  shared-prefix conversations (epp_workload.conversations): cached / ideal tokens
  skew    one server of the set kept busy with long generations sent to it directly; short
          independent prompts through the gateway: latency, and how many went to the busy one
Prints the table and writes the common rows (bench/benchlib.py) to BENCH_JSON.
"""
import json
import random
import statistics
import sys
import time
import urllib.request

import benchlib as bl
import epp_workload as wl

GROUPS, TURNS, PREFIX_CHARS, PREFIX_MAX_TOKENS = 8, 4, 1200, 8
SKEW_REQUESTS, SKEW_CONCURRENCY, SKEW_CHARS, SKEW_MAX_TOKENS, BUSY_THREADS = 48, 4, 300, 16, 3


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for ln in r.read().decode().splitlines():
            if ln.startswith(name + " "):
                return float(ln.split()[1])
    return None


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as fh:
        for ln in fh:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return None


def prefix_phase(s, rnd):
    convs = wl.conversations(1000 * rnd, GROUPS, TURNS, PREFIX_CHARS)
    res = wl.run_conversations(wl.Client("127.0.0.1", s["gateway"]), convs, PREFIX_MAX_TOKENS, rnd)
    ok = [r for r in res if r["status"] == 200]
    return {"errors": len(res) - len(ok), "cached": sum(r["cached_tokens"] for r in ok),
            "ideal": sum(r["ideal"] for r in ok), "ms": [r["ms"] for r in ok]}


def skew_phase(s, rnd):
    busy_srv = s["servers"][0]
    busy = wl.Busy("127.0.0.1", busy_srv["port"], BUSY_THREADS)
    busy.start()
    # both slots generating and one request deferred, for long enough that the EPP scraped it
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (metric(busy_srv["port"], "llamacpp:requests_deferred") or 0) < 1:
        time.sleep(0.05)
    time.sleep(0.3)
    rng = random.Random(rnd)
    prompts = [f"[skew {rnd}.{i}] " + wl.words(rng, SKEW_CHARS) for i in range(SKEW_REQUESTS)]
    res = wl.run_closed_loop(wl.Client("127.0.0.1", s["gateway"]), prompts, SKEW_CONCURRENCY, SKEW_MAX_TOKENS)
    busy.stop()
    ok = [r for r in res if r["status"] == 200]
    return {"errors": len(res) - len(ok), "ms": [r["ms"] for r in ok],
            "to_busy": sum(1 for r in ok if r["model"] == busy_srv["name"])}


def main():
    topo = json.load(open(sys.argv[1]))
    rounds = int(sys.argv[2])
    out_json = sys.argv[3] if len(sys.argv) > 3 else ""
    sets = topo["sets"]
    acc = {s["name"]: {"prefix": [], "skew": []} for s in sets}
    load_before = open("/proc/loadavg").read().split()[:3]
    for rnd in range(rounds):
        order = sets[rnd % len(sets):] + sets[:rnd % len(sets)]
        for s in order:
            acc[s["name"]]["prefix"].append(prefix_phase(s, rnd))
        for s in order[::-1]:
            acc[s["name"]]["skew"].append(skew_phase(s, rnd))
        print(f"round {rnd + 1}/{rounds} done, load {' '.join(open('/proc/loadavg').read().split()[:3])}", flush=True)
    load_after = open("/proc/loadavg").read().split()[:3]

    summary = {}
    for s in sets:
        a = acc[s["name"]]
        ratios = [p["cached"] / p["ideal"] for p in a["prefix"] if p["ideal"]]
        pms = [x for p in a["prefix"] for x in p["ms"]]
        sms = [x for k in a["skew"] for x in k["ms"]]
        if not ratios or not pms or not sms:
            sys.exit(f"epp bench: set {s['name']}: no request answered in a phase (is its EPP up?)")
        summary[s["name"]] = {
            "hit_ratio_median": round(statistics.median(ratios), 3), "hit_ratios": [round(r, 3) for r in ratios],
            "prefix_p50_ms": round(pct(pms, 50), 1), "prefix_p99_ms": round(pct(pms, 99), 1),
            "skew_p50_ms": round(pct(sms, 50), 1), "skew_p99_ms": round(pct(sms, 99), 1),
            "skew_to_busy": sum(k["to_busy"] for k in a["skew"]), "skew_requests": len(sms),
            "errors": sum(p["errors"] for p in a["prefix"]) + sum(k["errors"] for k in a["skew"]),
            "epp_rss_kib": rss_kib(s["epp_pid"]), "prefix_ms": pms, "skew_ms": sms,
        }
    n = len(sets[0]["servers"])
    print(f"\n{rounds} rounds, sets interleaved; {n} llama-servers per set ({topo.get('llama_args', '')})")
    print(f"prefix: {GROUPS} conversations x {TURNS} turns, {PREFIX_CHARS}-token system prompts, max_tokens {PREFIX_MAX_TOKENS}")
    print(f"skew: {SKEW_REQUESTS} prompts of {SKEW_CHARS} tokens, {SKEW_CONCURRENCY} at a time, max_tokens {SKEW_MAX_TOKENS};"
          f" server 0 kept busy by {BUSY_THREADS} direct 1500-token generations")
    hdr = f"{'set':<24} {'cached/ideal':>12} {'prefix p50':>10} {'p99':>8} {'skew p50':>9} {'p99':>8} {'to busy':>9} {'errors':>6} {'EPP RSS MiB':>11}"
    print(hdr)
    for name, v in summary.items():
        print(f"{name:<24} {v['hit_ratio_median']:>12.3f} {v['prefix_p50_ms']:>10.1f} {v['prefix_p99_ms']:>8.1f}"
              f" {v['skew_p50_ms']:>9.1f} {v['skew_p99_ms']:>8.1f} {v['skew_to_busy']:>4}/{v['skew_requests']:<4}"
              f" {v['errors']:>6} {(v['epp_rss_kib'] or 0) / 1024:>11.1f}")
    print(f"ideal = cacheable prompt tokens given every prompt sent before (an unbounded cache); 1/{n} = {1 / n:.3f}")
    st = topo.get("llama_start_ms", [])
    if st:
        print(f"llama-server start to /health: median {statistics.median(st):.0f} ms over {len(st)};"
              f" RSS after load median {statistics.median(topo['llama_rss_kib']) / 1024:.1f} MiB")
    print(f"load {' '.join(load_before)} -> {' '.join(load_after)}")

    rows = []
    ref_names = [s["name"] for s in sets[1:]]
    ours = sets[0]["name"]
    o = summary[ours]
    for ref in ref_names:
        r = summary[ref]
        rows.append(bl.row("epp", f"shared-prefix turns: {ours} vs {ref}", len(o["prefix_ms"]),
                           bl.side(ours, o["prefix_ms"], o["epp_rss_kib"]), bl.side(ref, r["prefix_ms"]),
                           note=f"cached/ideal {o['hit_ratio_median']} vs {r['hit_ratio_median']}"))
    for ref in ref_names:
        r = summary[ref]
        rows.append(bl.row("epp", f"one server busy: {ours} vs {ref}", len(o["skew_ms"]),
                           bl.side(ours, o["skew_ms"], o["epp_rss_kib"]), bl.side(ref, r["skew_ms"]),
                           note=f"p99 {o['skew_p99_ms']} vs {r['skew_p99_ms']} ms"))
    detail = {"summary": {k: {x: y for x, y in v.items() if x not in ("prefix_ms", "skew_ms")}
                          for k, v in summary.items()},
              "load_before": load_before, "load_after": load_after, "llama_start_ms": st,
              "llama_args": topo.get("llama_args"),
              "llama_rss_kib": topo.get("llama_rss_kib", [])}
    bl.write(out_json, "epp", rounds, rows, detail)
    return summary


if __name__ == "__main__":
    main()
