#!/usr/bin/env python3
"""The operator's own RBAC (deployments/operator/rbac.yaml, or any file of Roles and ClusterRoles)
against the rules docs/security.md states: no wildcard; no Namespace delete (the garbage
collector removes the stack's namespace, never the operator); `escalate` and `bind` only on
roles named by resourceNames; nothing on Secrets. Prints one line per finding, exit 1 when any."""
import sys

import yaml


def findings(docs):
    out = []
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
