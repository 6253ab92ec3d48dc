#!/usr/bin/env bats
# enflame-ctk runtime configure|unconfigure and enflame-ctk config, against real engines:
# a dockerd started by the test (private data-root/exec-root/pidfile/socket, iptables and the
# bridge off, a unique cgroup-parent) loads the configured daemon.json on SIGHUP and runs a
# container with --runtime=enflame; a containerd 1.6 started by the test (private root, state
# and sockets) boots with the configured config.toml and its drop-in. CRI-O is not installable
# on Debian 12, so its files are only checked as TOML. The daemons run in a private mount
# namespace (PRIVATE_RUN: /run and /etc/docker are theirs) and are stopped by PID.

load helpers

setup() {
  setup_scratch
  [ -x "$CTK" ] || skip_or_fail "needs $CTK"
}

teardown() { teardown_scratch; }

# remove_cgroup NAME: the v1/v2 cgroup dirs a daemon made under NAME (empty ones only).
remove_cgroup() {
  local h
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/unified/; do
    [ -d "$h$1" ] && find "$h$1" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  return 0
}

# busybox_tar OUT: a tar of a minimal busybox rootfs.
busybox_tar() {
  local r=$SCRATCH/rootfs
  mkdir -p "$r"/{bin,proc,sys,dev,etc,tmp,root,run}
  cp /bin/busybox "$r"/bin/
  (cd "$r"/bin && for a in $(./busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$a"; done)
  echo 'root:x:0:0:root:/root:/bin/sh' > "$r"/etc/passwd
  echo 'root:x:0:' > "$r"/etc/group
  tar -C "$r" -cf "$1" .
}

# ---- files only (no daemon) -------------------------------------------------------------

@test "docker: configure, second run changes nothing, unconfigure restores every byte" {
  local f=$SCRATCH/daemon.json
  printf '{\n  "log-level": "warn",\n  "default-runtime": "runc",\n  "runtimes": {"x": {"path": "/bin/x"}}\n}\n' > "$f"
  cp "$f" "$SCRATCH/orig.json"
  run "$CTK" runtime configure --runtime docker --config "$f" --runtime-path /opt/e/enflame-container-runtime \
      --set-as-default --cdi.enabled
  [ "$status" -eq 0 ]
  [[ "$output" == *"updated: $f"* ]]
  [ "$(jq -r '.runtimes.enflame.path' "$f")" = /opt/e/enflame-container-runtime ]
  [ "$(jq -r '."default-runtime"' "$f")" = enflame ]
  [ "$(jq -r '.features.cdi' "$f")" = true ]
  [ "$(jq -r '.runtimes.x.path' "$f")" = /bin/x ]
  [ "$(jq -r 'keys_unsorted | join(",")' "$f")" = "log-level,default-runtime,runtimes,features" ]
  cmp "$SCRATCH/orig.json" "$f.enflame.bak"
  cp "$f" "$SCRATCH/once.json"
  run "$CTK" runtime configure --runtime docker --config "$f" --runtime-path /opt/e/enflame-container-runtime \
      --set-as-default --cdi.enabled
  [ "$status" -eq 0 ]
  [[ "$output" == *"unchanged: $f"* ]]
  cmp "$SCRATCH/once.json" "$f"
  run "$CTK" runtime unconfigure --runtime docker --config "$f" --cdi.enabled
  [ "$status" -eq 0 ]
  cmp "$SCRATCH/orig.json" "$f"
  [ ! -e "$f.enflame.bak" ]
}

@test "docker: a missing daemon.json is created, and removed again by unconfigure" {
  local f=$SCRATCH/etc/docker/daemon.json
  run "$CTK" runtime configure --runtime docker --config "$f" --runtime-path /opt/e/shim
  [ "$status" -eq 0 ]
  [ "$(jq -c . "$f")" = '{"runtimes":{"enflame":{"path":"/opt/e/shim"}}}' ]
  [ ! -e "$f.enflame.bak" ]
  run "$CTK" runtime configure --runtime docker --config "$f" --uninstall
  [ "$status" -eq 0 ]
  [ ! -e "$f" ]
}

@test "docker: --dry-run prints the result and writes nothing" {
  local f=$SCRATCH/daemon.json
  echo '{"debug": true}' > "$f"
  run "$CTK" runtime configure --runtime docker --config "$f" --runtime-path /opt/e/shim --dry-run
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -c .)" = '{"debug":true,"runtimes":{"enflame":{"path":"/opt/e/shim"}}}' ]
  [ "$(cat "$f")" = '{"debug": true}' ]
  [ ! -e "$f.enflame.bak" ]
}

@test "a config we cannot parse is refused with its line and left untouched" {
  local f=$SCRATCH/daemon.json
  printf '{\n  "debug": true,\n  "runtimes": {\n}\n' > "$f"
  cp "$f" "$SCRATCH/orig"
  run "$CTK" runtime configure --runtime docker --config "$f" --runtime-path /opt/e/shim
  [ "$status" -eq 1 ]
  [[ "$output" == "error: $f: line 5: syntax error while parsing object - unexpected end of input; expected '}'" ]]
  cmp "$SCRATCH/orig" "$f"
  [ ! -e "$f.enflame.bak" ]

  local t=$SCRATCH/config.toml
  printf 'version = 2\n[plugins\n' > "$t"
  cp "$t" "$SCRATCH/orig.toml"
  run "$CTK" runtime configure --runtime containerd --config "$t" --drop-in "$SCRATCH/d/99.toml" --runtime-path /opt/e/shim
  [ "$status" -eq 1 ]
  [[ "$output" == "error: $t: line 2: error while parsing table header: expected ']', saw '\\n'" ]]
  cmp "$SCRATCH/orig.toml" "$t"
  [ ! -e "$SCRATCH/d/99.toml" ]

  run "$CTK" runtime configure --runtime podman --config "$t"
  [ "$status" -eq 1 ]
  [ "$output" = "error: runtime 'podman' is not one of docker, containerd, crio" ]
}

@test "containerd: drop-in plus imports line, idempotent, unconfigure restores every byte" {
  local main=$SCRATCH/config.toml d=$SCRATCH/conf.d/99-enflame.toml
  cp "$TOP/tests/fixtures/runtime-config/containerd-v2.toml" "$main"
  cp "$main" "$SCRATCH/orig.toml"
  run "$CTK" runtime configure --runtime containerd --config "$main" --drop-in "$d" --runtime-path /opt/e/shim --set-as-default
  [ "$status" -eq 0 ]
  grep -qx "imports = \[\"$d\"\]  # added by enflame-ctk" "$main"
  grep -qx 'BinaryName = "/opt/e/shim"' "$d"
  grep -qx 'default_runtime_name = "enflame"' "$d"
  grep -qx 'sandbox_image = "registry.k8s.io/pause:3.6"' "$d"   # the user's CRI table is carried over
  cp "$main" "$SCRATCH/m1"; cp "$d" "$SCRATCH/d1"
  run "$CTK" runtime configure --runtime containerd --config "$main" --drop-in "$d" --runtime-path /opt/e/shim --set-as-default
  [ "$status" -eq 0 ]
  [[ "$output" == *"unchanged: $d"*"unchanged: $main"* ]]
  cmp "$SCRATCH/m1" "$main"; cmp "$SCRATCH/d1" "$d"
  run "$CTK" runtime unconfigure --runtime containerd --config "$main" --drop-in "$d"
  [ "$status" -eq 0 ]
  cmp "$SCRATCH/orig.toml" "$main"
  [ ! -e "$d" ]
  [ ! -e "$main.enflame.bak" ]
}

# cri_runtimes FILE: what a user checks of a containerd config.toml (parsed as TOML), one line:
# the CRI plugin table in use, our runtime's type, binary and cgroup driver next to runc's, the
# default runtime, CDI, the runtimes defined, and the sandbox image (kept, if there was one).
cri_runtimes() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))["plugins"]
table = "cri" if "cri" in p else "io.containerd.cri.v1.runtime"
cri = p[table]
ctd = cri["containerd"]
e, runc = ctd["runtimes"]["enflame"], ctd["runtimes"]["runc"]
print(table, e["runtime_type"], e["options"]["BinaryName"],
      f"systemd={e['options'].get('SystemdCgroup')}/{runc['options'].get('SystemdCgroup')}",
      f"default={ctd['default_runtime_name']} cdi={cri.get('enable_cdi')}:{','.join(cri.get('cdi_spec_dirs', []))}",
      f"runtimes={','.join(sorted(ctd['runtimes']))} sandbox={cri.get('sandbox_image', '-')}")
PY
}

@test "containerd: --no-drop-in edits config versions 1 and 3 in place: our runtime, idempotent, round trips" {
  local v f fx=$TOP/tests/fixtures/runtime-config
  local -A want=(
    [1]="cri io.containerd.runc.v2 /opt/e/shim systemd=True/True default=runc cdi=True:/etc/cdi,/var/run/cdi runtimes=enflame,runc sandbox=registry.k8s.io/pause:3.6"
    [3]="io.containerd.cri.v1.runtime io.containerd.runc.v2 /opt/e/shim systemd=False/False default=runc cdi=True:/etc/cdi,/var/run/cdi runtimes=enflame,runc sandbox=-"
  )
  for v in 1 3; do
    f=$SCRATCH/v$v.toml
    cp "$fx/containerd-v$v.toml" "$f"
    run "$CTK" runtime configure --runtime containerd --config "$f" --no-drop-in --runtime-path /opt/e/shim --cdi.enabled
    [ "$status" -eq 0 ]
    [[ "$output" == *"updated: $f"* ]]
    # the file configured, read as containerd reads it
    run cri_runtimes "$f"
    echo "v$v: $output"
    [ "$status" -eq 0 ]
    [ "$output" = "${want[$v]}" ]
    cmp "$f" <("$CTK" runtime configure --runtime containerd --config "$f" --no-drop-in --runtime-path /opt/e/shim --cdi.enabled --dry-run)
    # a second run changes nothing
    cp "$f" "$SCRATCH/once.toml"
    run "$CTK" runtime configure --runtime containerd --config "$f" --no-drop-in --runtime-path /opt/e/shim --cdi.enabled
    [ "$status" -eq 0 ]
    [[ "$output" == *"unchanged: $f"* ]]
    cmp "$SCRATCH/once.toml" "$f"
    run "$CTK" runtime unconfigure --runtime containerd --config "$f" --no-drop-in --cdi.enabled
    [ "$status" -eq 0 ]
    cmp "$fx/containerd-v$v.toml" "$f"
    [ ! -e "$f.enflame.bak" ]
    # with the defaults and --set-as-default: exactly the reviewed in-place file
    run "$CTK" runtime configure --runtime containerd --config "$f" --no-drop-in --set-as-default --cdi.enabled
    [ "$status" -eq 0 ]
    cmp "$fx/containerd-v$v.in-place.toml" "$f"
  done
  grep -qxF '[plugins.cri.containerd.runtimes.enflame]' "$SCRATCH/v1.toml"
  grep -qxF '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.enflame]' "$SCRATCH/v3.toml"
  [[ "$(cri_runtimes "$SCRATCH/v3.toml")" == *" /usr/bin/enflame-container-runtime "*" default=enflame "* ]]
}

@test "crio: drop-in written and removed; --no-drop-in edits crio.conf and round trips" {
  local d=$SCRATCH/crio.conf.d/99-enflame.toml f=$SCRATCH/crio.conf
  run "$CTK" runtime configure --runtime crio --drop-in "$d" --runtime-path /opt/e/shim --set-as-default
  [ "$status" -eq 0 ]
  grep -qx '\[crio.runtime.runtimes.enflame\]' "$d"
  grep -qx 'runtime_type = "oci"' "$d"
  grep -qx 'monitor_path = "/usr/libexec/crio/conmon"' "$d"
  grep -qx 'default_runtime = "enflame"' "$d"
  run "$CTK" runtime unconfigure --runtime crio --drop-in "$d"
  [ "$status" -eq 0 ]
  [ ! -e "$d" ]
  cp "$TOP/tests/fixtures/runtime-config/crio.conf" "$f"
  run "$CTK" runtime configure --runtime crio --config "$f" --no-drop-in --runtime-path /opt/e/shim --set-as-default
  [ "$status" -eq 0 ]
  grep -qx 'default_runtime = "enflame"' "$f"
  run "$CTK" runtime unconfigure --runtime crio --config "$f" --no-drop-in
  [ "$status" -eq 0 ]
  cmp "$TOP/tests/fixtures/runtime-config/crio.conf" "$f"
}

@test "enflame-ctk config prints the effective config and --set edits one key" {
  local f=$SCRATCH/config.toml
  printf '# site settings\n[enflame-container-runtime]\nmode = "auto"  # was legacy\n' > "$f"
  run "$CTK" --config "$f" config
  [ "$status" -eq 0 ]
  [[ "$output" == *"[enflame-container-cli]"* ]]
  run "$CTK" --config "$f" config --set mode=cdi --set enflame-container-cli.driver-root=/run/driver --in-place "$f"
  [ "$status" -eq 0 ]
  [ "$(cat "$f")" = "$(printf '# site settings\n[enflame-container-runtime]\nmode = "cdi"\n\n[enflame-container-cli]\ndriver-root = "/run/driver"')" ]
  run "$CTK" --config "$f" config
  [[ "$output" == *"driver-root = '/run/driver'"* || "$output" == *'driver-root = "/run/driver"'* ]]
  cp "$f" "$SCRATCH/before"
  run "$CTK" config --set enflame-container-runtime.mdoe=cdi --in-place "$f"
  [ "$status" -eq 1 ]
  [ "$output" = "error: $f: line 3: unknown key 'mdoe' in [enflame-container-runtime]" ]
  run "$CTK" config --set mode=fast --in-place "$f"
  [ "$status" -eq 1 ]
  [ "$output" = "error: $f: mode 'fast' is not one of auto, cdi, legacy" ]
  cmp "$SCRATCH/before" "$f"
}

# ---- real daemons -----------------------------------------------------------------------

@test "containerd 1.6 boots with the configured config.toml and drop-in; config dump shows our runtime" {
  requires root containerd ctr
  local R=$SCRATCH/ctrd main=$SCRATCH/ctrd/config.toml d=$SCRATCH/ctrd/conf.d/99-enflame.toml
  mkdir -p "$R"
  cat > "$main" <<EOF
version = 2
root = "$R/root"
state = "$R/state"

[grpc]
  address = "$R/containerd.sock"
[ttrpc]
  address = "$R/containerd.sock.ttrpc"
# (default /opt/containerd, which containerd creates on the host)
[plugins."io.containerd.internal.v1.opt"]
  path = "$R/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:ectk"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = false
EOF
  run "$CTK" runtime configure --runtime containerd --config "$main" --drop-in "$d" --runtime-path "$SHIM" --set-as-default
  [ "$status" -eq 0 ]
  # containerd's fixed paths under /run stay in its private mount namespace (PRIVATE_RUN)
  setsid "${PRIVATE_RUN[@]}" containerd --config "$main" > "$R/containerd.log" 2>&1 < /dev/null &
  local pid=$!
  on_teardown "stop_pid $pid"
  local i
  for i in $(seq 80); do [ -S "$R/containerd.sock" ] && break; sleep 0.25; done
  [ -S "$R/containerd.sock" ]
  run ctr --address "$R/containerd.sock" plugins ls
  [ "$status" -eq 0 ]
  echo "$output" | grep -E 'io.containerd.grpc.v1 +cri +.* ok'
  run containerd --config "$main" config dump
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.enflame]"
  echo "$output" | grep -F "BinaryName = \"$SHIM\""
  echo "$output" | grep -F 'default_runtime_name = "enflame"'
  echo "$output" | grep -F 'sandbox_image = "localhost/pause:ectk"'   # kept although containerd replaces plugin tables
  # the running daemon loaded the same config
  run ctr --address "$R/containerd.sock" version
  [ "$status" -eq 0 ]
  run "$CTK" runtime unconfigure --runtime containerd --config "$main" --drop-in "$d"
  [ "$status" -eq 0 ]
  run containerd --config "$main" config dump
  [[ "$output" != *"runtimes.enflame"* ]]
  # the in-place edit is accepted too
  run "$CTK" runtime configure --runtime containerd --config "$main" --no-drop-in --runtime-path "$SHIM" --cdi.enabled
  [ "$status" -eq 0 ]
  run containerd --config "$main" config dump
  [ "$status" -eq 0 ]
  echo "$output" | grep -F "BinaryName = \"$SHIM\""
  echo "$output" | grep -F 'sandbox_image = "localhost/pause:ectk"'
}

@test "containerd: a relative --drop-in becomes an absolute import" {
  cd "$SCRATCH"
  printf 'version = 2\n' > config.toml
  run "$CTK" runtime configure --runtime containerd --config config.toml --drop-in d/99.toml --runtime-path /opt/e/shim
  [ "$status" -eq 0 ]
  grep -qx "imports = \[\"$SCRATCH/d/99.toml\"\]  # added by enflame-ctk" config.toml
  [ -f "$SCRATCH/d/99.toml" ]
}

@test "dockerd loads the configured daemon.json on SIGHUP and runs --runtime=enflame" {
  requires root dockerd /usr/bin/docker busybox
  local R=$SCRATCH/docker f=$SCRATCH/docker/daemon.json cg=ectk-configure-$$-$BATS_TEST_NUMBER
  mkdir -p "$R"
  cat > "$f" <<EOF
{
    "data-root": "$R/root",
    "exec-root": "$R/exec",
    "pidfile": "$R/dockerd.pid",
    "hosts": ["unix://$R/docker.sock"],
    "storage-driver": "overlay2",
    "iptables": false,
    "ip6tables": false,
    "ip-forward": false,
    "ip-masq": false,
    "bridge": "none",
    "cgroup-parent": "$cg"
}
EOF
  cp "$f" "$SCRATCH/orig.json"
  # dockerd (and its containerd and runc v2 shim) write /run/docker, /run/containerd/s and
  # /etc/docker/key.json: PRIVATE_RUN keeps /run and an existing /etc/docker private; a
  # key.json dockerd had to create with /etc/docker itself is removed.
  [ -e /etc/docker ] || on_teardown "rm -f /etc/docker/key.json; rmdir /etc/docker 2>/dev/null"
  on_teardown "remove_cgroup $cg"
  # The shim reads its config (driver-root, dev-root = the simulated host) from the env that
  # dockerd passes down through containerd and the runc v2 shim.
  [ -x "$SHIM" ]
  sim_example 2 > "$SCRATCH/desc.yaml"
  sim_host "$SCRATCH/desc.yaml" "$SCRATCH/host" >/dev/null
  write_config "$SCRATCH/config.toml" "$SCRATCH/host"
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml setsid "${PRIVATE_RUN[@]}" dockerd --config-file "$f" > "$R/dockerd.log" 2>&1 < /dev/null &
  local pid=$!
  on_teardown "stop_pid $pid"
  D=(/usr/bin/docker -H "unix://$R/docker.sock")
  local i
  for i in $(seq 120); do "${D[@]}" version >/dev/null 2>&1 && break; sleep 0.5; done
  run "${D[@]}" info
  [ "$status" -eq 0 ]
  [[ "$output" != *"enflame"* ]]

  run "$CTK" runtime configure --runtime docker --config "$f" --runtime-path "$SHIM" --set-as-default
  [ "$status" -eq 0 ]
  kill -HUP "$pid"
  for i in $(seq 40); do "${D[@]}" info 2>/dev/null | grep -q 'Default Runtime: enflame' && break; sleep 0.25; done
  run "${D[@]}" info
  [[ "$output" == *"Default Runtime: enflame"* ]]
  echo "$output" | grep -E '^ *Runtimes:.*enflame'

  busybox_tar "$SCRATCH/rootfs.tar"
  "${D[@]}" import "$SCRATCH/rootfs.tar" localhost/ectk-configure-bb:$$ >/dev/null
  run "${D[@]}" run --rm --network none --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=0 \
      localhost/ectk-configure-bb:$$ /bin/sh -c 'ls -l /dev/gcu0 /dev/gcuctl; ls /dev'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"/dev/gcu0"* ]]
  [[ "${lines[0]}" == c* ]]
  [[ "$output" != *gcu1* ]]
  # without a request the shim passes the container through: no card
  run "${D[@]}" run --rm --network none --runtime=enflame localhost/ectk-configure-bb:$$ /bin/sh -c 'ls /dev; echo passthrough-ok'
  [ "$status" -eq 0 ]
  [[ "$output" == *passthrough-ok* ]]
  [[ "$output" != *gcu* ]]

  "${D[@]}" rmi localhost/ectk-configure-bb:$$ >/dev/null
  run "$CTK" runtime unconfigure --runtime docker --config "$f"
  [ "$status" -eq 0 ]
  [[ "$output" == *"hint: restart dockerd"* ]]
  cmp "$SCRATCH/orig.json" "$f"
  # dockerd's reload only applies keys that are set, so a removed default-runtime needs a
  # restart: stop it by PID and start it again on the restored file.
  stop_pid "$pid"
  ENFLAME_CTK_CONFIG=$SCRATCH/config.toml setsid "${PRIVATE_RUN[@]}" dockerd --config-file "$f" > "$R/dockerd2.log" 2>&1 < /dev/null &
  pid=$!
  on_teardown "stop_pid $pid"
  for i in $(seq 120); do "${D[@]}" version >/dev/null 2>&1 && break; sleep 0.5; done
  run "${D[@]}" info
  [ "$status" -eq 0 ]
  [[ "$output" == *"Default Runtime: runc"* ]]
  [[ "$output" != *"enflame"* ]]
}

@test "examples: the podman script is valid sh, daemon.json is JSON, containerd accepts the v2 drop-in" {
  sh -n "$TOP/examples/podman/run-with-cdi.sh"
  grep -q -- '--device enflame.com/gpu=0' "$TOP/examples/podman/run-with-cdi.sh"
  jq -e '.runtimes.enflame.path == "/usr/bin/enflame-container-runtime"' "$TOP/examples/docker/daemon.json"
  requires containerd
  printf 'version = 2\nimports = ["%s"]\nroot = "%s/root"\nstate = "%s/state"\n' \
    "$TOP/examples/containerd/99-enflame.v2.toml" "$SCRATCH" "$SCRATCH" > "$SCRATCH/config.toml"
  run containerd --config "$SCRATCH/config.toml" config dump
  [ "$status" -eq 0 ]
  echo "$output" | grep -F 'BinaryName = "/usr/bin/enflame-container-runtime"'
}
