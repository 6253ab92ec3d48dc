#!/usr/bin/env bats
# enflame-ctk toolkit as the installer DaemonSet's pod lives: status (its readiness probe),
# install --wait re-checking and repairing what someone else rewrote, and the handover to a new
# pod (the operator replacing it). The simulated node and pod: installer.bash.

load helpers
load installer
bats_require_minimum_version 1.5.0   # `run !`

setup() { installer_setup; }
teardown() { teardown_scratch; }

@test "status (the readiness probe): ready only while every piece is in place; install puts a removed piece back" {
  # containerd is not running: install says so and signals nothing
  install_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "note: containerd is not running (nothing answers on '$R$CD/ctrd/containerd.sock')"
  refute_grep -F "signalled"
  status_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "installed: containerd uses $TK/enflame-container-runtime"
  in_host rm /etc/containerd/conf.d/99-enflame.toml
  status_tk
  [ "$status" -ne 0 ]
  [ "$output" = "error: '$R/etc/containerd/conf.d/99-enflame.toml' lacks the enflame runtime" ]
  install_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "updated: $R/etc/containerd/conf.d/99-enflame.toml"
  status_tk
  [ "$status" -eq 0 ]
  in_host rm "$TK/enflame-container-runtime-hook"
  status_tk
  [ "$status" -ne 0 ]
  [ "$output" = "error: missing: enflame-container-runtime-hook" ]
}

@test "--wait re-checks: containerd's config rewritten by someone else is repaired and containerd signalled once; unchanged, nothing is touched; after the preStop's uninstall, nothing is repaired" {
  start_containerd
  local first=$CTRD_PID
  # the DaemonSet's main process, re-checking every second
  in_pod "$CD/src/enflame-ctk" toolkit install --host-root "$R" --engine-socket "$CD/ctrd/containerd.sock" \
    --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host" --wait --recheck-interval 1 \
    > "$CD/wait.log" 2>&1 &
  # $! is the subshell running in_pod; the installer is its child (nsenter, unshare, sh and
  # chroot each exec the next): stop that one, or it outlives the test holding bats' output
  local sub=$! inst=""
  on_teardown "stop_pid $sub"
  for _ in $(seq 100); do
    inst=$(pgrep -P "$sub" | head -n 1) || true
    if [ -n "$inst" ]; then break; fi
    sleep 0.1
  done
  [ -n "$inst" ]
  on_teardown "stop_pid $inst"
  wait_for gone "$first"
  start_containerd
  local files; files=$(host_files)
  # nothing changed: over 3 s of re-checks no file is written and containerd is left alone
  sleep 3
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
  run ! grep -F drift "$CD/wait.log"
  # a config manager writes containerd's config back as it knows it (without our import)
  local second=$CTRD_PID
  in_host sh -c "cat > /etc/containerd/config.toml" < "$CD/before.toml"
  wait_for gone "$second"
  cat "$CD/wait.log"
  grep -F "drift: '$R/etc/containerd/config.toml' lacks the enflame runtime: installing again" "$CD/wait.log"
  [ "$(grep -c "^signalled: containerd" "$CD/wait.log")" -eq 2 ]
  start_containerd
  [ "$(host_files)" = "$files" ]
  status_tk
  [ "$status" -eq 0 ]
  # repaired once: containerd left alone from then on
  sleep 3
  kill -0 "$CTRD_PID"
  [ "$(grep -c "^signalled: containerd" "$CD/wait.log")" -eq 2 ]
  # the pod's preStop uninstalls while this process still waits (SIGTERM comes after it): the
  # re-check finds nothing installed and repairs nothing, the config stays as it was before
  local third=$CTRD_PID
  run -0 in_pod "$CD/src/enflame-ctk" toolkit uninstall --host-root "$R" --engine-socket "$CD/ctrd/containerd.sock"
  wait_for gone "$third"
  start_containerd
  sleep 3
  kill -0 "$CTRD_PID"
  [ "$(grep -c drift "$CD/wait.log")" -eq 1 ]
  [ "$(grep -c "^signalled: containerd" "$CD/wait.log")" -eq 2 ]
  in_host cat /etc/containerd/config.toml | cmp - "$CD/before.toml"
  status_tk
  [ "$status" -ne 0 ]
  # SIGTERM ends the wait
  kill -TERM "$inst"
  wait_for gone "$inst"
}

@test "handover (the operator replaces the pod, same flags): status not ready, uninstall undoes nothing and leaves containerd running; without the mark it uninstalls" {
  start_containerd
  installed
  local files; files=$(host_files)
  # the pod's annotations as a downward API volume writes them, in the pod's own root
  printf 'enflame.com/pod-template-hash="0123"\nenflame.com/toolkit-handover="true"' > "$CD/pod/tmp/annotations"
  run in_pod "$CD/src/enflame-ctk" toolkit status --host-root "$R" --handover-file /tmp/annotations
  [ "$status" -ne 0 ]
  [ "$output" = "error: handing over to a new installer (enflame.com/toolkit-handover)" ]
  uninstall_tk --handover-file /tmp/annotations
  [ "$status" -eq 0 ]
  refute_grep -F "signalled"
  echo "$output" | grep -F "handing over: "
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
  # the new pod's install: no file changed, containerd not touched
  install_tk
  [ "$status" -eq 0 ]
  refute_grep -F "signalled"
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
  # another value, or no mark: the usual uninstall
  printf 'enflame.com/toolkit-handover="false"\n' > "$CD/pod/tmp/annotations"
  run in_pod "$CD/src/enflame-ctk" toolkit status --host-root "$R" --handover-file /tmp/annotations
  [ "$status" -eq 0 ]
  uninstall_tk --handover-file /tmp/annotations
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: containerd (pid $CTRD_PID) with SIGTERM (its service manager restarts it)"
  in_host cat /etc/containerd/config.toml | cmp - "$CD/before.toml"
}
