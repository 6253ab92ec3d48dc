#!/usr/bin/env bats
# HAMi mode of enflame-device-plugin (deployments/overlays/hami) on the real one-node cluster
# (tests/cluster/cluster.sh). HAMi's scheduler cannot be built or pulled here: its decision
# (the annotations its Enflame backend writes, then pods/binding) comes from
# tests/cluster/hami-scheduler.sh; kubelet, our plugin (from `make images`), containerd and the
# simulated efsmi do the rest for real. Pods name a schedulerName nobody serves, as HAMi's
# webhook makes them, so only the stand-in binds them. One cluster for the file, tests in order:
#   BUILD_DIR=$PWD/build/dev bats tests/integration/hami.bats

load helpers
load one_node_cluster
bats_require_minimum_version 1.5.0

NS=enflame-system

setup_file() {
  kube_bin_named || return 0
  [ "$(id -u)" -eq 0 ] || skip_or_fail "needs root"
  [ -x "$SIM_HOST" ] || skip_or_fail "enflame-sim-host not built in $BUILD_DIR"
  export HM; HM=$(mktemp -d /tmp/ectk-hami.XXXXXX)
  chmod 755 "$HM"
  # four S60 cards with DRS on and no instance yet: HAMi's pods make them
  "$SIM_HOST" example --cards 4 --drs | python3 -c 'import sys, yaml
d = yaml.safe_load(sys.stdin)
d["drs"]["instances"] = []
yaml.safe_dump(d, sys.stdout, sort_keys=False)' > "$HM/desc.yaml"
  "$SIM_HOST" build --desc "$HM/desc.yaml" --root "$HM/host" > /dev/null
  cluster_up "$HM" images "$TOP/build/images/enflame-toolkit.oci.tar"
  cluster_overlay "$HM" hami overlays/hami
  cluster_apply "$HM" hami
}

teardown_file() {
  cluster_down "${HM:-}"
}

setup() {
  skip_if_file_skipped
  [ -f "$HM/cluster/env" ] || skip "the cluster is not up"
}

kc() { "$KUBECTL" "$@"; }
sched() { KUBECTL=$KUBECTL "$TOP/tests/cluster/hami-scheduler.sh" "$@"; }
# instances: the simulated host's DRS instances, one "card profile id uuid" line each, as efsmi lists them
instances() {
  "$HM/host/usr/local/efsmi/efsmi-1.4.3.4/efsmi" --drs --list-instance |
    awk -F'|' '$2 ~ /^ *[0-9]+ *$/ { gsub(/ /, ""); print $2, $3, $4, $5 }'
}

# cluster_diag: shown when ds_ready or wait_phase (helpers.bash) fails: the device plugin's last lines
cluster_diag() { kc -n "$NS" logs -l app.kubernetes.io/name=enflame-device-plugin --tail=20; }

# hami_pod NAME RESOURCE N [RESOURCE2 N2]: a pod HAMi's webhook would have given to HAMi's
# scheduler; it prints its env and cards, then sleeps.
hami_pod() {
  cluster_pod "$1" 'env; ls -l /dev/gcu*; sleep 3600' "$2: $3${4:+, $4: $5}" 'schedulerName: hami-scheduler'
}

# allocatable NAME: the node's allocatable count of resource NAME ("" when none)
allocatable() { kc get node "$NODE_NAME" -o json | jq -r --arg r "$1" '.status.allocatable[$r] // ""'; }

# until_is WANT CMD...: wait (30 s) until CMD prints WANT
until_is() {
  local want=$1; shift
  for _ in $(seq 60); do [ "$("$@")" = "$want" ] && return 0; sleep 0.5; done
  echo "want '$want', got '$("$@")'" >&2
  return 1
}

# cards POD: the /dev/gcuN (not gcuctl) the pod lists, one a line
cards() {
  local out
  for _ in $(seq 20); do out=$(kc logs "$1" 2>/dev/null | grep -oE '/dev/gcu[0-9]+$' | sort) && [ -n "$out" ] && break; sleep 0.5; done
  echo "$out"
}

annotation() { kc get pod "$1" -o json | jq -r --arg k "$2" '.metadata.annotations[$k] // ""'; }

# until_empty CMD...: wait (30 s) until CMD prints nothing
until_empty() {
  for _ in $(seq 60); do [ -z "$("$@")" ] && return 0; sleep 0.5; done
  "$@"
  return 1
}

# runs_in_instance POD CARD PROFILE: POD runs and lists /dev/gcuCARD alone, the host has one DRS
# instance, of PROFILE, the pod's TOPS_VISIBLE_DEVICES names it and the pod is marked assigned;
# UUID is set to the instance's uuid.
runs_in_instance() {
  wait_phase "$1" Running
  run cards "$1"
  [ "$output" = "/dev/gcu$2" ]
  run instances
  echo "$output"
  [ "${#lines[@]}" -eq 1 ]
  [[ ${lines[0]} == *"$3"* ]]
  UUID=$(awk '{print $NF}' <<<"${lines[0]}")
  run kc logs "$1"
  [[ $output == *"TOPS_VISIBLE_DEVICES=DRS-${UUID#DRS-}"* ]]
  [ "$(annotation "$1" enflame.com/gcu-assigned)" = true ]
}

@test "hami: overlays/hami as shipped: enflame.com/gcu 4, enflame.com/drs-gcu 16 slices, the node annotations HAMi parses" {
  ds_ready
  allocatable_is enflame.com/drs-gcu 16
  [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.allocatable.enflame\.com/gcu}')" = 4 ]
  [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.capacity.enflame\.com/gcu-count}')" = 4 ]
  run kc get node "$NODE_NAME" -o json
  [ "$status" -eq 0 ]
  # what HAMi's GetNodeDevices reads: every card with its 4 slices, the <g>g.<m>gb profiles
  jq -e '.metadata.annotations["enflame.com/gcu-drs-capacity"] | fromjson
         | (.devices | length == 4) and (.devices | all(.capacity == 4)) and (.devices[2] == {"index":"2","minor":"2","capacity":4})
           and (.profiles == {"1g.11gb":"0","2g.22gb":"1"})' <<<"$output"
  jq -e '.metadata.annotations["enflame.com/gcu-shared-capacity"] | fromjson | . == {"0":4,"1":4,"2":4,"3":4}' <<<"$output"
}

@test "hami: whole card: the pod gets exactly the card HAMi chose (card 2), bind-phase success" {
  hami_pod whole enflame.com/gcu 1
  sched card default whole "$NODE_NAME" 2
  wait_phase whole Running
  run cards whole
  echo "$output"
  [ "$output" = /dev/gcu2 ]
  [ "$(annotation whole hami.io/bind-phase)" = success ]
  [ "$(annotation whole hami.io/enflame-gcu-devices-to-allocate)" = ";" ]
  kc delete pod whole --wait > /dev/null
}

@test "hami: DRS 1g.11gb on card 1: an instance made, the pod sees card 1 and TOPS_VISIBLE_DEVICES, destroyed when the pod goes" {
  [ -z "$(instances)" ]
  hami_pod slice enflame.com/drs-gcu 1
  sched drs default slice "$NODE_NAME" 1 1 0 1g.11gb
  runs_in_instance slice 1 1g.11gb
  annotation slice assigned-containers | jq -e --arg u "${UUID#DRS-}" '.main.allocated == true and .main.kubeletAllocated == true and (.main.instanceUUID | endswith($u))'
  # HAMi counts the slices it gave from its pods: an instance we made for it leaves the card's
  # published capacity as it was
  kc get node "$NODE_NAME" -o json | jq -e '.metadata.annotations["enflame.com/gcu-drs-capacity"] | fromjson | .devices[1].capacity == 4'
  kc delete pod slice --wait > /dev/null
  until_empty instances
}

@test "hami: gcu-memory 11 + gcu-core 25: registered; the DRS instance HAMi chose (1g.11gb, card 0) made once, destroyed when the pod goes" {
  [ -z "$(instances)" ]
  # HAMi's backend places such a pod only where both exist in node allocatable
  # one ID per GiB of each card (the example leaves memory to the product: an S60's 42976 MiB)
  local gib
  gib=$(python3 -c 'import sys, yaml; print(sum(c.get("memory_mib", 42976) // 1024 for c in yaml.safe_load(open(sys.argv[1]))["cards"]))' "$HM/desc.yaml")
  ds_ready
  until_is 400 allocatable enflame.com/gcu-core
  [ "$(allocatable enflame.com/gcu-memory)" = "$gib" ]
  hami_pod memcore enflame.com/gcu-memory 11 enflame.com/gcu-core 25
  # HAMi: the smallest profile with >= 11 GB and >= 25 % of the cores
  sched drs default memcore "$NODE_NAME" 0 0 0 1g.11gb
  # kubelet allocated both resources for the container: one instance, not two
  runs_in_instance memcore 0 1g.11gb
  kc delete pod memcore --wait > /dev/null
  until_empty instances
}

@test "hami: two pods racing for the node: both run, each on one of the two cards HAMi chose, none twice" {
  hami_pod race-a enflame.com/gcu 1
  hami_pod race-b enflame.com/gcu 1
  sched card default race-a "$NODE_NAME" 0 &
  sched card default race-b "$NODE_NAME" 3
  wait
  wait_phase race-a Running
  wait_phase race-b Running
  local a b; a=$(cards race-a) b=$(cards race-b)
  echo "race-a: $a, race-b: $b"
  [ "$(printf '%s\n%s\n' "$a" "$b" | sort | tr '\n' ' ')" = "/dev/gcu0 /dev/gcu3 " ]
  [ "$(annotation race-a hami.io/bind-phase)" = success ]
  [ "$(annotation race-b hami.io/bind-phase)" = success ]
  kc delete pod race-a race-b --wait > /dev/null
}

@test "hami: the plugin restarted between HAMi's decision and the bind: the pod gets its card and slice; a running pod's instance is still destroyed" {
  hami_pod before enflame.com/drs-gcu 1
  sched drs default before "$NODE_NAME" 0 0 0 1g.11gb
  wait_phase before Running
  hami_pod after enflame.com/drs-gcu 2
  NO_BIND=1 sched drs default after "$NODE_NAME" 3 3 1 2g.22gb
  kc -n "$NS" delete pod -l app.kubernetes.io/name=enflame-device-plugin --wait > /dev/null
  ds_ready
  sched bind default after "$NODE_NAME"
  wait_phase after Running
  run cards after
  [ "$output" = /dev/gcu3 ]
  run instances
  echo "$output"
  [ "${#lines[@]}" -eq 2 ]
  # the new plugin took over the instance the old one made for `before`
  kc delete pod before --wait > /dev/null
  for _ in $(seq 60); do [ "$(instances | wc -l)" -eq 1 ] && break; sleep 0.5; done
  run instances
  [ "${#lines[@]}" -eq 1 ]
  [[ ${lines[0]} == *2g.22gb* ]]
  kc delete pod after --wait > /dev/null
  until_empty instances
}

@test "hami: a pod deleted while the plugin is down: its DRS instance is destroyed once the plugin is back" {
  [ -z "$(instances)" ]
  hami_pod orphan enflame.com/drs-gcu 1
  sched drs default orphan "$NODE_NAME" 2 2 0 1g.11gb
  wait_phase orphan Running
  run instances
  [ "${#lines[@]}" -eq 1 ]
  # the plugin down: its DaemonSet selects no node for a while
  kc -n "$NS" patch ds enflame-device-plugin --type=merge \
    -p '{"spec":{"template":{"spec":{"nodeSelector":{"enflame-test/plugin-off":"true"}}}}}' > /dev/null
  until_empty kc -n "$NS" get pods -l app.kubernetes.io/name=enflame-device-plugin -o name
  kc delete pod orphan --wait > /dev/null
  run instances
  [ "${#lines[@]}" -eq 1 ]   # nobody destroyed it meanwhile
  kc -n "$NS" patch ds enflame-device-plugin --type=json \
    -p '[{"op":"remove","path":"/spec/template/spec/nodeSelector/enflame-test~1plugin-off"}]' > /dev/null
  ds_ready
  # no live pod names the instance any more: only the plugin's checkpoint remembers it
  until_empty instances
  run kc -n "$NS" logs -l app.kubernetes.io/name=enflame-device-plugin --tail=-1
  [[ $output == *"pod default/orphan is gone: destroyed its DRS instance"* ]]
}

@test "hami: a pod HAMi did not schedule asking enflame.com/gcu is served as without HAMi" {
  cluster_pod plain 'ls -l /dev/gcu*; sleep 3600' 'enflame.com/gcu: 1'
  wait_phase plain Running
  run cards plain
  echo "$output"
  [ "${#lines[@]}" -eq 1 ]
  kc delete pod plain --wait > /dev/null
}

# forged_pod NAME: a pod that names HAMi's scheduler and this node itself, with HAMi's
# annotations giving it cards 0-3 for its one card, "oldest" (bind-time 1), as its owner writes it.
forged_pod() {
  local devs=""
  for i in 0 1 2 3; do devs+="$NODE_NAME-GCU-$i,GCU,100,100:"; done
  kc apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {hami.io/bind-phase: allocating, hami.io/bind-time: "1", hami.io/enflame-gcu-devices-to-allocate: "$devs;"}
spec:
  nodeName: $NODE_NAME
  schedulerName: hami-scheduler
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox:1.36
    command: ["sh", "-c", "ls -l /dev/gcu*; sleep 3600"]
    resources: {limits: {enflame.com/gcu: 1}}
YAML
}

@test "hami: a pod's owner cannot write HAMi's decision (admission policy); without the policy the plugin skips the forged pod: one card, kubelet's choice" {
  # the admin is neither HAMi's scheduler nor the plugin
  run forged_pod forged
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"may not write HAMi's decision annotations"* ]]
  run kc get pod forged
  [ "$status" -ne 0 ]
  # the policy's binding removed: the plugin itself must not honour the forged decision
  kc get validatingadmissionpolicybinding enflame-hami-decision-annotations -o json |
    jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.managedFields, .metadata.generation)' > "$HM/vapb.json"
  kc delete validatingadmissionpolicybinding enflame-hami-decision-annotations > /dev/null
  for _ in $(seq 30); do forged_pod forged > /dev/null 2>&1 && break; sleep 1; done
  kc apply -f "$HM/vapb.json" > /dev/null
  wait_phase forged Running
  run cards forged
  echo "$output"
  [ "${#lines[@]}" -eq 1 ]
  run kc -n "$NS" logs -l app.kubernetes.io/name=enflame-device-plugin --tail=200
  [[ $output == *"pod default/forged skipped, its annotations not honoured: spec.nodeName was written by"* ]]
  kc delete pod forged --wait > /dev/null
}

# From here on the host keeps one card fewer until teardown_file.
@test "hami: a decision naming a card removed at run time: the pod fails saying why, an event, no instance left" {
  [ -z "$(instances)" ]
  # HAMi chose card 3 from the node's annotations; then the card went (a hot unplug)
  "$SIM_HOST" unplug --root "$HM/host" --card 3
  hami_pod gone enflame.com/drs-gcu 1
  sched drs default gone "$NODE_NAME" 3 3 0 1g.11gb
  wait_phase gone Failed
  run annotation gone enflame.com/gcu-allocate-error
  echo "$output"
  [[ $output == *"card 3 that HAMi chose is not on this node"* ]]
  run kc get events --field-selector involvedObject.name=gone,reason=EnflameAllocateFailed -o jsonpath='{.items[*].message}'
  [[ $output == *"card 3"* ]]
  [ -z "$(instances)" ]
  kc delete pod gone --wait > /dev/null
}

# Last: the plugin stays in legacy mode.
@test "hami: HAMi <= 2.9 (HAMI_LEGACY_VGCU): enflame.com/shared-gcu 6 slices a card; the card HAMi chose; two pods share one card" {
  [ -z "$(instances)" ]
  kc -n "$NS" set env ds/enflame-device-plugin HAMI_LEGACY_VGCU=true > /dev/null
  ds_ready
  # shared-gcu = 6 x the whole cards (3 or 4: the card unplugged above may be gone)
  shared_per_card() {
    local c s; c=$(allocatable enflame.com/gcu) s=$(allocatable enflame.com/shared-gcu)
    if [ "${c:-0}" -ge 3 ] && [ "${s:-0}" -gt 0 ]; then echo $((s / c)),$((s % c)); fi
  }
  until_is 6,0 shared_per_card
  run kc get node "$NODE_NAME" -o json
  [ "$status" -eq 0 ]
  jq -e '.metadata.annotations["enflame.com/gcu-shared-capacity"] | fromjson | (to_entries | length >= 3) and all(.[]; . == 6)' <<<"$output"
  # what HAMi's webhook leaves: shared-gcu slices in the limits; then its assigned-id
  hami_pod legacy enflame.com/shared-gcu 3
  sched shared default legacy "$NODE_NAME" 1
  hami_pod share-a enflame.com/shared-gcu 2
  sched shared default share-a "$NODE_NAME" 2
  wait_phase legacy Running
  hami_pod share-b enflame.com/shared-gcu 4
  sched shared default share-b "$NODE_NAME" 2
  wait_phase share-a Running
  wait_phase share-b Running
  run cards legacy
  [ "$output" = /dev/gcu1 ]
  run cards share-a
  [ "$output" = /dev/gcu2 ]
  run cards share-b
  [ "$output" = /dev/gcu2 ]
  [ "$(annotation legacy enflame.com/gcu-assigned)" = true ]
  [ "$(annotation share-b enflame.com/gcu-assigned)" = true ]
  [ "$(annotation share-b enflame.com/gcu-shared-served)" = '["main"]' ]
  [ -z "$(instances)" ]  # shared, no DRS instance
  kc delete pod legacy share-a share-b --wait > /dev/null
}
