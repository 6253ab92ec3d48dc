#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fake Kubernetes API server for the DRA tests (python3 standard library only).

It speaks HTTPS on 127.0.0.1 with a certificate signed by a CA it generates with `openssl` in
its state folder (`--dir`), checks a bearer token (or a client certificate signed by that CA),
authorizes a `--rbac-user` token's requests by the RBAC objects it holds (fake_rbac.py: 403
Forbidden, logged to <dir>/forbidden.log), and serves what the DRA plugin uses, the way a real API server answers:

  GET  /apis/resource.k8s.io                     discovery (`--versions v1,v1beta1`)
  GET  /apis/resource.k8s.io/<v>/namespaces/<ns>/resourceclaims/<name>
                                                 from <dir>/claims/<ns>/<name>.json
  GET  /apis/resource.k8s.io/<v>/resourceslices  list; labelSelector (a=b,c!=d,e),
                                                 fieldSelector spec.nodeName= / spec.driver=
                                                 ?watch=1: a chunked stream of the events after
                                                 resourceVersion (ADDED/MODIFIED/DELETED), ended
                                                 after timeoutSeconds; BOOKMARKs when allowed
  POST /apis/resource.k8s.io/<v>/resourceslices  create (409 AlreadyExists, 422 Invalid)
  GET / PUT / PATCH / DELETE .../resourceslices/<name>
                                                 PUT with a stale resourceVersion: 409;
                                                 PATCH: merge-patch+json and json-patch+json
  GET  /api/v1/nodes/<name>                      a Node with a fixed uid
  GET  /version                                  1.<--kube-minor> (34 unless told)
  anything else: any object of a kind it serves, as a real server keeps it (fake_objects.py:
  discovery, lists, watches, create/update/patch/server-side apply/delete, /status,
  CustomResourceDefinitions that add kinds); a watch from a resourceVersion older than the
  last --event-window events: an ERROR event 410 Expired. A Node nobody stored is made up.

Slices are validated like that Kubernetes version does (1.34: a device's counter set must be in
its slice; 1.35+: a slice has devices or counter sets, not both); with --no-partitionable the
server drops sharedCounters and consumesCounters on write, as it does with the
DRAPartitionableDevices feature gate off (a 1.32 server does not know the fields and prunes them:
the same outcome), before validation as a real server does. Stored slices are what a real server
stores: plain-integer quantities in canonical form ("1000" -> "1k"), empty lists left out.
POST ...?dryRun=All validates and answers 201 with the object as it would be stored, and stores,
records and announces nothing (logged to <dir>/dryruns.jsonl instead).
Every object the store keeps (each create and each update: every generation) is appended to
<dir>/stored.jsonl as stored, so a test sees what the scheduler could have seen at any moment.

Every write (POST, PUT, PATCH, DELETE) that reaches the store is appended to
<dir>/writes.jsonl as {"verb", "path", "body"} for golden checks. Faults are read from
<dir>/control.json on every request, so a test changes them while the server runs:
  {"down": true}      close every connection without answering
  {"slow_ms": 500}    sleep before answering
  {"fail_500": 1}     answer the next N requests with 500 (the count goes down)
  {"conflict_409": 1} answer the next N PUTs with 409 (the count goes down)
  {"fail_429": 1, "retry_after": 1}  answer the next N requests with 429 and that Retry-After
  {"fail_503": 1, "retry_after": 1}  the same with 503 Service Unavailable
  {"tokens": ["t2"]}  accept these bearer tokens instead of --token's (a rotated token)
  {"watch_gone": 1}   answer the next N watches with an ERROR event 410 Expired (as a real
                      server does for a compacted resourceVersion)
  {"drop_watch": 1}   cut the next N open watch streams without ending the chunked body
  {"bookmark_ms": 200} send a BOOKMARK with the current resourceVersion this often
  {"watch_delay_ms": {"servicemonitors": 500}}  deliver that plural's watch events this late
Each watch request's query is appended to <dir>/watches.jsonl (the resourceVersion it asked
for: the test sees where a reconnect resumed).
Each request's bearer token is appended to <dir>/tokens.log (one line per request, "-" for
none), so a test counts attempts and sees which token each carried.
Files it writes: ca.crt/ca.key, server.crt/server.key, client.crt/client.key (a client
certificate the CA signed), other-ca.crt (a CA that signed nothing here), port (once listening).
"""

import argparse
import copy
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fake_common import SLICES, Control, Store, patched, selected, status, \
    stream_watch
from fake_objects import Objects
from fake_rbac import forbidden
from fake_slices import drop_partitionable, normalize, validate_slice

GROUP = "resource.k8s.io"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs(d):
    """A CA, a server certificate for 127.0.0.1/localhost, a client certificate, another CA."""
    if os.path.exists(os.path.join(d, "server.crt")):
        return
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", ca + ".key", "-out", ca + ".crt", "-days", "2", "-subj",
                "/CN=fake-apiserver-" + ca, cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, cn, ext in (("server", "/CN=127.0.0.1", ["-extfile", "san.ext"]),
                          ("client", "/CN=system:node:test/O=system:nodes", [])):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", name + ".key", "-out", name + ".csr", "-subj", cn, cwd=d)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".crt", "-days", "2", *ext, cwd=d)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver"
    # Headers and body go out in two writes: without this, Nagle and delayed ACKs add 40 ms.
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # quiet unless asked
        if self.server.verbose:
            sys.stderr.write("fake-apiserver: " + (fmt % args) + "\n")

    # --- plumbing ---
    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def fail(self, code, reason, message, headers=None):
        data = json.dumps(status(code, reason, message)).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw) if raw else None

    def authorized(self, ctl):
        auth = self.headers.get("Authorization", "")
        with self.server.log_lock, open(os.path.join(self.server.dir, "tokens.log"), "a") as f:
            f.write((auth[len("Bearer "):] if auth.startswith("Bearer ") else "-") + "\n")
        if self.server.client_cert_ok and self.connection.getpeercert():
            return True
        return auth in ["Bearer " + t for t in (ctl.get("tokens") or [self.server.token])] + \
            ["Bearer " + t for t in self.server.rbac_users]

    def rbac_forbidden(self, verb, path, query, body):
        """The RBAC authorizer's answer (fake_rbac.py) for a --rbac-user token; None: allowed."""
        auth = self.headers.get("Authorization", "")
        user = self.server.rbac_users.get(auth[len("Bearer "):]) if auth.startswith("Bearer ") \
            else None
        if not user:
            return None
        parts = [p for p in path.split("/") if p]
        with self.server.store.lock:
            msg = forbidden(self.server.store.objs, user, verb, parts, query, body)
        if msg:
            with self.server.log_lock, open(os.path.join(self.server.dir, "forbidden.log"),
                                            "a") as f:
                f.write("%s %s: %s\n" % (verb, self.path, msg))
        return msg

    def handle_any(self, verb):
        ctl = self.server.control
        c = ctl.read()
        if c.get("down"):
            self.close_connection = True
            # Read nothing, answer nothing: the client sees the connection close.
            return
        if c.get("slow_ms"):
            time.sleep(int(c["slow_ms"]) / 1000.0)
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        try:
            body = self.body() if verb in ("POST", "PUT", "PATCH") else None
        except ValueError as e:
            return self.fail(400, "BadRequest", "invalid JSON body: %s" % e)
        if not self.authorized(c):
            return self.fail(401, "Unauthorized", "Unauthorized")
        msg = self.rbac_forbidden(verb, url.path, query, body)
        if msg:
            return self.fail(403, "Forbidden", msg)
        for code, reason in ((429, "TooManyRequests"), (503, "ServiceUnavailable")):
            if ctl.take("fail_%d" % code):
                return self.fail(code, reason, "fake-apiserver: injected %d" % code,
                                 {"Retry-After": str(c.get("retry_after", 1))})
        if ctl.take("fail_500"):
            return self.fail(500, "InternalError", "fake-apiserver: injected failure")
        if verb == "PUT" and ctl.take("conflict_409"):
            return self.fail(409, "Conflict", "fake-apiserver: injected conflict")
        self.route(verb, url.path, query, body)

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    # --- routes ---
    def route(self, verb, path, query, body):
        parts = [p for p in path.split("/") if p]
        versions = self.server.versions
        if parts == ["apis", GROUP] and verb == "GET":
            return self.send_json(200, {
                "kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
                "versions": [{"groupVersion": GROUP + "/" + v, "version": v} for v in versions],
                "preferredVersion": {"groupVersion": GROUP + "/" + versions[0],
                                     "version": versions[0]}})
        if parts == ["version"] and verb == "GET":
            return self.send_json(200, {"major": "1", "minor": "%d" % self.server.minor,
                                        "gitVersion": "v1.%d.0-fake" % self.server.minor})
        objects = self.server.objects
        if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 4 and verb == "GET" and \
                not objects.get("", "nodes", "", parts[3]):  # a Node nobody stored: made up
            return self.send_json(200, {"kind": "Node", "apiVersion": "v1", "metadata": {
                "name": parts[3], "uid": "node-uid-" + parts[3], "resourceVersion": "1"}})
        if len(parts) < 4 or parts[:2] != ["apis", GROUP] or parts[2] not in versions:
            return objects.serve(self, verb, path, parts, query, body)
        version, rest = parts[2], parts[3:]
        if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "resourceclaims":
            if verb != "GET":
                return self.fail(405, "MethodNotAllowed", "claims are read-only here")
            return self.claim(version, rest[1], rest[3])
        if rest[0] == "resourceslices" and len(rest) <= 2:
            return self.slices(verb, version, path, rest[1] if len(rest) == 2 else None,
                               query, body)
        return objects.serve(self, verb, path, parts, query, body)

    def claim(self, version, ns, name):
        f = os.path.join(self.server.dir, "claims", ns, name + ".json")
        try:
            with open(f) as fh:
                obj = json.load(fh)
        except FileNotFoundError:
            return self.fail(404, "NotFound",
                             'resourceclaims.%s "%s" not found' % (GROUP, name))
        obj.setdefault("apiVersion", GROUP + "/" + version)
        obj.setdefault("kind", "ResourceClaim")
        self.send_json(200, obj)

    def not_found(self, name):
        self.fail(404, "NotFound", 'resourceslices.%s "%s" not found' % (GROUP, name))

    def watch(self, version, query):
        stream_watch(self, query, SLICES, lambda o: self.as_version(o, version), "ResourceSlice")

    def slices(self, verb, version, path, name, query, body):
        st = self.server.store
        if name is None and verb == "GET" and query.get("watch") in ("1", "true"):
            return self.watch(version, query)
        with st.lock:
            if name is None and verb == "GET":
                try:
                    items = [o for _, o in sorted(st.slices.items())
                             if selected(o, query)]
                except (KeyError, ValueError) as e:
                    return self.fail(400, "BadRequest",
                                     '"%s" is not a known field selector' % e.args[0])
                return self.send_json(200, {
                    "kind": "ResourceSliceList", "apiVersion": GROUP + "/" + version,
                    "metadata": {"resourceVersion": str(st.rv)},
                    "items": [self.as_version(o, version) for o in items]})
            if name is None and verb == "POST":
                return self.create(st, version, path, body, query.get("dryRun") == "All")
            if name is None:
                return self.fail(405, "MethodNotAllowed", "method not allowed")
            cur = st.slices.get(name)
            if verb == "GET":
                return self.send_json(200, self.as_version(cur, version)) if cur \
                    else self.not_found(name)
            if verb == "DELETE":
                if not cur:
                    return self.not_found(name)
                del st.slices[name]
                st.record(verb, path, None)
                gone = copy.deepcopy(cur)
                gone["metadata"]["resourceVersion"] = st.next_rv()
                st.event("DELETED", gone)
                return self.send_json(200, status(200, "", "") | {"status": "Success"})
            if not cur:
                return self.not_found(name)
            if verb == "PUT":
                return self.replace(st, version, path, name, cur, body)
            if verb == "PATCH":
                return self.patch(st, version, path, name, cur, body)
        return self.fail(405, "MethodNotAllowed", "method not allowed")

    @staticmethod
    def as_version(obj, version):
        out = copy.deepcopy(obj)
        out["apiVersion"] = GROUP + "/" + version
        return out

    def invalid(self, name, errs):
        self.fail(422, "Invalid", 'ResourceSlice.%s "%s" is invalid: %s'
                  % (GROUP, name, "; ".join(errs)))

    def create(self, st, version, path, body, dry_run=False):
        if not isinstance(body, dict):
            return self.fail(400, "BadRequest", "the body is not a JSON object")
        meta = body.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        obj = copy.deepcopy(body)
        # Without the gate the fields are gone before validation, as on a real server.
        if not self.server.partitionable:
            drop_partitionable(obj)
        errs = validate_slice(obj, version, self.server.minor)
        if errs:
            return self.invalid(meta.get("name", ""), errs)
        if meta["name"] in st.slices:
            return self.fail(409, "AlreadyExists",
                             'resourceslices.%s "%s" already exists' % (GROUP, meta["name"]))
        normalize(obj)
        obj["kind"] = "ResourceSlice"
        if dry_run:  # dryRun=All: the answer as if stored; nothing stored, logged or watched
            st.dry_log.write(json.dumps({"path": path, "body": body}, sort_keys=True) + "\n")
            obj["metadata"].update(uid=str(uuid.uuid4()), generation=1)
            return self.send_json(201, self.as_version(obj, version))
        st.record("POST", path, body)
        obj["metadata"].update(uid=str(uuid.uuid4()), resourceVersion=st.next_rv(), generation=1)
        st.store(meta["name"], obj)
        st.event("ADDED", obj)
        self.send_json(201, self.as_version(obj, version))

    def conflict(self, name):
        self.fail(409, "Conflict",
                  'Operation cannot be fulfilled on resourceslices.%s "%s": the object has been '
                  'modified; please apply your changes to the latest version and try again'
                  % (GROUP, name))

    def store_update(self, st, version, path, verb, name, cur, obj, logged):
        if not self.server.partitionable:
            drop_partitionable(obj)
        errs = validate_slice(obj, version, self.server.minor)
        if errs:
            return self.invalid(name, errs)
        st.record(verb, path, logged)
        normalize(obj)
        obj["metadata"].update(uid=cur["metadata"]["uid"], resourceVersion=st.next_rv(),
                               generation=cur["metadata"].get("generation", 1) + 1)
        st.store(name, obj)
        st.event("MODIFIED", obj)
        self.send_json(200, self.as_version(obj, version))

    def replace(self, st, version, path, name, cur, body):
        if not isinstance(body, dict):
            return self.fail(400, "BadRequest", "the body is not a JSON object")
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if rv and rv != cur["metadata"]["resourceVersion"]:
            return self.conflict(name)
        if (body.get("metadata") or {}).get("name", name) != name:
            return self.fail(400, "BadRequest", "the name of the object (%s) does not match "
                             "the name on the URL (%s)" % (body["metadata"]["name"], name))
        obj = copy.deepcopy(body)
        obj.setdefault("metadata", {})["name"] = name
        self.store_update(st, version, path, "PUT", name, cur, obj, body)

    def patch(self, st, version, path, name, cur, body):
        obj, err = patched(self.headers.get("Content-Type", ""), cur, body)
        if err:
            return self.fail(*err)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv != cur["metadata"]["resourceVersion"]:
            return self.conflict(name)
        self.store_update(st, version, path, "PATCH", name, cur, obj, body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="state folder (certs, claims/, logs, port)")
    ap.add_argument("--versions", default="v1,v1beta1",
                    help="resource.k8s.io versions offered, preferred first")
    ap.add_argument("--token", default="test-token")
    ap.add_argument("--rbac-user", action="append", default=[], metavar="TOKEN=USER",
                    help="a token authenticating USER, whose requests RBAC authorizes "
                         "(fake_rbac.py); the other token and client certificates are admins")
    ap.add_argument("--no-client-cert", action="store_true",
                    help="refuse client certificates (only the token authenticates)")
    ap.add_argument("--kube-minor", type=int, default=34,
                    help="the Kubernetes 1.<minor> to be: GET /version, counter-set rules")
    ap.add_argument("--no-partitionable", action="store_true",
                    help="DRAPartitionableDevices off: drop sharedCounters/consumesCounters")
    ap.add_argument("--parent-pid", type=int, default=0,
                    help="exit when this process (the test that started us) is gone, even if it crashed")
    ap.add_argument("--event-window", type=int, default=10000,
                    help="events kept for watches; a watch from an older resourceVersion: 410")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    d = os.path.abspath(a.dir)
    os.makedirs(os.path.join(d, "claims"), exist_ok=True)
    make_certs(d)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "server.crt"), os.path.join(d, "server.key"))
    ctx.load_verify_locations(os.path.join(d, "ca.crt"))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.dir, srv.token, srv.verbose = d, a.token, a.verbose
    srv.versions = [v for v in a.versions.split(",") if v]
    srv.client_cert_ok = not a.no_client_cert
    srv.rbac_users = dict(u.split("=", 1) for u in a.rbac_user)
    srv.minor, srv.partitionable = a.kube_minor, not a.no_partitionable
    srv.store, srv.control = Store(d, a.event_window), Control(d)
    srv.objects = Objects(srv.store, srv.versions)
    srv.log_lock = threading.Lock()
    if a.parent_pid:
        def watch_parent():
            while os.getppid() == a.parent_pid:
                time.sleep(0.2)
            os._exit(0)
        threading.Thread(target=watch_parent, daemon=True).start()
    port = srv.server_address[1]
    tmp = os.path.join(d, "port.tmp")
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.replace(tmp, os.path.join(d, "port"))
    print(port, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
