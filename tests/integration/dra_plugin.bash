# Helpers of the enflame-dra-plugin suites (dra_plugin_prepare.bats, dra_plugin_restart.bats,
# dra_plugin_slices.bats, dra_plugin_drs.bats, dra_plugin_containers.bats,
# dra_plugin_shipping.bats): the daemon against the simulated host, a fake API server and a
# fake kubelet (docs/kubelet-wire.md, the fakes). k8s/tests/fake_apiserver.py serves
# ResourceClaims from $API/claims/<ns>/<name>.json over HTTPS (its own CA, a bearer token; faults
# from $API/control.json); build/dev/k8s/tests/fake-dra-kubelet plays kubelet's plugin watcher
# (GetInfo, NotifyRegistrationStatus) and calls NodePrepare/NodeUnprepareResources in v1 and
# v1beta1 as kubelet does. Every folder the plugin writes (plugins registry, plugins dir, CDI root)
# is under $SCRATCH: never the host's /var/lib/kubelet or /var/run/cdi. podman reads the per-claim
# specs in a private mount namespace (cdi_ns) where $SCRATCH/ns is /run.
# shellcheck disable=SC2034  # what this sets, the suites that load it use

DRA=$BUILD_DIR/k8s/dra/enflame-dra-plugin
FDK=$BUILD_DIR/k8s/tests/fake-dra-kubelet
FAKE_API=$TOP/k8s/tests/fake_apiserver.py

# dra_plugin_setup: each test's setup: the folders under $SCRATCH ($REG the plugins registry,
# $PLUG the plugins dir, $CDIR the CDI root, $API the fake API server's), nothing started.
dra_plugin_setup() {
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

# start_api [fake_apiserver args]: the fake API server and a kubeconfig for it ($KC).
start_api() {
  python3 "$FAKE_API" --dir "$API" "$@" >>"$SCRATCH/api.log" 2>&1 3>&- &
  APID=$!
  on_teardown "stop_pid $APID"
  wait_for test -s "$API/port"
  fake_api_kubeconfig
}

# start_plugin [args]: the daemon with every folder under $SCRATCH; log in $SCRATCH/dra.log.
# shellcheck disable=SC2120  # the suites pass it arguments
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

# registered N: the plugin logged kubelet's registration N times.
registered() { [ "$(grep -c "kubelet registered gcu.enflame.com" "$SCRATCH/dra.log")" -ge "$1" ]; }
