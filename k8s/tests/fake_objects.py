# SPDX-License-Identifier: Apache-2.0
"""Any Kubernetes object, core (/api/v1/...) or of a group (/apis/G/V/...), namespaced or
cluster-scoped, kept the way a real kube-apiserver keeps it, for fake_apiserver.py:

  GET (an object; a list with labelSelector, fieldSelector metadata.name/namespace and the
  list's resourceVersion; ?watch=1 through fake_common.stream_watch), POST (409 AlreadyExists),
  PUT (409 on a stale resourceVersion), PATCH (merge-patch+json, json-patch+json,
  apply-patch+yaml: server-side apply, below), DELETE (finalizers: deletionTimestamp first).
  /status of kinds with that subresource: a write there changes only status, a write to the
  object never does. metadata.uid, creationTimestamp, resourceVersion (every write), generation
  (bumped when anything but metadata and status changes). A write that changes nothing stores
  nothing and sends no event.
  Server-side apply: fieldManager required; the manager owns the leaf fields it applied (a
  list is one field); on re-apply the fields it alone owned and no longer applies go; a field
  another manager owns with another value is a 409 conflict unless force=true, which takes it.
  Other writes make their manager (fieldManager, else the User-Agent's product) own what they
  changed. managedFields are written as FieldsV1.
  Discovery: /api, /api/v1, /apis, /apis/G, /apis/G/V. A CustomResourceDefinition makes its
  kind served (Established at once); deleting it deletes its objects (DELETED events) and stops
  serving the kind.
The body of an apply is JSON (JSON is YAML; a YAML-only body is a 400 here)."""

import copy
import uuid

from fake_apply import SERVER_SET, applied_fields, leaves, lookup, managers, now, \
    server_side_apply, set_managers
from fake_common import patched, selected, stream_watch

CRD = ("apiextensions.k8s.io", "customresourcedefinitions")
# (group, version, plural, kind, namespaced, has a /status subresource)
BUILTIN = [
    ("", "v1", "namespaces", "Namespace", False, True),
    ("", "v1", "nodes", "Node", False, True),
    ("", "v1", "pods", "Pod", True, True),
    ("", "v1", "services", "Service", True, True),
    ("", "v1", "configmaps", "ConfigMap", True, False),
    ("", "v1", "secrets", "Secret", True, False),
    ("", "v1", "serviceaccounts", "ServiceAccount", True, False),
    ("", "v1", "events", "Event", True, False),
    ("apps", "v1", "daemonsets", "DaemonSet", True, True),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, True),
    ("apps", "v1", "deployments", "Deployment", True, True),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True, False),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, False),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, False),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, False),
    ("coordination.k8s.io", "v1", "leases", "Lease", True, False),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
     False, True),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
     "ValidatingAdmissionPolicy", False, True),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
     "ValidatingAdmissionPolicyBinding", False, False),
    ("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False, False),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, False),
]
# resource.k8s.io in each version the server offers (slices and claims are fake_apiserver's)
DRA = [("resourceslices", "ResourceSlice", False, False),
       ("resourceclaims", "ResourceClaim", True, True),
       ("resourceclaimtemplates", "ResourceClaimTemplate", True, False),
       ("deviceclasses", "DeviceClass", False, False)]


class Kind:
    def __init__(self, group, version, plural, kind, namespaced, has_status, crd=None):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.has_status, self.crd = namespaced, has_status, crd

    @property
    def api_version(self):
        return self.group + "/" + self.version if self.group else self.version

    @property
    def res(self):
        return (self.group, self.plural)


# --- the objects and the routes ---

class Objects:
    def __init__(self, store, dra_versions):
        self.st = store
        self.kinds = {}  # (group, version, plural) -> Kind
        for k in BUILTIN:
            self.add(Kind(*k))
        for v in dra_versions:
            for plural, kind, namespaced, has_status in DRA:
                self.add(Kind("resource.k8s.io", v, plural, kind, namespaced, has_status))

    def add(self, k):
        self.kinds[(k.group, k.version, k.plural)] = k

    def get(self, group, plural, ns, name):
        with self.st.lock:
            return copy.deepcopy(self.st.objs.get((group, plural), {}).get((ns, name)))

    # --- discovery ---
    def groups(self):
        out = {}
        for (g, v, _), _k in self.kinds.items():
            out.setdefault(g, [])
            if v not in out[g]:
                out[g].append(v)
        return out

    def resource_list(self, group, version):
        res = []
        for (g, v, plural), k in sorted(self.kinds.items()):
            if (g, v) != (group, version):
                continue
            verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
            res.append({"name": plural, "singularName": k.kind.lower(), "kind": k.kind,
                        "namespaced": k.namespaced, "verbs": verbs})
            if k.has_status:
                res.append({"name": plural + "/status", "singularName": "", "kind": k.kind,
                            "namespaced": k.namespaced, "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": group + "/" + version if group else version, "resources": res}

    def group_doc(self, g, versions):
        vs = [{"groupVersion": g + "/" + v, "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": vs,
                "preferredVersion": vs[0]}

    def discovery(self, parts):
        groups = self.groups()
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:443"}]}
        if parts == ["api", "v1"]:
            return self.resource_list("", "v1")
        if parts == ["apis"]:
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                self.group_doc(g, vs) for g, vs in sorted(groups.items()) if g]}
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
            return self.group_doc(parts[1], groups[parts[1]])
        if len(parts) == 3 and parts[0] == "apis" and (parts[1], parts[2]) in {
                (g, v) for g, v, _ in self.kinds}:
            return self.resource_list(parts[1], parts[2])
        return None

    # --- routing ---
    def serve(self, h, verb, path, parts, query, body):
        with self.st.lock:
            doc = self.discovery(parts) if verb == "GET" else None
        if doc is not None:
            return h.send_json(200, doc)
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return h.fail(404, "NotFound", "the server could not find the requested resource")
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            k = self.kinds.get((group, version, rest[2]))
            if k and k.namespaced:
                ns, rest = rest[1], rest[2:]
        k = self.kinds.get((group, version, rest[0])) if rest else None
        if k and k.res == ("", "pods") and len(rest) == 3 and rest[2] == "eviction" and ns:
            if verb != "POST":
                return h.fail(405, "MethodNotAllowed", "method not allowed")
            with self.st.lock:
                return self.evict(h, k, ns, rest[1], path, body)
        if not k or len(rest) > 3 or (len(rest) == 3 and (rest[2] != "status" or not k.has_status)):
            return h.fail(404, "NotFound", "the server could not find the requested resource")
        if k.namespaced and ns is None and len(rest) > 1:
            return h.fail(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        ns = ns or ""
        if name is None and verb == "GET" and query.get("watch") in ("1", "true"):
            return stream_watch(h, query, k.res, lambda o: self.out(k, o), k.kind,
                                ns if k.namespaced and ns else None,
                                lambda: self.items(k, ns))
        with self.st.lock:
            if name is None and verb == "GET":
                return self.list(h, k, ns, query)
            if name is None and verb == "POST":
                return self.create(h, k, ns, path, query, body)
            if name is None:
                return h.fail(405, "MethodNotAllowed", "method not allowed")
            cur = self.st.objs.get(k.res, {}).get((ns, name))
            if verb == "PATCH" and h.headers.get("Content-Type", "").startswith(
                    "application/apply-patch"):
                return self.apply(h, k, ns, name, sub, path, query, cur, body)
            if not cur:
                return h.fail(404, "NotFound", '%s "%s" not found' % (self.what(k), name))
            if verb == "GET":
                return h.send_json(200, self.out(k, cur))
            if verb == "DELETE":
                return self.delete(h, k, path, cur)
            if verb == "PUT":
                return self.replace(h, k, name, sub, path, query, cur, body)
            if verb == "PATCH":
                return self.patch(h, k, name, sub, path, query, cur, body)
        return h.fail(405, "MethodNotAllowed", "method not allowed")

    @staticmethod
    def what(k):
        return k.plural + ("." + k.group if k.group else "")

    def out(self, k, obj):
        o = copy.deepcopy(obj)
        o["apiVersion"], o["kind"] = k.api_version, k.kind
        return o

    def items(self, k, ns):
        return [o for (ons, _), o in sorted(self.st.objs.get(k.res, {}).items())
                if not ns or ons == ns]

    def list(self, h, k, ns, query):
        try:
            items = [o for o in self.items(k, ns) if selected(o, query)]
        except (KeyError, ValueError) as e:
            return h.fail(400, "BadRequest", '"%s" is not a known field selector' % e.args[0])
        return h.send_json(200, {"kind": k.kind + "List", "apiVersion": k.api_version,
                                 "metadata": {"resourceVersion": str(self.st.rv)},
                                 "items": [{x: y for x, y in o.items()
                                            if x not in ("kind", "apiVersion")} for o in items]})

    # --- writes (the store's lock held) ---
    def check_body(self, h, k, body, ns, name=None):
        if not isinstance(body, dict):
            h.fail(400, "BadRequest", "the body is not a JSON object")
            return False
        if body.get("kind", k.kind) != k.kind:
            h.fail(400, "BadRequest", "the kind %s is not %s" % (body.get("kind"), k.kind))
            return False
        md = body.setdefault("metadata", {})
        if name and md.setdefault("name", name) != name:
            h.fail(400, "BadRequest", "the name of the object (%s) does not match the name on "
                   "the URL (%s)" % (md["name"], name))
            return False
        if k.namespaced and md.setdefault("namespace", ns) != ns:
            h.fail(400, "BadRequest", "the namespace of the object (%s) does not match the "
                   "namespace on the request (%s)" % (md["namespace"], ns))
            return False
        if not k.namespaced:
            md.pop("namespace", None)
        return True

    def create(self, h, k, ns, path, query, body, owned=None):
        if not self.check_body(h, k, body, ns):
            return None
        obj = copy.deepcopy(body)
        md = obj["metadata"]
        if not md.get("name") and md.get("generateName"):
            md["name"] = md["generateName"] + uuid.uuid4().hex[:5]
        if not md.get("name"):
            return h.fail(422, "Invalid", "metadata.name: Required value")
        if (ns, md["name"]) in self.st.objs.get(k.res, {}):
            return h.fail(409, "AlreadyExists", '%s "%s" already exists'
                          % (self.what(k), md["name"]))
        if k.res == CRD and not self.crd_ok(h, obj):
            return None
        for f in SERVER_SET:
            md.pop(f, None)
        if k.has_status:
            obj.pop("status", None)  # a create never sets status
        if owned is None:
            owned = {(self.manager(h, query), "Update"): applied_fields(obj, k.has_status)}
        set_managers(obj, owned, None, k.api_version)
        md.update(uid=str(uuid.uuid4()), creationTimestamp=now(), generation=1)
        self.st.record(h.command, path, body)
        return self.commit(h, k, None, obj, 201)

    def commit(self, h, k, cur, obj, code=200):
        """Stores obj (cur: what was there) with a new resourceVersion and its event."""
        obj.pop("apiVersion", None)  # stored without them: out() says which version is asked
        obj.pop("kind", None)
        md = obj["metadata"]
        if k.res == CRD:
            self.crd_established(obj, cur)
        if cur is not None:
            cm = cur["metadata"]
            md.update(uid=cm["uid"], creationTimestamp=cm["creationTimestamp"],
                      generation=cm.get("generation", 1), resourceVersion=cm["resourceVersion"])
            if "deletionTimestamp" in cm:
                md["deletionTimestamp"] = cm["deletionTimestamp"]
            if obj == cur:
                return h.send_json(code, self.out(k, cur))  # nothing changed: nothing stored
            strip = lambda o: {x: y for x, y in o.items() if x not in ("metadata", "status")}
            if strip(obj) != strip(cur):
                md["generation"] = cm.get("generation", 1) + 1
            if "deletionTimestamp" in md and not md.get("finalizers"):
                return self.remove(h, k, cur)
        md["resourceVersion"] = self.st.next_rv()
        self.st.objs.setdefault(k.res, {})[(md.get("namespace", ""), md["name"])] = obj
        self.st.event("MODIFIED" if cur is not None else "ADDED", obj, k.res)
        if k.res == CRD:
            self.serve_crd(obj)
        return h.send_json(code, self.out(k, obj))

    @staticmethod
    def manager(h, query):
        return query.get("fieldManager") or \
            (h.headers.get("User-Agent") or "unknown").split("/")[0]

    def updated(self, h, k, sub, path, query, cur, obj, logged):
        """A PUT or PATCH result: only status for /status, never status otherwise."""
        if sub == "status":
            new = copy.deepcopy(cur)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            obj = new
        elif k.has_status:
            obj.pop("status", None)
            if "status" in cur:
                obj["status"] = copy.deepcopy(cur["status"])
        owned = managers(cur)
        changed = {p for p in leaves(obj) | leaves(cur) if lookup(obj, p) != lookup(cur, p)
                   and not (p[0] == "metadata" and p[1:2] and p[1] in SERVER_SET)}
        for key in owned:
            owned[key] -= changed
        m = (self.manager(h, query), "Update")
        owned[m] = owned.get(m, set()) | {p for p in changed if lookup(obj, p) is not KeyError}
        set_managers(obj, owned, cur, k.api_version)
        self.st.record(h.command, path, logged)
        return self.commit(h, k, cur, obj)

    def replace(self, h, k, name, sub, path, query, cur, body):
        ns = cur["metadata"].get("namespace", "")
        if not self.check_body(h, k, body, ns, name):
            return None
        rv = body["metadata"].get("resourceVersion")
        if rv and rv != cur["metadata"]["resourceVersion"]:
            return self.conflict(h, k, name)
        return self.updated(h, k, sub, path, query, cur, copy.deepcopy(body), body)

    def conflict(self, h, k, name):
        return h.fail(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object '
                      'has been modified; please apply your changes to the latest version and '
                      'try again' % (self.what(k), name))

    def patch(self, h, k, name, sub, path, query, cur, body):
        obj, err = patched(h.headers.get("Content-Type", ""), cur, body)
        if err:
            return h.fail(*err)
        if obj.get("metadata", {}).get("resourceVersion") != cur["metadata"]["resourceVersion"]:
            return self.conflict(h, k, name)
        md = obj.setdefault("metadata", {})
        md["name"] = name
        if k.namespaced:
            md["namespace"] = cur["metadata"]["namespace"]
        return self.updated(h, k, sub, path, query, cur, obj, body)

    def apply(self, h, k, ns, name, sub, path, query, cur, body):
        manager = query.get("fieldManager")
        if not manager:
            return h.fail(400, "BadRequest", "PATCH requests with apply content type require "
                          "fieldManager to be set")
        if not self.check_body(h, k, body, ns, name):
            return None
        if cur is None and sub:
            return h.fail(404, "NotFound", '%s "%s" not found' % (self.what(k), name))
        try:
            obj, owned = server_side_apply(cur, body, manager, query.get("force") == "true",
                                           k.has_status and sub != "status")
        except ValueError as e:
            return h.fail(409, "Conflict", str(e))
        if cur is None:
            return self.create(h, k, ns, path, query, obj, owned)
        if sub == "status" or k.has_status:
            keep = copy.deepcopy(cur) if sub == "status" else obj
            keep["status"] = obj.get("status") if sub == "status" else cur.get("status")
            if keep["status"] is None:
                del keep["status"]
            obj = keep
        set_managers(obj, owned, cur, k.api_version)
        self.st.record("PATCH", path, body)
        return self.commit(h, k, cur, obj)

    def delete(self, h, k, path, cur):
        self.st.record("DELETE", path, None)
        md = cur["metadata"]
        if md.get("finalizers"):  # the object stays until its finalizers are gone
            if "deletionTimestamp" in md:
                return h.send_json(200, self.out(k, cur))
            obj = copy.deepcopy(cur)
            obj["metadata"].update(deletionTimestamp=now(), resourceVersion=self.st.next_rv())
            self.st.objs[k.res][(md.get("namespace", ""), md["name"])] = obj
            self.st.event("MODIFIED", obj, k.res)
            return h.send_json(200, self.out(k, obj))
        return self.remove(h, k, cur)

    def evict(self, h, k, ns, name, path, body):
        """pods/NAME/eviction as the API server's eviction REST does: a pod that is not
        Running, or already being deleted, is deleted at once; otherwise the one
        PodDisruptionBudget selecting it (matchLabels) must allow a disruption (429 if not,
        500 for more than one), and the eviction takes one from its status."""
        if not isinstance(body, dict) or body.get("kind") != "Eviction" or \
                (body.get("metadata") or {}).get("name") != name:
            return h.fail(400, "BadRequest", "name in URL does not match name in Eviction object")
        cur = self.st.objs.get(k.res, {}).get((ns, name))
        if not cur:
            return h.fail(404, "NotFound", 'pods "%s" not found' % name)
        md = cur["metadata"]
        if (cur.get("status") or {}).get("phase") == "Running" and "deletionTimestamp" not in md:
            labels = md.get("labels") or {}
            budgets = [b for (bns, _), b in self.st.objs.get(("policy", "poddisruptionbudgets"),
                                                             {}).items()
                       if bns == ns and all(labels.get(a) == v for a, v in
                                            ((b.get("spec") or {}).get("selector") or {})
                                            .get("matchLabels", {}).items())]
            if len(budgets) > 1:
                return h.fail(500, "InternalError", "This pod has more than one "
                              "PodDisruptionBudget, which the eviction subresource does not "
                              "support.")
            if budgets:
                b = budgets[0]
                st = b.get("status") or {}
                if st.get("disruptionsAllowed", 0) <= 0:
                    return h.fail(429, "TooManyRequests", "Cannot evict pod as it would violate "
                                  "the pod's disruption budget.")
                nb = copy.deepcopy(b)
                nb["status"]["disruptionsAllowed"] = st["disruptionsAllowed"] - 1
                nb["metadata"]["resourceVersion"] = self.st.next_rv()
                self.st.objs[("policy", "poddisruptionbudgets")][(ns, b["metadata"]["name"])] = nb
                self.st.event("MODIFIED", nb, ("policy", "poddisruptionbudgets"))
        self.st.record("POST", path, body)
        self.drop(k.res, cur)
        return h.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                 "status": "Success", "code": 201})

    def remove(self, h, k, cur):
        gone = self.drop(k.res, cur)
        if k.res == CRD:
            self.unserve_crd(cur)
        return h.send_json(200, self.out(k, gone))

    def drop(self, res, cur):
        md = cur["metadata"]
        del self.st.objs[res][(md.get("namespace", ""), md["name"])]
        gone = copy.deepcopy(cur)
        gone["metadata"]["resourceVersion"] = self.st.next_rv()
        self.st.event("DELETED", gone, res)
        return gone

    # --- CustomResourceDefinitions ---
    def crd_ok(self, h, crd):
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        want = "%s.%s" % (names.get("plural"), spec.get("group"))
        if crd["metadata"]["name"] != want or not names.get("kind") or not spec.get("versions"):
            h.fail(422, "Invalid", 'CustomResourceDefinition.apiextensions.k8s.io "%s" is '
                   'invalid: metadata.name: must be spec.names.plural+"."+spec.group (%s), '
                   'with spec.names.kind and spec.versions' % (crd["metadata"]["name"], want))
            return False
        return True

    @staticmethod
    def crd_established(crd, cur):
        """What the apiextensions controllers set at once here."""
        spec = crd.get("spec") or {}
        crd["status"] = {
            "acceptedNames": spec.get("names") or {},
            "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
            "conditions": [{"type": t, "status": "True", "reason": r, "message": m,
                            "lastTransitionTime": now()} for t, r, m in (
                ("NamesAccepted", "NoConflicts", "no conflicts found"),
                ("Established", "InitialNamesAccepted", "the initial names have been accepted"))]}
        for c, old in zip(crd["status"]["conditions"],
                          ((cur or {}).get("status") or {}).get("conditions") or []):
            c["lastTransitionTime"] = old.get("lastTransitionTime", c["lastTransitionTime"])

    def serve_crd(self, crd):
        name = crd["metadata"]["name"]
        for key in [key for key, k in self.kinds.items() if k.crd == name]:
            del self.kinds[key]
        spec = crd["spec"]
        for v in spec.get("versions") or []:
            if v.get("served"):
                self.add(Kind(spec["group"], v["name"], spec["names"]["plural"],
                              spec["names"]["kind"], spec.get("scope") == "Namespaced",
                              "status" in (v.get("subresources") or {}), name))

    def unserve_crd(self, crd):
        """The real server deletes a CRD's objects first, each with its DELETED event."""
        spec = crd["spec"]
        res = (spec["group"], spec["names"]["plural"])
        for o in list(self.st.objs.get(res, {}).values()):
            self.drop(res, o)
        self.st.objs.pop(res, None)
        for key in [key for key, k in self.kinds.items() if k.crd == crd["metadata"]["name"]]:
            del self.kinds[key]
