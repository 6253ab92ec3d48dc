# SPDX-License-Identifier: Apache-2.0
"""ResourceSlices as a real API server of Kubernetes 1.<minor> validates and stores them, for
fake_apiserver.py."""

import re

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# ResourceSlice validation limits of Kubernetes 1.34 (resource.k8s.io types.go).
MAX_DEVICES = 128
MAX_DEVICES_WITH_COUNTERS = 64
MAX_ATTRS_AND_CAPS = 32
MAX_COUNTER_SETS = 8


def canonical(q):
    """A plain integer quantity the way the API server writes it back (1000 -> 1k)."""
    if not isinstance(q, str) or not q.isdigit():
        return q
    v, e = int(q), 0
    while v and v % 1000 == 0 and e < 6:
        v, e = v // 1000, e + 1
    return str(v) + ["", "k", "M", "G", "T", "P", "E"][e]


def normalize(obj):
    """What the API server stores: quantities canonical, empty lists left out (omitempty)."""
    spec = obj.get("spec") or {}
    for key in ("devices", "sharedCounters"):
        if key in spec and not spec[key]:
            del spec[key]
    counters = [c.get("counters") or {} for c in spec.get("sharedCounters") or []]
    for d in spec.get("devices") or []:
        body = d.get("basic") or d
        counters.append(body.get("capacity") or {})
        counters += [u.get("counters") or {} for u in body.get("consumesCounters") or []]
    for m in counters:
        for v in m.values():
            if isinstance(v, dict) and "value" in v:
                v["value"] = canonical(v["value"])


def drop_partitionable(obj):
    """DRAPartitionableDevices off: the API server silently drops the fields on write."""
    spec = obj.get("spec") or {}
    spec.pop("sharedCounters", None)
    for d in spec.get("devices") or []:
        (d.get("basic") or d).pop("consumesCounters", None)


def validate_slice(obj, version, minor):
    """The checks of the real API server (Kubernetes 1.<minor>) that matter to us; a list of
    messages."""
    errs = []
    spec = obj.get("spec") or {}
    name = (obj.get("metadata") or {}).get("name", "")
    if not name:
        errs.append("metadata.name: Required value")
    for f in ("driver", "pool"):
        if f not in spec:
            errs.append("spec.%s: Required value" % f)
    pool = spec.get("pool") or {}
    if "name" not in pool or "resourceSliceCount" not in pool or "generation" not in pool:
        errs.append("spec.pool: Required value: name, generation, resourceSliceCount")
    if not spec.get("nodeName") and not spec.get("allNodes") and "nodeSelector" not in spec:
        errs.append("spec: Required value: exactly one of nodeName, nodeSelector, allNodes")
    devices = spec.get("devices") or []
    set_names = {c.get("name") for c in spec.get("sharedCounters") or []}
    if minor >= 35 and devices and set_names:
        errs.append("spec: Invalid value: only one of devices and sharedCounters may be set")
    uses_counters = False
    seen = set()
    for i, d in enumerate(devices):
        where = "spec.devices[%d]" % i
        if not DNS_LABEL.match(d.get("name", "")):
            errs.append("%s.name: Invalid value: %r: a DNS label" % (where, d.get("name")))
        if d.get("name") in seen:
            errs.append("%s.name: Duplicate value: %r" % (where, d.get("name")))
        seen.add(d.get("name"))
        if version == "v1beta1":
            if set(d) - {"name", "basic"}:
                errs.append("%s: Forbidden: v1beta1 device fields go under basic" % where)
            body = d.get("basic") or {}
        else:
            if "basic" in d:
                errs.append("%s.basic: Forbidden: not a field of resource.k8s.io/v1" % where)
            body = d
        n = len(body.get("attributes") or {}) + len(body.get("capacity") or {})
        if n > MAX_ATTRS_AND_CAPS:
            errs.append("%s: Too many: %d: must have at most %d attributes and capacities"
                        % (where, n, MAX_ATTRS_AND_CAPS))
        for aname, a in (body.get("attributes") or {}).items():
            if len(a) != 1 or next(iter(a)) not in ("int", "bool", "string", "version"):
                errs.append("%s.attributes[%s]: Invalid value: exactly one of int, bool, "
                            "string, version" % (where, aname))
        if body.get("consumesCounters"):
            uses_counters = True
            for j, use in enumerate(body["consumesCounters"]):
                if minor < 35 and use.get("counterSet") not in set_names:
                    errs.append("%s.consumesCounters[%d].counterSet: Invalid value: %r: must "
                                "reference a counter set in this slice" % (where, j,
                                                                           use.get("counterSet")))
    limit = MAX_DEVICES_WITH_COUNTERS if uses_counters else MAX_DEVICES
    if len(devices) > limit:
        errs.append("spec.devices: Too many: %d: must have at most %d items" % (len(devices), limit))
    if len(spec.get("sharedCounters") or []) > MAX_COUNTER_SETS:
        errs.append("spec.sharedCounters: Too many: must have at most %d items" % MAX_COUNTER_SETS)
    return errs
