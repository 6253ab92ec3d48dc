# SPDX-License-Identifier: Apache-2.0
"""The RBAC authorizer of fake_apiserver.py, for a token given with --rbac-user TOKEN=USER (the
admin token and client certificates stay unrestricted, as system:masters is). As kube-apiserver:

  Request attributes from the path: group, resource, subresource, namespace, name; the verb from
  the method (GET: get, list, or watch with ?watch; POST create; PUT update; PATCH patch; DELETE
  delete). Discovery and /version are open to every authenticated user (system:discovery).
  Subjects: User USER; a ServiceAccount system:serviceaccount:NS:NAME; the groups
  system:authenticated, system:serviceaccounts and system:serviceaccounts:NS. A ClusterRoleBinding
  grants its ClusterRole's rules everywhere; a RoleBinding grants its Role's or ClusterRole's
  rules in its namespace alone. A rule with resourceNames never matches a create or a list.
  Escalation prevention: writing a Role or ClusterRole needs `escalate` on it, or every rule it
  holds (in that namespace, or cluster-wide); writing a binding needs `bind` on its role, or every
  rule of that role. Built-in roles a cluster has (cluster-admin, system:node-problem-detector) are known.
Not modelled: aggregated ClusterRoles, non-resource URL rules beyond discovery, field-selector
names on list/watch, a patch that is not the whole object (its roleRef/rules are checked as
sent)."""

RBAC = "rbac.authorization.k8s.io"
VERB_OF = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
BUILTIN_ROLES = {
    "cluster-admin": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    "system:node-problem-detector": [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
         "verbs": ["create", "patch", "update"]},
    ],
}


def attributes(verb, parts, query):
    """(group, resource, namespace, name, verb) of a resource request; None for discovery."""
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    if not rest:
        return None
    ns = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns, rest = rest[1], rest[2:]
    res, name = rest[0], rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        res += "/" + rest[2]
    if res == "namespaces" and name:
        ns = name
    if verb == "GET":
        v = "get" if name else ("watch" if query.get("watch") in ("1", "true") else "list")
    else:
        v = VERB_OF[verb] if name or verb != "DELETE" else "deletecollection"
    return group, res, ns, name, v


def _subject_is(s, user):
    kind = s.get("kind")
    if kind == "User":
        return s.get("name") == user
    if kind == "ServiceAccount":
        return user == "system:serviceaccount:%s:%s" % (s.get("namespace"), s.get("name"))
    if kind == "Group":
        g = s.get("name")
        if g == "system:authenticated":
            return True
        if user.startswith("system:serviceaccount:"):
            return g in ("system:serviceaccounts",
                         "system:serviceaccounts:" + user.split(":")[2])
    return False


def _role_rules(objs, kind, ns, name):
    if kind == "ClusterRole":
        o = objs.get((RBAC, "clusterroles"), {}).get(("", name))
        return o.get("rules") or [] if o else BUILTIN_ROLES.get(name, [])
    o = objs.get((RBAC, "roles"), {}).get((ns, name))
    return o.get("rules") or [] if o else []


def rules_of(objs, user, ns):
    """The rules that hold for USER in namespace NS ("": cluster-wide ones only)."""
    out = []
    for (_, _), b in objs.get((RBAC, "clusterrolebindings"), {}).items():
        if any(_subject_is(s, user) for s in b.get("subjects") or []):
            out += _role_rules(objs, "ClusterRole", "", b["roleRef"]["name"])
    if ns:
        for (bns, _), b in objs.get((RBAC, "rolebindings"), {}).items():
            if bns == ns and any(_subject_is(s, user) for s in b.get("subjects") or []):
                out += _role_rules(objs, b["roleRef"]["kind"], ns, b["roleRef"]["name"])
    return out


def _has(vals, v):
    return "*" in vals or v in vals


def allows(rules, group, res, name, verb):
    for r in rules:
        if not (_has(r.get("apiGroups") or [], group) and _has(r.get("verbs") or [], verb)):
            continue
        rs = r.get("resources") or []
        if not (_has(rs, res) or ("/" in res and "*/" + res.split("/", 1)[1] in rs)):
            continue
        names = r.get("resourceNames") or []
        if names and (not name or name not in names):
            continue
        return True
    return False


def covered(have, rules):
    """Every permission RULES grant is granted by HAVE (escalation prevention)."""
    for r in rules:
        for g in r.get("apiGroups") or []:
            for res in r.get("resources") or []:
                for v in r.get("verbs") or []:
                    for n in r.get("resourceNames") or [""]:
                        if not allows(have, g, res, n, v):
                            return "%s %s.%s%s" % (v, res, g or "core",
                                                   " " + n if n else "")
    return None


def forbidden(objs, user, verb, parts, query, body):
    """None when USER may make this request; else the API server's message."""
    a = attributes(verb, parts, query)
    if a is None:
        return None
    group, res, ns, name, v = a
    have = rules_of(objs, user, ns)
    if not allows(have, group, res, name, v):
        where = 'in the namespace "%s"' % ns if ns else "at the cluster scope"
        return ('%s "%s" is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s'
                % (res, name, user, v, res, group, where))
    if group != RBAC or v not in ("create", "update", "patch") or not isinstance(body, dict):
        return None
    obj_name = name or (body.get("metadata") or {}).get("name", "")
    if res in ("roles", "clusterroles") and "rules" in body:
        if allows(have, RBAC, res, obj_name, "escalate"):
            return None
        missing = covered(have, body.get("rules") or [])
        if missing:
            return ('%s "%s" is forbidden: user "%s" is attempting to grant RBAC permissions '
                    "not currently held: %s" % (res, obj_name, user, missing))
    if res in ("rolebindings", "clusterrolebindings") and "roleRef" in body:
        ref = body["roleRef"]
        ref_res = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
        if allows(have, RBAC, ref_res, ref.get("name", ""), "bind"):
            return None
        missing = covered(have, _role_rules(objs, ref.get("kind"), ns, ref.get("name", "")))
        if missing:
            return ('%s "%s" is forbidden: user "%s" is attempting to grant RBAC permissions '
                    "not currently held: %s" % (res, obj_name, user, missing))
    return None
