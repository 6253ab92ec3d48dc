#!/usr/bin/env bash
# Device plugin figures (issue 12's budgets; a report, never a pass/fail test): Allocate of 8
# cards measured kubelet-side through the fake kubelet (medians of 1000 calls, three runs),
# the daemon's RSS, its idle CPU over 30 s with the default 5 s health period, how long a card
# turning unhealthy takes to reach ListAndWatch, and how long re-registration takes after a
# kubelet restart. Needs root (the simulated host's device nodes).
#
#   BUILD_DIR=$PWD/build/dev [DP=$PWD/build/release/k8s/device-plugin/enflame-device-plugin] k8s/tests/bench.sh
set -euo pipefail
B=${BUILD_DIR:?set BUILD_DIR to a build with tests (fake-kubelet, the simulator)}
DP=${DP:-$B/k8s/device-plugin/enflame-device-plugin}
FK=$B/k8s/tests/fake-kubelet
T=$(mktemp -d /tmp/edpb.XXXXXX)
FK_PID= DP_PID=
cleanup() {
  [ -n "$DP_PID" ] && kill "$DP_PID" 2>/dev/null
  [ -n "$FK_PID" ] && kill "$FK_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
# until CMD...: poll CMD every 5 ms for at most 20 s.
until_ok() { local i; for (( i = 0; i < 4000; i++ )); do "$@" && return 0; sleep 0.005; done; echo "timed out: $*" >&2; exit 1; }
count() { local c; c=$(grep -c "\"event\":\"$1\"" "$T/ev" 2>/dev/null) || true; echo "${c:-0}"; }
more_than() { [ "$(count "$2")" -gt "$1" ]; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

"$B/sim/enflame-sim-host" example --cards 8 > "$T/desc.yaml"
"$B/sim/enflame-sim-host" build --desc "$T/desc.yaml" --root "$T/host" >/dev/null
printf '[enflame-container-cli]\ndriver-root = "%s"\ndev-root = "%s"\n' "$T/host" "$T/host" > "$T/config.toml"
mkdir "$T/k"
"$FK" serve --dir "$T/k" --events "$T/ev" 2>/dev/null & FK_PID=$!
ENFLAME_CTK_CONFIG=$T/config.toml "$DP" --kubelet-dir "$T/k" > "$T/dp.log" 2>&1 & DP_PID=$!
until_ok more_than 0 list

ids=$(seq -f 'TR6Y4601%04g' 0 7 | paste -sd,)
for _ in 1 2 3; do "$FK" allocate --socket "$T/k/enflame-gcu.sock" --ids "$ids" --repeat 1000 2>&1 >/dev/null; done
echo "rss: $(awk '/VmRSS/ {print $2, $3}' "/proc/$DP_PID/status")"
t0=$(awk '{print $14 + $15}' "/proc/$DP_PID/stat"); sleep 30; t1=$(awk '{print $14 + $15}' "/proc/$DP_PID/stat")
echo "idle cpu: $(( t1 - t0 )) ticks of $(getconf CLK_TCK)/s in 30 s"

n=$(count list); sim=$(echo "$T"/host/usr/local/efsmi/efsmi-*)
echo TR6Y46010003 > "$sim/enflame-sim-unhealthy"; s=$(date +%s%N)
until_ok more_than "$n" list
echo "unhealthy on ListAndWatch after: $(ms_since "$s") ms (health period 5 s)"
rm "$sim/enflame-sim-unhealthy"

kill "$FK_PID"; wait "$FK_PID" 2>/dev/null || true
rm -f "$T"/k/*.sock; n=$(count register)
"$FK" serve --dir "$T/k" --events "$T/ev" 2>/dev/null & FK_PID=$!
until_ok test -S "$T/k/kubelet.sock"; s=$(date +%s%N)
until_ok more_than "$n" register
echo "re-registered after kubelet.sock reappeared: $(ms_since "$s") ms"
