#!/usr/bin/env bats
# enflame-ctk toolkit install on other nodes than the default containerd one: docker as the
# node's engine, a containerd config elsewhere (--engine-config), and a hostile host root whose
# /etc/containerd is a link out of it. The simulated node and pod: installer.bash.

load helpers
load installer
bats_require_minimum_version 1.5.0   # `run !`

setup() { installer_setup; }
teardown() { teardown_scratch; }

@test "docker as the node's engine: install reloads dockerd (SIGHUP), docker run --runtime=enflame gets a card; uninstall restores daemon.json" {
  requires dockerd /usr/bin/docker
  local d=$CD/docker cg=ectk-inst-$$-$BATS_TEST_NUMBER
  mkdir -p "$d"
  in_host mkdir -p /etc/docker
  # a dockerd of its own: private roots and socket, no iptables or bridge, its own cgroup parent
  python3 -c 'import json, sys
d, cg = sys.argv[1:]
print(json.dumps({"data-root": d + "/root", "exec-root": d + "/exec", "pidfile": d + "/dockerd.pid",
                  "hosts": ["unix://" + d + "/docker.sock"], "storage-driver": "overlay2",
                  "iptables": False, "ip6tables": False, "ip-forward": False, "ip-masq": False,
                  "bridge": "none", "cgroup-parent": cg}, indent=4))' "$d" "$cg" |
    in_host sh -c "cat > /etc/docker/daemon.json"
  in_host cat /etc/docker/daemon.json > "$d/before.json"
  on_teardown "for h in /sys/fs/cgroup/*/$cg; do [ ! -d \"\$h\" ] || find \"\$h\" -depth -type d -exec rmdir {} \\; 2>/dev/null; done"
  setsid nsenter -t "$HOLDER_PID" -m -- dockerd --config-file /etc/docker/daemon.json > "$d/dockerd.log" 2>&1 < /dev/null &
  local pid=$!
  on_teardown "stop_pid $pid"
  local D=(/usr/bin/docker -H "unix://$d/docker.sock")
  wait_for "${D[@]}" version
  local files_before; files_before=$(in_host ls -A /etc/docker)
  # Docker 20.10 sets no OCI annotations (docker run --annotation came in 24), so a Docker node
  # asks by env; whoever may run docker is root on the node anyway, and the flag says so
  run in_pod "$CD/src/enflame-ctk" toolkit install --host-root "$R" --runtime docker --engine-socket "$d/docker.sock" \
    --driver-root "$CD/host" --dev-root "$CD/host" --accept-envvar-when-unprivileged=true
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: docker (pid $pid) with SIGHUP (reload)"
  local i
  for i in $(seq 40); do "${D[@]}" info 2>/dev/null | grep -qE '^ *Runtimes:.*enflame' && break; sleep 0.25; done
  run "${D[@]}" info
  echo "$output" | grep -E '^ *Runtimes:.*enflame'
  tar -C "$CD/rootfs" -cf "$d/rootfs.tar" .
  "${D[@]}" import "$d/rootfs.tar" "localhost/ectk-inst-bb:$$" > /dev/null
  on_teardown "${D[*]} rmi -f localhost/ectk-inst-bb:$$ >/dev/null 2>&1"
  run "${D[@]}" run --rm --network none --runtime=enflame -e ENFLAME_VISIBLE_DEVICES=1 "localhost/ectk-inst-bb:$$" /bin/sh -c 'ls /dev'
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx gcu1
  refute_grep -Fx gcu0
  run in_pod "$CD/src/enflame-ctk" toolkit uninstall --host-root "$R" --engine-socket "$d/docker.sock"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "signalled: docker (pid $pid) with SIGHUP (reload)"
  # dockerd 20.10 keeps a runtime its reloaded file no longer names: uninstall says so
  echo "$output" | grep -Fx "note: dockerd lists the runtime until it restarts (its SIGHUP reload keeps runtimes the file no longer names)"
  in_host cat /etc/docker/daemon.json | cmp - "$d/before.json"
  [ "$(in_host ls -A /etc/docker)" = "$files_before" ]   # no backup left either
}

@test "--engine-config elsewhere: the drop-in goes beside it, containerd started on it reads it, uninstall restores it" {
  local alt=/etc/alt-containerd
  in_host mkdir -p "$alt"
  in_host cp /etc/containerd/config.toml "$alt/config.toml"
  local files_before; files_before=$(host_files)
  install_tk --engine-config "$alt/config.toml"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Fx "updated: $R$alt/conf.d/99-enflame.toml"
  echo "$output" | grep -Fx "updated: $R$alt/config.toml"
  in_host grep -E "^imports = \[\"$alt/conf.d/99-enflame.toml\"\]" "$alt/config.toml"
  run ! in_host test -e /etc/containerd/conf.d
  # containerd started on that config reads the drop-in: its merged config names our runtime
  run in_host containerd --config "$alt/config.toml" config dump
  [ "$status" -eq 0 ]
  echo "$output" | grep -F 'BinaryName = "/usr/local/enflame/toolkit/enflame-container-runtime"'
  status_tk
  [ "$status" -eq 0 ]
  uninstall_tk
  [ "$status" -eq 0 ]
  in_host cat "$alt/config.toml" | cmp - "$CD/before.toml"
  [ "$(in_host ls -A "$alt")" = config.toml ]
  [ "$(host_files)" = "$files_before" ]
}

# hostile_root LINK: a node root at /mnt/hostile (on the node namespace's tmpfs, seen by the pod)
# whose /etc/containerd is a symlink to LINK. It has the node's /usr (read-only, with a /usr/local
# of its own) and /proc, the loader's cache, `/var/run` -> `/run`, and the simulated cards at $CD/host.
hostile_root() {
  # shellcheck disable=SC2016  # expands in the namespace's shell
  in_host sh -c '
    h=/mnt/hostile; mkdir -p $h/usr $h/proc $h/etc $h/run $h/var "$h$2" || exit 125
    mount --rbind /usr $h/usr && mount -o remount,bind,ro $h/usr && mount --rbind /proc $h/proc &&
      mount -t tmpfs -o mode=755 tmpfs $h/usr/local && mount --bind "$2" "$h$2" || exit 125
    for l in bin lib lib64 sbin; do ln -s usr/$l $h/$l; done
    ln -s /run $h/var/run && cp /etc/ld.so.cache $h/etc/ && ln -s "$1" $h/etc/containerd' sh "$1" "$CD/host"
  in_host find /mnt/hostile -xdev | sort > "$CD/hostile.before"
}

@test "hostile host root: /etc/containerd a link to /../../.. or to a folder outside the root: every write stays inside the root" {
  local link pod_before host_before
  pod_before=$(find "$CD/pod" | sort)
  host_before=$(host_files)
  for link in /../../.. /mnt/host/etc/containerd; do
    hostile_root "$link"
    # the link's target inside the root, where an absolute link leads
    if [ "$link" != /../../.. ]; then in_host mkdir -p "/mnt/hostile$link"; fi
    local inside=/mnt/hostile${link#/../../..}
    run in_pod "$CD/src/enflame-ctk" toolkit install --host-root /mnt/hostile --runtime containerd \
      --restart-mode none --cdi-dir=/var/run/cdi --driver-root "$CD/host" --dev-root "$CD/host"
    echo "$output"
    [ "$status" -eq 0 ]
    # inside the root: containerd's config and our drop-in behind the link, the spec behind /var/run
    in_host grep -F '/etc/containerd/conf.d/99-enflame.toml' "$inside/config.toml"
    in_host grep -F 'BinaryName = "/usr/local/enflame/toolkit/enflame-container-runtime"' "$inside/conf.d/99-enflame.toml"
    in_host test -f /mnt/hostile/run/cdi/enflame.com-gpu.yaml
    # outside it: nothing, neither in the pod's own root nor in the other host root
    [ "$(find "$CD/pod" | sort)" = "$pod_before" ]
    [ "$(host_files)" = "$host_before" ]
    run in_pod "$CD/src/enflame-ctk" toolkit uninstall --host-root /mnt/hostile
    echo "$output"
    [ "$status" -eq 0 ]
    # the config we created is gone again with our drop-in: the root is as it was
    if [ "$link" != /../../.. ]; then
      [ -z "$(in_host find /mnt/hostile/mnt ! -type d)" ]
      in_host rm -r /mnt/hostile/mnt
    fi
    in_host find /mnt/hostile -xdev | sort | diff "$CD/hostile.before" -
    [ -z "$(in_host find /mnt/hostile/usr/local -mindepth 1)" ]
    [ "$(find "$CD/pod" | sort)" = "$pod_before" ]
    [ "$(host_files)" = "$host_before" ]
    in_host umount -R /mnt/hostile/usr /mnt/hostile/proc "/mnt/hostile$CD/host"
    in_host rm -rf /mnt/hostile
  done
}
