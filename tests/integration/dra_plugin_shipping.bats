#!/usr/bin/env bats
# enflame-dra-plugin as shipped: bad input, its man page, the DaemonSet, DeviceClasses and
# examples in deployments/, what cmake --install carries. Helpers: dra_plugin.bash.

load helpers
load dra_plugin
bats_require_minimum_version 1.5.0   # `run !`

setup() { dra_plugin_setup; }
teardown() { teardown_scratch; }

# --- bad input, docs, manifests, install ---

@test "bad input: no node name, a kubeconfig that is not there, a config that is not there: one line, exit 1, nothing served" {
  sim_setup 1
  run env -u NODE_NAME "$DRA" --plugins-registry "$REG" --plugins-dir "$PLUG" --cdi-root "$CDIR"
  [ "$status" -eq 1 ]
  [ "$output" = "error: --node-name: missing (set it or NODE_NAME, e.g. from the pod's spec.nodeName)" ]
  run "$DRA" --node-name n --kubeconfig "$SCRATCH/none.yaml" --plugins-registry "$REG" --plugins-dir "$PLUG"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == "error: "*"$SCRATCH/none.yaml"* ]]
  start_api
  run "$DRA" --node-name n --kubeconfig "$KC" --config "$SCRATCH/none.toml" --plugins-registry "$REG" --plugins-dir "$PLUG" --cdi-root "$CDIR"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == "error: "*"$SCRATCH/none.toml"* ]]
  [ ! -e "$REG/gcu.enflame.com-reg.sock" ]
}

@test "man page: renders without warnings and names every flag" {
  requires man
  man_covers_flags "$TOP/man/enflame-dra-plugin.8" "$DRA"
}

# The RBAC and privilege of the manifests are checked as properties by check_manifests.py
# (deployments.bats) and on the real cluster by cluster_rbac.bats; here what the daemon needs.
@test "deployments: DaemonSet folders and NODE_NAME, its own plugin folder only, DeviceClasses in v1 and v1beta1, examples in both" {
  requires python3 kubectl
  local d=$TOP/deployments/dra
  kubectl kustomize "$d" > "$SCRATCH/all.yaml"
  python3 - "$d" "$SCRATCH/all.yaml" <<'PY'
import glob, sys, yaml
d, built = sys.argv[1], sys.argv[2]
docs = list(yaml.safe_load_all(open(built)))
by = {(x["kind"], x["metadata"]["name"]): x for x in docs}
ds = by[("DaemonSet", "enflame-dra-plugin")]["spec"]["template"]["spec"]
c = ds["containers"][0]
mounts = {m["mountPath"] for m in c["volumeMounts"]}
hostpaths = {v["hostPath"]["path"] for v in ds["volumes"] if "hostPath" in v}
for p in ("/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins/gcu.enflame.com", "/var/run/cdi"):
    assert p in mounts, (p, mounts)
    assert p in hostpaths, p
# the daemon's default --plugins-dir is the parent: its own folder is the one mounted
assert "/var/lib/kubelet/plugins" not in mounts | hostpaths, (mounts, hostpaths)
env = {e["name"]: e for e in c["env"]}
assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
assert ds["serviceAccountName"] == "enflame-dra-plugin"
assert ("ServiceAccount", "enflame-dra-plugin") in by
assert ("ClusterRole", "enflame-dra-plugin") in by
for v in ("v1", "v1beta1"):
    classes = {x["metadata"]["name"]: x for x in yaml.safe_load_all(open(f"{d}/deviceclasses-{v}.yaml"))}
    assert set(classes) == {"gcu.enflame.com", "enflame.com", "drs.gcu.enflame.com"}, classes
    sel = lambda n: classes[n]["spec"]["selectors"][0]["cel"]["expression"]
    assert all(x["apiVersion"] == "resource.k8s.io/" + v for x in classes.values())
    assert sel("gcu.enflame.com") == sel("enflame.com")
    assert "type == 'gcu'" in sel("gcu.enflame.com") and "type == 'drs'" in sel("drs.gcu.enflame.com")
    files = sorted(glob.glob(f"{d}/examples/{v}/*.yaml"))
    assert len(files) == 5, files
    for f in files:
        for x in yaml.safe_load_all(open(f)):
            if x["kind"] in ("ResourceClaim", "ResourceClaimTemplate"):
                assert x["apiVersion"] == "resource.k8s.io/" + v, f
                spec = x["spec"]["spec"] if x["kind"] == "ResourceClaimTemplate" else x["spec"]
                for r in spec["devices"]["requests"]:
                    # v1 puts a request's fields under `exactly`; v1beta1 keeps them flat
                    assert ("exactly" in r) == (v == "v1"), (f, r)
                    cls = (r["exactly"] if v == "v1" else r)["deviceClassName"]
                    assert cls in classes, (f, cls)
PY
  # the ConfigMap's config.toml is a configuration the toolkit accepts
  python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["config.toml"])' "$d/configmap.yaml" > "$SCRATCH/cm.toml"
  run "$CTK" --config "$SCRATCH/cm.toml" config
  [ "$status" -eq 0 ]
  # the plugin looks under the pod's /host; the specs it writes name the host's own paths
  [[ "$output" == *"driver-root = '/host'"* ]]
  [[ "$output" == *"host-driver-root = '/'"* ]]
}

@test "cmake --install carries the daemon, its man page and its manifests" {
  installs_daemon enflame-dra-plugin man8/enflame-dra-plugin.8 dra
  [ -f "$SCRATCH/stage/usr/share/doc/enflame-container-toolkit/deployments/dra/examples/v1beta1/any-gcu.yaml" ]
}
