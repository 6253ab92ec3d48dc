#!/usr/bin/env python3
"""check_manifests.py RENDERED.yaml IMAGES.txt [--deviceclass-version V] [--deviceclasses FILE] [--add-on]
                     [--namespace NS]

Checks every object `kubectl kustomize` rendered: its kind is served by the apiVersion it
names, it has the fields that kind requires, and what it references exists: ServiceAccounts,
ConfigMaps (and their keys), ClusterRoles, the DaemonSets a Service selects, images (each one
`make print-images` lists); and least privilege, daemon by daemon: who may run privileged or
mount the host's root, how far host paths reach, that no pod gets a service-account token it
never uses, that RBAC grants no verb the daemons do not call, and that the ResourceSlice
writes are held to the writer's own node by a ValidatingAdmissionPolicy. Prints one line per
problem; exit 1 if any.
--add-on: a folder applied beside deployments/ (npd/), so without the Namespace object; its
images may also be upstream ones pinned to a release (UPSTREAM_REGISTRIES).
--namespace NS: namespaced objects may also be in NS (inference/: the EPP in its pool's
namespace), and so may the ServiceAccounts bindings name."""
import sys
import yaml

NAMESPACED = {"ServiceAccount", "ConfigMap", "Service", "DaemonSet", "Deployment", "Role",
              "RoleBinding"}
KINDS = {
    ("v1", "Namespace"), ("v1", "ServiceAccount"), ("v1", "ConfigMap"), ("v1", "Service"),
    ("apps/v1", "DaemonSet"), ("apps/v1", "Deployment"), ("node.k8s.io/v1", "RuntimeClass"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("resource.k8s.io/v1", "DeviceClass"), ("resource.k8s.io/v1beta1", "DeviceClass"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
}
NS = "enflame-system"
GPU_LABEL = ("enflame.com/gpu.present", "true")
# the labeler sets GPU_LABEL, so it must run without it (bootstrap)
BOOTSTRAP = {"enflame-feature-discovery"}
# daemons whose readiness is probed (the installer: toolkit status; the exporter: /healthz)
# (the EPP, a Deployment off the GPU nodes, is held to check_hardened)
PROBED = {"enflame-toolkit-installer", "enflame-gcu-exporter", "enflame-epp"}

# roles the API server creates itself (bootstrap policy)
BUILTIN_ROLES = {"system:node-problem-detector"}
# upstream images a folder may run, pinned to a release tag (never :latest or untagged)
UPSTREAM_REGISTRIES = ("registry.k8s.io/",)
# Least privilege. Only these daemons may run privileged, each for the reason its manifest
# gives in a comment (deployments.bats checks the comment): the installer writes the host's
# /etc and signals the engine; the plugins and the labeler open every card's device node, present
# and future, and cannot get them from the runtime (they run before or beside it). Everyone
# else (the exporter: the runtime hands it the cards) runs unprivileged.
# (npd/, an add-on: NPD reads /dev/kmsg and its GCU checks open every card, as upstream's own
# NPD DaemonSet runs privileged.)
PRIVILEGED = {"enflame-toolkit-installer", "enflame-device-plugin", "enflame-feature-discovery",
              "enflame-dra-plugin", "enflame-drs-manager", "enflame-npd"}
# capabilities an unprivileged daemon may add, and only these: the exporter asks for every card
# by env, which the toolkit's runtime honours only where CAP_SYS_ADMIN is in the bounding set
# (accept-envvar-when-unprivileged = false: any pod could set the env)
ADDED_CAPS = {"enflame-gcu-exporter": {"SYS_ADMIN"}}
# who may mount the host's / (read-only), and who may write it
# (the NRI plugin, unprivileged, reads the host's / to find the driver's libraries whose host
# paths its adjustment names; the runtime, not the plugin, mounts them)
HOST_ROOT = PRIVILEGED | {"enflame-nri-plugin"}
HOST_ROOT_RW = {"enflame-toolkit-installer"}
# host folders of our own an unprivileged daemon may write, and only that one: the NRI plugin
# creates its liveness lock there (k8s/nri_lock.hpp), which the device plugin only reads
OWN_RW = {("enflame-nri-plugin", "/var/run/enflame")}
# host folders shared with other software: never mounted whole (other drivers' and CSI
# sockets, every pod's volumes)
SHARED_DIRS = {"/var/lib/kubelet", "/var/lib/kubelet/plugins", "/var/lib/kubelet/pods",
               "/run", "/var/run", "/etc", "/var/lib"}
KUBELET_PLUGINS = "/var/lib/kubelet/plugins/"
DRIVER = "gcu.enflame.com"
# RBAC: the verbs the daemons call, per (apiGroup, resource), as an upper bound: a role may
# grant fewer, never more, and nothing else (the DRA plugin GETs the claim kubelet names, lists
# its node's slices by fieldSelector and watches them, re-reads one on a conflict, creates,
# updates and deletes them; it GETs its Node for the slices' owner; the device plugin in HAMi
# mode, overlays/hami, lists its node's pods and patches HAMi's annotations on them, annotates
# its Node and sets its capacity, and posts an event when an allocation fails; the DRS manager
# watches its Node and patches its state label, watches the layouts ConfigMap, posts events,
# and with its evict policy evicts the pods blocking a layout (never deletes them); the EPP lists and watches its InferencePool, the pods of its namespace, its InferenceObjectives and InferenceModelRewrites and the exporters').
# No wildcard.
VERBS = {
    ("resource.k8s.io", "resourceclaims"): {"get"},
    ("resource.k8s.io", "resourceslices"): {"get", "list", "watch", "create", "update", "delete"},
    ("", "nodes"): {"get", "list", "watch", "patch"},
    ("", "nodes/status"): {"patch"},
    ("", "pods"): {"list", "watch", "patch"},
    ("", "pods/eviction"): {"create"},
    ("inference.networking.k8s.io", "inferencepools"): {"list", "watch"},
    ("inference.networking.x-k8s.io", "inferenceobjectives"): {"list", "watch"},
    ("inference.networking.x-k8s.io", "inferencemodelrewrites"): {"list", "watch"},
    ("", "configmaps"): {"get", "list", "watch"},
    ("", "events"): {"create"},
}
NODE_EXTRA = "authentication.kubernetes.io/node-name"

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


def workloads(by_kind):
    return by_kind.get("DaemonSet", []) + by_kind.get("Deployment", [])


def check_hardened(o):
    """a Deployment's pod: non-root, read-only root, no capability, RuntimeDefault seccomp."""
    pod = pod_of(o)
    psc = pod.get("securityContext") or {}
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        sc = c.get("securityContext") or {}
        if not (sc.get("runAsNonRoot") or psc.get("runAsNonRoot")):
            bad(o, f"container {c['name']}: not runAsNonRoot")
        if sc.get("readOnlyRootFilesystem") is not True:
            bad(o, f"container {c['name']}: root filesystem not read-only")
        if (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
            bad(o, f"container {c['name']}: capabilities not dropped (drop: [ALL])")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp != "RuntimeDefault":
            bad(o, f"container {c['name']}: seccompProfile {seccomp}, want RuntimeDefault")
    if any("hostPath" in v for v in pod.get("volumes", [])) or pod.get("hostNetwork"):
        bad(o, "a Deployment with host access")


def pod_of(ds):
    return ds.get("spec", {}).get("template", {}).get("spec", {}) or {}


def check_privilege(by_kind):
    """privileged, host root and host path scope, per daemon."""
    for o in workloads(by_kind):
        name, pod = o["metadata"]["name"], pod_of(o)
        host = {v["name"]: v["hostPath"]["path"].rstrip("/") or "/"
                for v in pod.get("volumes", []) if "hostPath" in v}
        for c in pod.get("containers", []) + pod.get("initContainers", []):
            sc = c.get("securityContext") or {}
            if sc.get("privileged") and name not in PRIVILEGED:
                bad(o, f"container {c['name']}: privileged, which this daemon does not need")
            if name not in PRIVILEGED and sc.get("allowPrivilegeEscalation") is not False:
                bad(o, f"container {c['name']}: unprivileged daemon without allowPrivilegeEscalation: false")
            added = set((sc.get("capabilities") or {}).get("add") or []) - ADDED_CAPS.get(name, set())
            if name not in PRIVILEGED and added:
                bad(o, f"container {c['name']}: adds capabilities {sorted(added)}, which this daemon does not need")
            for m in c.get("volumeMounts", []):
                path = host.get(m["name"])
                if path is None:
                    continue
                ro = bool(m.get("readOnly"))
                if path == "/":
                    if name not in HOST_ROOT:
                        bad(o, f"mounts the host's / ({m['mountPath']}), which this daemon does not need")
                    elif not ro and name not in HOST_ROOT_RW:
                        bad(o, f"mounts the host's / writable at {m['mountPath']}")
                elif path in SHARED_DIRS:
                    bad(o, f"mounts all of the host's {path}: only the folder it needs")
                elif path.startswith(KUBELET_PLUGINS) and path != KUBELET_PLUGINS + DRIVER:
                    bad(o, f"mounts {path}: another driver's plugin folder")
                elif name not in PRIVILEGED and not ro and (name, path) not in OWN_RW:
                    bad(o, f"unprivileged daemon mounts the host's {path} writable")


def bound_accounts(by_kind):
    """ServiceAccount names some (Cluster)RoleBinding gives a role."""
    return {s.get("name") for b in by_kind.get("ClusterRoleBinding", []) + by_kind.get("RoleBinding", [])
            for s in b.get("subjects", []) or [] if s.get("kind") == "ServiceAccount"}


def check_rbac(by_kind):
    """token automount, RBAC breadth, the node-scoped admission policy."""
    bound = bound_accounts(by_kind)
    for o in workloads(by_kind):
        pod = pod_of(o)
        sa = pod.get("serviceAccountName") or "default"
        automount = pod.get("automountServiceAccountToken")
        if sa not in bound and automount is not False:
            bad(o, f"service account {sa} has no role, but the pod mounts its token: "
                   "automountServiceAccountToken: false")
        if sa in bound and automount is False:
            bad(o, f"service account {sa} has a role, but the pod mounts no token to use it")
    writers = {}
    for o in by_kind.get("ClusterRole", []) + by_kind.get("Role", []):
        for r in o.get("rules", []) or []:
            verbs = set(r.get("verbs", []))
            for g in r.get("apiGroups", []):
                for res in r.get("resources", []):
                    if "*" in (g, res) or "*" in verbs:
                        bad(o, f"wildcard in a rule ({g!r}, {res!r}, {sorted(verbs)})")
                        continue
                    allowed = VERBS.get((g, res))
                    if allowed is None:
                        bad(o, f"grants {res} ({g or 'core'}), which no daemon uses")
                    elif verbs - allowed:
                        bad(o, f"grants {sorted(verbs - allowed)} on {res}, which no daemon calls")
                    if res == "resourceslices" and verbs & {"create", "update", "delete"}:
                        writers.setdefault(o["metadata"]["name"], (o, set()))[1].add(("resource.k8s.io", res))
                    if res in ("pods", "nodes", "nodes/status") and verbs & {"create", "update", "patch", "delete"}:
                        writers.setdefault(o["metadata"]["name"], (o, set()))[1].add(("", res))
    for role, written in writers.values():
        for b in by_kind.get("ClusterRoleBinding", []) + by_kind.get("RoleBinding", []):
            if b.get("roleRef", {}).get("name") != role["metadata"]["name"]:
                continue
            for s in b.get("subjects", []) or []:
                for group, res in sorted(written):
                    if not node_scoped(by_kind, s.get("name", ""), group, res):
                        bad(role, f"lets {s.get('name')} write {res} of every node: no "
                                  "ValidatingAdmissionPolicy (with a Deny binding) holds it to its own node")


def node_scoped(by_kind, account, group, resource):
    """Whether a ValidatingAdmissionPolicy bound with Deny matches writes of `resource` by
    `account` and compares the object's node with the requester's."""
    denied = {b.get("spec", {}).get("policyName") for b in by_kind.get("ValidatingAdmissionPolicyBinding", [])
              if "Deny" in (b.get("spec", {}).get("validationActions") or [])}
    for p in by_kind.get("ValidatingAdmissionPolicy", []):
        spec = p.get("spec", {})
        if p["metadata"]["name"] not in denied:
            continue
        ops = set()
        for r in spec.get("matchConstraints", {}).get("resourceRules", []):
            if resource in r.get("resources", []) and group in r.get("apiGroups", []):
                ops |= set(r.get("operations", []))
        who = " ".join(c.get("expression", "") for c in spec.get("matchConditions", []))
        text = " ".join(str(x.get("expression", "")) for x in spec.get("variables", []) + spec.get("validations", []))
        # the object's node: a pod's or a slice's spec.nodeName, a Node's own name
        names_node = "nodeName" in text or (resource == "nodes" and "metadata.name" in text)
        if ({"CREATE", "UPDATE", "DELETE"} <= ops or "*" in ops) and account in who \
                and NODE_EXTRA in text and names_node and spec.get("failurePolicy", "Fail") == "Fail":
            return True
    return False


def main():
    args = sys.argv[1:]
    rendered, images_file = args[0], args[1]
    dc_version = dc_file = None
    if "--deviceclass-version" in args:
        dc_version = args[args.index("--deviceclass-version") + 1]
    if "--deviceclasses" in args:
        dc_file = args[args.index("--deviceclasses") + 1]
    namespaces = {NS}
    if "--namespace" in args:
        namespaces.add(args[args.index("--namespace") + 1])
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
        if o["kind"] in NAMESPACED and ns not in namespaces:
            bad(o, f"namespace {ns!r}, want {' or '.join(sorted(namespaces))}")
        if o["kind"] not in NAMESPACED and ns is not None:
            bad(o, "cluster-scoped object with a namespace")

    if "--add-on" not in args and names.get("Namespace") != {NS}:
        problems.append(f"Namespace objects {names.get('Namespace')}, want exactly {NS}")

    for o in by_kind.get("RuntimeClass", []):
        if o.get("handler") != "enflame" or o["metadata"]["name"] != "enflame":
            bad(o, "want name and handler 'enflame'")

    for o in workloads(by_kind):
        name = o["metadata"]["name"]
        sel = need(o, "spec.selector.matchLabels") or {}
        pod = need(o, "spec.template.spec") or {}
        labels = o["spec"]["template"].get("metadata", {}).get("labels", {})
        if any(labels.get(k) != v for k, v in sel.items()):
            bad(o, f"selector {sel} does not match the template's labels {labels}")
        sa = pod.get("serviceAccountName")
        if sa and sa not in names.get("ServiceAccount", set()):
            bad(o, f"serviceAccountName {sa}: no such ServiceAccount")
        if o["kind"] == "Deployment":
            check_hardened(o)
        else:  # a node daemon: on the GPU nodes, through their taint, with a priority
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
                   for d in workloads(by_kind)):
            bad(o, f"selector {sel} matches no DaemonSet or Deployment")

    for o in by_kind.get("ClusterRoleBinding", []) + by_kind.get("RoleBinding", []):
        ref = need(o, "roleRef") or {}
        if ref.get("name") not in names.get(ref.get("kind"), set()) | BUILTIN_ROLES:
            bad(o, f"roleRef {ref.get('kind')}/{ref.get('name')}: no such object")
        for s in need(o, "subjects") or []:
            if s.get("kind") == "ServiceAccount" and (
                    s.get("name") not in names.get("ServiceAccount", set()) or s.get("namespace") not in namespaces):
                bad(o, f"subject ServiceAccount {s.get('namespace')}/{s.get('name')}: no such account")

    for o in by_kind.get("ClusterRole", []) + by_kind.get("Role", []):
        need(o, "rules")

    for o in by_kind.get("CustomResourceDefinition", []):
        group, plural = need(o, "spec.group"), need(o, "spec.names.plural")
        if o["metadata"]["name"] != f"{plural}.{group}":
            bad(o, f"name must be {plural}.{group}")
        if [v.get("storage") for v in need(o, "spec.versions") or []].count(True) != 1:
            bad(o, "want exactly one storage version")
        if group and (group == "k8s.io" or group.endswith(".k8s.io")) and \
                not o["metadata"].get("annotations", {}).get("api-approved.kubernetes.io"):
            bad(o, "a *.k8s.io group without the api-approved.kubernetes.io annotation")

    check_privilege(by_kind)
    check_rbac(by_kind)

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
