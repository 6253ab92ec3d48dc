#!/usr/bin/env bats
# enflame-dra-plugin's DRS placements: partitionable devices whose instance a prepare makes and
# an unprepare destroys, no room on a card, restored at start, a split card never handed out
# whole. Helpers: dra_plugin.bash.

load helpers
load dra_plugin
bats_require_minimum_version 1.5.0   # `run !`

setup() { dra_plugin_setup; }
teardown() { teardown_scratch; }

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
