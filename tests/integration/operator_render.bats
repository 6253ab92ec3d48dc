#!/usr/bin/env bats
# enflame-gpu-operator's renderer without a cluster: the GpuResource CRD is what its generator
# writes, and --render of a CR is exactly what `kubectl kustomize` renders of the same folders
# (plus the operator's label), so the operator and `kubectl apply -k` install the same objects.
# kubectl 1.32 comes from Debian 13 (scripts/fetch-trixie.sh, unpacked under $BUILD_DIR/trixie,
# as deployments.bats does). operator.bats checks the same objects on a real cluster.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  requires python3
  setup_scratch
  OP=$SCRATCH
  trixie_kubectl
}

teardown() { teardown_scratch; }

kc() { "$KUBECTL" "$@"; }

# cr NAME SPEC_YAML: a GpuResource NAME with SPEC_YAML (indented under spec:).
cr() {
  printf 'apiVersion: enflame.com/v1\nkind: GpuResource\nmetadata: {name: %s}\nspec:\n%s\n' "$1" "$2"
}

@test "crd.yaml is what scripts/gen-operator-crd.py writes" {
  run -0 "$TOP/scripts/gen-operator-crd.py"
  diff <(echo "$output") "$TOP/deployments/operator/crd.yaml"
}

# same_as_kustomize SPEC_FILE DIR...: the operator's --render of SPEC_FILE is exactly what
# kubectl kustomize renders of the DIRs together, plus the operator's label on each object, but
# the Namespace and roles, which the operator leaves to deployments/operator: each of those is
# there, the same.
# RENDER_FLAGS: more flags for --render (--prometheus-operator: the monitoring kinds served).
same_as_kustomize() {
  local bin=$BUILD_DIR/k8s/operator/enflame-gpu-operator spec=$1 d
  shift
  [ -x "$bin" ] || skip_or_fail "no $bin: cmake --build --preset dev --target enflame-gpu-operator"
  # shellcheck disable=SC2086
  run -0 "$bin" --manifests "$TOP/deployments" --render "$spec" ${RENDER_FLAGS:-}
  echo "$output" > "$OP/rendered.jsonl"
  for d in "$@"; do kc kustomize "$d"; echo ---; done > "$OP/kustomized.yaml"
  kc kustomize "$TOP/deployments/operator" > "$OP/operator.yaml"
  run -0 python3 - "$OP/rendered.jsonl" "$OP/kustomized.yaml" "$OP/operator.yaml" <<'PY'
import json, sys, yaml
key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
ours = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert o["metadata"]["labels"].pop("app.kubernetes.io/managed-by") == "enflame-gpu-operator"
    ours[key(o)] = o
theirs = {key(o): o for o in yaml.safe_load_all(open(sys.argv[2])) if o}
shipped = {key(o): o for o in yaml.safe_load_all(open(sys.argv[3])) if o}
left = {k for k in theirs if k[0] in ("Namespace", "ClusterRole", "Role")}
for k in left:
    assert shipped.get(k) == theirs[k], ("not shipped with deployments/operator", k)
    del theirs[k]
assert set(ours) == set(theirs), set(ours) ^ set(theirs)
for k in ours:
    assert ours[k] == theirs[k], k
print(len(ours), "objects equal;", len(left), "shipped with deployments/operator")
PY
  echo "$output"
}

@test "render: a default GpuResource gives what kubectl kustomize deployments/ renders (plus the operator's label)" {
  same_as_kustomize "$TOP/deployments/operator/examples/gpuresource.yaml" "$TOP/deployments"
}

@test "render: npd and nodeExporter on add what kubectl kustomize deployments/npd and deployments/node-exporter render (NPD's generated ConfigMap under the same hashed name)" {
  cr x '  npd: {enabled: true}
  nodeExporter: {enabled: true}' > "$OP/npd-cr.yaml"
  same_as_kustomize "$OP/npd-cr.yaml" "$TOP/deployments" "$TOP/deployments/npd" "$TOP/deployments/node-exporter"
  [[ $output == "16 objects equal; 1 shipped with deployments/operator" ]]
}

@test "render: drsManager on adds what kubectl kustomize deployments/drs-manager renders (its roles shipped with deployments/operator)" {
  cr x '  drsManager: {enabled: true}' > "$OP/drs-cr.yaml"
  same_as_kustomize "$OP/drs-cr.yaml" "$TOP/deployments" "$TOP/deployments/drs-manager"
  [[ $output == "18 objects equal; 4 shipped with deployments/operator" ]]
}

@test "render: drsManager.evictionPolicy Evict renders what kubectl kustomize deployments/drs-manager-eviction does (the eviction binding, EVICTION_POLICY=evict); Wait neither" {
  cr x '  drsManager: {enabled: true, evictionPolicy: Evict}' > "$OP/evict-cr.yaml"
  same_as_kustomize "$OP/evict-cr.yaml" "$TOP/deployments" "$TOP/deployments/drs-manager-eviction"
  [[ $output == "19 objects equal; 4 shipped with deployments/operator" ]]
  grep -q '"name":"EVICTION_POLICY","value":"evict"' "$OP/rendered.jsonl"
  cr x '  drsManager: {enabled: true, evictionPolicy: Wait}' > "$OP/wait-cr.yaml"
  run -0 "$BUILD_DIR/k8s/operator/enflame-gpu-operator" --manifests "$TOP/deployments" --render "$OP/wait-cr.yaml"
  [[ $output != *enflame-drs-manager-eviction* ]]
  [[ $output != *EVICTION_POLICY* ]]
}

@test "render: drsManager.layouts replaces the shipped layouts in the ConfigMap enflame-drs-layouts, nothing else changes" {
  cr x '  drsManager:
    enabled: true
    layouts: |
      version: v1
      layouts:
        half-split:
        - cards: {index: [0, 1]}
          profiles: {2g.22gb: 2}' > "$OP/layouts-cr.yaml"
  local bin=$BUILD_DIR/k8s/operator/enflame-gpu-operator
  run -0 "$bin" --manifests "$TOP/deployments" --render "$OP/layouts-cr.yaml"
  echo "$output" > "$OP/layouts.jsonl"
  cr x '  drsManager: {enabled: true}' > "$OP/plain-cr.yaml"
  run -0 "$bin" --manifests "$TOP/deployments" --render "$OP/plain-cr.yaml"
  echo "$output" > "$OP/plain.jsonl"
  run -0 python3 - "$OP/layouts.jsonl" "$OP/plain.jsonl" <<'PY'
import json, sys, yaml
load = lambda f: {(o["kind"], o["metadata"]["name"]): o for o in map(json.loads, open(f))}
ours, plain = load(sys.argv[1]), load(sys.argv[2])
cm = ("ConfigMap", "enflame-drs-layouts")
assert yaml.safe_load(ours[cm]["data"]["layouts.yaml"]) == {
    "version": "v1", "layouts": {"half-split": [{"cards": {"index": [0, 1]}, "profiles": {"2g.22gb": 2}}]}}, ours[cm]
assert "all-1g.11gb" in plain[cm]["data"]["layouts.yaml"]
assert set(ours) == set(plain)
assert [k for k in ours if ours[k] != plain[k]] == [cm], [k for k in ours if ours[k] != plain[k]]
PY
}

@test "render: nfd on and every monitoring object asked for (their kinds served) add what kubectl kustomize deployments/nfd and deployments/monitoring/operator render" {
  cr x '  nfd: {enabled: true}
  npd: {enabled: true, podMonitor: {enabled: true}}
  nodeExporter: {enabled: true, serviceMonitor: {enabled: true}}
  exporter: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}}' > "$OP/nfd-cr.yaml"
  RENDER_FLAGS=--prometheus-operator same_as_kustomize "$OP/nfd-cr.yaml" "$TOP/deployments" \
    "$TOP/deployments/nfd" "$TOP/deployments/npd" "$TOP/deployments/node-exporter" \
    "$TOP/deployments/monitoring/operator"
  [[ $output == "29 objects equal; 3 shipped with deployments/operator" ]]
  # the kinds not served: the same without the four monitoring objects
  same_as_kustomize "$OP/nfd-cr.yaml" "$TOP/deployments" "$TOP/deployments/nfd" \
    "$TOP/deployments/npd" "$TOP/deployments/node-exporter"
  [[ $output == "25 objects equal; 3 shipped with deployments/operator" ]]
}
