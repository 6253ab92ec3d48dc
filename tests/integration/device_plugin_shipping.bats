#!/usr/bin/env bats
# enflame-device-plugin as shipped: its man page, the DaemonSet and ConfigMap manifests, and what
# cmake --install carries. Helpers: device_plugin.bash.

load helpers
load device_plugin
bats_require_minimum_version 1.5.0   # `run !`

setup() { device_plugin_setup; }
teardown() { teardown_scratch; }

@test "man page: renders without warnings and names every flag of --help" {
  requires man
  man_covers_flags "$TOP/man/enflame-device-plugin.8" "$DP"
}

@test "deployments: the DaemonSet mounts kubelet's folder and selects enflame.com/gpu.present; the ConfigMap's configs are accepted" {
  requires python3
  local d=$TOP/deployments/device-plugin
  python3 - "$d" > "$SCRATCH/cm.json" <<'PY'
import json, sys, yaml
d = sys.argv[1]
k = yaml.safe_load(open(d + "/kustomization.yaml"))
docs = {}
for r in k["resources"]:
    doc = yaml.safe_load(open(d + "/" + r))
    docs[doc["kind"]] = doc
ds = docs["DaemonSet"]["spec"]["template"]["spec"]
assert ds["nodeSelector"] == {"enflame.com/gpu.present": "true"}, ds["nodeSelector"]
mounts = {m["mountPath"] for m in ds["containers"][0]["volumeMounts"]}
assert "/var/lib/kubelet/device-plugins" in mounts, mounts
paths = {v["hostPath"]["path"] for v in ds["volumes"] if "hostPath" in v}
assert "/var/lib/kubelet/device-plugins" in paths, paths
assert docs["ConfigMap"]["metadata"]["name"] == ds["volumes"][-1]["configMap"]["name"]
# the example pod (no RuntimeClass) gets its cards through containerd's CDI; the annotations
# (which a pod cannot set, unlike the env) for the shim, the legacy hook and the NRI plugin
env = {e["name"]: e.get("value") for e in ds["containers"][0]["env"]}
assert env["DEVICE_LIST_STRATEGY"] == "cdi-cri,cdi-annotations", env
print(json.dumps(docs["ConfigMap"]["data"]))
PY
  jq -r '."config.toml"' "$SCRATCH/cm.json" > "$SCRATCH/cm-config.toml"
  run "$CTK" --config "$SCRATCH/cm-config.toml" config
  [ "$status" -eq 0 ]
  # plugin.yaml with its sharing block switched on drives the real daemon.
  jq -r '."plugin.yaml"' "$SCRATCH/cm.json" | sed 's/^# //; s/^    # /    /' > "$SCRATCH/cm-plugin.yaml"
  grep -q 'replicas: 4' "$SCRATCH/cm-plugin.yaml"
  registered --plugin-config "$SCRATCH/cm-plugin.yaml"
  [ "$(jq -r 'select(.event == "list") | .data.devices | length' "$EV")" -eq 16 ]
}

@test "cmake --install carries the daemon, its man page and its manifests" {
  # DESTDIR: never into the real /usr or /etc (the config file's folder is absolute)
  DESTDIR=$SCRATCH/stage run cmake --install "$BUILD_DIR" --prefix /usr
  [ "$status" -eq 0 ]
  local s=$SCRATCH/stage/usr
  [ -x "$s/bin/enflame-device-plugin" ]
  [ -f "$s/share/man/man8/enflame-device-plugin.8" ]
  [ -f "$s/share/doc/enflame-container-toolkit/deployments/device-plugin/daemonset.yaml" ]
  run "$s/bin/enflame-device-plugin" --version
  [[ $output == "enflame-device-plugin "* ]]
}
