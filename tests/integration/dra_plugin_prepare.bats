#!/usr/bin/env bats
# enflame-dra-plugin's kubelet side: registration through the plugin watcher, NodePrepare and
# NodeUnprepareResources in v1 and v1beta1, per-claim faults, a rotated token, the API server down,
# slow or started late, kubelet's deadline, an unprepare racing a prepare, another node's pool.
# Helpers: dra_plugin.bash.

load helpers
load dra_plugin
bats_require_minimum_version 1.5.0   # `run !`

setup() { dra_plugin_setup; }
teardown() { teardown_scratch; }

@test "registration: GetInfo through the plugin watcher; a kubelet 1.34 (v1, v1beta1) and 1.32 (v1beta1 only) register the plugin and prepare through it; 1.31 is refused; sockets 0600" {
  up
  put_claim ns c1 uid-1 gcu-0
  run "$FDK" register --registry "$REG" --kubelet-minor 34
  [ "$status" -eq 0 ]
  jq -e --arg s "$SOCK" '.info == {type: "DRAPlugin", name: "gcu.enflame.com", endpoint: $s, supported_versions: ["v1.DRAPlugin", "v1beta1.DRAPlugin"]}' <<<"$output"
  wait_for grep -qF "kubelet registered gcu.enflame.com (endpoint $SOCK)" "$SCRATCH/dra.log"
  run prepare v1 ns/c1/uid-1
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-1"].error == "" and .claims["uid-1"].devices[0].device_name == "gcu-0"' <<<"$output"
  run unprepare v1 ns/c1/uid-1
  [ "$status" -eq 0 ]
  # kubelet 1.32 knows only v1beta1: the plugin registers with it and serves that service
  run "$FDK" register --registry "$REG" --kubelet-minor 32
  [ "$status" -eq 0 ]
  wait_for test "$(grep -cF "kubelet registered gcu.enflame.com" "$SCRATCH/dra.log")" -eq 2
  run prepare v1beta1 ns/c1/uid-1
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-1"].error == "" and .claims["uid-1"].devices[0].device_name == "gcu-0"' <<<"$output"
  # kubelet 1.31 (v1alpha4): not a version the plugin serves; the plugin is told and says so
  run "$FDK" register --registry "$REG" --kubelet-minor 31
  [ "$status" -eq 1 ]
  wait_for grep -qF "kubelet did not register gcu.enflame.com: none of the supported versions" "$SCRATCH/dra.log"
  [ "$(stat -c %a "$SOCK")" = 600 ]
  [ "$(stat -c %a "$REG/gcu.enflame.com-reg.sock")" = 600 ]
}

@test "prepare v1: the claim is fetched, its spec written and valid, cdi_device_ids answered; a retry is the same; unprepare removes it" {
  up
  put_claim ns1 c1 uid-1 gcu-1
  run prepare v1 ns1/c1/uid-1
  [ "$status" -eq 0 ]
  [ "$output" = '{"claims":{"uid-1":{"devices":[{"request_names":["gpu"],"pool_name":"node1","device_name":"gcu-1","cdi_device_ids":["k8s.gcu.enflame.com/claim=uid-1-gcu-1"]}],"error":""}}}' ]
  local first=$output
  run "$CTK" cdi validate "$(spec_of uid-1)"
  [ "$status" -eq 0 ]
  [ "$(stat -c %a "$(spec_of uid-1)")" = 644 ]
  run "$CTK" cdi list --spec-dir "$CDIR"
  [ "$output" = "k8s.gcu.enflame.com/claim=uid-1-gcu-1" ]
  grep -qE '^ *(- )?path: /dev/gcu1$' "$(spec_of uid-1)"
  run ! grep -q '/dev/gcu0' "$(spec_of uid-1)"
  [ "$(jq -r '.claims["uid-1"].devices[0].device' "$CP")" = gcu-1 ]
  local sum
  sum=$(sha256sum < "$(spec_of uid-1)")
  # kubelet retries: the same answer and the same bytes, also in v1beta1
  run prepare v1 ns1/c1/uid-1
  [ "$output" = "$first" ]
  run prepare v1beta1 ns1/c1/uid-1
  [ "$output" = "$first" ]
  [ "$(sha256sum < "$(spec_of uid-1)")" = "$sum" ]
  run unprepare v1 ns1/c1/uid-1 ns1/never/uid-never
  [ "$status" -eq 0 ]
  # a protobuf map has no order: compare sorted
  [ "$(jq -cS . <<<"$output")" = '{"claims":{"uid-1":{"error":""},"uid-never":{"error":""}}}' ]
  [ ! -e "$(spec_of uid-1)" ]
  [ "$(jq -c .claims "$CP")" = '{}' ]
}

@test "prepare v1beta1 against a server that offers only resource.k8s.io/v1beta1" {
  sim_setup 2
  start_api --versions v1beta1
  start_plugin
  put_claim ns1 c1 uid-1 gcu-0 gcu-1
  run prepare v1beta1 ns1/c1/uid-1
  [ "$status" -eq 0 ]
  [ "$(jq -c '[.claims["uid-1"].devices[].cdi_device_ids[0]]' <<<"$output")" = '["k8s.gcu.enflame.com/claim=uid-1-gcu-0","k8s.gcu.enflame.com/claim=uid-1-gcu-1"]' ]
  jq -e '.claims["uid-1"].error == ""' <<<"$output"
}

@test "faults: uid mismatch, not allocated, other driver, unknown claim, a card not here, an opaque config of an unknown kind: one error each, the good claim prepared, nothing left behind" {
  up
  put_claim ns good uid-g gcu-0
  put_claim ns moved uid-new gcu-1
  put_claim ns nvidia uid-n gpu-0@gpu.nvidia.com
  put_claim ns far uid-f gcu-9
  put_claim ns opaque uid-o gcu-1
  jq '.status.allocation.devices.config = [{source: "FromClaim", requests: ["gpu"], opaque: {driver: "gcu.enflame.com",
      parameters: {apiVersion: "gcu.enflame.com/v1alpha1", kind: "GpuConfig"}}}]' "$API/claims/ns/opaque.json" > "$SCRATCH/o.json"
  mv "$SCRATCH/o.json" "$API/claims/ns/opaque.json"
  jq 'del(.status)' "$API/claims/ns/good.json" > "$API/claims/ns/pending.json"
  jq '.metadata.name = "pending" | .metadata.uid = "uid-p"' "$API/claims/ns/pending.json" > "$SCRATCH/p.json"
  mv "$SCRATCH/p.json" "$API/claims/ns/pending.json"
  run prepare v1 ns/good/uid-g ns/moved/uid-old ns/pending/uid-p ns/nvidia/uid-n ns/gone/uid-x ns/far/uid-f ns/opaque/uid-o
  [ "$status" -eq 0 ]
  err() { jq -r --arg u "$1" '.claims[$u].error' <<<"$output"; }
  [ "$(err uid-g)" = "" ]
  [ "$(err uid-old)" = "claim 'ns/moved': metadata.uid is 'uid-new', kubelet asked for 'uid-old' (the claim was deleted and created again)" ]
  [ "$(err uid-p)" = "claim 'ns/pending': status.allocation: missing (the claim is not allocated)" ]
  [ "$(err uid-n)" = "claim 'ns/nvidia': status.allocation.devices.results: no device of driver 'gcu.enflame.com'" ]
  [[ "$(err uid-x)" == "claim 'ns/gone': fetching it: GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/gone: 404"* ]]
  [ "$(err uid-f)" = "claim 'ns/far': device 'gcu-9' is not on this node" ]
  [ "$(err uid-o)" = "claim 'ns/opaque': status.allocation.devices.config[0].opaque.parameters: kind 'GpuConfig': want GcuConfig or DrsConfig" ]
  [ "$(ls "$CDIR")" = "k8s.gcu.enflame.com-claim_uid-g.yaml" ]
  [ "$(jq -c '.claims | keys' "$CP")" = '["uid-g"]' ]
}

@test "a rotated service-account token: the API server refuses the old one (401), the plugin re-reads its token file and the prepare works; a token that did not change is the claim's error" {
  sim_example 2 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  start_api
  echo test-token > "$SCRATCH/token"
  sed -i "s|token: test-token|tokenFile: $SCRATCH/token|" "$KC"
  start_plugin
  put_claim ns c1 uid-1 gcu-0
  put_claim ns c2 uid-2 gcu-1
  run prepare v1 ns/c1/uid-1
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-1"].error == ""' <<<"$output"
  wait_for has_slices "gcu-0 gcu-1"   # the publisher is idle until its resync
  # kubelet rotates the token (a new file renamed over the old); the old one expires
  echo rotated-token > "$SCRATCH/token.new"
  mv "$SCRATCH/token.new" "$SCRATCH/token"
  echo '{"tokens": ["rotated-token"]}' > "$API/control.json"
  : > "$API/tokens.log"
  run prepare v1 ns/c2/uid-2
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-2"].error == ""' <<<"$output"
  [ -e "$(spec_of uid-2)" ]
  [ "$(paste -sd' ' "$API/tokens.log")" = "test-token rotated-token" ]
  grep -qF "the token in '$SCRATCH/token' changed" "$SCRATCH/dra.log"
  # the server refuses this one too, and the file holds no newer one: the 401 is the error
  echo '{"tokens": ["third-token"]}' > "$API/control.json"
  put_claim ns c3 uid-3 gcu-1
  run prepare v1 ns/c3/uid-3
  [ "$status" -eq 0 ]
  local e
  e=$(jq -r '.claims["uid-3"].error' <<<"$output")
  echo "$e"
  [[ "$e" == *"API server https://127.0.0.1:$(cat "$API/port"): GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c3: 401 Unauthorized"*"(the token in '$SCRATCH/token' has not changed)"* ]]
  [ ! -e "$(spec_of uid-3)" ]
}

@test "a temporary spec file a crash left in the CDI folder is removed at start; another program's is not" {
  mkdir -p "$CDIR"
  echo half > "$CDIR/k8s.gcu.enflame.com-claim_uid-9.yaml.tmp.Ab12Cd"
  echo theirs > "$CDIR/vendor.yaml.tmp.Ab12Cd"
  up
  [ ! -e "$CDIR/k8s.gcu.enflame.com-claim_uid-9.yaml.tmp.Ab12Cd" ]
  [ -e "$CDIR/vendor.yaml.tmp.Ab12Cd" ]
  grep -qF "removed $CDIR/k8s.gcu.enflame.com-claim_uid-9.yaml.tmp.Ab12Cd" "$SCRATCH/dra.log"
}

@test "API server down during prepare: a clear per-claim error, no spec; back but slow, the retry prepares" {
  up
  put_claim ns c1 uid-1 gcu-0
  echo '{"down": true}' > "$API/control.json"
  run prepare v1 ns/c1/uid-1
  [ "$status" -eq 0 ]
  local e
  e=$(jq -r '.claims["uid-1"].error' <<<"$output")
  echo "$e"
  [[ "$e" == "claim 'ns/c1': fetching it: GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c1: "* ]]
  [ ! -e "$(spec_of uid-1)" ]
  # slow (but within the client's timeout): prepared
  echo '{"slow_ms": 400}' > "$API/control.json"
  run prepare v1 ns/c1/uid-1
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-1"].error == ""' <<<"$output"
  [ -e "$(spec_of uid-1)" ]
}

# nothing_of CLAIM: no spec, no checkpoint entry or pending entry, no DRS instance on any card.
nothing_of() {
  [ ! -e "$(spec_of "$1")" ]
  if [ -e "$CP" ]; then
    jq -e --arg u "$1" '(.claims | has($u) | not) and ([.pending[]? | select(.claim == $u)] == [])' "$CP"
  fi
  [ "$(drs_list)" = "" ]
}
# requests: how many requests the API server answered (or refused) so far.
requests() { wc -l < "$API/tokens.log"; }
requests_more_than() { [ "$(requests)" -gt "$1" ]; }
# slices_json: node1's ResourceSlices as the scheduler reads them (devices and counters).
slices_json() {
  api GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=node1,spec.driver=gcu.enflame.com" |
    jq -cS '[.items[].spec] | sort_by(.pool.name)'
}

@test "a prepare that outlives kubelet's deadline (an API server slower than it), or whose kubelet went away, commits nothing: no spec, no checkpoint entry, no DRS instance; the advertised counters unchanged" {
  drs_up
  wait_for has_slices "$(placements 0) $(placements 1)"
  local slices
  slices=$(slices_json)
  jq -e 'length > 0' <<<"$slices"
  put_claim ns p uid-p gcu-0-1g-11gb-1
  local before
  before=$(requests)
  echo '{"slow_ms": 2500}' > "$API/control.json"
  # kubelet's deadline, 1 s here (45 s in kubelet): the answer, if one comes in time, is an error
  run "$FDK" prepare --socket "$SOCK" --version v1 --timeout-ms 1000 --claim=ns/p/uid-p
  echo "$output"
  if [ "$status" -eq 0 ]; then
    jq -e '.claims["uid-p"].error | contains("no answer from the API server in time")' <<<"$output"
  else
    [[ "$output" == *DEADLINE_EXCEEDED* ]]
  fi
  # the fetch the plugin gave up on is answered 2.5 s after it began (the server logs it then)
  wait_for requests_more_than "$before"
  sleep 0.5
  nothing_of uid-p
  # kubelet gone mid-call (restarted): the fetch comes back in time, but the call is cancelled
  before=$(requests)
  timeout -s KILL 0.5 "$FDK" prepare --socket "$SOCK" --version v1 --claim=ns/p/uid-p || true
  wait_for requests_more_than "$before"
  wait_for grep -qF "claim 'ns/p': the call was cancelled or its deadline passed before the claim was prepared: not prepared" "$SCRATCH/dra.log"
  nothing_of uid-p
  echo '{}' > "$API/control.json"
  [ "$(slices_json)" = "$slices" ]
  # kubelet's retry with time to spare prepares it
  run prepare v1 ns/p/uid-p
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-p"].error == ""' <<<"$output"
  [ "$(drs_list)" = "0:1g.11gb:0" ]
}

@test "an unprepare while the prepare still fetches its claim: the late prepare is refused and leaves nothing; a prepare after the unprepare works" {
  drs_up
  wait_for has_slices "$(placements 0) $(placements 1)"
  local slices
  slices=$(slices_json)
  put_claim ns p uid-p gcu-0-1g-11gb-1
  echo '{"slow_ms": 3000}' > "$API/control.json"
  "$FDK" prepare --socket "$SOCK" --version v1 --claim=ns/p/uid-p >"$SCRATCH/late.json" 2>&1 3>&- &
  local late=$!
  sleep 0.5
  # kubelet gave up on the pod: it unprepares the claim (unknown to the plugin yet: done at once)
  run unprepare v1 ns/p/uid-p
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-p"].error == ""' <<<"$output"
  wait "$late"
  cat "$SCRATCH/late.json"
  nothing_of uid-p
  jq -e ".claims[\"uid-p\"].error == \"claim 'ns/p': unprepared while this prepare was running: not prepared\"" "$SCRATCH/late.json"
  echo '{}' > "$API/control.json"
  [ "$(slices_json)" = "$slices" ]
  # the claim prepared again later (a new pod sharing it) is not refused
  run prepare v1 ns/p/uid-p
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-p"].error == ""' <<<"$output"
  [ "$(drs_list)" = "0:1g.11gb:0" ]
  [ -e "$(spec_of uid-p)" ]
}

@test "started while the API server is down: converges from the checkpoint, serves unprepare and checkpointed claims, a new claim is its error; slices published once the server answers" {
  up
  put_claim ns a uid-a gcu-0
  put_claim ns b uid-b gcu-1
  run prepare v1 ns/a/uid-a ns/b/uid-b
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-a"].error == "" and .claims["uid-b"].error == ""' <<<"$output"
  stop_pid "$DPID"
  rm "$(spec_of uid-a)"   # a tmpfs CDI folder after a reboot
  echo '{"down": true}' > "$API/control.json"
  start_plugin
  wait_for test -e "$(spec_of uid-a)"
  wait_for grep -qF "ResourceSlices not published yet; asking again in the background" "$SCRATCH/dra.log"
  run prepare v1 ns/a/uid-a
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-a"].error == "" and .claims["uid-a"].devices[0].device_name == "gcu-0"' <<<"$output"
  run unprepare v1 ns/b/uid-b
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-b"].error == ""' <<<"$output"
  [ ! -e "$(spec_of uid-b)" ]
  jq -e '.claims | keys == ["uid-a"]' "$CP"
  put_claim ns c uid-c gcu-1
  run prepare v1 ns/c/uid-c
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-c"].error | startswith("claim '"'"'ns/c'"'"': fetching it: asking the API server for resource.k8s.io: ")' <<<"$output"
  [ ! -e "$(spec_of uid-c)" ]
  # the server is back; kubelet registering the plugin has it asked at once
  echo '{}' > "$API/control.json"
  run "$FDK" register --registry "$REG"
  [ "$status" -eq 0 ]
  wait_for has_slices "gcu-0 gcu-1"
  run prepare v1 ns/c/uid-c
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-c"].error == ""' <<<"$output"
}

@test "a claim allocated from another node's pool is refused: one error naming the claim, the pool and this node; no spec, no instance, no checkpoint entry; the other claim is prepared" {
  drs_up
  put_claim ns here uid-h gcu-0
  put_claim ns there uid-t gcu-1-1g-11gb-0
  jq '.status.allocation.devices.results[0].pool = "node2"' "$API/claims/ns/there.json" > "$SCRATCH/t.json"
  mv "$SCRATCH/t.json" "$API/claims/ns/there.json"
  run prepare v1 ns/there/uid-t ns/here/uid-h
  [ "$status" -eq 0 ]
  [ "$(jq -r '.claims["uid-t"].error' <<<"$output")" = "claim 'ns/there': device 'gcu-1-1g-11gb-0' is allocated from pool 'node2', not this node's ('node1'): allocated for another node, not prepared here" ]
  [ "$(jq -r '.claims["uid-h"].error' <<<"$output")" = "" ]
  [ "$(ls "$CDIR")" = "k8s.gcu.enflame.com-claim_uid-h.yaml" ]
  [ "$(drs_list)" = "" ]
  [ "$(jq -c '.claims | keys' "$CP")" = '["uid-h"]' ]
  [ "$(jq -c '.pending' "$CP")" = null ]
}
