#!/usr/bin/env bats
# enflame-gcu-exporter against the simulated host (docs/kubelet-wire.md: metrics, the fakes):
# the real daemon on a random loopback port, scraped with curl and checked with promtool; the
# simulator's runtime switches (`enflame-sim-host telemetry`, `driver gone|back`, the
# enflame-sim-unhealthy file) change what libefml says while the exporter keeps it loaded;
# build/dev/k8s/tests/fake-pod-resources plays kubelet's pod-resources socket, answering List
# from a JSON file the test rewrites. Collection every 200 ms; every wait polls for the
# expected answer (wait_for, never a fixed sleep) and gives up after 10 s.

load helpers
bats_require_minimum_version 1.5.0   # `run !`

EXP=$BUILD_DIR/k8s/exporter/enflame-gcu-exporter
FPR=$BUILD_DIR/k8s/tests/fake-pod-resources

setup() {
  requires root curl promtool jq   # root: the simulated host's device nodes (mknod)
  [ -x "$EXP" ] || skip_or_fail "no $EXP (build enflame-gcu-exporter)"
  [ -x "$FPR" ] || skip_or_fail "no $FPR (build fake-pod-resources)"
  setup_scratch
  LOG=$SCRATCH/exporter.log
  PODS=$SCRATCH/pods.json
  PRSOCK=$SCRATCH/kubelet.sock
  U0=TR6Y46010000 U1=TR6Y46010001 U2=TR6Y46010002 U3=TR6Y46010003
}

teardown() { teardown_scratch; }

# host [ARGS]: a simulated host of 4 cards (example ARGS) whose minors are index + 4, so a
# minor_number that is really an index shows; ENFLAME_CTK_CONFIG points at it.
host() {
  sim_example 4 "$@" | sed -E 's/^(    minor: )([0-9]+)$/echo "\1$((\2 + 4))"/e' > "$SCRATCH/desc.yaml"
  grep -q '^    minor: 7$' "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  export ENFLAME_CTK_CONFIG=$SCRATCH/config.toml
  SIMDIR=$(echo "$SCRATCH"/host/usr/local/efsmi/efsmi-*)
}

healthy_or_gone() { curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 || ! kill -0 "$EPID" 2>/dev/null; }

# start_exporter ARGS...: the exporter on a free loopback port ($PORT, pid $EPID), collecting
# every 200 ms, with the pod-resources socket $PRSOCK; up once /healthz says ok. civetweb
# cannot bind port 0, so a random port is tried and another one taken when it is in use.
start_exporter() {
  local try
  for try in 1 2 3 4 5 6 7 8; do
    PORT=$(( 20000 + RANDOM % 40000 ))
    : > "$LOG"
    "$EXP" --web.listen-address "127.0.0.1:$PORT" --collect-interval 200ms \
      --pod-resources-socket "$PRSOCK" --hostname node-a "$@" >>"$LOG" 2>&1 3>&- &
    EPID=$!
    wait_for healthy_or_gone
    if kill -0 "$EPID" 2>/dev/null; then
      on_teardown "stop_pid $EPID"
      return 0
    fi
    wait "$EPID" || true
    grep -q "^error: --web.listen-address '127.0.0.1:$PORT': " "$LOG" || { cat "$LOG" >&2; return 1; }
    echo "port $PORT taken (try $try), another" >&2
  done
  return 1
}

# pods JSON: the fake kubelet's List answer (rewritten in place: it reads it on every call).
pods() { echo "$1" > "$PODS.new" && mv "$PODS.new" "$PODS"; }

start_pod_resources() {
  [ -f "$PODS" ] || pods '{}'
  "$FPR" --socket "$PRSOCK" --response "$PODS" 2>>"$SCRATCH/fpr.log" 3>&- &
  FPR_PID=$!
  on_teardown "stop_pid $FPR_PID"
  wait_for test -S "$PRSOCK"
}

scrape() { curl -sf "http://127.0.0.1:$PORT/metrics"; }

# series NAME [FIXED-STRING...]: the sample lines of NAME containing every FIXED-STRING; fails
# when the scrape does (a dead exporter has no series, but that is no answer).
series() {
  local name=$1 out
  shift
  out=$(scrape) || { echo "scrape of 127.0.0.1:$PORT failed" >&2; return 1; }
  out=$(grep -E "^$name[{ ]" <<<"$out") || return 0
  local f
  for f in "$@"; do out=$(grep -F -- "$f" <<<"$out") || return 0; done
  echo "$out"
}

# value NAME FIXED-STRING...: the value of the one series matching, or nothing.
value() {
  local s
  s=$(series "$@")
  [ "$(grep -c . <<<"$s")" -eq 1 ] || return 0
  echo "${s##* }"
}

is() { [ "$(value "${@:2}")" = "$1" ]; }
no_series() { local s; s=$(series "$@") || return 1; [ -z "$s" ]; }

# card N: the fixed labels of card N of the simulated host, as the exporter writes them.
card() {
  local minor uuid bus
  minor=$(card_field "$SCRATCH/desc.yaml" "$1" minor)
  uuid=$(card_field "$SCRATCH/desc.yaml" "$1" uuid)
  bus=$(card_field "$SCRATCH/desc.yaml" "$1" bus_id)
  echo "host=\"node-a\",minor_number=\"$minor\",uuid=\"$uuid\",busid=\"$bus\",slot=\"$(slot_of "$bus")\",name=\"S60\""
}

# slot_of BUS-ID: the name of the PCI slot (the simulated host's /sys/bus/pci/slots/NAME/address)
# at BUS-ID's address, or N/A.
slot_of() {
  local f
  for f in "$SCRATCH"/host/sys/bus/pci/slots/*/address; do
    [[ -f $f ]] || continue
    if [[ $(cat "$f") == "${1%.*}" ]]; then basename "$(dirname "$f")"; return 0; fi
  done
  echo N/A
}

nobody='pod_name="",pod_namespace="",container_name=""'

@test "metrics: every card with gcu-exporter's names and labels, HELP and TYPE; promtool objects only to the kept _count names" {
  host
  # card 1 sits in a slot the kernel names (as ACPI or pciehp do); the others in none
  local bus1
  bus1=$(card_field "$SCRATCH/desc.yaml" 1 bus_id)
  mkdir -p "$SCRATCH/host/sys/bus/pci/slots/PCIE3_GPU" "$SCRATCH/host/sys/bus/pci/slots/7"
  echo "${bus1%.*}" > "$SCRATCH/host/sys/bus/pci/slots/PCIE3_GPU/address"
  echo "0000:ff:1f" > "$SCRATCH/host/sys/bus/pci/slots/7/address"
  start_exporter
  scrape > "$SCRATCH/metrics"
  [ "$(value enflame_gcu_count)" = 4 ]
  [ "$(value enflame_gcu_exporter_up)" = 1 ]
  grep -qx 'enflame_gcu_count{host="node-a"} 4' "$SCRATCH/metrics"
  local n name
  for n in 0 1 2 3; do
    # the minor is discovery's (index + 4 on this host), not libefml's index
    grep -qF "enflame_gcu_health{$(card $n),$nobody,healthmsg=\"Healthy\"} 2" "$SCRATCH/metrics"
    grep -qF "enflame_gcu_memory_total_bytes{$(card $n),$nobody} 45063602176" "$SCRATCH/metrics"
  done
  grep -qF "minor_number=\"7\",uuid=\"$U3\"" "$SCRATCH/metrics"
  # slot on every card series: the slot's name for card 1, N/A for the others (gcu-exporter's
  # value for an empty slot); not one series without it
  grep -qF "busid=\"$bus1\",slot=\"PCIE3_GPU\"" "$SCRATCH/metrics"
  [ "$(grep -c 'slot="PCIE3_GPU"' "$SCRATCH/metrics")" -eq "$(grep -c "uuid=\"$U1\"" "$SCRATCH/metrics")" ]
  [ "$(grep -E '^enflame_gcu_[a-z_]+\{.*uuid=' "$SCRATCH/metrics" | grep -vc 'slot="')" -eq 0 ]
  for name in usage memory_usage memory_used_bytes memory_total_bytes temperatures power_usage \
              power_consumption power_capability clock health ecc_single_bit_error_total_count \
              ecc_double_bit_error_total_count pcie_link_width count info exporter_up \
              memory_temperature board_temperature hbm_clock; do
    grep -q "^# HELP enflame_gcu_$name " "$SCRATCH/metrics" || { echo "no HELP for $name"; false; }
    grep -qx "# TYPE enflame_gcu_$name gauge" "$SCRATCH/metrics" || { echo "no TYPE for $name"; false; }
    grep -q "^enflame_gcu_$name{" "$SCRATCH/metrics" || { echo "no series of $name"; false; }
  done
  # gcu-exporter's one temperature (the ASIC) and one clock (the DTU, with power_mode) per card
  [ "$(grep -c '^enflame_gcu_temperatures{' "$SCRATCH/metrics")" -eq 4 ]
  [ "$(grep -c '^enflame_gcu_clock{.*,power_mode="not supported"} ' "$SCRATCH/metrics")" -eq 4 ]
  [ "$(grep -c '^enflame_gcu_clock{' "$SCRATCH/metrics")" -eq 4 ]
  run promtool check metrics < "$SCRATCH/metrics"
  [ "$(sort <<<"$output")" = "$(printf '%s\n' \
    'enflame_gcu_count non-histogram and non-summary metrics should not have "_count" suffix' \
    'enflame_gcu_ecc_double_bit_error_total_count non-histogram and non-summary metrics should not have "_count" suffix' \
    'enflame_gcu_ecc_single_bit_error_total_count non-histogram and non-summary metrics should not have "_count" suffix')" ]
  # and a scrape is exactly the cache: two in a row are the same bytes between collections
  run curl -s -o /dev/null -w '%{http_code} %{content_type}' "http://127.0.0.1:$PORT/metrics"
  [ "$output" = "200 text/plain; version=0.0.4; charset=utf-8" ]
}

@test "values: what the simulator was told is what a scrape shows, for that card only" {
  host
  start_exporter
  "$SIM_HOST" telemetry --root "$SCRATCH/host" --card 2 usage=73.5 memory_used_mib=2048 temperature=61 \
    memory_temperature=55 board_temperature=44 power=150 power_capability=375 dtu_clock=1300 hbm_clock=6400 \
    ecc_single_bit=7 ecc_double_bit=2 pcie_link_width=4 pcie_link_speed=2 process=4321:512
  local c2
  c2="$(card 2),$nobody"
  wait_for is 73.5 enflame_gcu_usage "{$c2}"
  [ "$(value enflame_gcu_memory_used_bytes "{$c2}")" = 2147483648 ]
  [ "$(value enflame_gcu_memory_usage "{$c2}")" = "$(python3 -c 'print(2048 / 42976)')" ]
  [ "$(value enflame_gcu_temperatures "{$c2}")" = 61 ]
  [ "$(value enflame_gcu_memory_temperature "{$c2}")" = 55 ]
  [ "$(value enflame_gcu_board_temperature "{$c2}")" = 44 ]
  [ "$(value enflame_gcu_power_consumption "{$c2}")" = 150 ]
  [ "$(value enflame_gcu_power_capability "{$c2}")" = 375 ]
  [ "$(value enflame_gcu_power_usage "{$c2}")" = 40 ]
  [ "$(value enflame_gcu_clock "{$c2,power_mode=\"not supported\"}")" = 1300 ]
  [ "$(value enflame_gcu_hbm_clock "{$c2}")" = 6400 ]
  [ "$(value enflame_gcu_ecc_single_bit_error_total_count "{$c2}")" = 7 ]
  [ "$(value enflame_gcu_ecc_double_bit_error_total_count "{$c2}")" = 2 ]
  [ "$(value enflame_gcu_pcie_link_width "{$c2}")" = 4 ]
  [ "$(value enflame_gcu_pcie_link_speed "{$c2}")" = 2 ]
  [ "$(value enflame_gcu_pcie_max_link_speed "{$c2}")" = 5 ]   # the simulator's fixed maximum (Gen5)
  [ "$(value enflame_gcu_process_memory_used_bytes "{$(card 2),pid=\"4321\"}")" = 536870912 ]
  [ "$(series enflame_gcu_process_memory_used_bytes | wc -l)" -eq 1 ]
  # the other cards kept the simulator's defaults
  [ "$(value enflame_gcu_usage "{$(card 1),$nobody}")" = 0 ]
  [ "$(value enflame_gcu_temperatures "{$(card 1),$nobody}")" = 35 ]
  # and a second change shows too (the library stays loaded; values are read every pass)
  "$SIM_HOST" telemetry --root "$SCRATCH/host" --card 2 usage=12 ecc_single_bit=8
  wait_for is 12 enflame_gcu_usage "{$c2}"
  [ "$(value enflame_gcu_ecc_single_bit_error_total_count "{$c2}")" = 8 ]
}

@test "attribution: device-plugin IDs (UUID, index, ::N replicas, DRS-<uuid>) and DRA claims become pod labels; foreign ones are ignored" {
  host --drs
  local drs1
  drs1=$(awk '/card: 1, instance_id: 0/ {gsub(/[",}]/, ""); print $NF}' "$SCRATCH/desc.yaml")
  [ -n "$drs1" ]
  pods "$(jq -nc --arg u0 "$U0" --arg d1 "DRS-$drs1" '{pod_resources: [
    {name: "train", namespace: "ml", containers: [{name: "worker",
      devices: [{resource_name: "enflame.com/gcu", device_ids: [($u0 + "::0"), ($u0 + "::3")]}]}]},
    {name: "slice", namespace: "ml", containers: [{name: "main",
      devices: [{resource_name: "enflame.com/drs-2g.22gb", device_ids: [$d1]}]}]},
    {name: "byindex", namespace: "ml", containers: [{name: "c",
      devices: [{resource_name: "enflame.com/gcu", device_ids: ["2"]}]}]},
    {name: "dra", namespace: "batch", containers: [{name: "job",
      dynamic_resources: [{claim_name: "gcu", claim_namespace: "batch",
        claim_resources: [{driver_name: "gcu.enflame.com", pool_name: "node-a", device_name: "gcu-3"}]}]}]},
    {name: "cuda", namespace: "ml", containers: [{name: "c",
      devices: [{resource_name: "nvidia.com/gpu", device_ids: ["1", "TR6Y46010001"]}],
      dynamic_resources: [{claim_resources: [{driver_name: "gpu.nvidia.com", device_name: "gcu-1"}]}]}]}]}')"
  start_pod_resources
  start_exporter
  [ "$(series enflame_gcu_usage "{$(card 0),pod_name=\"train\",pod_namespace=\"ml\",container_name=\"worker\"}" | wc -l)" -eq 1 ]
  [ "$(series enflame_gcu_usage "{$(card 1),pod_name=\"slice\",pod_namespace=\"ml\",container_name=\"main\"}" | wc -l)" -eq 1 ]
  [ "$(series enflame_gcu_usage "{$(card 2),pod_name=\"byindex\",pod_namespace=\"ml\",container_name=\"c\"}" | wc -l)" -eq 1 ]
  [ "$(series enflame_gcu_usage "{$(card 3),pod_name=\"dra\",pod_namespace=\"batch\",container_name=\"job\"}" | wc -l)" -eq 1 ]
  # one series per card: each card has exactly its holder, the foreign pod holds nothing
  [ "$(series enflame_gcu_usage | wc -l)" -eq 4 ]
  no_series enflame_gcu_usage 'pod_name="cuda"'
  no_series enflame_gcu_usage "$nobody"
  # the pod goes: its card keeps one unlabelled series; a new DRA slice claim holds card 0 too
  pods "$(jq -nc --arg u0 "$U0" '{pod_resources: [
    {name: "train", namespace: "ml", containers: [{name: "worker",
      devices: [{resource_name: "enflame.com/gcu", device_ids: [($u0 + "::0")]}]}]},
    {name: "slice-dra", namespace: "batch", containers: [{name: "job",
      dynamic_resources: [{claim_resources: [{driver_name: "gcu.enflame.com", device_name: "gcu-0-1g-11gb-1"}]}]}]}]}')"
  wait_for no_series enflame_gcu_usage 'pod_name="dra"'
  [ "$(series enflame_gcu_usage "{$(card 3),$nobody}" | wc -l)" -eq 1 ]
  [ "$(series enflame_gcu_usage "$(card 0)" | wc -l)" -eq 2 ]
  [ "$(series enflame_gcu_usage "{$(card 0),pod_name=\"slice-dra\",pod_namespace=\"batch\",container_name=\"job\"}" | wc -l)" -eq 1 ]
  # per-card gauges follow the holders; the card-wide ones do not multiply
  [ "$(series enflame_gcu_health "$(card 0)" | wc -l)" -eq 2 ]
  [ "$(value enflame_gcu_count)" = 4 ]
}

@test "attribution: a DRS instance efsmi lists without a UUID is held through the ID the device plugin advertises (<card>:<profile>:<instance>)" {
  host --drs
  printf 'faults:\n  drs_instance_layout: placement\n' >> "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  pods "$(jq -nc '{pod_resources: [
    {name: "slice", namespace: "ml", containers: [{name: "main",
      devices: [{resource_name: "enflame.com/drs-1g.11gb", device_ids: ["0:1g.11gb:1"]}]}]},
    {name: "ghost", namespace: "ml", containers: [{name: "main",
      devices: [{resource_name: "enflame.com/drs-1g.11gb", device_ids: ["1:1g.11gb:3"]}]}]}]}')"
  start_pod_resources
  start_exporter
  # discovery saw the instances without a UUID: they are named <card>:<profile>:<instance>
  [ "$(value enflame_gcu_drs_instance_info 'drs_id="0:1g.11gb:1"' 'profile="1g.11gb"' 'instance_id="1"')" = 1 ]
  no_series enflame_gcu_drs_instance_info 'drs_id="DRS-'
  [ "$(series enflame_gcu_drs_instance_info | wc -l)" -eq 3 ]
  [ "$(series enflame_gcu_usage "{$(card 0),pod_name=\"slice\",pod_namespace=\"ml\",container_name=\"main\"}" | wc -l)" -eq 1 ]
  # an instance that does not exist holds nothing
  no_series enflame_gcu_usage 'pod_name="ghost"'
  [ "$(series enflame_gcu_usage | wc -l)" -eq 4 ]
}

@test "attribution: no kubelet socket means unlabelled series and one log line, not one per collection" {
  host
  start_exporter
  # Three changes seen in turn: at least three collections have run.
  local u
  for u in 10 20 30; do
    "$SIM_HOST" telemetry --root "$SCRATCH/host" --card 0 usage=$u
    wait_for is "$u" enflame_gcu_usage "{$(card 0),$nobody}"
  done
  [ "$(grep -c 'pod attribution off' "$LOG")" -eq 1 ]
  grep -q "pod attribution off: pod-resources socket '$PRSOCK': " "$LOG"
  [ "$(series enflame_gcu_usage "$nobody" | wc -l)" -eq 4 ]
  # kubelet comes: attribution on, one line
  pods "$(jq -nc --arg u1 "$U1" '{pod_resources: [{name: "p", namespace: "n", containers: [{name: "c",
    devices: [{resource_name: "enflame.com/gcu", device_ids: [$u1]}]}]}]}')"
  start_pod_resources
  wait_for is 1 enflame_gcu_info 'pod_name="p"'
  [ "$(grep -c 'pod attribution on' "$LOG")" -eq 1 ]
  # kubelet restarts (its socket deleted and made again, as kubelet does): attribution
  # follows the new socket, with the new answer
  stop_pid "$FPR_PID"
  rm -f "$PRSOCK"
  pods "$(jq -nc --arg u1 "$U1" '{pod_resources: [{name: "q", namespace: "n", containers: [{name: "c",
    devices: [{resource_name: "enflame.com/gcu", device_ids: [$u1]}]}]}]}')"
  start_pod_resources
  wait_for is 1 enflame_gcu_info 'pod_name="q"'
}

@test "health: a card turning unhealthy is 1 (Unhealthy), and 2 again when it recovers" {
  host
  start_exporter
  echo "$U2" > "$SIMDIR/enflame-sim-unhealthy"
  wait_for is 1 enflame_gcu_health "{$(card 2),$nobody,healthmsg=\"Unhealthy\"}"
  [ "$(series enflame_gcu_health 'healthmsg="Healthy"' | wc -l)" -eq 3 ]
  [ "$(series enflame_gcu_health | wc -l)" -eq 4 ]
  rm "$SIMDIR/enflame-sim-unhealthy"
  wait_for is 2 enflame_gcu_health "{$(card 2),$nobody,healthmsg=\"Healthy\"}"
  [ "$(series enflame_gcu_health | wc -l)" -eq 4 ]
}

@test "driver gone between scrapes: the cards' series go, the exporter answers with up 1 and count 0; back, they return" {
  host
  start_exporter
  [ "$(series enflame_gcu_usage | wc -l)" -eq 4 ]
  "$SIM_HOST" driver --root "$SCRATCH/host" gone
  wait_for is 0 enflame_gcu_count
  run scrape
  [ "$status" -eq 0 ]
  refute_grep -E '^enflame_gcu_(usage|health|temperatures|memory_used_bytes|info)\{'
  [ "$(value enflame_gcu_exporter_up)" = 1 ]
  [ "$(curl -sf "http://127.0.0.1:$PORT/healthz")" = ok ]
  kill -0 "$EPID"
  "$SIM_HOST" driver --root "$SCRATCH/host" back
  wait_for is 4 enflame_gcu_count
  [ "$(series enflame_gcu_usage | wc -l)" -eq 4 ]
  [ "$(value enflame_gcu_health "{$(card 1),$nobody,healthmsg=\"Healthy\"}")" = 2 ]
  [ "$(grep -c 'driver gone: EfmlGetDevCount' "$LOG")" -eq 1 ]
  [ "$(grep -c 'driver back: 4 cards' "$LOG")" -eq 1 ]
}

@test "driver reloaded with other cards: the count and every label follow (discovery runs again)" {
  host
  start_exporter
  "$SIM_HOST" driver --root "$SCRATCH/host" gone
  wait_for is 0 enflame_gcu_count
  # The host comes back with card 3 gone and card 2 replaced (a new UUID): a rebuilt root, whose
  # driver is loaded (the switch file went with the old tree).
  awk '$1 == "-" && $2 == "index:" && $3 == 3 {skip = 1} $1 == "-" && $2 == "index:" && $3 != 3 {skip = 0}
       /^[a-z_]+:/ && !/^cards:/ {skip = 0} !skip' "$SCRATCH/desc.yaml" | sed "s/$U2/TR6Y46019999/" > "$SCRATCH/desc3.yaml"
  mv "$SCRATCH/desc3.yaml" "$SCRATCH/desc.yaml"
  [ "$(grep -c '^  - index:' "$SCRATCH/desc.yaml")" -eq 3 ]
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  wait_for is 3 enflame_gcu_count
  [ "$(series enflame_gcu_usage | wc -l)" -eq 3 ]
  [ "$(series enflame_gcu_usage "{$(card 2),$nobody}" | wc -l)" -eq 1 ]
  [[ "$(card 2)" == *'uuid="TR6Y46019999"'* ]]
  no_series enflame_gcu_usage "$U2"
  no_series enflame_gcu_usage "$U3"
}

@test "http: /healthz ok, unknown paths 404, SIGTERM exits 0" {
  host
  start_exporter
  [ "$(curl -sf "http://127.0.0.1:$PORT/healthz")" = ok ]
  run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/"
  [ "$output" = 404 ]
  run curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/metrics"
  [ "$output" = 405 ]
  kill -TERM "$EPID"
  local rc=0
  wait "$EPID" || rc=$?
  [ "$rc" -eq 0 ]
  grep -q 'signal 15: stopping' "$LOG"
  # a dead exporter is no answer: the helpers fail rather than report no series
  run ! series enflame_gcu_usage
  run ! no_series enflame_gcu_usage 'pod_name="nobody"'

}

@test "bad input: one-line errors naming the flag or file, exit 1, nothing served" {
  host
  local args
  while IFS='|' read -r args want; do
    # shellcheck disable=SC2086  # args are words
    run "$EXP" $args
    [ "$status" -eq 1 ] || { echo "$args: status $status"; false; }
    [ "${#lines[@]}" -eq 1 ] || { echo "$args: ${#lines[@]} lines: $output"; false; }
    [[ "$output" == "$want"* ]] || { echo "$args: $output"; false; }
  done <<'EOF'
--collect-interval 0s|error: --collect-interval '0s': want a duration from 100ms to 24h, such as 90s or 1m30s
--collect-interval soon|error: --collect-interval 'soon': want a duration
--web.listen-address localhost:9400|error: --web.listen-address 'localhost:9400': 'localhost' is not an IP address
--web.listen-address :99999|error: --web.listen-address ':99999': bad port '99999'
--log-level loud|error: --log-level 'loud': want debug, info, warn or error
--config /nonexistent/config.toml|error: 
--bogus|error: The following argument was not expected: --bogus
EOF
  run "$EXP" --config /nonexistent/config.toml
  [[ "$output" == *"/nonexistent/config.toml"* ]]
  # a port already taken: the second exporter says which address
  start_exporter
  run "$EXP" --web.listen-address "127.0.0.1:$PORT" --collect-interval 1s
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == "error: --web.listen-address '127.0.0.1:$PORT': "* ]]
}

# --- shipping: man page, manifests, install ---

@test "man page: renders without warnings; names every flag of --help and every metric a scrape shows" {
  requires man
  man_covers_flags "$TOP/man/enflame-gcu-exporter.8" "$EXP"
  host
  start_exporter
  local page name
  page=$(MANWIDTH=200 man -l "$TOP/man/enflame-gcu-exporter.8" 2>/dev/null)
  for name in $(scrape | sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p'); do
    grep -qF -- "$name" <<<"$page" || { echo "man page lacks $name"; false; }
  done
}

@test "deployments: the DaemonSet mounts the pod-resources folder and serves 9400; Service and ServiceMonitor match; the ConfigMap's config is accepted" {
  requires python3
  local d=$TOP/deployments/exporter
  python3 - "$d" > "$SCRATCH/cm.json" <<'PY'
import json, sys, yaml
d = sys.argv[1]
k = yaml.safe_load(open(d + "/kustomization.yaml"))
docs = {}
for r in k["resources"] + ["../monitoring/operator/servicemonitor-exporter.yaml"]:
    doc = yaml.safe_load(open(d + "/" + r))
    docs[doc["kind"]] = doc
ds = docs["DaemonSet"]["spec"]["template"]["spec"]
c = ds["containers"][0]
assert ds["nodeSelector"] == {"enflame.com/gpu.present": "true"}, ds["nodeSelector"]
mounts = {m["mountPath"] for m in c["volumeMounts"]}
assert "/var/lib/kubelet/pod-resources" in mounts, mounts
paths = {v["hostPath"]["path"] for v in ds["volumes"] if "hostPath" in v}
assert "/var/lib/kubelet/pod-resources" in paths, paths
assert "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock" in c["args"], c["args"]
assert c["ports"][0] == {"name": "metrics", "containerPort": 9400}, c["ports"]
assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
svc = docs["Service"]["spec"]
assert svc["selector"] == docs["DaemonSet"]["spec"]["selector"]["matchLabels"]
assert svc["ports"][0]["name"] == "metrics" and svc["ports"][0]["port"] == 9400
sm = docs["ServiceMonitor"]["spec"]
assert sm["selector"]["matchLabels"] == docs["Service"]["metadata"]["labels"]
assert sm["endpoints"][0]["port"] == "metrics" and sm["endpoints"][0]["path"] == "/metrics"
assert docs["ConfigMap"]["metadata"]["name"] == ds["volumes"][-1]["configMap"]["name"]
print(json.dumps(docs["ConfigMap"]["data"]))
PY
  jq -r '."config.toml"' "$SCRATCH/cm.json" > "$SCRATCH/cm-config.toml"
  run "$CTK" --config "$SCRATCH/cm-config.toml" config
  [ "$status" -eq 0 ]
  # the DaemonSet's args drive the real exporter (with this test's port and socket)
  host
  sed -i "s|driver-root = \"/\"|driver-root = \"$SCRATCH/host\"|; s|dev-root = \"/\"|dev-root = \"$SCRATCH/host\"|" "$SCRATCH/cm-config.toml"
  ENFLAME_CTK_CONFIG=$SCRATCH/cm-config.toml start_exporter
  [ "$(value enflame_gcu_count)" = 4 ]
}

@test "cmake --install carries the exporter, its man page and every manifest" {
  # DESTDIR: never into the real /usr or /etc (the config file's folder is absolute)
  DESTDIR=$SCRATCH/stage run cmake --install "$BUILD_DIR" --prefix /usr
  [ "$status" -eq 0 ]
  local f
  for f in bin/enflame-gcu-exporter share/man/man8/enflame-gcu-exporter.8 \
           share/doc/enflame-container-toolkit/deployments/exporter/{kustomization,configmap,daemonset,service}.yaml \
           share/doc/enflame-container-toolkit/deployments/monitoring/operator/servicemonitor-exporter.yaml; do
    [ -s "$SCRATCH/stage/usr/$f" ] || { echo "missing $f"; false; }
  done
  [[ "$("$SCRATCH/stage/usr/bin/enflame-gcu-exporter" --version)" == "enflame-gcu-exporter "* ]]
}
