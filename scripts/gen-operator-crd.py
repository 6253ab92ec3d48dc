#!/usr/bin/env python3
# gen-operator-crd.py: writes deployments/operator/crd.yaml, the GpuResource CRD
# (gpuresources.enflame.com). The nine components share one schema; writing it out nine times
# by hand invites drift between them, so this script is the source and crd.yaml its output
# (tests/integration/operator.bats checks the two agree). Run it after changing the schema:
#   scripts/gen-operator-crd.py > deployments/operator/crd.yaml
import copy
import sys

import yaml


def s(desc, **kw):
    return {"type": "string", "description": desc, **kw}


def b(desc, default):
    return {"type": "boolean", "description": desc, "default": default}


def string_map(desc):
    return {"type": "object", "description": desc, "additionalProperties": {"type": "string"}}


TOLERATIONS = {
    "type": "array",
    "description": "Tolerations added to the pods (as a pod's spec.tolerations).",
    "maxItems": 32,
    "items": {
        "type": "object",
        "properties": {
            "key": s("The taint key; empty with operator Exists matches every taint."),
            "operator": s("Exists or Equal.", enum=["Exists", "Equal"]),
            "value": s("The taint value (operator Equal).", maxLength=253),
            "effect": s("The taint effect; empty matches every effect.",
                        enum=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
            "tolerationSeconds": {"type": "integer", "format": "int64",
                                  "description": "For NoExecute: how long the pod stays after the taint."},
        },
        "x-kubernetes-validations": [
            {"rule": "!has(self.operator) || self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",
             "message": "a toleration with operator Exists takes no value"}],
    },
}

QUANTITY = {"x-kubernetes-int-or-string": True,
            "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"}


def monitor(kind, what, interval=True):
    """A Prometheus Operator object of deployments/monitoring/operator the CR can ask for."""
    props = {"enabled": b(f"Apply the {kind}.", False),
             "labels": string_map(f"Labels added to the {kind} (e.g. the release label your "
                                  "Prometheus selects).")}
    if interval:
        props["interval"] = s("Scrape interval (a Prometheus duration, e.g. 30s or 1m). Empty: the "
                              "manifest's.", pattern=r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$")
    return {"type": "object", "default": {}, "description": f"{what} (deployments/monitoring/"
            f"operator), applied only where the API server serves monitoring.coreos.com/v1 {kind} "
            "(Prometheus Operator); elsewhere status.components says it was skipped.",
            "properties": props}


def component(what, enabled, extra=None, rules=None):
    props = {
        "enabled": b(f"Deploy {what}.", enabled),
        "repository": s("Image registry and path (e.g. registry.example.com/enflame). Empty: as the "
                        "operator's manifests name it.", maxLength=255,
                        **{"x-kubernetes-validations": [{"rule": "!self.endsWith('/')",
                                                         "message": "must not end with '/'"}]}),
        "image": s("Image name without registry or tag. Empty: as the operator's manifests name it.",
                   pattern=r"^[a-z0-9]+([._-][a-z0-9]+)*$"),
        "version": s("Image tag (or a digest, sha256:...). Empty: as the operator's manifests name it.",
                     maxLength=128,
                     **{"x-kubernetes-validations": [{
                         "rule": "self.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$') || "
                                 "self.matches('^sha256:[a-f0-9]{64}$')",
                         "message": "must be an image tag (letters, digits, '_', '.', '-', at most 128) "
                                    "or sha256:<64 hex digits>"}]}),
        "imagePullPolicy": s("When kubelet pulls the image.", enum=["Always", "IfNotPresent", "Never"]),
        "imagePullSecrets": {"type": "array", "description": "Names of Secrets in the operator's "
                             "namespace holding registry credentials.", "items": {"type": "string"}},
        "args": {"type": "array", "description": "Arguments appended to the container's command.",
                 "items": {"type": "string"}},
        "env": {"type": "array", "description": "Environment variables set in the container (a "
                "variable the manifest sets is replaced).",
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": s("Variable name.", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"),
                    "value": s("Value (plain text).")}},
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
        "resources": {"type": "object", "description": "The container's resources (replaces the manifest's).",
                      "properties": {"limits": {"type": "object", "additionalProperties": QUANTITY,
                                                "description": "Resource limits (cpu, memory)."},
                                     "requests": {"type": "object", "additionalProperties": QUANTITY,
                                                  "description": "Resource requests (cpu, memory)."}}},
        "nodeSelector": string_map("Node labels the pods require (merged over the manifest's)."),
        "tolerations": copy.deepcopy(TOLERATIONS),
        "priorityClassName": s("The pods' PriorityClass (replaces the manifest's)."),
    }
    props.update(extra or {})
    out = {"type": "object", "default": {}, "description": f"{what[0].upper()}{what[1:]}.",
           "properties": props}
    if rules:
        out["x-kubernetes-validations"] = rules
    return out


spec = {
    "type": "object",
    "default": {},
    "description": "What the operator deploys and how.",
    "properties": {
        "toolkit": component("the container toolkit installer (enflame-ctk toolkit install)", True, {
            "runtime": s("The container engine to configure.", default="auto",
                         enum=["auto", "containerd", "crio", "docker"]),
            "setAsDefault": b("Make enflame the engine's default runtime (else pods ask for it with "
                              "runtimeClassName: enflame).", False),
            "acceptEnvvarWhenUnprivileged": {
                "type": "boolean",
                "description": "true: an unprivileged container's ENFLAME_VISIBLE_DEVICES gives it "
                               "cards, as on a single-tenant host (only where every tenant is "
                               "trusted: docs/security.md). Unset: each node keeps its config's "
                               "value, false when first installed."},
            # no `cdi` switch: the installer always writes the CDI spec, which the device
            # plugin's cdi-cri strategy and the DRA driver need (docs/operator.md)
        }, [{"rule": "!has(self.setAsDefault) || !self.setAsDefault || !has(self.enabled) || self.enabled",
             "message": "setAsDefault needs the toolkit enabled"}]),
        "featureDiscovery": component("the node labeler (enflame-feature-discovery)", True),
        "nfd": component("Node Feature Discovery (deployments/nfd: nfd-master, nfd-worker and NFD's "
                         "CRDs, upstream's image; off: use the one already in the cluster)", False),
        "devicePlugin": component("the device plugin (enflame.com/gcu)", True, {
            "sharing": {"type": "object", "description": "Card sharing.", "properties": {
                "timeSlicing": {"type": "object", "description": "Time-slicing: each card "
                                "advertised replicas times.", "required": ["replicas"], "properties": {
                                    "replicas": {"type": "integer", "minimum": 2, "maximum": 64,
                                                 "description": "Shares per card."},
                                    "renameByDefault": b("Advertise shares as enflame.com/gcu.shared.", False)}}}},
            "configs": {"type": "object", "maxProperties": 32,
                        "description": "Named plugin configs (enflame-device-plugin(8), PLUGIN "
                        "CONFIGURATION), each a YAML text: a node labelled "
                        "enflame.com/device-plugin.config=<name> runs with it (the DRS manager "
                        "passes the label on: drsManager must be enabled).",
                        "additionalProperties": {"type": "string", "maxLength": 8192},
                        "x-kubernetes-validations": [{
                            "rule": "self.all(k, k.matches('^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$'))",
                            "message": "a config's name is a label value: letters, digits, '.', "
                                       "'_', '-', alphanumeric at both ends, at most 63"}]},
            "defaultConfig": s("The config of every node without the label: one of configs."),
        }, [{"rule": "!has(self.defaultConfig) || (has(self.configs) && self.defaultConfig in self.configs)",
             "message": "defaultConfig must name one of configs"},
            {"rule": "!has(self.defaultConfig) || !has(self.sharing)",
             "message": "sharing and defaultConfig both set the default config: give one"}]),
        "draDriver": component("the DRA driver (enflame.com DeviceClasses and kubelet plugin)", False, {
            "apiVersion": s("The resource.k8s.io version to use; auto: the newest the server serves.",
                            default="auto", enum=["auto", "v1", "v1beta1"]),
        }),
        "exporter": component("the metrics exporter (enflame-gcu-exporter)", True, {
            "serviceMonitor": monitor("ServiceMonitor", "The exporter's ServiceMonitor"),
            "prometheusRule": monitor("PrometheusRule", "The GCU alerting rules "
                                      "(deployments/monitoring/enflame-gcu.rules.yaml) as a PrometheusRule",
                                      interval=False),
        }),
        "npd": component("Node Problem Detector with the GCU checks", False, {
            "podMonitor": monitor("PodMonitor", "NPD's PodMonitor (its problem_gauge metrics)"),
        }),
        "nodeExporter": component("the Prometheus node exporter", False, {
            "serviceMonitor": monitor("ServiceMonitor", "The node exporter's ServiceMonitor"),
        }),
        "drsManager": component("the DRS manager (enflame-drs-manager: each node's DRS instances "
                                "made to match the layout its label enflame.com/drs.config names)",
                                False, {
            "defaultLayout": s("The layout of a node without the label. Empty: such a node is left "
                               "alone.", pattern=r"^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$"),
            "layouts": s("The layouts (the layouts.yaml text of the ConfigMap enflame-drs-layouts: "
                         "version: v1, then layouts: <name>: [{cards, profiles}], "
                         "docs/drs-manager.md). Empty: the shipped ones. The manager checks it "
                         "on each node and reports a bad layout as state failed.",
                         maxLength=262144),
            "evictionPolicy": s("What the manager does about pods holding an instance or a card a "
                                "new layout must change. Wait: it waits for them to go (the layout "
                                "stays pending, naming them). Evict: it evicts them through the "
                                "Eviction API, so PodDisruptionBudgets and grace periods hold; pods "
                                "holding a DRA claim are waited for.",
                                default="Wait", enum=["Wait", "Evict"]),
        }),
        "daemonsets": {"type": "object", "default": {}, "description": "Settings for every "
                       "DaemonSet the operator deploys.", "properties": {
                           "labels": string_map("Labels added to every DaemonSet's pods."),
                           "annotations": string_map("Annotations added to every DaemonSet's pods."),
                           "tolerations": copy.deepcopy(TOLERATIONS),
                           "priorityClassName": s("PriorityClass of every DaemonSet's pods (a "
                                                  "component's own wins)."),
                           "updateStrategy": s("How a changed DaemonSet replaces its pods.",
                                               default="RollingUpdate", enum=["RollingUpdate", "OnDelete"]),
                           "maxUnavailable": {"x-kubernetes-int-or-string": True, "default": 1, "maxLength": 4,
                                              "description": "At most this many nodes (or percent) "
                                              "updating at once.",
                                              "x-kubernetes-validations": [{
                                                  "rule": "type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",
                                                  "message": "must be a number of nodes (at least 1) or a percentage (1%-100%)"}]}}},
        "hostPaths": {"type": "object", "default": {}, "description": "Where things are on the nodes.",
                      "properties": {
                          "driverRoot": s("Root of the Enflame driver installation on the node (efsmi, "
                                          "libefml, sysfs).", default="/", maxLength=4096),
                          "devRoot": s("Root under which the node's device nodes (dev/gcu*) are: / "
                                       "unless the driver keeps them elsewhere.", default="/",
                                       maxLength=4096),
                          "kubeletRoot": s("Kubelet's root folder.", default="/var/lib/kubelet",
                                           maxLength=4096)},
                      "x-kubernetes-validations": [
                          {"rule": "!has(self.driverRoot) || self.driverRoot.startsWith('/')", "message": "driverRoot must be an absolute path",
                           "fieldPath": ".driverRoot"},
                          {"rule": "!has(self.devRoot) || self.devRoot.startsWith('/')", "message": "devRoot must be an absolute path",
                           "fieldPath": ".devRoot"},
                          {"rule": "!has(self.kubeletRoot) || self.kubeletRoot.startsWith('/')", "message": "kubeletRoot must be an absolute path",
                           "fieldPath": ".kubeletRoot"}]},
    },
}

condition = {"type": "object", "required": ["type", "status"], "properties": {
    "type": s("Ready, Progressing or Degraded."), "status": s("True, False or Unknown.",
                                                              enum=["True", "False", "Unknown"]),
    "reason": s("One word (CamelCase)."), "message": s("What happened, for a human."),
    "lastTransitionTime": s("When status last changed.", format="date-time"),
    "observedGeneration": {"type": "integer", "format": "int64"}}}

status = {"type": "object", "description": "What the operator found, written by it only.",
          "properties": {
              "state": s("ready: every enabled component Ready; notReady: not yet or failing; "
                         "ignored: another GpuResource is older and is the one in effect.",
                         enum=["ready", "notReady", "ignored"]),
              "readyResource": s("Ready components of the enabled ones, e.g. 5/6."),
              "observedGeneration": {"type": "integer", "format": "int64",
                                     "description": "The spec generation this status describes."},
              "clusterGCUNodes": {"type": "integer", "description": "Nodes labelled enflame.com/gpu.present=true."},
              "conditions": {"type": "array", "items": condition, "x-kubernetes-list-type": "map",
                             "x-kubernetes-list-map-keys": ["type"],
                             "description": "Ready, Progressing, Degraded."},
              "components": {"type": "array", "x-kubernetes-list-type": "map",
                             "x-kubernetes-list-map-keys": ["name"],
                             "description": "Per enabled component: its objects and rollout.",
                             "items": {"type": "object", "required": ["name"], "properties": {
                                 "name": s("The component (as in spec)."),
                                 "ready": b("All its DaemonSets rolled out and available.", False),
                                 "objects": {"type": "array", "items": {"type": "string"},
                                             "description": "Kind/namespace/name of each object."},
                                 "desired": {"type": "integer", "description": "Pods wanted."},
                                 "readyPods": {"type": "integer", "description": "Pods ready."},
                                 "updated": {"type": "integer", "description": "Pods at the current spec."},
                                 "message": s("One line."),
                                 "serviceMonitor": s("exporter or nodeExporter with serviceMonitor "
                                                     "enabled: applied, or why it was skipped."),
                                 "podMonitor": s("npd with podMonitor enabled: applied, or why it was "
                                                 "skipped."),
                                 "prometheusRule": s("exporter with prometheusRule enabled: applied, "
                                                     "or why it was skipped."),
                                 "nodes": string_map("drsManager: each node labelled "
                                                     "enflame.com/drs.config, as '<layout>: <state>' "
                                                     "from the manager's state label.")}}},
              "drs": s("drsManager: the labelled nodes counted by layout state, e.g. '3 success, "
                       "1 pending'."),
              "upgrade": {"type": "object", "description": "The node-by-node roll of the DaemonSets.",
                          "properties": {
                              "nodes": {"type": "array", "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "description": "Per node running the stack: where its roll is.",
                                        "items": {"type": "object", "required": ["name"], "properties": {
                                            "name": s("The node."),
                                            "state": s("upToDate, pending, toolkit, plugins or cordoned.",
                                                       enum=["upToDate", "pending", "toolkit", "plugins", "cordoned"]),
                                            "message": s("One line.")}}},
                              "updatedNodes": {"type": "integer", "description": "Nodes at the current spec."},
                              "totalNodes": {"type": "integer", "description": "Nodes running the stack."},
                              "cordonedNodes": {"type": "integer",
                                                "description": "Nodes the roll skips: cordoned by the administrator."}}}}}

crd = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gpuresources.enflame.com",
                 "labels": {"app.kubernetes.io/name": "enflame-gpu-operator"}},
    "spec": {
        "group": "enflame.com",
        "scope": "Cluster",
        "names": {"kind": "GpuResource", "listKind": "GpuResourceList", "plural": "gpuresources",
                  "singular": "gpuresource", "shortNames": ["gr"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Ready", "type": "string", "jsonPath": ".status.readyResource"},
                {"name": "State", "type": "string", "jsonPath": ".status.state"},
                {"name": "DRS", "type": "string", "jsonPath": ".status.drs"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "description": "GpuResource: one per cluster deploys and manages the Enflame GCU stack "
                               "(toolkit, labeler, device plugin and/or DRA driver, exporter, ...). "
                               "Only the oldest is in effect; others are ignored.",
                "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                               "metadata": {"type": "object"}, "spec": spec, "status": status}}},
        }],
    },
}

sys.stdout.write("# generated by scripts/gen-operator-crd.py: edit that, not this file\n")
yaml.safe_dump(crd, sys.stdout, sort_keys=False, width=100)
