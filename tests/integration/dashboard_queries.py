#!/usr/bin/env python3
"""dashboard_queries.py PROMETHEUS_URL DASHBOARD.json...: runs every variable's and every panel's
query of Grafana dashboards against a real Prometheus' HTTP API, as Grafana would: variables in
their order (`label_values(M, L)` through /api/v1/label/L/values?match[]=M, the first value
chosen and substituted into later queries), `$__rate_interval` as 1m, range targets through
/api/v1/query_range over the last 20 s, instant ones through /api/v1/query. Prints one line per
query; exit 1 when any query errs or returns no data (monitoring.bats)."""
import json
import re
import sys
import time
import urllib.parse
import urllib.request

PROM = sys.argv[1].rstrip("/")


def api(path, **params):
    url = PROM + path + "?" + urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        body = json.load(e)
    if body.get("status") != "success":
        raise RuntimeError(f"{body.get('errorType')}: {body.get('error')}")
    return body["data"]


def substitute(expr, values):
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "15s")
    # longest names first: $pod must not eat $pod_name's prefix
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    return expr


def variable_values(query):
    m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", query)
    if m:
        return api(f"/api/v1/label/{m.group(2)}/values", **{"match[]": m.group(1)})
    m = re.fullmatch(r"\s*label_values\((\w+)\)\s*", query)
    if m:
        return api(f"/api/v1/label/{m.group(1)}/values")
    raise RuntimeError(f"unknown variable query {query!r}")


failures = 0
for path in sys.argv[2:]:
    board = json.load(open(path))
    name = board["uid"]
    values = {}
    for v in board["templating"]["list"]:
        if v["type"] == "datasource":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        q = substitute(q, values)
        try:
            got = variable_values(q)
        except Exception as e:  # noqa: BLE001 - reported, counted
            got, err = [], str(e)
        else:
            err = "" if got else "no values"
        if err:
            failures += 1
            print(f"FAIL {name} variable {v['name']}: {q}: {err}")
            continue
        values[v["name"]] = got[0]
        print(f"ok   {name} variable {v['name']} = {got[0]!r} (of {len(got)}): {q}")
    now = time.time()
    for p in board["panels"]:
        for t in p.get("targets", []):
            q = substitute(t["expr"], values)
            try:
                if t.get("range"):
                    r = api("/api/v1/query_range", query=q, start=now - 20, end=now, step=2)
                else:
                    r = api("/api/v1/query", query=q, time=now)
                n = len(r["result"]) if isinstance(r["result"], list) else 1
                err = "" if n else "no data"
            except Exception as e:  # noqa: BLE001
                n, err = 0, str(e)
            if err:
                failures += 1
                print(f"FAIL {name} panel {p['title']!r} {t['refId']}: {q}: {err}")
            else:
                print(f"ok   {name} panel {p['title']!r} {t['refId']}: {n} series")
sys.exit(1 if failures else 0)
