# SPDX-License-Identifier: Apache-2.0
"""Server-side apply for fake_objects.py: which leaf fields each manager owns (a list is one
field), kept in metadata.managedFields as FieldsV1."""

import copy
import datetime

SERVER_SET = ("uid", "creationTimestamp", "resourceVersion", "generation", "managedFields",
              "deletionTimestamp", "selfLink")


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def leaves(obj, prefix=()):
    """The leaf field paths of obj: a list or a scalar is a leaf, so is an empty map."""
    out = set()
    for k, v in obj.items():
        p = prefix + (k,)
        if isinstance(v, dict) and v:
            out |= leaves(v, p)
        else:
            out.add(p)
    return out


def applied_fields(obj, main_has_status):
    skip = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}
    skip |= {("metadata", f) for f in SERVER_SET}
    return {p for p in leaves(obj) if p[:2] not in skip and p[:1] not in skip
            and not (main_has_status and p[0] == "status")}


def lookup(obj, path):
    for k in path:
        if not isinstance(obj, dict) or k not in obj:
            return KeyError
        obj = obj[k]
    return obj


def remove_field(obj, path):
    """Removes path from obj, and the maps it leaves empty."""
    trail = []
    for k in path[:-1]:
        if not isinstance(obj.get(k), dict):
            return
        trail.append((obj, k))
        obj = obj[k]
    obj.pop(path[-1], None)
    for parent, k in reversed(trail):
        if parent[k]:
            break
        del parent[k]


def merged(base, applied):
    """applied over base: maps merge, everything else (lists too) replaces."""
    out = copy.deepcopy(base)
    for k, v in applied.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) \
            else copy.deepcopy(v)
    return out


def to_fields_v1(paths):
    tree = {}
    for p in sorted(paths):
        node = tree
        for k in p:
            node = node.setdefault("f:" + k, {})
    return tree


def from_fields_v1(tree, prefix=()):
    out = set()
    for k, v in tree.items():
        if not k.startswith("f:"):
            continue
        p = prefix + (k[2:],)
        sub = from_fields_v1(v, p) if isinstance(v, dict) else set()
        out |= sub or {p}
    return out


def managers(obj):
    """{(manager, operation): set of paths} from obj's managedFields."""
    out = {}
    for e in obj.get("metadata", {}).get("managedFields") or []:
        out[(e.get("manager", ""), e.get("operation", "Update"))] = from_fields_v1(
            e.get("fieldsV1") or {})
    return out


def set_managers(obj, owned, old, api_version):
    """Writes owned back as managedFields; an entry that did not change keeps its time."""
    times = {(e.get("manager"), e.get("operation")): e for e in
             (old or {}).get("metadata", {}).get("managedFields") or []}
    entries = []
    for (m, op), paths in owned.items():
        if not paths:
            continue
        e = {"manager": m, "operation": op, "apiVersion": api_version, "time": now(),
             "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}
        was = times.get((m, op))
        if was and was.get("fieldsV1") == e["fieldsV1"]:
            e["time"] = was.get("time", e["time"])
        entries.append(e)
    if entries:
        obj["metadata"]["managedFields"] = entries
    else:
        obj["metadata"].pop("managedFields", None)


def server_side_apply(cur, applied, manager, force, main_has_status):
    """(new object, owned) or raises ValueError with a conflict message."""
    base = copy.deepcopy(cur or {})
    owned = managers(base)
    mine = applied_fields(applied, main_has_status)
    had = owned.pop((manager, "Apply"), set())
    conflicts = {}
    for m, paths in owned.items():
        for p in paths & mine:
            if lookup(base, p) != lookup(applied, p):
                conflicts.setdefault(m, set()).add(p)
    if conflicts and not force:
        n = sum(len(v) for v in conflicts.values())
        what = "; ".join('conflict with "%s": %s' % (m[0], ", ".join(
            "." + ".".join(p) for p in sorted(ps))) for m, ps in conflicts.items())
        raise ValueError("Apply failed with %d conflict%s: %s" % (n, "s" * (n > 1), what))
    others = set().union(*owned.values()) if owned else set()
    for p in had - mine - others:
        remove_field(base, p)
    obj = merged(base, applied)
    for m, ps in conflicts.items():
        owned[m] -= ps
    owned[(manager, "Apply")] = mine
    return obj, owned
