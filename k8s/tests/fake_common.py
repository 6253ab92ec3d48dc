# SPDX-License-Identifier: Apache-2.0
"""What every part of fake_apiserver.py shares: Status bodies, patches, selectors, the faults of
control.json, the store's resourceVersion counter and event history, and the watch stream."""

import copy
import json
import os
import threading
import time

SLICES = ("resource.k8s.io", "resourceslices")  # the (group, plural) of ResourceSlices


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def json_patch(doc, ops):
    doc = copy.deepcopy(doc)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        kind = op["op"]
        if isinstance(parent, list):
            idx = len(parent) if last == "-" else int(last)
            if kind == "add":
                parent.insert(idx, op["value"])
            elif kind == "remove":
                del parent[idx]
            elif kind == "replace":
                parent[idx] = op["value"]
            elif kind == "test" and parent[idx] != op["value"]:
                raise ValueError("test failed at " + op["path"])
        else:
            if kind in ("add", "replace"):
                if kind == "replace" and last not in parent:
                    raise KeyError(op["path"])
                parent[last] = op["value"]
            elif kind == "remove":
                del parent[last]
            elif kind == "test" and parent.get(last) != op["value"]:
                raise ValueError("test failed at " + op["path"])
    return doc


def patched(ctype, cur, body):
    """(object, None) for a merge or JSON patch of `cur`, or (None, (code, reason, message)) as a
    real server answers: 415 for another content type, 422 for a patch that does not apply or
    does not leave an object."""
    try:
        if ctype.startswith("application/merge-patch+json"):
            obj = merge_patch(cur, body)
        elif ctype.startswith("application/json-patch+json"):
            obj = json_patch(cur, body)
        else:
            return None, (415, "UnsupportedMediaType",
                          "the body of the request was in an unknown format: " + ctype)
    except (KeyError, IndexError, ValueError, TypeError) as e:
        return None, (422, "Invalid", "the patch does not apply: %s" % e)
    if not isinstance(obj, dict):
        return None, (422, "Invalid", "the patch does not leave an object")
    return obj, None


def label_match(labels, selector):
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("==", 1) if "==" in term else term.split("=", 1)
            if labels.get(k) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


FIELDS = {"spec.nodeName": lambda o: o.get("spec", {}).get("nodeName", ""),
          "spec.driver": lambda o: o.get("spec", {}).get("driver", ""),
          "metadata.name": lambda o: o.get("metadata", {}).get("name", ""),
          "metadata.namespace": lambda o: o.get("metadata", {}).get("namespace", "")}


def field_match(obj, selector):
    for term in filter(None, (t.strip() for t in selector.split(","))):
        neg = "!=" in term
        k, v = term.split("!=" if neg else "=", 1)
        v = v.lstrip("=")
        if k not in FIELDS:
            raise KeyError(k)
        if (FIELDS[k](obj) == v) == neg:
            return False
    return True


def selected(obj, query):
    """Whether obj matches the query's labelSelector and fieldSelector."""
    return label_match(obj["metadata"].get("labels") or {}, query.get("labelSelector", "")) \
        and field_match(obj, query.get("fieldSelector", ""))


class Control:
    """control.json, re-read on every request; counters written back when consumed."""

    def __init__(self, d):
        self.path = os.path.join(d, "control.json")
        self.lock = threading.Lock()

    def read(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def take(self, key):
        """True (and the count goes down by one) when `key` is a positive count."""
        with self.lock:
            c = self.read()
            n = int(c.get(key, 0) or 0)
            if n <= 0:
                return False
            c[key] = n - 1
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(c, f)
            os.replace(tmp, self.path)
            return True


class Store:
    """Every object in memory, one resourceVersion counter, the last `window` events (older
    ones are compacted: a watch from before them gets 410 Expired) and the write log."""

    def __init__(self, d, window=10000):
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.events = []  # (rv as int, type, object, (group, plural), time) of every change
        self.window = window
        self.compacted_rv = 0  # the newest resourceVersion no longer in self.events
        self.slices = {}
        self.objs = {}  # (group, plural) -> {(namespace, name): object}
        self.rv = 100
        self.dir = d
        self.log = open(os.path.join(d, "writes.jsonl"), "a", buffering=1)
        self.stored_log = open(os.path.join(d, "stored.jsonl"), "a", buffering=1)
        self.dry_log = open(os.path.join(d, "dryruns.jsonl"), "a", buffering=1)

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def event(self, kind, obj, res=SLICES):
        """A change watches see (the lock held)."""
        self.events.append((int(obj["metadata"]["resourceVersion"]), kind, copy.deepcopy(obj),
                            res, time.time()))
        if len(self.events) > self.window:
            gone = self.events[:len(self.events) - self.window]
            self.compacted_rv = gone[-1][0]
            del self.events[:len(gone)]
        self.changed.notify_all()

    def record(self, verb, path, body):
        self.log.write(json.dumps({"verb": verb, "path": path, "body": body},
                                  sort_keys=True) + "\n")

    def store(self, name, obj):
        """Keeps `obj` as the slice `name` and logs it as stored (every generation)."""
        self.slices[name] = obj
        self.stored_log.write(json.dumps(obj, sort_keys=True) + "\n")


def chunk(h, obj):
    data = (json.dumps(obj) + "\n").encode()
    h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    h.wfile.flush()


def stream_watch(h, query, res, out, kind, ns=None, current=None):
    """A watch on handler h: the events of `res` ((group, plural)) after resourceVersion that
    match the selectors (and namespace ns), as they come, each object through out(obj).
    current(): the objects there now; with it a watch without resourceVersion (or "0") starts
    with an ADDED for each, as a real server's does. A resourceVersion older than the oldest
    event kept: an ERROR event 410 Expired. control.json's {"watch_delay_ms": {PLURAL: MS}}
    holds the events of that plural back that long (a watch that lags, as under load)."""
    st, ctl = h.server.store, h.server.control
    with h.server.log_lock, open(os.path.join(h.server.dir, "watches.jsonl"), "a") as f:
        f.write(json.dumps(query, sort_keys=True) + "\n")
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    h.close_connection = True
    since = int(query.get("resourceVersion") or 0)

    def expired(message):
        chunk(h, {"type": "ERROR", "object": status(410, "Expired", message)})
        h.wfile.write(b"0\r\n\r\n")

    if ctl.take("watch_gone"):
        return expired("too old resource version")
    with st.lock:
        if since and since < st.compacted_rv:
            return expired("too old resource version: %d (%d)" % (since, st.compacted_rv + 1))
        first = []
        if current is not None and not since:
            first = [copy.deepcopy(o) for o in current()]
            since = st.rv
    for o in first:
        if selected(o, query):
            chunk(h, {"type": "ADDED", "object": out(o)})
    deadline = time.time() + int(query.get("timeoutSeconds", "1800"))
    bookmarks = query.get("allowWatchBookmarks") == "true"
    last_bookmark = time.time()
    delay = 0
    while time.time() < deadline:
        with st.lock:
            st.changed.wait(0.05)
            todo = []
            for rv, t, o, r, at in st.events:
                if rv <= since or (r == res and at + delay > time.time()):
                    if rv > since:
                        break  # held back, and everything after it
                    continue
                since = rv
                if r == res:
                    todo.append((rv, t, o))
            now_rv = st.rv
        for rv, t, o in todo:
            if (ns is None or o["metadata"].get("namespace") == ns) and selected(o, query):
                chunk(h, {"type": t, "object": out(o)})
        c = ctl.read()
        delay = int((c.get("watch_delay_ms") or {}).get(res[1], 0)) / 1000.0
        every = int(c.get("bookmark_ms") or 0)
        if bookmarks and every and (time.time() - last_bookmark) * 1000 >= every:
            last_bookmark = time.time()
            chunk(h, {"type": "BOOKMARK", "object": {
                "kind": kind, "apiVersion": out({"metadata": {}})["apiVersion"],
                "metadata": {"resourceVersion": str(now_rv)}}})
        if c.get("drop_watch") and ctl.take("drop_watch"):
            h.connection.shutdown(2)
            return
    h.wfile.write(b"0\r\n\r\n")
