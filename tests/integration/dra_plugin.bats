#!/usr/bin/env bats
# enflame-dra-plugin against the simulated host, a fake API server and a fake kubelet
# (KUBERNETES.md section 6). k8s/tests/fake_apiserver.py serves ResourceClaims from
# $API/claims/<ns>/<name>.json over HTTPS (its own CA, a bearer token; faults from
# $API/control.json); build/dev/k8s/tests/fake-dra-kubelet plays kubelet's plugin watcher
# (GetInfo, NotifyRegistrationStatus) and calls NodePrepare/NodeUnprepareResources in v1 and
# v1beta1 as kubelet does. Every folder the plugin writes (plugins registry, plugins dir, CDI
# root) is under $SCRATCH: never the host's /var/lib/kubelet or /var/run/cdi. podman reads the
# per-claim specs in a private mount namespace (cdi_ns) where $SCRATCH/ns is /run.

load helpers
load cri
bats_require_minimum_version 1.5.0   # `run !`

DRA=$BUILD_DIR/k8s/dra/enflame-dra-plugin
FDK=$BUILD_DIR/k8s/tests/fake-dra-kubelet
FAKE_API=$TOP/k8s/tests/fake_apiserver.py

setup() {
  requires root jq python3 openssl
  [ -x "$DRA" ] || skip_or_fail "no $DRA (build enflame-dra-plugin)"
  [ -x "$FDK" ] || skip_or_fail "no $FDK (build fake-dra-kubelet)"
  [ -f "$FAKE_API" ] || skip_or_fail "no $FAKE_API"
  setup_scratch
  REG=$SCRATCH/reg
  PLUG=$SCRATCH/plugins
  CDIR=$SCRATCH/ns/cdi
  API=$SCRATCH/api
  mkdir -p "$REG" "$PLUG" "$CDIR" "$API/claims"
  SOCK=$PLUG/gcu.enflame.com/dra.sock
  CP=$PLUG/gcu.enflame.com/checkpoint.json
}

teardown() { teardown_scratch; }

# start_api [fake_apiserver args]: the fake API server and a kubeconfig for it ($KC).
start_api() {
  python3 "$FAKE_API" --dir "$API" "$@" >>"$SCRATCH/api.log" 2>&1 3>&- &
  APID=$!
  on_teardown "stop_pid $APID"
  wait_for test -s "$API/port"
  fake_api_kubeconfig
}

# start_plugin [args]: the daemon with every folder under $SCRATCH; log in $SCRATCH/dra.log.
start_plugin() {
  "$DRA" --node-name node1 --kubeconfig "$KC" --plugins-registry "$REG" --plugins-dir "$PLUG" \
    --cdi-root "$CDIR" "$@" >>"$SCRATCH/dra.log" 2>&1 3>&- &
  DPID=$!
  on_teardown "stop_pid $DPID"
  wait_for test -S "$REG/gcu.enflame.com-reg.sock"
}

# up [N] [sim args]: a simulated host of N (default 2) cards, the API server (with the
# arguments in $UP_API, e.g. --no-partitionable), the plugin.
up() {
  sim_example "${1:-2}" "${@:2}" > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  # shellcheck disable=SC2086  # word splitting wanted: several arguments
  start_api ${UP_API:-}
  start_plugin
}

# drs_up: 2 simulated S60 cards with DRS profiles (1g.11gb x4, 2g.22gb x2) and no instance yet,
# the API server (a 1.34 one, which takes counters), the plugin; $EFSMI is the host's efsmi.
drs_up() {
  sim_example 2 --drs | sed '/^  instances:/,/^runtime_libraries:/{/^runtime_libraries:/!d}' > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  EFSMI=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*/efsmi)
  start_api
  start_plugin
}
# drs_list: the simulated cards' DRS instances as efsmi lists them, "<card>:<profile>:<id>", sorted.
drs_list() {
  "$EFSMI" --drs --list-instance | awk -F'|' '$3 ~ /g\./ { gsub(/ /, ""); print $2 ":" $3 ":" $4 }' | sort | tr '\n' ' ' | sed 's/ $//'
}
# The devices a partitionable S60 card N offers: the card, four 1g.11gb and two 2g.22gb placements.
placements() { echo "gcu-$1 gcu-$1-1g-11gb-0 gcu-$1-1g-11gb-1 gcu-$1-1g-11gb-2 gcu-$1-1g-11gb-3 gcu-$1-2g-22gb-0 gcu-$1-2g-22gb-1"; }

# put_claim NS NAME UID DEVICE[@DRIVER]...: an allocated ResourceClaim on the API server, one
# result per DEVICE (request "gpu", pool node1, driver gcu.enflame.com unless @DRIVER).
put_claim() {
  local ns=$1 name=$2 uid=$3 d results='[]'; shift 3
  for d in "$@"; do
    local dev=${d%@*} drv=gcu.enflame.com
    [[ $d == *@* ]] && drv=${d#*@}
    results=$(jq -c --arg dev "$dev" --arg drv "$drv" '. + [{request: "gpu", driver: $drv, pool: "node1", device: $dev}]' <<<"$results")
  done
  mkdir -p "$API/claims/$ns"
  jq -n --arg ns "$ns" --arg name "$name" --arg uid "$uid" --argjson r "$results" \
    '{apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim",
      metadata: {name: $name, namespace: $ns, uid: $uid},
      spec: {devices: {requests: [{name: "gpu", exactly: {deviceClassName: "gcu.enflame.com"}}]}},
      status: {allocation: {devices: {results: $r}}}}' > "$API/claims/$ns/$name.json"
}

# api VERB PATH: a call to the fake API server as the plugin makes it (its CA, its token).
api() {
  curl -sS --cacert "$API/ca.crt" -H "Authorization: Bearer test-token" -X "$1" "https://127.0.0.1:$(cat "$API/port")$2"
}
# slice_devices: the device names of node1's ResourceSlices of our driver, sorted, one line.
slice_devices() {
  api GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=node1,spec.driver=gcu.enflame.com" |
    jq -r '[.items[].spec.devices[].name] | sort | join(" ")'
}
has_slices() { [ "$(slice_devices)" = "$1" ]; }

prepare() { local v=$1; shift; "$FDK" prepare --socket "$SOCK" --version "$v" "${@/#/--claim=}"; }
unprepare() { local v=$1; shift; "$FDK" unprepare --socket "$SOCK" --version "$v" "${@/#/--claim=}"; }
spec_of() { echo "$CDIR/k8s.gcu.enflame.com-claim_$1.yaml"; }

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

@test "a corrupt checkpoint: the plugin starts from the previous one (one line naming the file and why), keeps the specs it does not list; both bad: one line, starts without claims" {
  up
  put_claim ns a uid-a gcu-0
  put_claim ns b uid-b gcu-1
  run prepare v1 ns/a/uid-a
  [ "$status" -eq 0 ]
  run prepare v1 ns/b/uid-b
  [ "$status" -eq 0 ]
  jq -e '.claims | keys == ["uid-a", "uid-b"]' "$CP"
  jq -e '.claims | keys == ["uid-a"]' "$CP.prev"
  stop_pid "$DPID"
  head -c 40 "$CP" > "$CP.cut" && mv "$CP.cut" "$CP"   # a disk fault
  start_plugin
  wait_for grep -qF "checkpoint '$CP': " "$SCRATCH/dra.log"
  [ "$(grep -cF "using the previous one, '$CP.prev'" "$SCRATCH/dra.log")" -eq 1 ]
  [ -e "$CP.corrupt" ]
  # a's is served from the checkpoint; b's spec stays for its containers until kubelet unprepares
  run prepare v1 ns/a/uid-a
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-a"].error == ""' <<<"$output"
  [ -e "$(spec_of uid-b)" ]
  run unprepare v1 ns/b/uid-b
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-b"].error == ""' <<<"$output"
  [ ! -e "$(spec_of uid-b)" ]
  # both bad
  stop_pid "$DPID"
  echo '{' > "$CP"
  echo '{' > "$CP.prev"
  start_plugin
  wait_for grep -qF "the previous one is bad too: checkpoint '$CP.prev': " "$SCRATCH/dra.log"
  grep -F ": starting without prepared claims" "$SCRATCH/dra.log"
  [ -e "$(spec_of uid-a)" ]
  run prepare v1 ns/b/uid-b
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-b"].error == ""' <<<"$output"
  jq -e '.claims | keys == ["uid-b"]' "$CP"
}

@test "a corrupt checkpoint after an unprepare: the previous one never brings the unprepared claim back (its DRS instance stays destroyed, no spec); the other claim is restored" {
  drs_up
  put_claim ns a uid-a gcu-0-1g-11gb-0
  put_claim ns b uid-b gcu-1-1g-11gb-0
  run prepare v1 ns/a/uid-a ns/b/uid-b
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-a"].error == "" and .claims["uid-b"].error == ""' <<<"$output"
  [ "$(drs_list)" = "0:1g.11gb:0 1:1g.11gb:0" ]
  run unprepare v1 ns/a/uid-a
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-a"].error == ""' <<<"$output"
  [ "$(drs_list)" = "1:1g.11gb:0" ]
  [ ! -e "$(spec_of uid-a)" ]
  stop_pid "$DPID"
  head -c 40 "$CP" > "$CP.cut"
  mv "$CP.cut" "$CP"   # a disk fault
  start_plugin
  wait_for grep -qF "using the previous one, '$CP.prev'" "$SCRATCH/dra.log"
  # a's instance is not made again, its spec not written; b's are as they were
  [ "$(drs_list)" = "1:1g.11gb:0" ]
  [ ! -e "$(spec_of uid-a)" ]
  [ -e "$(spec_of uid-b)" ]
  [ "$(jq -c '.claims | keys' "$CP.prev")" = '["uid-b"]' ]
  run prepare v1 ns/b/uid-b
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-b"].error == "" and .claims["uid-b"].devices[0].device_name == "gcu-1-1g-11gb-0"' <<<"$output"
  # kubelet's retried unprepare of a, then b's: nothing left
  run unprepare v1 ns/a/uid-a ns/b/uid-b
  [ "$(jq -cS . <<<"$output")" = '{"claims":{"uid-a":{"error":""},"uid-b":{"error":""}}}' ]
  [ "$(drs_list)" = "" ]
  [ "$(ls "$CDIR")" = "" ]
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

# start_plugin_killed_at N [args]: the daemon under strace, which has the kernel deliver SIGKILL
# to it when a thread enters its N-th rename(2) (strace counts each thread's calls: a prepare runs
# on one gRPC thread, whose renames are the specs' and the checkpoint's, in that order; efsmi
# runs are processes of their own and count their own). $DPID is strace's pid, $PLUGIN_PID the
# plugin's (a shell writes its pid, then execs the plugin): strace detaches on SIGTERM and leaves
# its tracee running, so teardown stops both.
start_plugin_killed_at() {
  local n=$1; shift
  requires strace
  rm -f "$SCRATCH/dra.pid"
  # shellcheck disable=SC2016  # expands in the inner shell
  strace -f -o /dev/null -e trace=rename -e inject=rename:signal=KILL:when="$n" \
    sh -c 'echo $$ >"$0"; exec "$@"' "$SCRATCH/dra.pid" \
    "$DRA" --node-name node1 --kubeconfig "$KC" --plugins-registry "$REG" --plugins-dir "$PLUG" \
    --cdi-root "$CDIR" "$@" >>"$SCRATCH/dra.log" 2>&1 3>&- &
  DPID=$!
  on_teardown "stop_pid $DPID"
  wait_for test -s "$SCRATCH/dra.pid"
  PLUGIN_PID=$(cat "$SCRATCH/dra.pid")
  on_teardown "stop_pid $PLUGIN_PID"
  wait_for test -S "$REG/gcu.enflame.com-reg.sock"
}
# restart_plugin: the daemon again, after a kill left its sockets behind: ready once its log says
# the registration socket is up once more.
reg_up_count() { grep -c "registration socket .* is up" "$SCRATCH/dra.log" || true; }
reg_up_more_than() { [ "$(reg_up_count)" -gt "$1" ]; }
restart_plugin() {
  local before
  before=$(reg_up_count)
  start_plugin "$@"
  wait_for reg_up_more_than "$before"
}

@test "killed (SIGKILL, by the kernel) at the checkpoint's rename after the spec's: the restarted plugin removes the stray spec; the retried prepare and the unprepare converge" {
  sim_setup 2
  start_api
  start_plugin_killed_at 2
  put_claim ns a uid-a gcu-0
  run prepare v1 ns/a/uid-a
  [ "$status" -ne 0 ]  # kubelet got no answer
  wait "$DPID" 2>/dev/null || true
  run kill -0 "$DPID"
  [ "$status" -ne 0 ]
  run kill -0 "$PLUGIN_PID"
  [ "$status" -ne 0 ]
  # What the kill left: the spec in place, the checkpoint without the claim
  [ -e "$(spec_of uid-a)" ]
  [ "$(jq -c '.claims // {}' "$CP" 2>/dev/null || echo '{}')" = '{}' ]
  restart_plugin
  wait_for test ! -e "$(spec_of uid-a)"
  grep -F "removed CDI spec of claim uid-a: not in the checkpoint" "$SCRATCH/dra.log"
  # kubelet retries the prepare it never got an answer to
  run prepare v1 ns/a/uid-a
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-a"].error == ""' <<<"$output"
  [ "$(ls "$CDIR")" = "k8s.gcu.enflame.com-claim_uid-a.yaml" ]
  [ "$(jq -c '.claims | keys' "$CP")" = '["uid-a"]' ]
  run "$CTK" cdi validate "$(spec_of uid-a)"
  [ "$status" -eq 0 ]
  run unprepare v1 ns/a/uid-a
  [ "$(jq -cS . <<<"$output")" = '{"claims":{"uid-a":{"error":""}}}' ]
  [ "$(ls "$CDIR")" = "" ]
  [ "$(jq -c .claims "$CP")" = '{}' ]
}

@test "killed after efsmi made a placement's instance but before the checkpoint recorded it: the restarted plugin destroys that instance (and only it) and the stray spec; the retry makes a new one" {
  drs_up
  stop_pid "$DPID"
  "$EFSMI" -i 0 --drs --create-instance 0 >/dev/null   # an administrator's instance: never ours
  # renames of the prepare's thread: 1 the checkpoint's pending entry (the first save: no .prev
  # yet), 2-3 the entry's instance id (.prev, then the file), 4 the spec, 5-6 the checkpoint
  start_plugin_killed_at 6
  put_claim ns p uid-p gcu-0-1g-11gb-1
  run prepare v1 ns/p/uid-p
  [ "$status" -ne 0 ]
  wait "$DPID" 2>/dev/null || true
  [ "$(drs_list)" = "0:1g.11gb:0 0:1g.11gb:1" ]
  [ -e "$(spec_of uid-p)" ]
  [ "$(jq -c '[.pending[] | del(.made.uuid)]' "$CP")" = '[{"attempt":1,"before":[0],"card":0,"claim":"uid-p","made":{"id":1},"profile":"1g.11gb"}]' ]
  restart_plugin
  wait_for test ! -e "$(spec_of uid-p)"
  grep -F "destroyed DRS instance 1 (1g.11gb) of card 0: made by a prepare that never finished" "$SCRATCH/dra.log"
  [ "$(drs_list)" = "0:1g.11gb:0" ]
  [ "$(jq -c '.pending' "$CP")" = null ]
  run prepare v1 ns/p/uid-p
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-p"].error == ""' <<<"$output"
  [ "$(drs_list)" = "0:1g.11gb:0 0:1g.11gb:1" ]
  [ "$(jq -r '.claims["uid-p"].devices[0].createdInstance.id' "$CP")" = 1 ]
  run unprepare v1 ns/p/uid-p
  [ "$(drs_list)" = "0:1g.11gb:0" ]
  [ "$(ls "$CDIR")" = "" ]
}

@test "killed after efsmi made a placement's instance, and someone else made one of that profile before the restart: the plugin destroys only the id it recorded" {
  drs_up
  stop_pid "$DPID"
  start_plugin_killed_at 6
  put_claim ns p uid-p gcu-0-1g-11gb-1
  run prepare v1 ns/p/uid-p
  [ "$status" -ne 0 ]
  wait "$DPID" 2>/dev/null || true
  [ "$(drs_list)" = "0:1g.11gb:0" ]
  "$EFSMI" -i 0 --drs --create-instance 0 >/dev/null   # an administrator's, meanwhile
  restart_plugin
  wait_for test ! -e "$(spec_of uid-p)"
  grep -F "destroyed DRS instance 0 (1g.11gb) of card 0: made by a prepare that never finished" "$SCRATCH/dra.log"
  [ "$(drs_list)" = "0:1g.11gb:1" ]
  # the retry makes its own, and its unprepare takes only that one back
  run prepare v1 ns/p/uid-p
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-p"].error == ""' <<<"$output"
  [ "$(drs_list)" = "0:1g.11gb:0 0:1g.11gb:1" ]
  unprepare v1 ns/p/uid-p >/dev/null
  [ "$(drs_list)" = "0:1g.11gb:1" ]
}

@test "stopped after the pending entry but before efsmi's create; an administrator makes an instance of that profile before the restart: it survives" {
  drs_up
  stop_pid "$DPID"
  # What a kill between the entry's save and efsmi's create leaves (no system call in between
  # that strace can count for the prepare's thread alone): the entry, no instance, no spec.
  echo '{"version": 1, "claims": {}, "pending": [{"claim": "uid-p", "card": 0, "profile": "1g.11gb", "before": [], "attempt": 1}]}' > "$CP"
  [ "$(drs_list)" = "" ]
  "$EFSMI" -i 0 --drs --create-instance 0 >/dev/null   # an administrator's
  restart_plugin   # converged before its registration socket is up
  [ "$(drs_list)" = "0:1g.11gb:0" ]
  jq -e '.pending == null' "$CP"
  grep -F "claim uid-p: a prepare was stopped before efsmi answered its create of a 1g.11gb DRS instance on card 0: nothing destroyed" "$SCRATCH/dra.log"
}

@test "a checkpointed claim whose spec went missing (a tmpfs CDI folder after a reboot) gets it written again at start, byte for byte" {
  up
  put_claim ns a uid-a gcu-0
  run prepare v1 ns/a/uid-a
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-a"].error == ""' <<<"$output"
  local sum
  sum=$(sha256sum < "$(spec_of uid-a)")
  stop_pid "$DPID"
  rm "$(spec_of uid-a)"
  start_plugin
  wait_for test -e "$(spec_of uid-a)"
  [ "$(sha256sum < "$(spec_of uid-a)")" = "$sum" ]
  run prepare v1 ns/a/uid-a
  [ "$(jq -r '.claims["uid-a"].devices[0].device_name' <<<"$output")" = gcu-0 ]
}

@test "kubelet restart: both sockets deleted are served again, the plugin registers anew and prepares" {
  up
  "$FDK" register --registry "$REG" >/dev/null
  rm "$REG/gcu.enflame.com-reg.sock" "$SOCK"
  wait_for test -S "$SOCK"
  wait_for test -S "$REG/gcu.enflame.com-reg.sock"
  run "$FDK" register --registry "$REG"
  [ "$status" -eq 0 ]
  [ "$(jq -r .version <<<"$output")" = v1 ]
  put_claim ns c1 uid-1 gcu-0
  run prepare v1 ns/c1/uid-1
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-1"].error == ""' <<<"$output"
  grep -F "was removed (kubelet restarted?): serving it again" "$SCRATCH/dra.log"
}

# wipe_slices: what kubelet's startup wipe does, node1's slices of our driver deleted.
wipe_slices() {
  local n
  for n in $(api GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=node1" | jq -r '.items[].metadata.name'); do
    api DELETE "/apis/resource.k8s.io/v1/resourceslices/$n" >/dev/null
  done
}

# registered N: the plugin logged kubelet's registration N times.
registered() { [ "$(grep -c "kubelet registered gcu.enflame.com" "$SCRATCH/dra.log")" -ge "$1" ]; }

# back_within SECONDS DEVICES: the slices offer DEVICES again within SECONDS (prints the time).
back_within() {
  local t0 i
  t0=$(date +%s%N)
  for (( i = 0; i < $1 * 20; i++ )); do
    if has_slices "$2"; then echo "back in $(( ($(date +%s%N) - t0) / 1000000 )) ms"; return 0; fi
    sleep 0.05
  done
  echo "not back within $1 s: '$(slice_devices)'" >&2
  return 1
}

@test "ResourceSlices: published at start (without counters, a card split into DRS instances as its instances); kubelet's startup wipe landing after its registration's publish is undone within 2 s (watch, resync 60 s); SIGTERM removes them" {
  UP_API=--no-partitionable up 2 --drs
  local want="gcu-0-drs-0 gcu-0-drs-1 gcu-1-drs-0" r
  wait_for has_slices "$want"
  run api GET "/apis/resource.k8s.io/v1/resourceslices"
  [ "$(jq -r '[.items[].spec.pool.name] | unique | join(" ")' <<<"$output")" = node1 ]
  [ "$(jq -r '.items[0].spec.devices[] | select(.name == "gcu-0-drs-1") | .attributes.profile.string' <<<"$output")" = 1g.11gb ]
  # kubelet restarting, three times: it registers the plugin (which publishes; nothing changed,
  # so nothing is written), and only then does its wipe of the node's slices, which runs in the
  # background, land. The sockets stay: kubelet deletes no socket in plugins_registry.
  for r in 1 2 3; do
    "$FDK" register --registry "$REG" >/dev/null
    wait_for registered "$r"
    sleep 0.3  # the publish it triggered has listed the slices and found nothing to do
    wipe_slices
    back_within 2 "$want"
  done
  # each time the watch saw the wipe (the next resync is 60 s away)
  [ "$(grep -c "deleted by someone else: publishing again" "$SCRATCH/dra.log")" -ge 3 ]
  # someone deleting one slice by hand: the same
  api DELETE "/apis/resource.k8s.io/v1/resourceslices/$(api GET /apis/resource.k8s.io/v1/resourceslices | jq -r '.items[0].metadata.name')" >/dev/null
  back_within 2 "$want"
  test -S "$REG/gcu.enflame.com-reg.sock"
  stop_pid "$DPID"
  [ "$(slice_devices)" = "" ]
}

@test "ResourceSlices: a card turning unhealthy leaves them within --resync, and comes back when it recovers" {
  sim_setup 2
  start_api
  start_plugin --resync 5
  wait_for has_slices "gcu-0 gcu-1"
  local sim i
  sim=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*)
  echo TR6Y46010001 > "$sim/enflame-sim-unhealthy"
  for (( i = 0; i < 80 && $(slice_devices | wc -w) != 1; i++ )); do sleep 0.25; done
  [ "$(slice_devices)" = "gcu-0" ]
  rm "$sim/enflame-sim-unhealthy"
  for (( i = 0; i < 80 && $(slice_devices | wc -w) != 2; i++ )); do sleep 0.25; done
  [ "$(slice_devices)" = "gcu-0 gcu-1" ]
}

# The driver's reset-start event (EfmlGetEvent's event_type 10, DESIGN.md section 3).
EV_RESET_START=10
@test "ResourceSlices: a driver event publishes at once (within 2 s, resync 60 s): a card libefml calls unhealthy at that moment leaves them" {
  sim_setup 2
  start_api
  start_plugin --resync 60
  wait_for has_slices "gcu-0 gcu-1"
  wait_for grep -q "registration socket .* is up" "$SCRATCH/dra.log"
  local sim i
  sim=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*)
  echo TR6Y46010001 > "$sim/enflame-sim-unhealthy"
  # without an event nothing looks before the resync: still both after 2 s
  sleep 2
  [ "$(slice_devices)" = "gcu-0 gcu-1" ]
  "$SIM_HOST" event --root "$SCRATCH/host" --card 1 --type "$EV_RESET_START" --message "function level reset"
  for (( i = 0; i < 20 && $(slice_devices | wc -w) != 1; i++ )); do sleep 0.1; done
  [ "$(slice_devices)" = "gcu-0" ]
  grep -F "driver event on card 1 (type 10: function level reset): publishing ResourceSlices again" "$SCRATCH/dra.log"
  rm "$sim/enflame-sim-unhealthy"
  "$SIM_HOST" event --root "$SCRATCH/host" --card 1 --type 11
  for (( i = 0; i < 20 && $(slice_devices | wc -w) != 2; i++ )); do sleep 0.1; done
  [ "$(slice_devices)" = "gcu-0 gcu-1" ]
}

@test "SIGTERM: both sockets removed (deregistered), prepared claims' specs and checkpoint kept" {
  up
  put_claim ns c1 uid-1 gcu-0
  prepare v1 ns/c1/uid-1 >/dev/null
  kill -TERM "$DPID"
  wait "$DPID"
  [ ! -e "$SOCK" ]
  [ ! -e "$REG/gcu.enflame.com-reg.sock" ]
  [ -e "$(spec_of uid-1)" ]
  [ "$(jq -r '.claims["uid-1"].name' "$CP")" = c1 ]
}

# --- podman applies the per-claim spec ---

# pm_setup: podman with private storage and a busybox image, in the private mount namespace
# where $SCRATCH/ns is /run (so it reads exactly the specs in $CDIR).
pm_setup() {
  requires podman unshare
  [ -x /bin/busybox ] || skip_or_fail "needs /bin/busybox"
  busybox_rootfs "$SCRATCH/rootfs"
  tar -C "$SCRATCH/rootfs" -cf "$SCRATCH/rootfs.tar" .
  podman_conf "$SCRATCH/containers.conf"
  export CONTAINERS_CONF=$SCRATCH/containers.conf
  cdi_ns "$SCRATCH/ns"
  PM=("${CDI_NS[@]}" podman --root "$SCRATCH/pm/root" --runroot "$SCRATCH/pm/run" --tmpdir "$SCRATCH/pm/tmp" --storage-driver vfs)
  on_teardown '"${PM[@]}" rm -af -t 0 >/dev/null 2>&1'
  "${PM[@]}" import -q "$SCRATCH/rootfs.tar" localhost/dra-bb >/dev/null
}

# in_claim CDI_ID CMD: run CMD in a container that got the CDI device.
in_claim() { "${PM[@]}" run --rm --device "$1" localhost/dra-bb sh -c "$2"; }

DEVLIST='for d in /dev/gcu*; do [ -c "$d" ] && echo "${d#/dev/} $(stat -c %t:%T "$d")"; done'

# prepare_gcu2: claim ns/c1 (uid-1) for card 2, prepared; its CDI device ID in $CLAIM_ID.
prepare_gcu2() {
  put_claim ns c1 uid-1 gcu-2
  run prepare v1 ns/c1/uid-1
  CLAIM_ID=$(jq -r '.claims["uid-1"].devices[0].cdi_device_ids[0]' <<<"$output")
  [ "$CLAIM_ID" = k8s.gcu.enflame.com/claim=uid-1-gcu-2 ]
}
# CARD2_PROBE, and has_card2_only on its output ($output, $status): card 2's node and gcuctl and
# no other card, ENFLAME_VISIBLE_DEVICES=void, libefml mounted.
CARD2_PROBE='for d in /dev/gcu*; do [ -c "$d" ] && echo "${d#/dev/} $(stat -c %t:%T "$d")"; done; env; ls /usr/lib/libefml.so.1'
has_card2_only() {
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep '^gcu' <<<"$output" | sort | tr '\n' ' ')" = "gcu2 ee:2 gcuctl ee:ff " ]
  [[ "$output" == *"ENFLAME_VISIBLE_DEVICES=void"* ]]
  [[ "$output" == *"/usr/lib/libefml.so.1"* ]]
}

@test "podman: the claim's CDI device gives the container exactly the prepared card, gcuctl, libefml and the env" {
  requires root
  up 3
  pm_setup
  prepare_gcu2
  run in_claim "$CLAIM_ID" "$CARD2_PROBE"
  has_card2_only
}

# The runtime libraries moved to /opt/tops/lib, outside ld.so's default folders (Enflame's
# TopsRider installs there): only the update-ldcache hook makes them findable by name.
@test "CTK_PATH as the shipped DaemonSet sets it: the claim's spec runs enflame-ctk's update-ldcache hook, and the container's ld.so.cache indexes /opt/tops/lib" {
  requires root
  # the shipped DaemonSet passes where the installer puts enflame-ctk
  run python3 -c 'import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]
print({e["name"]: e.get("value") for e in c["env"]}.get("CTK_PATH"))' "$TOP/deployments/dra/daemonset.yaml"
  [ "$status" -eq 0 ]
  [ "$output" = /usr/local/enflame/toolkit/enflame-ctk ]
  sim_example 3 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  mkdir -p "$SCRATCH/host/opt/tops/lib"
  mv "$SCRATCH"/host/usr/lib/libtopsrt.so* "$SCRATCH/host/opt/tops/lib/"
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  start_api
  # this host has no installer: the same variable, naming the build's enflame-ctk
  CTK_PATH=$CTK start_plugin
  pm_setup
  prepare_gcu2
  run python3 -c 'import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
for h in (s.get("containerEdits") or {}).get("hooks") or []: print(h["hookName"], h["path"], " ".join(h["args"]))' "$(spec_of uid-1)"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == "createContainer $CTK enflame-ctk hook update-ldcache "*"--folder /opt/tops/lib"* ]]
  on_teardown '"${PM[@]}" rm -f ldc >/dev/null 2>&1'
  run "${PM[@]}" run --name ldc --device "$CLAIM_ID" localhost/dra-bb sh -c 'ls /opt/tops/lib; cat /etc/ld.so.conf.d/*'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *libtopsrt.so.2.1.0* ]]
  "${PM[@]}" cp ldc:/etc/ld.so.cache "$SCRATCH/ld.so.cache"
  run /sbin/ldconfig -p -C "$SCRATCH/ld.so.cache"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *" => /opt/tops/lib/"* ]]
}

@test "podman: a DRS instance claim gives the parent card and TOPS_VISIBLE_DEVICES=DRS-<uuid>" {
  requires root
  up 2 --drs
  pm_setup
  put_claim ns d1 uid-d gcu-0-drs-1
  run prepare v1 ns/d1/uid-d
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-d"].error == ""' <<<"$output"
  run in_claim k8s.gcu.enflame.com/claim=uid-d-gcu-0-drs-1 "$DEVLIST; echo TOPS=\$TOPS_VISIBLE_DEVICES"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep '^gcu' <<<"$output" | sort | tr '\n' ' ')" = "gcu0 ee:0 gcuctl ee:ff " ]
  [[ "$output" == *"TOPS=DRS-4c1e9a52-0000-4000-8000-000000000001"* ]]
  # an instance that does not exist is an error in the claim's answer
  put_claim ns d2 uid-e gcu-1-drs-3
  run prepare v1 ns/d2/uid-e
  [ "$(jq -r '.claims["uid-e"].error' <<<"$output")" = "claim 'ns/d2': device 'gcu-1-drs-3': card 1 has no DRS instance 3" ]
}

# --- DRS placements: partitionable devices whose instance a prepare makes ---

@test "DRS placement: published as counters; prepare makes the instance (efsmi lists it), a valid spec with the parent card and TOPS_VISIBLE_DEVICES; a retry makes none; unprepare destroys it" {
  drs_up
  wait_for has_slices "$(placements 0) $(placements 1)"
  [ "$(drs_list)" = "" ]
  put_claim ns p1 uid-p gcu-1-2g-22gb-1
  run prepare v1 ns/p1/uid-p
  [ "$status" -eq 0 ]
  [ "$output" = '{"claims":{"uid-p":{"devices":[{"request_names":["gpu"],"pool_name":"node1","device_name":"gcu-1-2g-22gb-1","cdi_device_ids":["k8s.gcu.enflame.com/claim=uid-p-gcu-1-2g-22gb-1"]}],"error":""}}}' ]
  local first=$output
  [ "$(drs_list)" = "1:2g.22gb:0" ]
  run "$CTK" cdi validate "$(spec_of uid-p)"
  [ "$status" -eq 0 ]
  grep -qE '^ *(- )?path: /dev/gcu1$' "$(spec_of uid-p)"
  run ! grep -q '/dev/gcu0' "$(spec_of uid-p)"
  grep -qF 'TOPS_VISIBLE_DEVICES=DRS-4c1e9a52-0001-4000-9000-000000000001' "$(spec_of uid-p)"
  [ "$(jq -c '.claims["uid-p"].devices[0].createdInstance' "$CP")" = '{"card":1,"id":0,"profile":"2g.22gb","uuid":"4c1e9a52-0001-4000-9000-000000000001"}' ]
  [ "$(jq -c '.pending' "$CP")" = null ]
  # kubelet retries (also after the spec went missing): the same answer, no second instance
  run prepare v1 ns/p1/uid-p
  [ "$output" = "$first" ]
  rm "$(spec_of uid-p)"
  run prepare v1beta1 ns/p1/uid-p
  [ "$output" = "$first" ]
  [ -e "$(spec_of uid-p)" ]
  [ "$(drs_list)" = "1:2g.22gb:0" ]
  # the slices do not change: with counters the scheduler accounts for the instance
  [ "$(slice_devices)" = "$(placements 0) $(placements 1)" ]
  run unprepare v1 ns/p1/uid-p
  [ "$(jq -cS . <<<"$output")" = '{"claims":{"uid-p":{"error":""}}}' ]
  [ "$(drs_list)" = "" ]
  [ ! -e "$(spec_of uid-p)" ]
  [ "$(jq -c .claims "$CP")" = '{}' ]
  # unprepared again (kubelet retries unprepare too): nothing to do, no error
  run unprepare v1 ns/p1/uid-p
  [ "$(jq -cS . <<<"$output")" = '{"claims":{"uid-p":{"error":""}}}' ]
}

@test "DRS placement: a profile with no room on its card is that claim's error naming card and profile; no spec, no instance; the other claim is prepared; instances made by others are never destroyed" {
  drs_up
  # an administrator filled card 1 with two 2g.22gb instances
  "$EFSMI" -i 1 --drs --create-instance 1 >/dev/null
  "$EFSMI" -i 1 --drs --create-instance 1 >/dev/null
  [ "$(drs_list)" = "1:2g.22gb:0 1:2g.22gb:1" ]
  put_claim ns full uid-f gcu-1-1g-11gb-0
  put_claim ns ok uid-o gcu-0-1g-11gb-2
  put_claim ns two uid-t gcu-0-2g-22gb-0 gcu-1-2g-22gb-1
  run prepare v1 ns/full/uid-f ns/ok/uid-o ns/two/uid-t
  [ "$status" -eq 0 ]
  err() { jq -r --arg u "$1" '.claims[$u].error' <<<"$output"; }
  [ "$(err uid-f)" = "claim 'ns/full': device 'gcu-1-1g-11gb-0': card 1: creating a DRS instance of profile '1g.11gb' (efsmi -i 1 --drs --create-instance 0): efsmi exited 1: 'Error: too many instances: 1 free slice(s) needed on GCU 1'" ]
  [ "$(err uid-o)" = "" ]
  # a claim with two placements, the second without room: the first one's instance is taken back
  [[ "$(err uid-t)" == "claim 'ns/two': device 'gcu-1-2g-22gb-1': card 1: creating a DRS instance of profile '2g.22gb' (efsmi -i 1 --drs --create-instance 1): efsmi exited 1: 'Error: too many instances: "* ]]
  [ "$(ls "$CDIR")" = "k8s.gcu.enflame.com-claim_uid-o.yaml" ]
  [ "$(drs_list)" = "0:1g.11gb:0 1:2g.22gb:0 1:2g.22gb:1" ]
  [ "$(jq -c '.claims | keys' "$CP")" = '["uid-o"]' ]
  [ "$(jq -c '.pending' "$CP")" = null ]
  run unprepare v1 ns/ok/uid-o ns/full/uid-f
  [ "$(jq -cS . <<<"$output")" = '{"claims":{"uid-f":{"error":""},"uid-o":{"error":""}}}' ]
  [ "$(drs_list)" = "1:2g.22gb:0 1:2g.22gb:1" ]
  [ "$(ls "$CDIR")" = "" ]
}

@test "DRS placements restored at start: an instance gone while the plugin was stopped (a reboot, a driver reload) is made again and the claim's spec names the new one; one efsmi cannot make: one line naming claim, card, profile and efsmi's message, and no spec (fail closed)" {
  drs_up
  wait_for has_slices "$(placements 0) $(placements 1)"
  put_claim ns p uid-p gcu-1-2g-22gb-1
  put_claim ns q uid-q gcu-0-1g-11gb-0
  run prepare v1 ns/p/uid-p ns/q/uid-q
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-p"].error == ""' <<<"$output"
  jq -e '.claims["uid-q"].error == ""' <<<"$output"
  local first_p old_uuid
  first_p=$(jq -c '.claims["uid-p"]' <<<"$output")
  [ "$(drs_list)" = "0:1g.11gb:0 1:2g.22gb:0" ]
  old_uuid=$(jq -er '.claims["uid-p"].devices[0].createdInstance.uuid' "$CP")
  stop_pid "$DPID"
  # a driver reload while the plugin is down: both instances gone (efsmi's state, behind the
  # plugin's back); an administrator then takes id 0 of card 1 and fills card 0
  "$EFSMI" -i 1 --drs --destroy-instance 0 >/dev/null
  "$EFSMI" -i 0 --drs --destroy-instance 0 >/dev/null
  "$EFSMI" -i 1 --drs --create-instance 0 >/dev/null
  "$EFSMI" -i 0 --drs --create-instance 1 >/dev/null
  "$EFSMI" -i 0 --drs --create-instance 1 >/dev/null
  [ "$(drs_list)" = "0:2g.22gb:0 0:2g.22gb:1 1:1g.11gb:0" ]
  start_plugin
  wait_for grep -q "claim ns/p (uid-p): device gcu-1-2g-22gb-1: DRS instance 0 of card 1 was gone, made again as 1" "$SCRATCH/dra.log"
  wait_for grep -q "claim ns/q (uid-q): its DRS instance is gone" "$SCRATCH/dra.log"
  # claim p: a new 2g.22gb instance, recorded, its spec naming that instance's UUID
  [ "$(drs_list)" = "0:2g.22gb:0 0:2g.22gb:1 1:1g.11gb:0 1:2g.22gb:1" ]
  local rec new_uuid
  rec=$(jq -c '.claims["uid-p"].devices[0].createdInstance' "$CP")
  new_uuid=$(jq -er .uuid <<<"$rec")
  [ "$(jq -c 'del(.uuid)' <<<"$rec")" = '{"card":1,"id":1,"profile":"2g.22gb"}' ]
  [ "$new_uuid" != "$old_uuid" ]
  "$EFSMI" --drs --list-instance | grep -F "$new_uuid"
  [ "$(jq -c '.pending' "$CP")" = null ]
  run "$CTK" cdi validate "$(spec_of uid-p)"
  [ "$status" -eq 0 ]
  grep -qF "TOPS_VISIBLE_DEVICES=DRS-$new_uuid" "$(spec_of uid-p)"
  run ! grep -qF "$old_uuid" "$(spec_of uid-p)"
  # claim q: card 0 is full; one line with claim, card, profile and efsmi's words; no spec
  run grep -c "could not be made again" "$SCRATCH/dra.log"
  [ "$output" -eq 1 ]
  run ! grep -q "(uid-q): writing its CDI spec again" "$SCRATCH/dra.log"
  grep -F "claim ns/q (uid-q): its DRS instance is gone and could not be made again: device 'gcu-0-1g-11gb-0': card 0: creating a DRS instance of profile '1g.11gb' (efsmi -i 0 --drs --create-instance 0): efsmi exited 1: 'Error: too many instances:" "$SCRATCH/dra.log"
  [ ! -e "$(spec_of uid-q)" ]
  [ "$(jq -c '.claims | keys' "$CP")" = '["uid-p","uid-q"]' ]
  # kubelet's retry: p answered as before; q is an error, and still no spec
  run prepare v1 ns/p/uid-p ns/q/uid-q
  [ "$status" -eq 0 ]
  [ "$(jq -c '.claims["uid-p"]' <<<"$output")" = "$first_p" ]
  jq -e '.claims["uid-q"].error | contains("card 0 has no DRS instance 0") or contains("is now 2g.22gb")' <<<"$output"
  [ ! -e "$(spec_of uid-q)" ]
  # unprepare destroys the new instance only; the administrator's stay
  run unprepare v1 ns/p/uid-p ns/q/uid-q
  [ "$status" -eq 0 ]
  [ "$(jq -cS . <<<"$output")" = '{"claims":{"uid-p":{"error":""},"uid-q":{"error":""}}}' ]
  [ "$(drs_list)" = "0:2g.22gb:0 0:2g.22gb:1 1:1g.11gb:0" ]
  [ "$(ls "$CDIR")" = "" ]
}

@test "DRS: a whole card whose card is split into DRS instances is that claim's error (never handed out whole): no spec; the other card is prepared; the instance stays" {
  drs_up
  "$EFSMI" -i 0 --drs --create-instance 0 >/dev/null   # an administrator's
  put_claim ns w uid-w gcu-0
  put_claim ns ok uid-o gcu-1
  run prepare v1 ns/w/uid-w ns/ok/uid-o
  [ "$status" -eq 0 ]
  err() { jq -r --arg u "$1" '.claims[$u].error' <<<"$output"; }
  [ "$(err uid-w)" = "claim 'ns/w': card 0 is split into DRS instances (0:1g.11gb:0): not handed out whole" ]
  [ "$(err uid-o)" = "" ]
  [ "$(ls "$CDIR")" = "k8s.gcu.enflame.com-claim_uid-o.yaml" ]
  [ "$(jq -c '.claims | keys' "$CP")" = '["uid-o"]' ]
  [ "$(drs_list)" = "0:1g.11gb:0" ]
  # the instance gone, the retry hands the card out
  "$EFSMI" -i 0 --drs --destroy-instance 0 >/dev/null
  run prepare v1 ns/w/uid-w
  [ "$(err uid-w)" = "" ]
  grep -qE '^ *(- )?path: /dev/gcu0$' "$(spec_of uid-w)"
}

# slices_now: node1's slices as the server stores them, without what the server made up
# (resourceVersion, uid, creationTimestamp), by name.
slices_now() {
  api GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=node1,spec.driver=gcu.enflame.com" |
    jq -S '[.items[] | {apiVersion, kind, metadata: {name: .metadata.name, ownerReferences: .metadata.ownerReferences}, spec}] | sort_by(.metadata.name)'
}

# same_as_golden GOT GOLDEN: diff; with ENFLAME_UPDATE_GOLDEN=1 the golden file is rewritten and
# the test fails (a rewritten golden never approves itself: a person reviews the diff).
same_as_golden() {
  if [ "${ENFLAME_UPDATE_GOLDEN:-}" = 1 ]; then
    cp "$1" "$2"
    echo "rewrote $2" >&2
    return 1
  fi
  diff -u "$2" "$1"
}

@test "ResourceSlices golden: the daemon (DRS auto) against a 1.34 server publishes counters; against one without the feature gate, the existing instances, and no stored generation ever had partitions without counters (a dryRun=All probe first)" {
  local golden=$TOP/tests/fixtures/dra
  UP_API= up 2 --drs
  wait_for has_slices "$(placements 0) $(placements 1)"
  slices_now > "$SCRATCH/counters.json"
  same_as_golden "$SCRATCH/counters.json" "$golden/slices-auto-counters.json"
  stop_pid "$DPID"
  stop_pid "$APID"
  rm -rf "$API" && mkdir -p "$API/claims"
  start_api --no-partitionable
  start_plugin
  wait_for has_slices "gcu-0-drs-0 gcu-0-drs-1 gcu-1-drs-0"
  slices_now > "$SCRATCH/instances.json"
  same_as_golden "$SCRATCH/instances.json" "$golden/slices-auto-no-counters.json"
  # Not for one generation did the server store a partition without its counters (the
  # scheduler would have offered it and the whole card independently): the plugin asked with
  # one dryRun=All create, which stores nothing, and published instances from its first write.
  [ -s "$API/stored.jsonl" ]
  run jq -s '[.[] | .spec.devices[]? | select(.name | test("^gcu-[0-9]+-[0-9]+g-")) | select(has("consumesCounters") | not) | .name]' "$API/stored.jsonl"
  [ "$status" -eq 0 ]
  [ "$output" = "[]" ]
  run jq -s -e 'length == 1 and (.[0].body.spec | has("sharedCounters"))' "$API/dryruns.jsonl"
  [ "$status" -eq 0 ]
  grep -F "drops counter sets (a dryRun=All create; DRAPartitionableDevices off): publishing DRS instances" "$SCRATCH/dra.log"
}

@test "podman: a DRS placement claim gives the parent card only and TOPS_VISIBLE_DEVICES of the instance the prepare made" {
  requires root
  drs_up
  pm_setup
  put_claim ns p1 uid-p gcu-0-1g-11gb-3
  run prepare v1 ns/p1/uid-p
  [ "$status" -eq 0 ]
  jq -e '.claims["uid-p"].error == ""' <<<"$output"
  run in_claim k8s.gcu.enflame.com/claim=uid-p-gcu-0-1g-11gb-3 "$DEVLIST; echo TOPS=\$TOPS_VISIBLE_DEVICES"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep '^gcu' <<<"$output" | sort | tr '\n' ' ')" = "gcu0 ee:0 gcuctl ee:ff " ]
  [[ "$output" == *"TOPS=DRS-4c1e9a52-0000-4000-9000-000000000001"* ]]
}

# --- containerd 1.7 through the CRI, as kubelet starts a pod's container ---

@test "containerd 1.7 (CRI, enable_cdi): a pod's container given the claim's CDI device as kubelet passes it gets exactly the prepared card, gcuctl, libefml and the env" {
  requires root
  up 3
  cri_setup
  prepare_gcu2
  run in_cri_pod --cdi-device "$CLAIM_ID" -- /bin/sh -c "$CARD2_PROBE"
  has_card2_only
  # the same pod without the claim's device: no card (what it got came from the spec)
  run in_cri_pod -- /bin/sh -c "$DEVLIST; echo end"
  [ "$status" -eq 0 ]
  [ "$output" = end ]
  # after unprepare the spec is gone: containerd refuses the device by name
  unprepare v1 ns/c1/uid-1 >/dev/null
  run in_cri_pod --cdi-device "$CLAIM_ID" -- /bin/true
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"error: CreateContainer: "*"unresolvable CDI devices k8s.gcu.enflame.com/claim=uid-1-gcu-2"* ]]
}

# As the shipped DaemonSet runs it: the plugin in its own mount namespace, where the host's root
# (here the simulated host, $SCRATCH/host) is mounted at a folder of its own ($SCRATCH/pod/host,
# the pod's /host) that is an empty folder to everyone else. driver-root and dev-root are that
# mount, host-driver-root and host-dev-root the same root as the host sees it (the ConfigMap's
# "/host" and "/"). containerd reads the per-claim spec on the host.
@test "a plugin in a pod (driver-root is its mount of the host's root): the claim's spec names host paths, and containerd gives the card" {
  requires root unshare
  sim_example 3 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"   # for cri.bash's shim runtime only
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  local pod=$SCRATCH/pod/host
  mkdir -p "$pod"
  cat > "$SCRATCH/pod.toml" <<TOML
[enflame-container-cli]
driver-root = "$pod"
dev-root = "$pod"
host-driver-root = "$SCRATCH/host"
host-dev-root = "$SCRATCH/host"
TOML
  start_api
  # shellcheck disable=SC2016  # expands in the namespace's shell
  setsid unshare --mount --propagation private /bin/sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
    pod "$SCRATCH/host" "$pod" "$DRA" --config "$SCRATCH/pod.toml" --node-name node1 --kubeconfig "$KC" \
    --plugins-registry "$REG" --plugins-dir "$PLUG" --cdi-root "$CDIR" >>"$SCRATCH/dra.log" 2>&1 3>&- &
  DPID=$!
  on_teardown "stop_pid $DPID"
  wait_for test -S "$REG/gcu.enflame.com-reg.sock"
  [ -z "$(ls -A "$pod")" ]   # outside the plugin's namespace its mount point is empty
  prepare_gcu2
  local spec; spec=$(spec_of uid-1)
  local paths; paths=$(python3 -c '
import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))
for e in [s.get("containerEdits") or {}] + [d.get("containerEdits") or {} for d in s["devices"]]:
    for n in e.get("deviceNodes") or []: print(n.get("hostPath") or n["path"])
    for m in e.get("mounts") or []: print(m["hostPath"])
    for h in e.get("hooks") or []: print(h["path"])' "$spec")
  echo "$paths"
  [ "$(grep -c . <<<"$paths")" -ge 4 ]   # gcu2, gcuctl, efsmi, libefml at least
  local p
  for p in $paths; do
    [[ $p == "$SCRATCH/host/"* ]]
    [ -e "$p" ]
  done
  cri_setup
  run in_cri_pod --cdi-device "$CLAIM_ID" -- /bin/sh -c "$CARD2_PROBE"
  has_card2_only
}

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
