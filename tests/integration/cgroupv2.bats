#!/usr/bin/env bats
# cgroup v2 device access with a real runtime. runc runs in a private mount namespace whose
# /sys/fs/cgroup is the cgroup2 hierarchy (this hybrid machine's /sys/fs/cgroup/unified; on a
# pure v2 host, the host's own), so it uses its v2 manager: the container's cgroup is a cgroup2
# folder and device access is runc's eBPF program, built from config.json. The host's mounts
# are untouched. The probe opens the nodes inside the container (DEVICE_OPEN).

load helpers
bats_require_minimum_version 1.5.0

setup() {
  requires root runc unshare python3
  [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null || stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] ||
    skip_or_fail "no cgroup2 mount"
  setup_scratch
  sim_setup 4
  printf '[enflame-container-runtime]\nlog-file = "%s"\nlog-level = "debug"\n' "$SCRATCH/hook.log" >> "$SCRATCH/config.toml"
  RR=$SCRATCH/runc-root
  RUNC_V2=$SCRATCH/runc-v2
  # runc seeing only the unified hierarchy (the crun-hybrid idea, the other way round)
  cat > "$RUNC_V2" <<'SH'
#!/bin/sh
exec unshare --mount --propagation private /bin/sh -c '
  if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
    umount -R /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup || exit 125
  fi
  exec runc "$@"' runc "$@"
SH
  chmod +x "$RUNC_V2"
}

teardown() { teardown_scratch; }

# What a user checks: which cards open, that /proc/self/cgroup is a v2 one, and runc's own
# defaults: /dev/null opens, /dev/kmsg (1:11, not in runc's default list) made with mknod is denied.
PROBE='["sh","-c","tail -n1 /proc/self/cgroup; ls -l /dev/; '"$DEVICE_OPEN"'; (: <> /dev/null) && echo null-ok; mknod /dev/.kmsg c 1 11 && (: <> /dev/.kmsg) 2>&1 | grep -q permitted && echo kmsg-denied; true"]'

# v2_run DIR RUNTIME...: run the bundle with RUNTIME... (runc-v2, or the shim using it); output in $output.
v2_run() {
  local dir=$1 id; shift
  id=$(unique_id cgv2)
  on_teardown "'$RUNC_V2' --root '$RR' delete -f $id >/dev/null 2>&1; rmdir /sys/fs/cgroup/unified/$id 2>/dev/null; true"
  run bash -c "cd '$dir' && timeout 60 $* --root '$RR' run '$id' 2>&1"
  echo "$output"
  # the container really was in a cgroup2 folder of its own: runc used its v2 manager
  grep -Fx "0::/$id" <<<"$output"
}

runc_defaults_hold() {
  grep -Fx "null-ok" <<<"$output"
  grep -Fx "kmsg-denied" <<<"$output"
}

@test "v2, the hook without the shim: runc's eBPF filter extended to card 1 only; runc's rules still hold; a second run changes nothing" {
  probe_bundle "$SCRATCH/b" "$PROBE" ENFLAME_VISIBLE_DEVICES=1
  # prestart and createRuntime: the hook runs twice on the same cgroup
  bundle_edit "$SCRATCH/b" "h={'path':'$HOOK','env':['ENFLAME_CTK_CONFIG=$SCRATCH/config.toml']}; c['hooks']={'prestart':[dict(h, args=['enflame-container-runtime-hook','prestart'])], 'createRuntime':[dict(h, args=['enflame-container-runtime-hook','createRuntime'])]}"
  v2_run "$SCRATCH/b" "$RUNC_V2"
  [ "$status" -eq 0 ]
  device_access "1" denied
  runc_defaults_hold
  grep -E "debug: device program [0-9]+ replaced by one that also allows 2 nodes" "$SCRATCH/hook.log"
  grep -E "debug: device program [0-9]+ already allows the nodes" "$SCRATCH/hook.log"
}

@test "v2, the shim in legacy mode: runc's own filter allows the cards from config.json; the hook has no cgroup work" {
  printf 'mode = "legacy"\nhook-path = "%s"\nruntimes = ["%s"]\n' "$HOOK" "$RUNC_V2" >> "$SCRATCH/config.toml"
  probe_bundle "$SCRATCH/b" "$PROBE" ENFLAME_VISIBLE_DEVICES=0,2
  v2_run "$SCRATCH/b" "$SHIM"
  [ "$status" -eq 0 ]
  device_access "0 2" denied
  runc_defaults_hold
  grep -F "config.json already allows every node" "$SCRATCH/hook.log"
  run ! grep -F "device program" "$SCRATCH/hook.log"
}

@test "v2, the hook without the shim, no card requested: nothing touched, nothing opens" {
  probe_bundle "$SCRATCH/b" "$PROBE" ENFLAME_VISIBLE_DEVICES=void
  bundle_edit "$SCRATCH/b" "c['hooks']={'prestart':[{'path':'$HOOK','args':['enflame-container-runtime-hook','prestart'],'env':['ENFLAME_CTK_CONFIG=$SCRATCH/config.toml']}]}"
  v2_run "$SCRATCH/b" "$RUNC_V2"
  [ "$status" -eq 0 ]
  refute_grep -E "gcu"
  runc_defaults_hold
}
