#!/usr/bin/env bats
# enflame-dra-plugin restarted: a corrupt checkpoint (and its previous one), killed by the kernel
# at each step of a prepare (strace's fault injection) and converging after, a spec gone missing,
# kubelet restarted, SIGTERM. Helpers: dra_plugin.bash.

load helpers
load dra_plugin
bats_require_minimum_version 1.5.0   # `run !`

setup() { dra_plugin_setup; }
teardown() { teardown_scratch; }

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
  grep -E "destroyed DRS instance 1 \(1g\.11gb\) of card 0: made for claim [^ ]+ by a create that never finished" "$SCRATCH/dra.log"
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
  grep -E "destroyed DRS instance 0 \(1g\.11gb\) of card 0: made for claim [^ ]+ by a create that never finished" "$SCRATCH/dra.log"
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
  grep -F "claim uid-p: stopped before efsmi answered its create of a 1g.11gb DRS instance on card 0: nothing destroyed" "$SCRATCH/dra.log"
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
