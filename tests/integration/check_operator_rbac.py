#!/usr/bin/env python3
"""The operator's own RBAC (deployments/operator/rbac.yaml, or any file of Roles and ClusterRoles)
against the rules docs/security.md states: no wildcard; no Namespace delete; no `escalate`;
`bind` only on roles named by resourceNames, none of which it may write; no write to a
namespaced kind through a ClusterRole (a Role in the namespace instead); nothing on Secrets.
Prints one line per finding, exit 1 when any."""
import sys

import yaml

WRITES = {"create", "update", "patch", "delete", "deletecollection"}
# the namespaced kinds the operator's tree holds, and the ones it must never write cluster-wide
NAMESPACED = {"configmaps", "services", "serviceaccounts", "pods", "secrets", "daemonsets",
              "deployments", "roles", "rolebindings", "leases", "servicemonitors", "podmonitors",
              "prometheusrules"}


def writable_roles(docs):
    """{resource: set of names, or None for every one} of roles these rules may write."""
    out = {}
    for o in docs:
        for r in o.get("rules") or [] if o.get("kind") in ("ClusterRole", "Role") else []:
            if not set(r.get("verbs") or []) & WRITES:
                continue
            for res in set(r.get("resources") or []) & {"clusterroles", "roles"}:
                names = r.get("resourceNames")
                if not names or out.get(res, set()) is None:
                    out[res] = None
                else:
                    out.setdefault(res, set()).update(names)
    return out


def findings(docs):
    out = []
    roles = writable_roles(docs)

    def writable(res):
        return roles.get(res, set())
    for o in docs:
        if o.get("kind") not in ("ClusterRole", "Role"):
            continue
        name = f"{o['kind']}/{o['metadata']['name']}"
        for r in o.get("rules") or []:
            groups, resources, verbs = (set(r.get(k) or []) for k in ("apiGroups", "resources", "verbs"))
            if "*" in groups | resources | verbs:
                out.append(f"{name}: wildcard in {sorted(groups)} {sorted(resources)} {sorted(verbs)}")
            if "" in groups and "namespaces" in resources and "delete" in verbs:
                out.append(f"{name}: may delete Namespaces")
            if verbs & {"escalate", "bind"} and not r.get("resourceNames"):
                out.append(f"{name}: {sorted(verbs & {'escalate', 'bind'})} on every role, not on named ones")
            if "escalate" in verbs:
                out.append(f"{name}: escalate: may write roles granting what it does not hold")
            if "bind" in verbs:
                for res in resources & {"clusterroles", "roles"}:
                    w = writable(res)
                    both = set(r.get("resourceNames") or []) if w is None else \
                        set(r.get("resourceNames") or []) & w
                    if both:
                        out.append(f"{name}: binds {res} {sorted(both)}, which it may also write")
            if o["kind"] == "ClusterRole" and verbs & WRITES and resources & NAMESPACED:
                out.append(f"{name}: writes namespaced {sorted(resources & NAMESPACED)} in every "
                           "namespace (a Role in the namespace instead)")
            if "" in groups and "secrets" in resources:
                out.append(f"{name}: grants {sorted(verbs)} on Secrets")
    return out


def main(path):
    with open(path) as f:
        bad = findings([d for d in yaml.safe_load_all(f) if d])
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
