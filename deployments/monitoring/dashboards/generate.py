#!/usr/bin/env python3
"""Writes the Grafana dashboards of this folder (the JSON files are its output; edit this file,
run it, commit both). `generate.py --check` exits 1 when a JSON file differs from what it would
write. Every dashboard takes its Prometheus from the `datasource` variable, so it imports into
any Grafana; tests/integration/monitoring.bats runs every panel's and variable's query against a
real Prometheus scraping the exporter and node exporter, and the EPP's board against one
scraping a real enflame-epp.

Card series come once per card and holder (enflame-gcu-exporter), so per-card panels take
`max by (host, uuid)` before summing or averaging over cards."""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
DS = {"type": "prometheus", "uid": "${datasource}"}
EXPORTER_JOB = 'job=~".*enflame-gcu-exporter.*"'


def datasource_var():
    return {"name": "datasource", "label": "Prometheus", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0, "refresh": 1}


def query_var(name, label, query, multi=True):
    v = {"name": name, "label": label, "type": "query", "datasource": DS,
         "query": {"query": query, "refId": name}, "definition": query, "refresh": 2,
         "sort": 1, "multi": multi, "includeAll": multi, "current": {}, "hide": 0}
    if multi:
        v["allValue"] = ".*"
    return v


class Board:
    def __init__(self, uid, title, description, variables):
        self.uid, self.title, self.description = uid, title, description
        self.variables = variables
        self.panels = []
        self.x = self.y = 0
        self.row_h = 0

    def panel(self, kind, title, targets, unit=None, w=12, h=8, description="", **extra):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + self.row_h
            self.row_h = 0
        p = {"id": len(self.panels) + 1, "type": kind, "title": title, "datasource": DS,
             "gridPos": {"x": self.x, "y": self.y, "w": w, "h": h},
             "targets": [dict(t, datasource=DS, refId=chr(ord("A") + i))
                         for i, t in enumerate(targets)],
             "fieldConfig": {"defaults": {}, "overrides": []}, "options": {}}
        if description:
            p["description"] = description
        if unit:
            p["fieldConfig"]["defaults"]["unit"] = unit
        p.update(extra)
        self.panels.append(p)
        self.x += w
        self.row_h = max(self.row_h, h)
        return p

    def row(self, title):
        """A row header across the board; the panels after it are its own."""
        self.x, self.y = 0, self.y + self.row_h
        self.row_h = 0
        self.panels.append({"id": len(self.panels) + 1, "type": "row", "title": title,
                            "collapsed": False, "datasource": DS, "targets": [],
                            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []})
        self.y += 1

    def json(self):
        return {
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": ["enflame", "gcu"], "editable": True, "schemaVersion": 39,
            "time": {"from": "now-6h", "to": "now"}, "refresh": "30s",
            "timezone": "", "version": 1, "graphTooltip": 1,
            "templating": {"list": self.variables},
            "annotations": {"list": []},
            "panels": self.panels,
        }


def ts(expr, legend):
    return {"expr": expr, "legendFormat": legend, "range": True}


def table(expr):
    return {"expr": expr, "format": "table", "instant": True, "legendFormat": "__auto"}


def stat(expr):
    return {"expr": expr, "instant": True, "legendFormat": "__auto"}


def per_card(metric, sel):
    return f"max by (host, uuid) ({metric}{{{sel}}})"


def holders_and_readings(b, select, holders, by, legend, readings):
    """A table of who holds the cards `select(metric)` picks (`holders` is (title, labels): the
    max of enflame_gcu_info by those labels), then a time series per (title, aggregation, metric,
    unit) of `readings`: the metric on those cards aggregated by `by`, one line per `legend`."""
    title, labels = holders
    b.panel("table", title, [table(f"max by ({labels}) ({select('enflame_gcu_info')})")])
    for title, agg, metric, unit in readings:
        b.panel("timeseries", title, [ts(f"{agg} by ({by}) ({select(metric)})", legend)], unit=unit)


def overview():
    n = 'host=~"$node"'
    b = Board("enflame-gcu-overview", "Enflame GCU / Cluster overview",
              "Every GCU node: cards, health, utilisation, memory, power, temperature.",
              [datasource_var(),
               query_var("node", "Node", "label_values(enflame_gcu_count, host)")])
    b.panel("stat", "Cards", [stat(f"sum(enflame_gcu_count{{{n}}})")], w=4, h=4)
    b.panel("stat", "Healthy cards",
            [stat(f"count(min by (host, uuid) (enflame_gcu_health{{{n}}}) == 2) or vector(0)")],
            w=4, h=4)
    b.panel("stat", "Unhealthy cards",
            [stat(f"count(min by (host, uuid) (enflame_gcu_health{{{n}}}) == 1) or vector(0)")],
            w=4, h=4, description="Cards the driver reports unhealthy (enflame_gcu_health 1).")
    b.panel("stat", "Exporters up", [stat(f"sum(up{{{EXPORTER_JOB}}})")], w=4, h=4)
    b.panel("stat", "Cards in use",
            [stat(f'count(count by (host, uuid) (enflame_gcu_info{{{n},pod_name!=""}})) or vector(0)')],
            w=4, h=4, description="Cards some container holds (pod attribution).")
    b.panel("stat", "Power draw", [stat(f"sum({per_card('enflame_gcu_power_consumption', n)})")],
            unit="watt", w=4, h=4)
    b.panel("bargauge", "Cards per node", [table(f"sum by (host) (enflame_gcu_count{{{n}}})")])
    b.panel("table", "Card health", [table(
        f"min by (host, minor_number, uuid, busid, slot, name) (enflame_gcu_health{{{n}}})")],
        description="2 healthy, 1 unhealthy, 0 unknown.")
    b.panel("timeseries", "Utilisation per node (mean over cards)",
            [ts(f"avg by (host) ({per_card('enflame_gcu_usage', n)})", "{{host}}")], unit="percent")
    b.panel("timeseries", "Device memory in use per node",
            [ts(f"sum by (host) ({per_card('enflame_gcu_memory_used_bytes', n)}) / "
                f"sum by (host) ({per_card('enflame_gcu_memory_total_bytes', n)})", "{{host}}")],
            unit="percentunit")
    b.panel("timeseries", "Power per node",
            [ts(f"sum by (host) ({per_card('enflame_gcu_power_consumption', n)})", "{{host}}")],
            unit="watt")
    b.panel("timeseries", "Hottest card per node (ASIC)",
            [ts(f"max by (host) (enflame_gcu_temperatures{{{n}}})", "{{host}}")], unit="celsius")
    return b


def node():
    s = 'host="$node",minor_number=~"$card"'
    b = Board("enflame-gcu-node", "Enflame GCU / Node",
              "One node's cards, and the system under them (node exporter).",
              [datasource_var(),
               query_var("node", "Node", "label_values(enflame_gcu_count, host)", multi=False),
               query_var("card", "Card (minor)",
                         'label_values(enflame_gcu_info{host="$node"}, minor_number)')])
    by = "max by (minor_number)"
    b.panel("table", "Cards", [table(
        f"max by (minor_number, uuid, busid, slot, name, driver_version) (enflame_gcu_info{{{s}}})")],
        w=24, h=6)
    b.panel("timeseries", "Health (2 healthy, 1 unhealthy, 0 unknown)",
            [ts(f"{by} (enflame_gcu_health{{{s}}})", "gcu{{minor_number}}")])
    b.panel("timeseries", "Utilisation", [ts(f"{by} (enflame_gcu_usage{{{s}}})",
                                             "gcu{{minor_number}}")], unit="percent")
    b.panel("timeseries", "Device memory in use",
            [ts(f"{by} (enflame_gcu_memory_used_bytes{{{s}}})", "gcu{{minor_number}}")],
            unit="bytes")
    b.panel("timeseries", "Power and its cap",
            [ts(f"{by} (enflame_gcu_power_consumption{{{s}}})", "gcu{{minor_number}}"),
             ts(f"{by} (enflame_gcu_power_capability{{{s}}})", "gcu{{minor_number}} cap")],
            unit="watt")
    b.panel("timeseries", "Temperatures",
            [ts(f"{by} (enflame_gcu_temperatures{{{s}}})", "gcu{{minor_number}} ASIC"),
             ts(f"{by} (enflame_gcu_memory_temperature{{{s}}})", "gcu{{minor_number}} memory"),
             ts(f"{by} (enflame_gcu_board_temperature{{{s}}})", "gcu{{minor_number}} board")],
            unit="celsius")
    b.panel("timeseries", "Clocks",
            [ts(f"{by} (enflame_gcu_clock{{{s}}})", "gcu{{minor_number}} DTU"),
             ts(f"{by} (enflame_gcu_hbm_clock{{{s}}})", "gcu{{minor_number}} HBM")],
            unit="MHz")
    b.panel("timeseries", "ECC errors (driver's counts)",
            [ts(f"{by} (enflame_gcu_ecc_single_bit_error_total_count{{{s}}})",
                "gcu{{minor_number}} single-bit"),
             ts(f"{by} (enflame_gcu_ecc_double_bit_error_total_count{{{s}}})",
                "gcu{{minor_number}} double-bit")])
    b.panel("timeseries", "PCIe link width (current and max)",
            [ts(f"{by} (enflame_gcu_pcie_link_width{{{s}}})", "gcu{{minor_number}}"),
             ts(f"{by} (enflame_gcu_pcie_max_link_width{{{s}}})", "gcu{{minor_number}} max")])
    # The system layer: node exporter's series of the same node (its nodename is the node's).
    up = 'node_uname_info{nodename="$node"}'
    b.panel("timeseries", "Node CPU busy",
            [ts("1 - avg by (nodename) (rate(node_cpu_seconds_total{mode=\"idle\"}[$__rate_interval])"
                f" * on (instance) group_left (nodename) {up})", "{{nodename}}")],
            unit="percentunit")
    b.panel("timeseries", "Node memory available",
            [ts(f"node_memory_MemAvailable_bytes * on (instance) group_left (nodename) {up}",
                "{{nodename}}")], unit="bytes")
    return b


def pods():
    s = 'pod_namespace=~"$namespace",pod_name=~"$pod"'
    b = Board("enflame-gcu-pods", "Enflame GCU / Pods and namespaces",
              "The cards each pod holds (the exporter's pod attribution from kubelet's "
              "pod-resources API) and what they do. A card shared by several pods counts for each.",
              [datasource_var(),
               query_var("namespace", "Namespace",
                         'label_values(enflame_gcu_info{pod_namespace!=""}, pod_namespace)'),
               query_var("pod", "Pod",
                         'label_values(enflame_gcu_info{pod_namespace=~"$namespace",pod_name!=""}, pod_name)')])
    b.panel("bargauge", "Cards held per namespace",
            [table(f"count by (pod_namespace) (enflame_gcu_info{{{s}}})")])
    holders_and_readings(
        b, lambda metric: f"{metric}{{{s}}}",
        ("Cards held per pod", "pod_namespace, pod_name, container_name, host, minor_number, uuid"),
        "pod_namespace, pod_name", "{{pod_namespace}}/{{pod_name}}",
        [("Utilisation of the pod's cards (mean)", "avg", "enflame_gcu_usage", "percent"),
         ("Device memory in use on the pod's cards", "sum", "enflame_gcu_memory_used_bytes",
          "bytes"),
         ("Power of the pod's cards", "sum", "enflame_gcu_power_consumption", "watt")])
    b.panel("timeseries", "Device memory in use per namespace",
            [ts(f"sum by (pod_namespace) (enflame_gcu_memory_used_bytes{{{s}}})",
                "{{pod_namespace}}")], unit="bytes")
    return b


def drs():
    s = 'host=~"$node",profile=~"$profile"'
    split = f"on (host, uuid) enflame_gcu_drs_instance_info{{{s}}}"
    b = Board("enflame-gcu-drs", "Enflame GCU / DRS instances",
              "DRS (partitioned) cards: their instances by profile, who holds the split cards and "
              "how busy those are. Readings are per card: libefml reports none per instance.",
              [datasource_var(),
               query_var("node", "Node", "label_values(enflame_gcu_drs_instance_info, host)"),
               query_var("profile", "Profile",
                         'label_values(enflame_gcu_drs_instance_info{host=~"$node"}, profile)')])
    b.panel("stat", "Instances", [stat(f"count(enflame_gcu_drs_instance_info{{{s}}})")], w=6, h=4)
    b.panel("stat", "Split cards",
            [stat(f"count(count by (host, uuid) (enflame_gcu_drs_instance_info{{{s}}}))")],
            w=6, h=4)
    b.panel("bargauge", "Instances per profile",
            [table(f"count by (profile) (enflame_gcu_drs_instance_info{{{s}}})")], w=12, h=4)
    b.panel("table", "Instances",
            [table(f"max by (host, minor_number, uuid, profile, instance_id, drs_id) "
                   f"(enflame_gcu_drs_instance_info{{{s}}})")], w=24)
    holders_and_readings(
        b, lambda metric: f"{metric} and {split}",
        ("Holders of split cards", "host, minor_number, pod_namespace, pod_name, container_name"),
        "host, minor_number", "{{host}} gcu{{minor_number}}",
        [("Utilisation of split cards", "max", "enflame_gcu_usage", "percent"),
         ("Device memory in use on split cards", "max", "enflame_gcu_memory_usage", "percentunit")])
    return b


def epp():
    s = 'instance=~"$instance"'
    b = Board("enflame-epp", "Enflame / Inference endpoint picker",
              "enflame-epp, the inference gateway's endpoint picker (deployments/inference): "
              "what it answered, where it sent requests, how long picking took, its queue, and "
              "the model-server and GCU-exporter scrapes that failed.",
              [datasource_var(),
               query_var("instance", "EPP", "label_values(enflame_epp_queue_size, instance)")])
    b.row("Endpoint picker (enflame-epp)")
    b.panel("timeseries", "Requests by status",
            [ts(f"sum by (status) (rate(enflame_epp_requests_total{{{s}}}[$__rate_interval]))",
                "{{status}}")], unit="reqps",
            description="200 routed; 429 shed or queue full; 503 no endpoint or queue timeout; "
                        "4xx a request the EPP could not read.")
    b.panel("timeseries", "Picks per endpoint",
            [ts(f"sum by (endpoint) (rate(enflame_epp_picks_total{{{s}}}[$__rate_interval]))",
                "{{endpoint}}")], unit="reqps", description="The primary endpoint of each pick.")
    b.panel("timeseries", "Scheduling latency p99",
            [ts("histogram_quantile(0.99, sum by (le) (rate("
                f"enflame_epp_scheduling_duration_seconds_bucket{{{s}}}[$__rate_interval])))",
                "p99")], unit="s", w=8, description="Picking alone, after any queue wait.")
    b.panel("timeseries", "Queue size",
            [ts(f"sum by (instance) (enflame_epp_queue_size{{{s}}})", "{{instance}}")], w=8,
            description="Requests waiting in the fair queue while the pool is saturated.")
    b.panel("timeseries", "Pool saturation",
            [ts(f"max by (instance) (enflame_epp_pool_saturation{{{s}}})", "{{instance}}")],
            w=8, description="At 1 or more, sheddable requests get 429 and the rest queue.")
    b.panel("timeseries", "Scrape errors",
            [ts(f"sum by (endpoint) (rate(enflame_epp_scrape_errors_total{{{s}}}[$__rate_interval]))",
                "{{endpoint}}")], unit="cps", w=24,
            description="Failed metric scrapes per model server or GCU-exporter URL: its scores "
                        "go stale.")
    return b


def main():
    check = sys.argv[1:] == ["--check"]
    stale = []
    for board in (overview(), node(), pods(), drs(), epp()):
        path = HERE / (board.uid + ".json")
        text = json.dumps(board.json(), indent=2, ensure_ascii=False) + "\n"
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print("generate.py: out of date: " + ", ".join(stale) + " (run generate.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
