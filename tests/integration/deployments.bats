#!/usr/bin/env bats
# deployments/: every overlay renders with kubectl kustomize (kubectl 1.32 from Debian 13,
# unpacked by scripts/fetch-trixie.sh into $BUILD_DIR/trixie, never installed), and every
# rendered object passes check_manifests.py: kind and apiVersion, required fields, references
# (ServiceAccounts, ConfigMaps and keys, roles, Service selectors), node selectors and
# tolerations, resources, probes, and images that `make images` builds.
# A plugin folder the tree does not have yet (deployments/dra, deployments/exporter arrive from
# their own branches) is left out of the rendered copy, with a note; the checks then cover what
# exists.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  setup_scratch
  trixie_kubectl
  [[ $("$KUBECTL" version --client) == *"Client Version: v1.32."* ]]
  make -s -C "$TOP" print-images > "$SCRATCH/images.txt"
  cp -r "$TOP/deployments" "$SCRATCH/deployments"
  prune_missing "$SCRATCH/deployments"
}

teardown() { teardown_scratch; }

# prune_missing DIR: drop from every kustomization under DIR the resources this tree does not
# have (yet), with a note.
prune_missing() {
  python3 - "$1" <<'PY' >&3
import os, sys, yaml
root = sys.argv[1]
for d, _, files in os.walk(root):
    if "kustomization.yaml" not in files:
        continue
    p = os.path.join(d, "kustomization.yaml")
    k = yaml.safe_load(open(p))
    keep = [r for r in k.get("resources", []) if os.path.exists(os.path.join(d, r))]
    for r in set(k.get("resources", [])) - set(keep):
        print(f"# note: {os.path.relpath(os.path.normpath(os.path.join(d, r)), root)} is not in this tree: rendered without it")
    if keep != k.get("resources", []):
        k["resources"] = keep
        yaml.safe_dump(k, open(p, "w"))
PY
}

# render DIR: kubectl kustomize deployments/DIR into $SCRATCH/r.yaml, then check every object.
render() {
  run "$KUBECTL" kustomize "$SCRATCH/deployments/$1"
  [ "$status" -eq 0 ] || { echo "$output"; return 1; }
  printf '%s\n' "$output" > "$SCRATCH/r.yaml"
  run python3 "$BATS_TEST_DIRNAME/check_manifests.py" "$SCRATCH/r.yaml" "$SCRATCH/images.txt" "${@:2}"
  echo "$output"
  [ "$status" -eq 0 ]
}

# objects: "Kind/name" of every rendered object, sorted.
objects() {
  python3 -c 'import sys, yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o: print(o["kind"] + "/" + o["metadata"]["name"])' "$SCRATCH/r.yaml" | sort
}

have() { [ -d "$TOP/deployments/$1" ]; }

@test "deployments/ renders the device-plugin overlay: installer, labeler, device plugin, RuntimeClass, all valid" {
  render overlays/device-plugin
  local want; want=$(objects)
  render .
  [ "$(objects)" = "$want" ]
  run objects
  echo "$output" | grep -Fx "DaemonSet/enflame-toolkit-installer"
  echo "$output" | grep -Fx "DaemonSet/enflame-device-plugin"
  echo "$output" | grep -Fx "DaemonSet/enflame-feature-discovery"
  echo "$output" | grep -Fx "RuntimeClass/enflame"
  echo "$output" | grep -Fx "Namespace/enflame-system"
  echo "$output" | grep -Fx "ServiceAccount/enflame-toolkit-installer"
  refute_grep -F "DeviceClass/"
  if have exporter; then echo "$output" | grep -Fx "DaemonSet/enflame-gcu-exporter"; fi
}

@test "overlays/dra and overlays/dra-v1beta1: the DRA plugin, DeviceClasses in resource.k8s.io/v1 and v1beta1" {
  if ! have dra; then
    render overlays/dra
    render overlays/dra-v1beta1
    echo "# note: deployments/dra is not in this tree: only the base of the DRA overlays was checked" >&3
    return 0
  fi
  render overlays/dra --deviceclass-version resource.k8s.io/v1 --deviceclasses "$TOP/deployments/dra/deviceclasses-v1.yaml"
  run objects
  echo "$output" | grep -Fx "DaemonSet/enflame-dra-plugin"
  echo "$output" | grep -Fx "DaemonSet/enflame-toolkit-installer"
  refute_grep -Fx "DaemonSet/enflame-device-plugin"
  render overlays/dra-v1beta1 --deviceclass-version resource.k8s.io/v1beta1 \
    --deviceclasses "$TOP/deployments/dra/deviceclasses-v1beta1.yaml"
}

@test "the installer DaemonSet runs enflame-ctk with flags it knows; install, preStop uninstall, status probe" {
  render overlays/device-plugin
  python3 - "$SCRATCH/r.yaml" > "$SCRATCH/cmds" <<'PY'
import sys, yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o and o["kind"] == "DaemonSet" and o["metadata"]["name"] == "enflame-toolkit-installer":
        c = o["spec"]["template"]["spec"]["containers"][0]
        print(" ".join(c["command"]))
        print(" ".join(c["lifecycle"]["preStop"]["exec"]["command"]))
        print(" ".join(c["readinessProbe"]["exec"]["command"]))
        print(o["spec"]["template"]["spec"].get("hostPID"))
PY
  cat "$SCRATCH/cmds"
  [ "$(sed -n 1p "$SCRATCH/cmds" | cut -d' ' -f1-3)" = "/usr/lib/enflame/host/enflame-ctk toolkit install" ]
  [ "$(sed -n 2p "$SCRATCH/cmds" | cut -d' ' -f1-3)" = "/usr/lib/enflame/host/enflame-ctk toolkit uninstall" ]
  [ "$(sed -n 3p "$SCRATCH/cmds" | cut -d' ' -f1-3)" = "/usr/lib/enflame/host/enflame-ctk toolkit status" ]
  [ "$(sed -n 4p "$SCRATCH/cmds")" = True ]   # the engine's pid from its socket is a host pid
  local line sub flag
  for line in 1 2 3; do
    sub=$(sed -n "${line}p" "$SCRATCH/cmds" | cut -d' ' -f3)
    for flag in $(sed -n "${line}p" "$SCRATCH/cmds" | grep -oE -- '--[a-z-]+'); do
      "$CTK" toolkit "$sub" --help | grep -qF -- "$flag" || { echo "toolkit $sub has no $flag"; return 1; }
    done
  done
}

@test "cmake --install ships the kustomize tree; the installed deployments/ renders as the source's does" {
  [ -e "$BUILD_DIR/cmake_install.cmake" ] || skip_or_fail "needs a full build in $BUILD_DIR"
  installs_daemon enflame-ctk man1/enflame-ctk.1 installer
  local d=$SCRATCH/stage/usr/share/doc/enflame-container-toolkit/deployments
  [ -f "$d/kustomization.yaml" ]
  [ -f "$d/base/kustomization.yaml" ]
  [ -f "$d/overlays/dra-v1beta1/kustomization.yaml" ]
  prune_missing "$d"
  run "$KUBECTL" kustomize "$d"
  [ "$status" -eq 0 ]
  local installed=$output
  run "$KUBECTL" kustomize "$SCRATCH/deployments"
  [ "$status" -eq 0 ]
  [ "$installed" = "$output" ]
}

@test "npd/: NPD with the GCU monitors renders valid; every rule runs a health check enflame-ctk has, from the init container's copy" {
  render npd --add-on
  run objects
  echo "$output" | grep -Fx "DaemonSet/enflame-npd"
  echo "$output" | grep -Fx "ClusterRoleBinding/enflame-npd"
  refute_grep -F "Namespace/"
  # the default install leaves NPD out (deployments/kustomization.yaml, npd/kustomization.yaml)
  render .
  run objects
  refute_grep -F "enflame-npd"
  render npd --add-on
  python3 - "$SCRATCH/r.yaml" > "$SCRATCH/npd" <<'PY'
import json, sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
ds = next(o for o in objs if o["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
assert ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "enflame-npd"
npd = pod["containers"][0]
assert [p["name"] for p in npd["ports"]] == ["metrics"], npd["ports"]
port = npd["ports"][0]["containerPort"]
assert f"--prometheus-port={port}" in npd["command"] and "--prometheus-address=0.0.0.0" in npd["command"]
init = pod["initContainers"][0]
assert init["command"][:3] == ["/usr/bin/enflame-ctk", "health", "--install"], init["command"]
plugin_dir = init["command"][3]
mounts = {m["mountPath"]: m["name"] for m in npd["volumeMounts"]}
assert mounts[plugin_dir] == next(m["name"] for m in init["volumeMounts"] if m["mountPath"] == plugin_dir)
binding = next(o for o in objs if o["kind"] == "ClusterRoleBinding")
assert binding["roleRef"]["name"] == "system:node-problem-detector"
cm = next(o for o in objs if o["kind"] == "ConfigMap")["data"]
for flag in npd["command"]:
    if flag.startswith("--config."):
        for f in flag.split("=", 1)[1].split(","):
            assert f.startswith("/config/") and f[len("/config/"):] in cm, f
mon = json.loads(cm["enflame-gcu-monitor.json"])
assert mon["pluginConfig"]["invoke_interval"] == "30s"
conds = {c["type"] for c in mon["conditions"]}
assert {"GCUUnhealthy", "GCUDriverProblem", "GCUMissing"} <= conds, conds
for r in mon["rules"]:
    assert r["type"] == "permanent" and r["condition"] in conds, r
    assert r["path"] == plugin_dir + "/ld.so", r["path"]
    a = r["args"]
    assert a[:3] == ["--library-path", plugin_dir + "/lib", plugin_dir + "/enflame-ctk"], a
    assert a[3] == "--config" and a[4].startswith("/config/") and a[4][len("/config/"):] in cm, a
    print(" ".join(a[5:]))
assert len({r["condition"] for r in mon["rules"]}) == len(mon["rules"])   # one rule per condition
kern = json.loads(cm["enflame-kernel-monitor.json"])
assert kern["plugin"] == "kmsg"
kconds = {c["type"] for c in kern["conditions"]}
assert all(r["condition"] in kconds for r in kern["rules"] if r["type"] == "permanent")
PY
  cat "$SCRATCH/npd"
  [ "$(wc -l < "$SCRATCH/npd")" -ge 7 ]
  local help; help=$("$CTK" health --help)
  local check flag
  while read -r _ check flags; do
    [[ $help == *"the check: "*"$check"* ]] || { echo "enflame-ctk health has no check $check"; return 1; }
    for flag in $(grep -oE -- '--[a-z-]+' <<<"$flags"); do
      [[ $help == *"$flag"* ]] || { echo "enflame-ctk health has no $flag"; return 1; }
    done
  done < "$SCRATCH/npd"
}

@test "the operator's own RBAC: no wildcard, no Namespace delete, no escalate, bind only on named roles it cannot write, namespaced writes in Roles, no Secrets; each rule seen refusing" {
  local check=$BATS_TEST_DIRNAME/check_operator_rbac.py rbac=$TOP/deployments/operator/rbac.yaml
  run python3 "$check" "$rbac"
  echo "$output"
  [ "$status" -eq 0 ]
  # each rule refuses what it should (one mutation of the shipped file each)
  mutated() {
    python3 - "$rbac" "$SCRATCH/op-rbac.yaml" "$1" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
role = next(d for d in docs if d["kind"] == "ClusterRole")
rbac = "rbac.authorization.k8s.io"
exec(sys.argv[3])
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
    run python3 "$check" "$SCRATCH/op-rbac.yaml"
    echo "$output"
  }
  mutated 'role["rules"].append({"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]})'
  [ "$status" -eq 1 ]
  [[ $output == *"ClusterRole/enflame-gpu-operator: wildcard in"* ]]
  mutated 'role["rules"].append({"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "delete"]})'
  [ "$status" -eq 1 ]
  [[ $output == *"may delete Namespaces"* ]]
  mutated 'role["rules"].append({"apiGroups": [rbac], "resources": ["clusterroles"], "verbs": ["escalate"], "resourceNames": ["enflame-dra-plugin"]})'
  [ "$status" -eq 1 ]
  [[ $output == *"escalate: may write roles granting what it does not hold"* ]]
  mutated 'next(r for r in role["rules"] if "bind" in r["verbs"]).pop("resourceNames")'
  [ "$status" -eq 1 ]
  [[ $output == *"['bind'] on every role, not on named ones"* ]]
  mutated 'role["rules"].append({"apiGroups": [rbac], "resources": ["clusterroles"], "verbs": ["patch"], "resourceNames": ["enflame-nfd-master"]})'
  [ "$status" -eq 1 ]
  [[ $output == *"binds clusterroles ['enflame-nfd-master'], which it may also write"* ]]
  mutated 'role["rules"].append({"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["create"]})'
  [ "$status" -eq 1 ]
  [[ $output == *"writes namespaced ['daemonsets'] in every namespace"* ]]
  mutated 'role["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})'
  [ "$status" -eq 1 ]
  [[ $output == *"grants ['get'] on Secrets"* ]]
}

@test "least privilege: every privileged container says why on the line above; what check_manifests.py refuses" {
  # each `privileged: true` in the tree sits under a comment giving its reason
  local f n
  for f in $(grep -rl --include='*.yaml' 'privileged: true' "$TOP/deployments"); do
    n=$(awk '/privileged: true/ && prev !~ /^[[:space:]]*#/ { print FILENAME ":" FNR } { prev = $0 }' "$f")
    [ -z "$n" ] || { echo "no reason given above: $n"; return 1; }
  done
  # the checker itself: each mutation of the shipped DRA overlay is one problem it names
  render overlays/dra-v1beta1
  local rendered=$SCRATCH/r.yaml
  mutate() {  # mutate NAME PYTHON: $SCRATCH/m-NAME.yaml is the render with PYTHON applied to `o`
    python3 - "$rendered" "$SCRATCH/m-$1.yaml" "$2" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
ds = lambda n: next(o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"] == n)
role = next(o for o in objs if o["kind"] == "ClusterRole")
exec(sys.argv[3])
yaml.safe_dump_all(objs, open(sys.argv[2], "w"))
PY
  }
  refused() {  # refused NAME TEXT: check_manifests.py fails on m-NAME.yaml naming TEXT
    run python3 "$BATS_TEST_DIRNAME/check_manifests.py" "$SCRATCH/m-$1.yaml" "$SCRATCH/images.txt"
    echo "$1: $output"
    [ "$status" -eq 1 ]
    [[ $output == *"$2"* ]]
  }
  mutate exporter-privileged 'ds("enflame-gcu-exporter")["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": True}'
  refused exporter-privileged "DaemonSet/enflame-gcu-exporter: container enflame-gcu-exporter: privileged"
  mutate exporter-caps 'ds("enflame-gcu-exporter")["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]["add"].append("NET_ADMIN")'
  refused exporter-caps "DaemonSet/enflame-gcu-exporter: container enflame-gcu-exporter: adds capabilities ['NET_ADMIN']"
  mutate exporter-root 'p = ds("enflame-gcu-exporter")["spec"]["template"]["spec"]; p["volumes"].append({"name": "h", "hostPath": {"path": "/"}}); p["containers"][0]["volumeMounts"].append({"name": "h", "mountPath": "/host", "readOnly": True})'
  refused exporter-root "DaemonSet/enflame-gcu-exporter: mounts the host's / (/host)"
  mutate labeler-token 'del ds("enflame-feature-discovery")["spec"]["template"]["spec"]["automountServiceAccountToken"]'
  refused labeler-token "DaemonSet/enflame-feature-discovery: service account default has no role, but the pod mounts its token"
  mutate dra-plugins 'p = ds("enflame-dra-plugin")["spec"]["template"]["spec"]; next(v for v in p["volumes"] if v["name"] == "plugin-dir")["hostPath"]["path"] = "/var/lib/kubelet/plugins"'
  refused dra-plugins "DaemonSet/enflame-dra-plugin: mounts all of the host's /var/lib/kubelet/plugins"
  mutate claims-list 'next(r for r in role["rules"] if "resourceclaims" in r["resources"])["verbs"] += ["list", "watch"]'
  refused claims-list "ClusterRole/enflame-dra-plugin: grants ['list', 'watch'] on resourceclaims"
  mutate slices-patch 'next(r for r in role["rules"] if "resourceslices" in r["resources"])["verbs"] += ["patch"]'
  refused slices-patch "ClusterRole/enflame-dra-plugin: grants ['patch'] on resourceslices"
  mutate no-policy 'objs[:] = [o for o in objs if o["kind"] != "ValidatingAdmissionPolicyBinding"]'
  refused no-policy "ClusterRole/enflame-dra-plugin: lets enflame-dra-plugin write resourceslices of every node"
}

@test "overlays/hami and overlays/nri render valid under the least-privilege checks; HAMi's device plugin alone gets a token; HAMi's annotations held by an admission policy" {
  render overlays/hami
  python3 - "$SCRATCH/r.yaml" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
ds = next(o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "enflame-device-plugin")
pod = ds["spec"]["template"]["spec"]
assert pod["serviceAccountName"] == "enflame-device-plugin", pod.get("serviceAccountName")
assert pod["automountServiceAccountToken"] is True, "HAMi mode calls the API server: it needs its token"
env = {e["name"]: e for e in pod["containers"][0]["env"]}
assert env["SCHEDULER"]["value"] == "hami", env
assert env["DEVICE_LIST_STRATEGY"]["value"] == "envvar,cdi-cri,cdi-annotations", env
# HAMi's decision annotations: only HAMi's scheduler and the plugin (its account as rendered) write them
vap = next(o for o in objs if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == "enflame-hami-decision-annotations")
assert "namespace" not in vap["metadata"], vap["metadata"]
spec = vap["spec"]
assert spec["failurePolicy"] == "Fail", spec
rules = spec["matchConstraints"]["resourceRules"]
assert any("pods" in r["resources"] and r["apiGroups"] == [""] and {"CREATE", "UPDATE"} <= set(r["operations"]) for r in rules), rules
who = " ".join(c["expression"] for c in spec["matchConditions"])
sa = next(o for o in objs if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == "enflame-device-plugin")
assert f'"system:serviceaccount:{sa["metadata"]["namespace"]}:enflame-device-plugin"' in who, who
assert '"system:serviceaccount:kube-system:hami-scheduler"' in who, who
text = " ".join(v["expression"] for v in spec["validations"])
for key in ["hami.io/bind-phase", "hami.io/bind-time", "hami.io/enflame-gcu-devices-to-allocate",
            "assigned-containers", "enflame.com/gcu-shared-served", "enflame.com/gcu-allocate-error"]:
    assert f'"{key}"' in text, key
assert 'k.startsWith("enflame.com/gcu-assigned")' in text, text
binding = next(o for o in objs if o["kind"] == "ValidatingAdmissionPolicyBinding" and o["spec"]["policyName"] == vap["metadata"]["name"])
assert binding["spec"]["validationActions"] == ["Deny"], binding
PY
  # without the own-node policy the plugin could patch every node's pods and Nodes: refused
  python3 - "$SCRATCH/r.yaml" "$SCRATCH/hami-no-node-policy.yaml" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
objs = [o for o in objs if o["metadata"]["name"] != "enflame-device-plugin-own-node"]
yaml.safe_dump_all(objs, open(sys.argv[2], "w"))
PY
  run python3 "$BATS_TEST_DIRNAME/check_manifests.py" "$SCRATCH/hami-no-node-policy.yaml" "$SCRATCH/images.txt"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"ClusterRole/enflame-device-plugin: lets enflame-device-plugin write pods of every node"* ]]
  [[ $output == *"ClusterRole/enflame-device-plugin: lets enflame-device-plugin write nodes of every node"* ]]
  render overlays/nri
  # NRI mode: the installer turns NRI on, the device plugin leaves the cards to the NRI plugin
  python3 - "$SCRATCH/r.yaml" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
env = lambda n: {e["name"]: e.get("value") for e in next(
    o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"] == n
)["spec"]["template"]["spec"]["containers"][0].get("env", [])}
assert env("enflame-toolkit-installer")["ENABLE_NRI"] == "true", env("enflame-toolkit-installer")
# the cards as annotations kubelet sets, which a pod cannot (never the env: docs/security.md)
assert env("enflame-device-plugin")["DEVICE_LIST_STRATEGY"] == "cdi-annotations", env("enflame-device-plugin")
# fail closed: the device plugin reads the lock the NRI plugin holds, in the same host folder
assert env("enflame-device-plugin")["REQUIRE_NRI"] == "true", env("enflame-device-plugin")
def lock_dir(n):
    pod = next(o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"] == n)["spec"]["template"]["spec"]
    c = pod["containers"][0]
    m = next(m for m in c["volumeMounts"] if m["mountPath"] == "/var/run/enflame")
    v = next(v for v in pod["volumes"] if v["name"] == m["name"])
    return v["hostPath"]["path"], c.get("args", [])
assert lock_dir("enflame-device-plugin")[0] == "/var/run/enflame"
path, args = lock_dir("enflame-nri-plugin")
assert path == "/var/run/enflame", path
assert args[args.index("--lock-file") + 1] == "/var/run/enflame/nri-plugin.lock", args
PY
}

@test "drs-manager/: renders valid under the least-privilege checks (an add-on beside an overlay); its RBAC is its calls and no more (the evict policy's role unbound); its Node writes held to its own node" {
  render drs-manager --add-on
  [ "$(objects | tr '\n' ' ')" = "ClusterRole/enflame-drs-manager ClusterRole/enflame-drs-manager-eviction ClusterRoleBinding/enflame-drs-manager ConfigMap/enflame-drs-layouts ConfigMap/enflame-drs-manager DaemonSet/enflame-drs-manager Role/enflame-drs-manager RoleBinding/enflame-drs-manager ServiceAccount/enflame-drs-manager ValidatingAdmissionPolicy/enflame-drs-manager-own-node ValidatingAdmissionPolicyBinding/enflame-drs-manager-own-node " ]
  python3 - "$SCRATCH/r.yaml" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
get = lambda k, n: next(o for o in objs if o["kind"] == k and o["metadata"]["name"] == n)
rules = lambda o: sorted((r["resources"][0], tuple(r["verbs"])) for r in o["rules"])
assert rules(get("ClusterRole", "enflame-drs-manager")) == [("nodes", ("get", "list", "watch", "patch"))]
assert rules(get("Role", "enflame-drs-manager")) == [("configmaps", ("get", "list", "watch")), ("events", ("create",))]
# the evict policy's role ships unbound: only deployments/drs-manager-eviction binds it
assert not [o for o in objs if o.get("roleRef", {}).get("name") == "enflame-drs-manager-eviction"]
pod = get("DaemonSet", "enflame-drs-manager")["spec"]["template"]["spec"]
env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
assert "EVICTION_POLICY" not in env, env
assert env["LAYOUTS_CONFIGMAP"] == "enflame-system/enflame-drs-layouts", env
mounts = [m["mountPath"] for m in pod["containers"][0]["volumeMounts"]]
for cp in env["HOLDERS_CHECKPOINTS"].split(","):   # each checkpoint read is under a mount
    assert any(cp.startswith(m + "/") for m in mounts), cp
# written on the host: its ledger, and the CDI spec's folder where the spec resolves under /host
host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
rw = sorted((host[m["name"]], m["mountPath"]) for m in pod["containers"][0]["volumeMounts"]
            if m["name"] in host and not m.get("readOnly"))
assert rw == [("/run/cdi", "/host/run/cdi"), ("/var/lib/enflame/drs-manager", "/var/lib/enflame/drs-manager")], rw
assert "layouts.yaml" in get("ConfigMap", "enflame-drs-layouts")["data"]
PY
  # without the own-node policy a manager could relabel every node: refused
  python3 -c 'import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o and not o["kind"].startswith("ValidatingAdmissionPolicy")]
yaml.safe_dump_all(objs, open(sys.argv[2], "w"))' "$SCRATCH/r.yaml" "$SCRATCH/drs-no-policy.yaml"
  run python3 "$BATS_TEST_DIRNAME/check_manifests.py" "$SCRATCH/drs-no-policy.yaml" "$SCRATCH/images.txt" --add-on
  echo "$output"
  [ "$status" -eq 1 ]
  [[ $output == *"ClusterRole/enflame-drs-manager: lets enflame-drs-manager write nodes of every node"* ]]
}

@test "drs-manager-eviction/: deployments/drs-manager with the evict policy renders valid under the least-privilege checks; it adds one ClusterRole, pods/eviction create and nothing else (never delete), its binding and EVICTION_POLICY=evict" {
  render drs-manager-eviction --add-on
  [ "$(objects | tr '\n' ' ')" = "ClusterRole/enflame-drs-manager ClusterRole/enflame-drs-manager-eviction ClusterRoleBinding/enflame-drs-manager ClusterRoleBinding/enflame-drs-manager-eviction ConfigMap/enflame-drs-layouts ConfigMap/enflame-drs-manager DaemonSet/enflame-drs-manager Role/enflame-drs-manager RoleBinding/enflame-drs-manager ServiceAccount/enflame-drs-manager ValidatingAdmissionPolicy/enflame-drs-manager-own-node ValidatingAdmissionPolicyBinding/enflame-drs-manager-own-node " ]
  python3 - "$SCRATCH/r.yaml" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
get = lambda k, n: next(o for o in objs if o["kind"] == k and o["metadata"]["name"] == n)
assert get("ClusterRole", "enflame-drs-manager-eviction")["rules"] == [
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]
b = get("ClusterRoleBinding", "enflame-drs-manager-eviction")
assert b["roleRef"]["name"] == "enflame-drs-manager-eviction"
assert b["subjects"] == [{"kind": "ServiceAccount", "name": "enflame-drs-manager", "namespace": "enflame-system"}]
env = get("DaemonSet", "enflame-drs-manager")["spec"]["template"]["spec"]["containers"][0]["env"]
assert env[-1] == {"name": "EVICTION_POLICY", "value": "evict"}, env
PY
}

@test "inference/: the EPP in its pool's namespace renders valid and hardened; its Roles are its informers' list and watch; the example pool, objective and model rewrite validate against the CRDs; not in deployments/" {
  render inference --add-on --namespace default
  [ "$(objects | tr '\n' ' ')" = "ConfigMap/enflame-epp CustomResourceDefinition/inferencemodelrewrites.inference.networking.x-k8s.io CustomResourceDefinition/inferenceobjectives.inference.networking.x-k8s.io CustomResourceDefinition/inferencepools.inference.networking.k8s.io Deployment/enflame-epp Role/enflame-epp Role/enflame-epp-gcu-exporters RoleBinding/enflame-epp RoleBinding/enflame-epp-gcu-exporters Service/enflame-epp ServiceAccount/enflame-epp " ]
  python3 - "$SCRATCH/r.yaml" "$TOP/deployments/inference/examples/inferencepool.yaml" "$TOP/examples/epp/epp-config.yaml" "$TOP/deployments/inference/examples/inferenceobjective.yaml" "$TOP/deployments/inference/examples/inferencemodelrewrite.yaml" <<'PY'
import sys, jsonschema, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
get = lambda k, n: next(o for o in objs if o["kind"] == k and o["metadata"]["name"] == n)
rules = lambda o: sorted((r["apiGroups"][0], r["resources"][0], tuple(r["verbs"])) for r in o["rules"])
epp = get("Role", "enflame-epp")
assert epp["metadata"]["namespace"] == "default"
assert rules(epp) == [("", "pods", ("list", "watch")), ("inference.networking.k8s.io", "inferencepools", ("list", "watch")), ("inference.networking.x-k8s.io", "inferencemodelrewrites", ("list", "watch")), ("inference.networking.x-k8s.io", "inferenceobjectives", ("list", "watch"))], rules(epp)
exp = get("Role", "enflame-epp-gcu-exporters")
assert exp["metadata"]["namespace"] == "enflame-system"
assert rules(exp) == [("", "pods", ("list", "watch"))], rules(exp)
for b in ("enflame-epp", "enflame-epp-gcu-exporters"):
    assert get("RoleBinding", b)["subjects"] == [{"kind": "ServiceAccount", "name": "enflame-epp", "namespace": "default"}]
dep = get("Deployment", "enflame-epp")
pod = dep["spec"]["template"]["spec"]
c = pod["containers"][0]
assert c["command"] == ["/usr/bin/enflame-epp"], c["command"]
args = dict(a.split("=", 1) for a in c["args"])
assert args["--pool-namespace"] == "$(POD_NAMESPACE)", args
env = {e["name"]: e for e in c["env"]}
assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
assert ports == {"grpc": 9002, "grpc-health": 9003, "metrics": 9090}, ports
assert c["livenessProbe"]["grpc"] == {"port": 9003, "service": "liveness"}, c["livenessProbe"]
assert c["readinessProbe"]["grpc"] == {"port": 9003, "service": "readiness"}, c["readinessProbe"]
# the config file is the ConfigMap's key, mounted; its text is the example's (the default)
mount = next(m for m in c["volumeMounts"] if args["--config-file"].startswith(m["mountPath"] + "/"))
vol = next(v for v in pod["volumes"] if v["name"] == mount["name"])
data = get("ConfigMap", vol["configMap"]["name"])["data"]
assert data[args["--config-file"][len(mount["mountPath"]) + 1:]] == open(sys.argv[3]).read()
svc = get("Service", "enflame-epp")
assert sorted((p["port"], p["targetPort"]) for p in svc["spec"]["ports"]) == [(9002, "grpc"), (9090, "metrics")]
# the example pool: the pool the Deployment follows, its picker the Service's grpc port, and
# valid against the CRD's schema; broken copies are not
pool = yaml.safe_load(open(sys.argv[2]))
assert pool["metadata"]["name"] == args["--pool-name"]
ref = pool["spec"]["endpointPickerRef"]
assert ref["name"] == svc["metadata"]["name"] and ref["port"]["number"] == 9002
crd = get("CustomResourceDefinition", "inferencepools.inference.networking.k8s.io")
schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
jsonschema.validate(pool, schema)
bad = {
    "nine ports": lambda p: p["spec"].__setitem__("targetPorts", [{"number": 8000 + i} for i in range(9)]),
    "port 0": lambda p: p["spec"]["targetPorts"][0].__setitem__("number", 0),
    "no selector": lambda p: p["spec"].pop("selector"),
    "grpc protocol": lambda p: p["spec"].__setitem__("appProtocol", "grpc"),
    "failure mode": lambda p: p["spec"]["endpointPickerRef"].__setitem__("failureMode", "Retry"),
}
def refused(bad, path, schema, noun):
    for what, f in bad.items():
        q = yaml.safe_load(open(path))
        f(q)
        try:
            jsonschema.validate(q, schema)
        except jsonschema.ValidationError:
            continue
        raise SystemExit(f"the CRD's schema accepts {noun} with {what}")
refused(bad, sys.argv[2], schema, "a pool")
# the example objective: for the example pool, valid against its CRD's schema; broken copies
# are not
objective = yaml.safe_load(open(sys.argv[4]))
assert objective["spec"]["poolRef"]["name"] == pool["metadata"]["name"]
crd = get("CustomResourceDefinition", "inferenceobjectives.inference.networking.x-k8s.io")
assert crd["spec"]["names"]["plural"] == "inferenceobjectives" and crd["spec"]["scope"] == "Namespaced"
version = crd["spec"]["versions"][0]
assert objective["apiVersion"] == crd["spec"]["group"] + "/" + version["name"] == "inference.networking.x-k8s.io/v1alpha2"
schema = version["schema"]["openAPIV3Schema"]
jsonschema.validate(objective, schema)
ref = schema["properties"]["spec"]["properties"]["poolRef"]["properties"]
assert ref["group"]["default"] == "inference.networking.k8s.io" and ref["kind"]["default"] == "InferencePool"
bad = {
    "no poolRef": lambda o: o["spec"].pop("poolRef"),
    "no pool name": lambda o: o["spec"]["poolRef"].pop("name"),
    "a text priority": lambda o: o["spec"].__setitem__("priority", "high"),
    "a fractional priority": lambda o: o["spec"].__setitem__("priority", 1.5),
}
refused(bad, sys.argv[4], schema, "an objective")
# the example model rewrite: for the example pool, valid against its CRD's schema, its weights
# a 90/10 canary; broken copies are not
rewrite = yaml.safe_load(open(sys.argv[5]))
assert rewrite["spec"]["poolRef"]["name"] == pool["metadata"]["name"]
crd = get("CustomResourceDefinition", "inferencemodelrewrites.inference.networking.x-k8s.io")
assert crd["spec"]["names"]["plural"] == "inferencemodelrewrites" and crd["spec"]["scope"] == "Namespaced"
version = crd["spec"]["versions"][0]
assert rewrite["apiVersion"] == crd["spec"]["group"] + "/" + version["name"] == "inference.networking.x-k8s.io/v1alpha2"
schema = version["schema"]["openAPIV3Schema"]
jsonschema.validate(rewrite, schema)
assert [t["weight"] for t in rewrite["spec"]["rules"][0]["targets"]] == [90, 10]
ref = schema["properties"]["spec"]["properties"]["poolRef"]["properties"]
assert ref["group"]["default"] == "inference.networking.k8s.io" and ref["kind"]["default"] == "InferencePool"
rule = lambda o: o["spec"]["rules"][0]
bad = {
    "no poolRef": lambda o: o["spec"].pop("poolRef"),
    "no rules": lambda o: o["spec"].pop("rules"),
    "no targets": lambda o: rule(o).__setitem__("targets", []),
    "weight 0": lambda o: rule(o)["targets"][0].__setitem__("weight", 0),
    "weight 1000001": lambda o: rule(o)["targets"][0].__setitem__("weight", 1000001),
    "a Prefix match": lambda o: rule(o)["matches"][0]["model"].__setitem__("type", "Prefix"),
    "an empty model": lambda o: rule(o)["matches"][0]["model"].__setitem__("value", ""),
    "a target without its model": lambda o: rule(o)["targets"][0].pop("modelRewrite"),
}
refused(bad, sys.argv[5], schema, "a model rewrite")
PY
  # the pool's namespace is the kustomization's one line; the exporters' Role stays put
  sed -i 's/^      namespace: default$/      namespace: serving/' "$SCRATCH/deployments/inference/kustomization.yaml"
  render inference --add-on --namespace serving
  python3 -c 'import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o and "namespace" in o["metadata"]]
got = sorted((o["kind"], o["metadata"]["namespace"]) for o in objs)
assert got == sorted([(k, "serving") for k in ("ConfigMap", "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount")] + [("Role", "enflame-system"), ("RoleBinding", "enflame-system")]), got
subjects = {s["namespace"] for o in objs if o["kind"] == "RoleBinding" for s in o["subjects"]}
assert subjects == {"serving"}, subjects' "$SCRATCH/r.yaml"
  # what check_manifests.py refuses in the EPP's manifests
  mutate() {
    python3 - "$SCRATCH/r.yaml" "$SCRATCH/m-$1.yaml" "$2" <<'PY'
import sys, yaml
objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
dep = next(o for o in objs if o["kind"] == "Deployment")
c = dep["spec"]["template"]["spec"]["containers"][0]
role = next(o for o in objs if o["kind"] == "Role" and o["metadata"]["name"] == "enflame-epp")
exec(sys.argv[3])
yaml.safe_dump_all(objs, open(sys.argv[2], "w"))
PY
    run python3 "$BATS_TEST_DIRNAME/check_manifests.py" "$SCRATCH/m-$1.yaml" "$SCRATCH/images.txt" --add-on --namespace serving
    echo "$1: $output"
    [ "$status" -eq 1 ]
    [[ $output == *"$3"* ]]
  }
  mutate rw-root 'del c["securityContext"]["readOnlyRootFilesystem"]' "Deployment/enflame-epp: container enflame-epp: root filesystem not read-only"
  mutate root 'del dep["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"]' "Deployment/enflame-epp: container enflame-epp: not runAsNonRoot"
  mutate caps 'del c["securityContext"]["capabilities"]' "Deployment/enflame-epp: container enflame-epp: capabilities not dropped"
  mutate seccomp 'del dep["spec"]["template"]["spec"]["securityContext"]["seccompProfile"]' "Deployment/enflame-epp: container enflame-epp: seccompProfile None, want RuntimeDefault"
  mutate pool-get 'role["rules"][0]["verbs"].append("get")' "Role/enflame-epp: grants ['get'] on inferencepools, which no daemon calls"
  mutate objective-get 'role["rules"][1]["verbs"].append("get")' "Role/enflame-epp: grants ['get'] on inferenceobjectives, which no daemon calls"
  mutate rewrite-get 'role["rules"][2]["verbs"].append("get")' "Role/enflame-epp: grants ['get'] on inferencemodelrewrites, which no daemon calls"
  mutate secrets 'role["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]})' "Role/enflame-epp: grants secrets (core), which no daemon uses"
  mutate no-probe 'del c["readinessProbe"]' "Deployment/enflame-epp: container enflame-epp: no readinessProbe"
  # the GPU stack's render (and the operator's, which must equal it) leaves the EPP out
  render .
  run objects
  refute_grep -F "enflame-epp"
}
