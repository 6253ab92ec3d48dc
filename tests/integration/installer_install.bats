#!/usr/bin/env bats
# enflame-ctk toolkit install and uninstall on containerd 1.6 and 1.7 (Debian 13), as the
# installer DaemonSet runs them: containerd stopped once and back with our runtime, a container
# through it gets a card, uninstall restores the config byte for byte, a second install changes
# nothing, bad input rolls back, --enable-nri. The simulated node and pod: installer.bash.

load helpers
load installer
bats_require_minimum_version 1.5.0   # `run !`

NRI_PLUGIN=$BUILD_DIR/k8s/nri/enflame-nri-plugin

setup() { installer_setup; }
teardown() { teardown_scratch; }

@test "install: containerd is stopped once, comes back with our runtime, and a container through it gets a card" {
  # the host root has a merged-/usr Debian's links, and the pod's /run is not the host's: an
  # installer that resolved /var/run/cdi from the pod would look into the pod's /run
  [ "$(in_host readlink "$R/var/run")" = /run ]
  [ "$(in_host readlink "$R/lib")" = usr/lib ]
  [ "$(in_host readlink "$R/bin")" = usr/bin ]
  [ "$(in_host readlink "$R/sbin")" = usr/sbin ]
  [ "$(in_host readlink "$R/lib64")" = usr/lib64 ]
  in_host test -e /run/.ready
  run ! in_pod test -e /run/.ready
  install_gets_card

}

@test "accept-envvar-when-unprivileged: false unless asked; the flag (or its env) sets it, an administrator's edit survives a re-install, an older installer's true does not" {
  local cfg=/etc/enflame-container-runtime/config.toml
  start_containerd
  installed
  in_host grep -Fx 'accept-envvar-when-unprivileged = false' "$cfg"
  # the administrator trusts every tenant and turns it on: a re-install (the DaemonSet's restart,
  # the waiting installer's repair) keeps it
  in_host sed -i 's/^accept-envvar-when-unprivileged = false$/accept-envvar-when-unprivileged = true/' "$cfg"
  install_tk
  [ "$status" -eq 0 ]
  in_host grep -Fx 'accept-envvar-when-unprivileged = true' "$cfg"
  # an unprivileged container's env now gives its card, as the administrator chose
  kill -0 "$CTRD_PID"
  ctr_via_runtime --env ENFLAME_VISIBLE_DEVICES=1
  echo "$output" | grep -Fx gcu1
  # the flag, or ACCEPT_ENVVAR_WHEN_UNPRIVILEGED as the DaemonSet sets it, wins
  install_tk --accept-envvar-when-unprivileged=false
  [ "$status" -eq 0 ]
  in_host grep -Fx 'accept-envvar-when-unprivileged = false' "$cfg"
  run in_pod env ACCEPT_ENVVAR_WHEN_UNPRIVILEGED=true "$CD/src/enflame-ctk" toolkit install --host-root "$R" \
    --engine-socket "$CD/ctrd/containerd.sock" --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host"
  [ "$status" -eq 0 ]
  in_host grep -Fx 'accept-envvar-when-unprivileged = true' "$cfg"
  install_tk --accept-envvar-when-unprivileged=yes
  [ "$status" -ne 0 ]
  [[ $output == *"--accept-envvar-when-unprivileged: yes not in {true,false}"* || $output == *"--accept-envvar-when-unprivileged"*"yes"* ]]
  # a config an older installer wrote (true, and no record of it in the state) is not an
  # administrator's choice: the upgrade writes false
  in_host python3 -c 'import json, sys; p = sys.argv[1]; s = json.load(open(p)); s.pop("accept_envvar_written"); json.dump(s, open(p, "w"))' \
    "$TK/.install-state.json"
  install_tk
  [ "$status" -eq 0 ]
  in_host grep -Fx 'accept-envvar-when-unprivileged = false' "$cfg"
}

@test "install twice: the second changes no file and does not touch containerd" {
  start_containerd
  installed
  local files; files=$(host_files)
  install_tk
  [ "$status" -eq 0 ]
  refute_grep -E "^(signalled|updated|installed): /"
  refute_grep -F "signalled"
  echo "$output" | grep -F "unchanged: $R$TK/enflame-ctk"
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
}

@test "uninstall: containerd's config byte-identical to before, nothing of ours left, containerd without the runtime" {
  local files_before; files_before=$(host_files)
  start_containerd
  installed
  uninstall_restores "$files_before"
  # uninstall again: nothing to undo, still fine
  uninstall_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "nothing to undo"
  run ! in_pod "$CD/src/enflame-ctk" toolkit status --host-root "$R"
}

@test "bad input: an engine that is not installed, a read-only host folder, a config containerd refuses: one line, nothing left" {
  local files_before; files_before=$(host_files)
  # CRI-O is not on this host (a host that has it is not this test's)
  if in_host test -e /usr/bin/crio; then skip_or_fail "this host has crio"; fi
  install_tk --runtime crio
  [ "$status" -ne 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [ "$output" = "error: --runtime crio: crio is not installed under '$R' (no usr/bin, usr/local/bin, usr/sbin or bin/crio)" ]
  [ "$(host_files)" = "$files_before" ]
  # containerd's folder read-only: binaries, toolkit config and CDI spec were written first,
  # and are all gone again
  in_host mkdir /etc/containerd/conf.d
  files_before=$(host_files)
  in_host sh -c "mount --bind $R/etc/containerd $R/etc/containerd && mount -o remount,bind,ro $R/etc/containerd"
  install_tk
  [ "$status" -ne 0 ]
  echo "$output" | tail -n 1 | grep -E "^error: .*'/etc/containerd/conf.d/99-enflame.toml'.*Read-only file system"
  [ "$(host_files)" = "$files_before" ]
  in_host umount "$R/etc/containerd"
  # a config containerd refuses (a key of the wrong type): the change is rolled back byte for byte
  in_host sed -i '1a oom_score = "high"' /etc/containerd/config.toml
  files_before=$(host_files)
  install_tk
  [ "$status" -ne 0 ]
  echo "$output" | tail -n 1 | grep -E "^error: rolled back: containerd rejects '/etc/containerd/config.toml' with our runtime: .*Can't convert high\(string\) to int"
  [ "$(host_files)" = "$files_before" ]
}

@test "containerd 1.7 (Debian 13) as the node's engine: install, a container gets its card, uninstall restores the config" {
  run in_host containerd --version
  [[ $output == *" 1.7."* ]]
  local files_before; files_before=$(host_files)
  install_gets_card
  uninstall_restores "$files_before"
}

# nri_dump: "disable disable_connections socket_path" of the NRI plugin in containerd's merged config.
nri_dump() {
  in_host containerd --config /etc/containerd/config.toml config dump | python3 -c 'import sys, tomllib
n = tomllib.loads(sys.stdin.read())["plugins"]["io.containerd.nri.v1.nri"]
print(n["disable"], n["disable_connections"], n["socket_path"])'
}

@test "containerd 1.7 (Debian 13) with --enable-nri: NRI on after one restart, enflame-nri-plugin registers; again: untouched; without it: off; uninstall: byte-identical" {
  [ -x "$NRI_PLUGIN" ] || skip_or_fail "no $NRI_PLUGIN (build enflame-nri-plugin)"
  local files_before; files_before=$(host_files)
  start_containerd
  [ "$(nri_dump)" = "True False /var/run/nri/nri.sock" ]   # 1.7 ships it off
  local first=$CTRD_PID
  # the DaemonSet's way: ENABLE_NRI in the environment
  run in_pod env ENABLE_NRI=true "$CD/src/enflame-ctk" toolkit install --host-root "$R" \
    --engine-socket "$CD/ctrd/containerd.sock" --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: containerd (pid $first) with SIGTERM (its service manager restarts it)"
  echo "$output" | grep -F "installed: enflame runtime for containerd, NRI on"
  # the main config gains only its imports line; the drop-in holds NRI
  in_host grep -Fx '[plugins."io.containerd.nri.v1.nri"]' /etc/containerd/conf.d/99-enflame.toml
  [ "$(in_host diff "$CD/before.toml" /etc/containerd/config.toml | grep -c '^[<>]')" = 1 ]
  wait_for gone "$first"
  start_containerd
  [ "$(nri_dump)" = "False False /var/run/nri/nri.sock" ]
  wait_for in_host test -S /var/run/nri/nri.sock || { grep -i -E "nri|cri" "$CD/ctrd/containerd.log" | tail -n 20; false; }
  # the plugin connects on the socket containerd now makes (in the node's namespace)
  setsid nsenter -t "$HOLDER_PID" -m -- "$NRI_PLUGIN" --retry-interval 0.2 > "$CD/nri.log" 2>&1 < /dev/null &
  local nri=$!
  on_teardown "stop_pid $nri"
  wait_for grep -q 'registered as 10-enflame-gcu' "$CD/nri.log"
  grep -F "configured by containerd" "$CD/nri.log"
  status_tk
  [ "$status" -eq 0 ]
  # again, same choice: no file changes, containerd untouched
  local files; files=$(host_files)
  install_tk --enable-nri
  [ "$status" -eq 0 ]
  refute_grep -F "signalled"
  kill -0 "$CTRD_PID"
  [ "$(host_files)" = "$files" ]
  # re-installed without it: NRI off again, one more restart
  local second=$CTRD_PID
  install_tk
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: containerd (pid $second) with SIGTERM (its service manager restarts it)"
  wait_for gone "$second"
  start_containerd
  [ "$(nri_dump)" = "True False /var/run/nri/nri.sock" ]
  run ! in_host grep -F nri /etc/containerd/conf.d/99-enflame.toml
  installed --enable-nri
  uninstall_restores "$files_before"
  [ "$(nri_dump)" = "True False /var/run/nri/nri.sock" ]
}
