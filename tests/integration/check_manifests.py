#!/usr/bin/env python3
"""check_manifests.py RENDERED.yaml IMAGES.txt [--deviceclass-version V] [--deviceclasses FILE] [--add-on]

Checks every object `kubectl kustomize` rendered: its kind is served by the apiVersion it
names, it has the fields that kind requires, and what it references exists: ServiceAccounts,
ConfigMaps (and their keys), ClusterRoles, the DaemonSets a Service selects, images (each one
`make print-images` lists, or an upstream one pinned to a version: UPSTREAM_REGISTRIES).
--add-on: a folder applied beside deployments/ (npd/), so without the Namespace object. Prints one line per problem; exit 1 if any."""
import sys
import yaml

NAMESPACED = {"ServiceAccount", "ConfigMap", "Service", "DaemonSet", "Role", "RoleBinding"}
KINDS = {
    ("v1", "Namespace"), ("v1", "ServiceAccount"), ("v1", "ConfigMap"), ("v1", "Service"),
    ("apps/v1", "DaemonSet"), ("node.k8s.io/v1", "RuntimeClass"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("resource.k8s.io/v1", "DeviceClass"), ("resource.k8s.io/v1beta1", "DeviceClass"),
}
NS = "enflame-system"
GPU_LABEL = ("enflame.com/gpu.present", "true")
# the labeler sets GPU_LABEL, so it must run without it (bootstrap)
BOOTSTRAP = {"enflame-feature-discovery"}
# daemons whose readiness is probed (the installer: toolkit status; the exporter: /healthz)
PROBED = {"enflame-toolkit-installer", "enflame-gcu-exporter"}

# roles the API server creates itself (bootstrap policy)
BUILTIN_ROLES = {"system:node-problem-detector"}
# upstream images a folder may run, pinned to a release tag (never :latest or untagged)
UPSTREAM_REGISTRIES = ("registry.k8s.io/",)

problems = []


def image_ok(image, images):
    if image in images:
        return True
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    return image.startswith(UPSTREAM_REGISTRIES) and tag.startswith("v") and tag[1:2].isdigit()


def bad(obj, what):
    problems.append(f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}: {what}")


def need(obj, path):
    cur = obj
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur or cur[key] in (None, "", [], {}):
            bad(obj, f"missing {path}")
            return None
        cur = cur[key]
    return cur


def main():
    args = sys.argv[1:]
    rendered, images_file = args[0], args[1]
    dc_version = dc_file = None
    if "--deviceclass-version" in args:
        dc_version = args[args.index("--deviceclass-version") + 1]
    if "--deviceclasses" in args:
        dc_file = args[args.index("--deviceclasses") + 1]
    images = set(open(images_file).read().split())
    objs = [o for o in yaml.safe_load_all(open(rendered)) if o]
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o.get("kind"), []).append(o)
    names = {k: {o["metadata"]["name"] for o in v} for k, v in by_kind.items()}
    configmaps = {o["metadata"]["name"]: o.get("data", {}) for o in by_kind.get("ConfigMap", [])}

    for o in objs:
        if (o.get("apiVersion"), o.get("kind")) not in KINDS:
            bad(o, f"apiVersion {o.get('apiVersion')} kind {o.get('kind')}: not one we ship")
            continue
        need(o, "metadata.name")
        ns = o["metadata"].get("namespace")
        if o["kind"] in NAMESPACED and ns != NS:
            bad(o, f"namespace {ns!r}, want {NS}")
        if o["kind"] not in NAMESPACED and ns is not None:
            bad(o, "cluster-scoped object with a namespace")

    if "--add-on" not in args and names.get("Namespace") != {NS}:
        problems.append(f"Namespace objects {names.get('Namespace')}, want exactly {NS}")

    for o in by_kind.get("RuntimeClass", []):
        if o.get("handler") != "enflame" or o["metadata"]["name"] != "enflame":
            bad(o, "want name and handler 'enflame'")

    for o in by_kind.get("DaemonSet", []):
        name = o["metadata"]["name"]
        sel = need(o, "spec.selector.matchLabels") or {}
        pod = need(o, "spec.template.spec") or {}
        labels = o["spec"]["template"].get("metadata", {}).get("labels", {})
        if any(labels.get(k) != v for k, v in sel.items()):
            bad(o, f"selector {sel} does not match the template's labels {labels}")
        sa = pod.get("serviceAccountName")
        if sa and sa not in names.get("ServiceAccount", set()):
            bad(o, f"serviceAccountName {sa}: no such ServiceAccount")
        nsel = pod.get("nodeSelector", {})
        if name in BOOTSTRAP:
            if GPU_LABEL[0] in nsel:
                bad(o, f"selects {GPU_LABEL[0]}, which it sets itself")
        elif nsel.get(GPU_LABEL[0]) != GPU_LABEL[1]:
            bad(o, f"nodeSelector {nsel}: want {GPU_LABEL[0]}={GPU_LABEL[1]}")
        if not any(t.get("key") == "enflame.com/gcu" for t in pod.get("tolerations", [])):
            bad(o, "no toleration for the enflame.com/gcu taint")
        if not pod.get("priorityClassName"):
            bad(o, "no priorityClassName")
        for v in pod.get("volumes", []):
            cm = v.get("configMap")
            if cm and not cm.get("optional") and cm.get("name") not in configmaps:
                bad(o, f"volume {v['name']}: no ConfigMap {cm.get('name')}")
            for item in (cm or {}).get("items", []):
                if cm.get("name") in configmaps and item["key"] not in configmaps[cm["name"]]:
                    bad(o, f"volume {v['name']}: ConfigMap {cm['name']} has no key {item['key']}")
        for c in (need(o, "spec.template.spec.containers") or []) + pod.get("initContainers", []):
            if not image_ok(c.get("image"), images):
                bad(o, f"container {c.get('name')}: image {c.get('image')} is not one `make images` builds")
            res = c.get("resources", {})
            if "memory" not in res.get("requests", {}) or "memory" not in res.get("limits", {}):
                bad(o, f"container {c.get('name')}: want memory requests and limits")
            if name in PROBED and "readinessProbe" not in c:
                bad(o, f"container {c.get('name')}: no readinessProbe")
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("configMapKeyRef")
                if ref and not ref.get("optional") and ref.get("key") not in configmaps.get(ref.get("name"), {}):
                    bad(o, f"env {e['name']}: no key {ref.get('key')} in ConfigMap {ref.get('name')}")

    for o in by_kind.get("Service", []):
        sel = need(o, "spec.selector") or {}
        need(o, "spec.ports")
        if not any(all(d["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items())
                   for d in by_kind.get("DaemonSet", [])):
            bad(o, f"selector {sel} matches no DaemonSet")

    for o in by_kind.get("ClusterRoleBinding", []) + by_kind.get("RoleBinding", []):
        ref = need(o, "roleRef") or {}
        if ref.get("name") not in names.get(ref.get("kind"), set()) | BUILTIN_ROLES:
            bad(o, f"roleRef {ref.get('kind')}/{ref.get('name')}: no such object")
        for s in need(o, "subjects") or []:
            if s.get("kind") == "ServiceAccount" and (
                    s.get("name") not in names.get("ServiceAccount", set()) or s.get("namespace") != NS):
                bad(o, f"subject ServiceAccount {s.get('namespace')}/{s.get('name')}: no such account")

    for o in by_kind.get("ClusterRole", []) + by_kind.get("Role", []):
        need(o, "rules")

    dcs = by_kind.get("DeviceClass", [])
    for o in dcs:
        for s in need(o, "spec.selectors") or []:
            if not s.get("cel", {}).get("expression"):
                bad(o, "a selector without a CEL expression")
        if dc_version and o["apiVersion"] != dc_version:
            bad(o, f"apiVersion {o['apiVersion']}, want {dc_version}")
    if dc_version and not dcs:
        problems.append("no DeviceClass rendered")
    if dc_file:
        want = [d for d in yaml.safe_load_all(open(dc_file)) if d]
        strip = lambda d: {k: v for k, v in d.items() if k != "metadata"} | {"name": d["metadata"]["name"]}
        got = sorted((strip(d) for d in dcs), key=lambda d: d["name"])
        if got != sorted((strip(d) for d in want), key=lambda d: d["name"]):
            problems.append(f"DeviceClasses differ from {dc_file}")

    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
